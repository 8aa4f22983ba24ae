#pragma once
// Header hygiene for forwarded messages.
#include <boost/beast/http/fields.hpp>

#include <cstdint>
#include <optional>
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

// X-Netbox-* in any case. netbox's own answers carry these (X-Netbox-Decision, ...), so
// none may reach the agent from an upstream, where it could forge a denial, and none of
// the agent's go upstream.
bool is_netbox_field(const boost::beast::http::fields::value_type& field);

// An upstream response head made fit for the agent: without hop-by-hop and X-Netbox-*
// fields, and with one Content-Length line (the parser accepts equal duplicates and
// "5, 5"; the agent gets exactly one) when `content_length` is set.
void strip_response_fields(boost::beast::http::fields& fields, const std::optional<std::uint64_t>& content_length);

// The transfer codings the body still carries once the parser has taken the framing
// off: every Transfer-Encoding coding, in order, without the final "chunked" when
// `chunked` (the parser de-chunked it). "" when there are none. An upstream's
// "gzip, chunked" gives "gzip": the bytes relayed are gzip-coded and must be labelled so.
std::string remaining_transfer_codings(const boost::beast::http::fields& fields, bool chunked);

}  // namespace netbox::proxy
