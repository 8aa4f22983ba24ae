#pragma once
// Known secret formats in what an agent sends (issue 25, content rules): cloud keys, source
// host and chat tokens, model-API keys, private-key blocks and JWTs, found as written or
// behind one layer of percent, base64 or hex encoding, which is how an injected agent
// smuggles a key it read out of a URL, a header or a body. The list is versioned
// (kSecretFormatsVersion, docs/policy.md lists it): a finding names its kind and the version
// that knew it. The value itself never leaves this file: a finding carries a short digest,
// so two findings of the same value can be matched without storing it.
//
// And host names that carry data: a label under a wildcard allow that looks encoded (long,
// hex or high in entropy) is how DNS and subdomain exfiltration spell their payload.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace netbox::content {

inline constexpr int kSecretFormatsVersion = 1;

struct SecretFormat {
  std::string_view kind;         // "aws_access_key_id", ...
  std::string_view description;  // for docs and reasons
};

// Every format version kSecretFormatsVersion knows, in the order they are tried.
std::span<const SecretFormat> secret_formats();

enum class SecretEncoding { plain, percent, base64, hex };
std::string_view encoding_name(SecretEncoding e);

struct SecretFound {
  std::string_view kind;     // one of secret_formats()
  SecretEncoding encoding = SecretEncoding::plain;
  std::string digest;        // the first 12 hex digits of the value's SHA-256
};

// At most this many bytes of one text are looked at (callers cap bodies at their own
// window first); decoding never grows the work past a small multiple of it.
inline constexpr std::size_t kMaxSecretScan = 1024 * 1024;

// The fewest characters any format matches (a Slack token: "xoxb-" and ten more). A
// shorter text holds no secret in any encoding, since decoding only shrinks a text: most
// header values (Host, Accept, Content-Length) are skipped without a regular expression.
// The unit tests hold each format's shortest match to this bound.
inline constexpr std::size_t kShortestSecret = 15;

// The first secret in `text`: as written, then in its percent-decoded form, then inside
// each base64 or hex run of it, decoded. Nullopt: none of the known formats.
std::optional<SecretFound> find_secret(std::string_view text);

// The thresholds of encoded_label, in docs/policy.md.
inline constexpr std::size_t kEncodedPartMin = 24;   // characters in a part between hyphens
inline constexpr std::size_t kEncodedRunMin = 6;     // characters in a row without a vowel
inline constexpr double kEncodedEntropyMin = 3.8;    // bits per character, with 2 digits or more

struct EncodedLabel {
  std::string label;
  std::string why;  // "32 hex digits", "11 characters without a vowel in a row", ...
};

// The first label of `host` (an ASCII, lower-case name) with a part (between hyphens) of at
// least kEncodedPartMin characters that is all hex digits with both letters and digits, or
// has kEncodedRunMin characters in a row that are not vowels (a, e, i, o, u, y; digits
// count as not vowels), or reaches kEncodedEntropyMin bits per character and holds two
// digits or more. Words and names joined seldom do any of these; base32, base36 and hex
// as exfiltration tools write them mostly do (a heuristic: docs/policy.md says what it
// misses). Nullopt: ordinary labels.
std::optional<EncodedLabel> encoded_label(std::string_view host);

}  // namespace netbox::content
