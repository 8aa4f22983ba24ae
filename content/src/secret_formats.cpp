#include "netbox/content/secret_formats.hpp"

#include <openssl/evp.h>
#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

namespace netbox::content {
namespace {

struct Format {
  SecretFormat named;
  std::string_view pattern;  // RE2, no capturing groups of its own
};

// Version 1. Order matters where two overlap at one place: the first listed wins (an
// Anthropic key also reads as an OpenAI-style sk- key). Each pattern asks for enough of the
// format's own shape (prefix, alphabet, length) that words and code do not match; the
// unit tests hold a corpus of ordinary text that must stay clean. No pattern asks for a
// word boundary before or after the value: an agent that glues a letter on either side
// would slip past one, and the receiver strips it as easily.
constexpr std::array kFormats{
    Format{{"private_key", "a PEM private-key block"}, R"(-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)"},
    Format{{"aws_access_key_id", "an AWS access key id (AKIA..., ASIA...)"},
           R"((?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16})"},
    Format{{"aws_secret_access_key", "an AWS secret access key after its name"},
           R"((?i:aws_secret_access_key|aws_secret_key|secret_access_key)["']?\s*[:=]\s*["']?[A-Za-z0-9/+]{40}\b)"},
    Format{{"github_token", "a GitHub token (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)"},
           R"((?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255}))"},
    Format{{"gitlab_token", "a GitLab token (glpat-, gldt-, glptt-, glrt-, glcbt-, gloas-)"},
           R"(gl(?:pat|dt|ptt|rt|cbt|oas)-[A-Za-z0-9_-]{20,})"},
    Format{{"slack_token", "a Slack token (xoxb-, xoxp-, xoxa-, ...)"}, R"(xox[abposre]-[A-Za-z0-9-]{10,})"},
    Format{{"slack_webhook", "a Slack incoming-webhook URL"},
           R"(hooks\.slack\.com/services/T[A-Za-z0-9_]{6,}/B[A-Za-z0-9_]{6,}/[A-Za-z0-9_]{16,})"},
    Format{{"anthropic_api_key", "an Anthropic API key (sk-ant-)"}, R"(sk-ant-[A-Za-z0-9_-]{20,})"},
    Format{{"openai_api_key", "an OpenAI API key (sk-, sk-proj-, sk-svcacct-, sk-admin-)"},
           R"(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|sk-[A-Za-z0-9]{40,})"},
    Format{{"google_api_key", "a Google API key (AIza...)"}, R"(AIza[0-9A-Za-z_-]{35})"},
    Format{{"stripe_key", "a Stripe secret or restricted key"}, R"((?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,})"},
    Format{{"npm_token", "an npm access token (npm_)"}, R"(npm_[A-Za-z0-9]{36,})"},
    Format{{"huggingface_token", "a Hugging Face token (hf_)"}, R"(hf_[A-Za-z0-9]{34,})"},
    Format{{"jwt", "a JSON Web Token"}, R"(eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{16,})"},
};

const std::array<SecretFormat, kFormats.size()> kNamed = [] {
  std::array<SecretFormat, kFormats.size()> out{};
  for (std::size_t i = 0; i < kFormats.size(); ++i) out[i] = kFormats[i].named;
  return out;
}();

// One alternation, one group per format: one linear pass finds the leftmost secret of any
// kind.
const RE2& all_formats() {
  static const auto re = [] {
    std::string p;
    for (const auto& f : kFormats) {
      if (!p.empty()) p += '|';
      p += '(';
      p += f.pattern;
      p += ')';
    }
    RE2::Options o;
    o.set_log_errors(false);
    o.set_max_mem(64 << 20);
    return std::make_unique<RE2>(p, o);
  }();
  return *re;
}

std::string short_digest(std::string_view value) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  EVP_Digest(value.data(), value.size(), md.data(), &n, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < 6 && i < n; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

std::optional<SecretFound> match(std::string_view text, SecretEncoding enc) {
  const RE2& re = all_formats();
  std::array<re2::StringPiece, kFormats.size() + 1> groups;
  if (!re.Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), RE2::UNANCHORED, groups.data(),
                static_cast<int>(groups.size())))
    return std::nullopt;
  for (std::size_t i = 1; i < groups.size(); ++i)
    if (groups[i].data() != nullptr)
      return SecretFound{kFormats[i - 1].named.kind, enc, short_digest({groups[i].data(), groups[i].size()})};
  return std::nullopt;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;  // standard and URL-safe alphabets alike
  if (c == '/' || c == '_') return 63;
  return -1;
}

std::size_t longest_base64_run(std::string_view text) {
  std::size_t longest = 0, run = 0;
  for (char c : text) {
    run = base64_value(c) >= 0 ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

// A run of base64 (either alphabet, padding dropped), decoded; empty when it cannot be.
std::string base64_decoded(std::string_view run) {
  while (!run.empty() && run.back() == '=') run.remove_suffix(1);
  if (run.size() % 4 == 1) run.remove_suffix(1);  // a stray last character carries no whole byte
  std::string out;
  out.reserve(run.size() * 3 / 4);
  unsigned acc = 0;
  int bits = 0;
  for (char c : run) {
    const int v = base64_value(c);
    if (v < 0) return {};
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

std::string hex_decoded(std::string_view run) {
  std::string out;
  out.reserve(run.size() / 2);
  for (std::size_t i = 0; i + 1 < run.size(); i += 2)
    out += static_cast<char>(hex_value(run[i]) * 16 + hex_value(run[i + 1]));
  return out;
}

// Each run of `run_re` in `text`, decoded by `decode` from each of its first `alignments`
// characters (a secret's encoding glued after other characters of the same alphabet starts
// mid-group) and searched, until `budget` decoded bytes have been searched.
template <class Decode>
std::optional<SecretFound> in_runs(std::string_view text, const RE2& run_re, Decode decode, std::size_t alignments,
                                   SecretEncoding enc, std::size_t& budget) {
  re2::StringPiece rest(text.data(), text.size());
  re2::StringPiece found;
  while (budget > 0 && RE2::FindAndConsume(&rest, run_re, &found)) {
    const std::string_view run(found.data(), found.size());
    for (std::size_t skip = 0; skip < alignments && skip < run.size() && budget > 0; ++skip) {
      const std::string_view part = run.substr(skip);
      const std::string decoded = decode(part);
      if (decoded.empty()) continue;
      budget = decoded.size() >= budget ? 0 : budget - decoded.size();
      if (auto f = match(decoded, enc)) return f;
    }
  }
  return std::nullopt;
}

}  // namespace

std::span<const SecretFormat> secret_formats() { return kNamed; }

std::string_view encoding_name(SecretEncoding e) {
  switch (e) {
    case SecretEncoding::plain: return "plain";
    case SecretEncoding::percent: return "percent";
    case SecretEncoding::base64: return "base64";
    case SecretEncoding::hex: return "hex";
  }
  return "plain";
}

std::optional<SecretFound> find_secret(std::string_view text) {
  if (text.size() < kShortestSecret) return std::nullopt;
  if (text.size() > kMaxSecretScan) text = text.substr(0, kMaxSecretScan);
  if (auto f = match(text, SecretEncoding::plain)) return f;
  std::string decoded;
  std::string_view runs_in = text;
  if (text.find('%') != std::string_view::npos) {
    decoded = percent_decoded(text);
    if (auto f = match(decoded, SecretEncoding::percent)) return f;
    runs_in = decoded;
  }
  // Runs long enough to hold the shortest format encoded (16 bytes: 22 base64 or 32 hex
  // characters); hex is tried first, since every hex run is also a base64 run.
  static const RE2 hex_run(R"(([0-9a-fA-F]{32,}))");
  static const RE2 base64_run(R"(([A-Za-z0-9+/_-]{22,}={0,2}))");
  // Without a run that long (every hex run is one too), neither search can find anything:
  // one loop over the bytes instead of two regular-expression passes.
  if (longest_base64_run(runs_in) < 22) return std::nullopt;
  std::size_t budget = kMaxSecretScan;
  if (auto f = in_runs(runs_in, hex_run, hex_decoded, 2, SecretEncoding::hex, budget)) return f;
  return in_runs(runs_in, base64_run, base64_decoded, 4, SecretEncoding::base64, budget);
}

}  // namespace netbox::content
