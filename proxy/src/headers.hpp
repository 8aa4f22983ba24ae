#pragma once
// Header hygiene for forwarded messages.
#include <boost/beast/http/fields.hpp>

namespace netbox::proxy {

// Removes hop-by-hop headers (those listed in Connection, and Connection, Keep-Alive,
// TE, Trailer, Transfer-Encoding, Upgrade) and every Proxy-* header: they describe the
// agent's link to the proxy, not the request.
void strip_hop_by_hop(boost::beast::http::fields& fields);

}  // namespace netbox::proxy
