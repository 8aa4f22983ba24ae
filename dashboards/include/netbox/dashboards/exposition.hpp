#pragma once
// Prometheus text exposition format (version 0.0.4), written by hand because it is a
// few lines of escaping and ordering rules; pulling in a client library for that would
// bring its own registry and threads we don't need.
#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace netbox::dashboards {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Exposition {
 public:
  // Each family's HELP and TYPE are written once, before its first sample.
  void counter(std::string_view name, std::string_view help, const Labels& labels, double value);
  void gauge(std::string_view name, std::string_view help, const Labels& labels, double value);
  // `bounds` are the upper bounds (le) in ascending order; `counts` are per bucket (not
  // cumulative), with one extra trailing entry for +Inf.
  void histogram(std::string_view name, std::string_view help, const Labels& labels,
                 const std::vector<double>& bounds, const std::vector<std::uint64_t>& counts, double sum);

  const std::string& text() const { return out_; }

 private:
  void header(std::string_view name, std::string_view help, std::string_view type);
  void sample(std::string_view name, const Labels& labels, double value);
  std::string out_;
  std::set<std::string, std::less<>> declared_;
};

// Label values escape backslash, double quote and newline; HELP escapes backslash and newline.
std::string escape_label_value(std::string_view v);
std::string format_sample_value(double v);

}  // namespace netbox::dashboards
