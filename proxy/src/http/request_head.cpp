#include "http/request_head.hpp"

#include "netbox/audit/printable.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

#include <algorithm>

namespace netbox::proxy {

namespace http = boost::beast::http;

namespace {

// Values echoed in a reason are cut short: the reason is a header and an audit column.
std::string quoted(std::string_view v) {
  constexpr std::size_t kMax = 64;
  return "'" + audit::escape_controls(v.substr(0, kMax)) + (v.size() > kMax ? "...'" : "'");
}

std::string_view trim_ows(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

}  // namespace

RequestHeadCheck::State RequestHeadCheck::refuse(unsigned status, std::string reason) {
  problem_ = {status, std::move(reason)};
  return state_ = State::refused;
}

RequestHeadCheck::State RequestHeadCheck::scan(std::string_view bytes) {
  while (state_ == State::need_more && pos_ < bytes.size()) {
    const char c = bytes[pos_++];
    if (pos_ > kHeaderLimit) return refuse(431, "the request headers are larger than 64 KiB");
    if (after_cr_ && c != '\n')
      return refuse(400, "the request head has a CR that is not followed by LF; lines must end with CRLF");
    if (c == '\r') {
      after_cr_ = true;
      continue;
    }
    if (c == '\n') {
      if (!after_cr_) return refuse(400, "the request head has a line ending in a bare LF; lines must end with CRLF");
      after_cr_ = false;
      const auto line = bytes.substr(line_start_, pos_ - 2 - line_start_);
      line_start_ = pos_;
      if (end_of_line(line) == State::refused) return state_;
      continue;
    }
    // Refuse an overlong request line as soon as it is one, not after 64 KiB have arrived.
    if (lines_ == 0 && pos_ - line_start_ > kMaxTargetLength + 64)
      return refuse(414, "the request target is longer than " + std::to_string(kMaxTargetLength) + " bytes");
  }
  return state_;
}

RequestHeadCheck::State RequestHeadCheck::end_of_line(std::string_view line) {
  ++lines_;
  if (lines_ == 1) return request_line(line);
  if (line.empty()) return end_of_head();
  return header_line(line);
}

RequestHeadCheck::State RequestHeadCheck::request_line(std::string_view line) {
  // Beast refuses a malformed request line on its own; this only reads it for the
  // limits and the audit row.
  const auto first = line.find(' ');
  const auto last = line.rfind(' ');
  if (first == std::string_view::npos || last == first) return state_;
  method_ = std::string(line.substr(0, first));
  const auto target = line.substr(first + 1, last - first - 1);
  target_ = std::string(target.substr(0, 1024));
  http10_ = line.substr(last + 1) == "HTTP/1.0";
  if (target.size() > kMaxTargetLength)
    return refuse(414, "the request target is longer than " + std::to_string(kMaxTargetLength) + " bytes");
  return state_;
}

RequestHeadCheck::State RequestHeadCheck::header_line(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t')
    return refuse(400, "the request has a folded header line (obs-fold: a line starting with a space or tab)");
  if (lines_ - 1 > kMaxHeaderFields)
    return refuse(431, "the request has more than " + std::to_string(kMaxHeaderFields) + " header fields");
  if (!pending_field_.empty() && check_field(pending_field_) == State::refused) return state_;
  pending_field_.assign(line);
  return state_;
}

RequestHeadCheck::State RequestHeadCheck::check_field(std::string_view line) {
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return state_;  // Beast refuses it
  const auto name = line.substr(0, colon);
  const auto raw_value = line.substr(colon + 1);
  if (boost::beast::iequals(name, "content-length")) {
    if (++content_lengths_ > 1) return refuse(400, "the request has more than one Content-Length header");
    const auto v = trim_ows(raw_value);
    if (v.empty() || !std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      return refuse(400, "the request's Content-Length " + quoted(v) + " is not a single decimal number");
  } else if (boost::beast::iequals(name, "transfer-encoding")) {
    if (++transfer_encodings_ > 1) return refuse(400, "the request has more than one Transfer-Encoding header");
    // Exactly "chunked", as every HTTP client sends it: other casings, lists, extra
    // spaces and codings are read differently by different servers.
    auto v = raw_value;
    if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    if (v != "chunked")
      return refuse(400, "the request's Transfer-Encoding " + quoted(v) +
                             " is not exactly 'chunked'; netbox accepts no other transfer coding");
  }
  return state_;
}

RequestHeadCheck::State RequestHeadCheck::end_of_head() {
  if (!pending_field_.empty() && check_field(pending_field_) == State::refused) return state_;
  if (content_lengths_ > 0 && transfer_encodings_ > 0)
    return refuse(400, "the request has both Content-Length and Transfer-Encoding, which servers may read "
                       "as different requests");
  if (transfer_encodings_ > 0 && http10_)
    return refuse(400, "the request uses Transfer-Encoding with HTTP/1.0, which has no chunked encoding");
  return state_ = State::complete;
}

std::string describe_request_error(const boost::beast::error_code& ec) {
  if (ec == http::error::bad_chunk || ec == http::error::bad_chunk_extension)
    return "the chunked request body is malformed (a chunk size that is not hex, overflows, or bad chunk framing)";
  if (ec == http::error::buffer_overflow)
    return "a chunk's extensions or the body's trailer fields run past " + std::to_string(kReadBufferLimit / 1024) +
           " KiB, more than a request head may be";
  if (ec == http::error::bad_target)
    return "the request target contains bytes not allowed in a URL (control characters, NUL or spaces)";
  if (ec == http::error::bad_field || ec == http::error::bad_value)
    return "a header line is malformed (bad name, or a control character or NUL in a value)";
  if (ec == http::error::bad_version) return "the request line is malformed (it must end in HTTP/1.0 or HTTP/1.1)";
  if (ec == http::error::bad_method) return "the request line is malformed (bad method)";
  if (ec == http::error::partial_message || ec == http::error::short_read)
    return "the request ended before its body was complete";
  return "malformed HTTP request: " + ec.message();
}

}  // namespace netbox::proxy
