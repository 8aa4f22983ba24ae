#include "inspect/secret_forms.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdint>

namespace netbox::proxy {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}


void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Four hex digits at s[at..], or -1.
long hex4(std::string_view s, std::size_t at) {
  if (at + 4 > s.size()) return -1;
  long v = 0;
  for (std::size_t i = at; i < at + 4; ++i) {
    const int d = hex_value(s[i]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// Every JSON string escape undone wherever it is (the text need not be valid JSON):
// \uXXXX (surrogate pairs joined) as UTF-8, the one-letter escapes as their character.
std::string json_unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    const char e = s[i + 1];
    if (e == 'u') {
      long cp = hex4(s, i + 2);
      if (cp < 0) {
        out += s[i];
        continue;
      }
      i += 5;
      if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < s.size() && s[i + 1] == '\\' && s[i + 2] == 'u') {
        const long lo = hex4(s, i + 3);
        if (lo >= 0xDC00 && lo < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          i += 6;
        }
      }
      append_utf8(out, static_cast<std::uint32_t>(cp));
      continue;
    }
    static constexpr std::string_view kFrom = "\"\\/bfnrt", kTo = "\"\\/\b\f\n\r\t";
    const auto k = kFrom.find(e);
    if (k == std::string_view::npos) {
      out += s[i];
      continue;
    }
    out += kTo[k];
    ++i;
  }
  return out;
}

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace

bool percent_decode(std::string& s) {
  std::string out;
  bool changed = false;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        changed = true;
        continue;
      }
    }
    out += s[i];
  }
  if (changed) s = std::move(out);
  return changed;
}

// The secret after 0, 1 or 2 bytes of anything: the base64 characters that depend only on
// the secret's own bits (the first group's leading ones, and the last partial group's
// trailing ones, depend on the neighbours and are left out). Each also URL-safe.
SecretForms::SecretForms(std::string_view secret) : secret_(secret) {
  for (std::size_t lead = 0; lead < 3; ++lead) {
    const std::string padded = std::string(lead, '\0') + std::string(secret);
    const std::string enc = base64(padded);
    const std::size_t from = lead == 0 ? 0 : lead + 1;
    const std::size_t whole = padded.size() / 3 * 4 + padded.size() % 3;  // no char of a missing byte
    if (whole <= from + 8) continue;  // too short to mean anything
    std::string part = enc.substr(from, whole - from);
    std::string url = part;
    std::replace(url.begin(), url.end(), '+', '-');
    std::replace(url.begin(), url.end(), '/', '_');
    base64_.push_back(std::move(part));
    if (url != base64_.back()) base64_.push_back(std::move(url));
  }
}

std::string SecretForms::found_in(std::string_view text) const {
  if (secret_.empty()) return {};
  const auto holds = [this](std::string_view t) -> std::string {
    if (t.find(secret_) != std::string_view::npos) return "as sent";
    for (const auto& b : base64_)
      if (t.find(b) != std::string_view::npos) return "base64-encoded";
    return {};
  };
  if (auto form = holds(text); !form.empty()) return form;
  // Base64 wrapped over lines (MIME's 76 columns, PEM's 64): its pieces alone are no form.
  const auto wrapped = [this](std::string_view t) -> bool {
    if (t.find_first_of("\r\n") == std::string_view::npos) return false;
    std::string joined;
    joined.reserve(t.size());
    for (char c : t)
      if (c != '\r' && c != '\n') joined += c;
    return std::any_of(base64_.begin(), base64_.end(),
                       [&](const std::string& b) { return joined.find(b) != std::string::npos; });
  };
  if (wrapped(text)) return "base64-encoded, line-wrapped";
  // The escaped forms: JSON escapes undone, then up to three rounds of percent-decoding
  // of the text as it came and of the unescaped one.
  std::vector<std::pair<std::string, std::string>> views;
  if (text.find('\\') != std::string_view::npos) views.emplace_back(json_unescape(text), "JSON-escaped");
  if (text.find('%') != std::string_view::npos) views.emplace_back(std::string(text), "");
  for (auto& [t, how] : views) {
    const auto named = [&how](const std::string& form, std::string_view also) {
      std::string out = form == "as sent" ? std::string() : form;
      for (std::string_view h : {std::string_view(how), also})
        if (!h.empty()) out += (out.empty() ? "" : ", ") + std::string(h);
      return out;
    };
    if (!how.empty()) {
      if (auto form = holds(t); !form.empty()) return named(form, {});
      if (wrapped(t)) return named("base64-encoded", "line-wrapped");
    }
    for (int round = 0; round < 3 && t.find('%') != std::string::npos && percent_decode(t); ++round) {
      if (auto form = holds(t); !form.empty()) return named(form, "percent-encoded");
      // JSON escapes that were themselves percent-encoded (%5C%2F for \/).
      if (t.find('\\') != std::string::npos)
        if (auto form = holds(json_unescape(t)); !form.empty()) return named(form, "percent-encoded, JSON-escaped");
    }
  }
  return {};
}

}  // namespace netbox::proxy
