#pragma once
// Values of every secret format content/secret_formats.hpp lists (version 1), one of each
// kind, and the encodings an agent would hide them behind; assembled at run time so that
// no secret-shaped literal sits in the source. For the finder's unit tests and the proxy's
// content-rule tests alike.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::test {

// `n` characters of `alphabet`, the same for the same seed.
inline std::string run_of(std::string_view alphabet, std::size_t n, unsigned seed) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    out += alphabet[(seed >> 16) % alphabet.size()];
  }
  return out;
}
inline constexpr std::string_view kAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
inline constexpr std::string_view kUpperDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

struct SecretSample {
  std::string kind, value;
};

inline std::vector<SecretSample> secret_samples() {
  return {
      {"private_key", std::string("-----BEGIN ") + "RSA PRIVATE KEY-----"},
      {"aws_access_key_id", "AKIA" + run_of(kUpperDigits, 16, 101)},
      {"aws_secret_access_key", "aws_secret_access_key=" + run_of(kAlnum, 40, 102)},
      {"github_token", "ghp_" + run_of(kAlnum, 36, 103)},
      {"gitlab_token", "glpat-" + run_of(kAlnum, 20, 104)},
      {"slack_token", "xoxb-" + run_of("0123456789", 12, 105) + "-" + run_of(kAlnum, 24, 106)},
      {"slack_webhook", "hooks.slack.com/services/T" + run_of(kUpperDigits, 8, 107) + "/B" +
                            run_of(kUpperDigits, 8, 108) + "/" + run_of(kAlnum, 24, 109)},
      {"anthropic_api_key", "sk-ant-api03-" + run_of(kAlnum, 60, 110)},
      {"openai_api_key", "sk-proj-" + run_of(kAlnum, 48, 111)},
      {"google_api_key", "AIza" + run_of(kAlnum, 35, 112)},
      {"stripe_key", "sk_live_" + run_of(kAlnum, 24, 113)},
      {"npm_token", "npm_" + run_of(kAlnum, 36, 114)},
      {"huggingface_token", "hf_" + run_of(kAlnum, 34, 115)},
      {"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + run_of(kAlnum, 43, 116)},
  };
}

// Every byte as %XX (upper-case hex).
inline std::string percent_all(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    out += '%';
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// Lower-case hex.
inline std::string hex(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// `s` in an alphabet of 2^width characters, most significant bits first, the last group
// padded with zero bits (base64 and base32 alike; padding characters are the caller's).
inline std::string encode_bits(std::string_view s, std::string_view alphabet, int width) {
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  const unsigned mask = (1u << width) - 1;
  for (unsigned char c : s) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= width) {
      bits -= width;
      out += alphabet[(acc >> bits) & mask];
    }
  }
  if (bits > 0) out += alphabet[(acc << (width - bits)) & mask];
  return out;
}

// Base64: URL-safe and unpadded (fits a URL, a header and a body as it is), or standard
// with its padding.
inline std::string base64(std::string_view s, bool url = true) {
  std::string out = encode_bits(s,
                                url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                                    : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                                6);
  while (!url && out.size() % 4) out += '=';
  return out;
}

}  // namespace netbox::test
