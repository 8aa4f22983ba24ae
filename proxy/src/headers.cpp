#include "headers.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/rfc7230.hpp>

#include <algorithm>

namespace netbox::proxy {

namespace http = boost::beast::http;

HopByHop::HopByHop(const http::fields& fields) {
  for (auto it = fields.find(http::field::connection); it != fields.end() && it->name() == http::field::connection;
       ++it) {
    for (auto token : http::token_list(it->value())) listed_.emplace_back(token);
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

}  // namespace netbox::proxy
