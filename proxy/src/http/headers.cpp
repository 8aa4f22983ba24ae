#include "http/headers.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/rfc7230.hpp>

#include <algorithm>

namespace netbox::proxy {

namespace http = boost::beast::http;

HopByHop::HopByHop(const http::fields& fields) {
  for (auto it = fields.find(http::field::connection); it != fields.end() && it->name() == http::field::connection;
       ++it) {
    for (auto token : http::token_list(it->value())) {
      // What the body's checks read (its type and coding) goes on whatever Connection
      // lists: taken off, the upstream would read the bytes netbox checked as decoded
      // JSON as something else (RFC 9110 7.6.1: no connection option for such a field).
      if (boost::beast::iequals(token, "content-type") || boost::beast::iequals(token, "content-encoding")) continue;
      listed_.emplace_back(token);
    }
  }
}

bool HopByHop::operator()(const http::fields::value_type& f) const {
  switch (f.name()) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::te:
    case http::field::trailer:
    case http::field::transfer_encoding:
    case http::field::upgrade:
    case http::field::proxy_connection:
    case http::field::proxy_authorization:
    case http::field::proxy_authenticate:
      return true;
    default:
      break;
  }
  const auto name = f.name_string();
  if (name.size() >= 6 && boost::beast::iequals(name.substr(0, 6), "proxy-")) return true;
  return std::any_of(listed_.begin(), listed_.end(),
                     [&](const std::string& token) { return boost::beast::iequals(token, name); });
}

void strip_hop_by_hop(http::fields& fields) {
  const HopByHop hop(fields);
  for (auto it = fields.begin(); it != fields.end();) {
    if (hop(*it)) it = fields.erase(it);
    else ++it;
  }
}

bool is_netbox_field(const http::fields::value_type& f) {
  if (f.name() != http::field::unknown) return false;  // no X-Netbox-* is a known field
  const auto name = f.name_string();
  return name.size() >= 9 && boost::beast::iequals(name.substr(0, 9), "x-netbox-");
}

void strip_response_fields(http::fields& fields, const std::optional<std::uint64_t>& content_length) {
  const HopByHop hop(fields);
  std::size_t lengths = 0;
  bool plain_length = true;
  for (auto it = fields.begin(); it != fields.end();) {
    if (it->name() == http::field::content_length) {
      ++lengths;
      const auto v = it->value();
      plain_length = plain_length && !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
    }
    if (hop(*it) || is_netbox_field(*it)) it = fields.erase(it);
    else ++it;
  }
  // Only a response whose length was not one plain number is rewritten: the common one
  // keeps its field as it came, without an erase and an insert.
  if (content_length && (lengths > 1 || !plain_length)) {
    fields.erase(http::field::content_length);
    fields.set(http::field::content_length, std::to_string(*content_length));
  }
}

std::string remaining_transfer_codings(const http::fields& fields, bool chunked) {
  // Built as it goes, a "chunked" held back until the next coding shows it was not the
  // last: the common "Transfer-Encoding: chunked" gives "" without allocating.
  std::string out;
  bool held_chunked = false;
  const auto add = [&out](std::string_view c) {
    if (!out.empty()) out += ", ";
    out += c;
  };
  for (auto it = fields.find(http::field::transfer_encoding);
       it != fields.end() && it->name() == http::field::transfer_encoding; ++it) {
    for (auto token : http::token_list(it->value())) {
      const std::string_view c(token.data(), token.size());
      if (held_chunked) add("chunked");
      held_chunked = boost::beast::iequals(c, "chunked");
      if (held_chunked) continue;
      if (boost::beast::iequals(c, "identity")) continue;  // no coding at all (RFC 2616's, since removed)
      add(c);
    }
  }
  if (held_chunked && !chunked) add("chunked");
  return out;
}

}  // namespace netbox::proxy
