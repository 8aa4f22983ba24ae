#include "netbox/dashboards/exposition.hpp"

#include <charconv>

#include <cmath>
#include <cstdio>

namespace netbox::dashboards {

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

static std::string escape_help(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_sample_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Integers print without an exponent so counters read naturally; others with enough precision.
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  // The shortest text that reads back as the same double: exact for timestamps with
  // fractions (%.9g would round them to 10 s) and short for 0.0075.
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("NaN");
}

void Exposition::header(std::string_view name, std::string_view help, std::string_view type) {
  if (declared_.find(name) != declared_.end()) return;
  declared_.emplace(name);
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += escape_help(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void Exposition::sample(std::string_view name, const Labels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!first) out_ += ',';
      first = false;
      out_ += k;
      out_ += "=\"";
      out_ += escape_label_value(v);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += format_sample_value(value);
  out_ += '\n';
}

void Exposition::counter(std::string_view name, std::string_view help, const Labels& labels, double value) {
  header(name, help, "counter");
  sample(name, labels, value);
}

void Exposition::gauge(std::string_view name, std::string_view help, const Labels& labels, double value) {
  header(name, help, "gauge");
  sample(name, labels, value);
}

void Exposition::histogram(std::string_view name, std::string_view help, const Labels& labels,
                           const std::vector<double>& bounds, const std::vector<std::uint64_t>& counts,
                           double sum) {
  header(name, help, "histogram");
  std::string base(name);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += i < counts.size() ? counts[i] : 0;
    Labels with_le = labels;
    with_le.emplace_back("le", i < bounds.size() ? format_sample_value(bounds[i]) : "+Inf");
    sample(base + "_bucket", with_le, static_cast<double>(cumulative));
  }
  sample(base + "_sum", labels, sum);
  sample(base + "_count", labels, static_cast<double>(cumulative));
}

}  // namespace netbox::dashboards
