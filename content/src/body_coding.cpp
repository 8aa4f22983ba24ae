#include "netbox/content/body_coding.hpp"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <climits>

namespace netbox::content {
namespace {

std::string lower_trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// windowBits: 16+15 gzip, 15 zlib, -15 raw deflate.
std::variant<std::string, CodingRefusal> inflate_all(std::string_view in, int window_bits, std::size_t limit,
                                                     const std::string& coding) {
  z_stream z{};
  if (inflateInit2(&z, window_bits) != Z_OK) return CodingRefusal{"zlib could not start"};
  struct End {
    z_stream& z;
    ~End() { inflateEnd(&z); }
  } end{z};
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size(), UINT_MAX));
  std::string out;
  char buffer[16384];
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    const int rc = inflate(&z, Z_NO_FLUSH);
    const std::size_t n = sizeof buffer - z.avail_out;
    if (out.size() + n > limit)
      return CodingRefusal{"the " + coding + " body decodes to more than " + std::to_string(limit) +
                           " bytes, the body_window; body checks read the whole decoded body, so it is refused",
                           true};
    out.append(buffer, n);
    if (rc == Z_STREAM_END) break;
    if (rc != Z_OK || (n == 0 && z.avail_in == 0))
      return CodingRefusal{"the body is not a complete " + coding + " stream"};
  }
  // Bytes after the stream would be read by one server and not another.
  if (z.avail_in != 0) return CodingRefusal{"the " + coding + " body has bytes after its end"};
  return out;
}

}  // namespace

std::variant<std::string, CodingRefusal> decode_body(std::string_view coding, std::string_view body,
                                                     std::size_t limit) {
  const std::string c = lower_trimmed(coding);
  if (c.empty() || c == "identity") {
    if (body.size() > limit) return CodingRefusal{"the body is larger than " + std::to_string(limit) + " bytes", true};
    return std::string(body);
  }
  if (c == "gzip" || c == "x-gzip") return inflate_all(body, 16 + MAX_WBITS, limit, c);
  if (c == "deflate") {
    // RFC 9110 says a zlib stream; some clients send raw deflate. Either is read, as the
    // server would: a zlib header is two bytes whose big-endian value is a multiple of 31.
    const bool zlib_header = body.size() >= 2 && (static_cast<unsigned char>(body[0]) & 0x0f) == 8 &&
                             ((static_cast<unsigned char>(body[0]) << 8) | static_cast<unsigned char>(body[1])) % 31 == 0;
    return inflate_all(body, zlib_header ? MAX_WBITS : -MAX_WBITS, limit, c);
  }
  return CodingRefusal{"the body's Content-Encoding is \"" + std::string(coding) +
                       "\"; netbox reads only gzip and deflate (one coding), and does not pass a body it cannot "
                       "check"};
}

}  // namespace netbox::content
