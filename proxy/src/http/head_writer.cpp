#include "http/head_writer.hpp"

#include "http/headers.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>

#include <charconv>

namespace netbox::proxy {

namespace http = boost::beast::http;

namespace {

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out += name;
  out += ": ";
  out += value;
  out += "\r\n";
}

void append_number(std::string& out, std::size_t n, int base = 10) {
  char text[24];
  const auto end = std::to_chars(text, text + sizeof text, n, base).ptr;
  out.append(text, static_cast<std::size_t>(end - text));
}

bool expects_body(http::verb method) {
  return method == http::verb::post || method == http::verb::put || method == http::verb::options;
}

}  // namespace

void append_forwarded_request(std::string& out, const http::request_header<>& req, std::string_view target,
                              std::string_view host, BodyFraming body) {
  out += req.method_string();
  out += ' ';
  out += target;
  out += " HTTP/1.1\r\n";
  append_field(out, "Host", host);
  const HopByHop hop(req);
  for (const auto& f : req) {
    switch (f.name()) {
      case http::field::host:
      case http::field::expect:
      case http::field::content_length:
      case http::field::transfer_encoding:
        continue;
      default:
        break;
    }
    if (hop(f) || is_netbox_field(f)) continue;
    append_field(out, f.name_string(), f.value());
  }
  if (body.kind == BodyFraming::Kind::chunked) {
    out += "Transfer-Encoding: chunked\r\n";
  } else if (body.kind == BodyFraming::Kind::length || expects_body(req.method())) {
    out += "Content-Length: ";
    append_number(out, body.length);
    out += "\r\n";
  }
  out += "\r\n";
}

void append_response_head(std::string& out, const http::response_header<>& res) {
  out += res.version() == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  append_number(out, res.result_int());
  out += ' ';
  const auto reason = res.reason();
  out += reason.empty() ? http::obsolete_reason(res.result()) : reason;
  out += "\r\n";
  for (const auto& f : res) append_field(out, f.name_string(), f.value());
  out += "\r\n";
}

void append_chunk_size(std::string& out, std::size_t size) {
  append_number(out, size, 16);
  out += "\r\n";
}

}  // namespace netbox::proxy
