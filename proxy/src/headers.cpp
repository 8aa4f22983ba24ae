#include "headers.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/rfc7230.hpp>

#include <cctype>
#include <string>
#include <vector>

namespace netbox::proxy {

namespace http = boost::beast::http;

void strip_hop_by_hop(http::fields& fields) {
  std::vector<std::string> listed;
  for (auto it = fields.find(http::field::connection); it != fields.end() && it->name() == http::field::connection;
       ++it) {
    for (auto token : http::token_list(it->value())) listed.emplace_back(token);
  }
  for (const auto& name : listed) fields.erase(name);
  for (auto f : {http::field::connection, http::field::keep_alive, http::field::te, http::field::trailer,
                 http::field::transfer_encoding, http::field::upgrade, http::field::proxy_connection,
                 http::field::proxy_authorization, http::field::proxy_authenticate}) {
    fields.erase(f);
  }
  std::vector<std::string> proxy_named;
  for (const auto& f : fields) {
    auto n = f.name_string();
    if (n.size() >= 6) {
      std::string lower;
      for (std::size_t i = 0; i < 6; ++i) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(n[i])));
      if (lower == "proxy-") proxy_named.emplace_back(n);
    }
  }
  for (const auto& n : proxy_named) fields.erase(n);
}

}  // namespace netbox::proxy
