#pragma once
// Header hygiene for forwarded messages.
#include <boost/beast/http/fields.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace netbox::proxy {

// Which fields of one message are hop-by-hop: those listed in its Connection headers,
// and Connection, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade and every Proxy-*
// header. They describe the agent's link to the proxy (or the proxy's to the upstream),
// not the message, so they are never passed on.
class HopByHop {
 public:
  explicit HopByHop(const boost::beast::http::fields& fields);
  bool operator()(const boost::beast::http::fields::value_type& field) const;

 private:
  std::vector<std::string> listed_;  // tokens of the Connection headers
};

// Removes the hop-by-hop fields (as HopByHop names them) from `fields`.
void strip_hop_by_hop(boost::beast::http::fields& fields);

}  // namespace netbox::proxy
