#include "http/upgraded_request.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/rfc7230.hpp>

namespace netbox::proxy {

namespace http = boost::beast::http;

namespace {

// Whether a field's comma-separated tokens include `token` (case-insensitive).
bool lists(const http::fields& fields, http::field name, std::string_view token) {
  for (auto [it, end] = fields.equal_range(name); it != end; ++it)
    for (auto t : http::token_list(it->value()))
      if (boost::beast::iequals(t, token)) return true;
  return false;
}

// The protocols an Upgrade names, as the agent wrote them (for the reason).
std::string protocols(const http::fields& fields) {
  std::string out;
  for (auto [it, end] = fields.equal_range(http::field::upgrade); it != end; ++it) {
    if (!out.empty()) out += ", ";
    out += it->value();
  }
  return out.substr(0, 128);
}

Refusal refusal(unsigned status, std::string reason) {
  return {status, Outcome::error, {}, "upgrade", std::move(reason), {}};
}

}  // namespace

UpgradeCheck check_upgrade(const http::request_header<>& req, bool had_body) {
  if (req.find(http::field::upgrade) == req.end()) return {};
  bool websocket = false;
  bool other = false;
  for (auto [it, end] = req.equal_range(http::field::upgrade); it != end; ++it)
    for (auto t : http::token_list(it->value())) (boost::beast::iequals(t, "websocket") ? websocket : other) = true;
  const auto named = protocols(req);
  if (lists(req, http::field::upgrade, "h2c") || (other && !websocket && named.rfind("HTTP/2", 0) == 0))
    return {UpgradeAsk::none,
            refusal(501, "netbox relays HTTP/1.1 only; the upgrade to h2c (HTTP/2 over cleartext) is refused: send "
                         "the request without Upgrade")};
  if (other || !websocket)
    return {UpgradeAsk::none, refusal(501, "netbox carries an upgrade to websocket only, not to '" + named +
                                               "': send the request without Upgrade")};
  // A WebSocket handshake (RFC 6455, 4.1): GET, HTTP/1.1, Connection naming the upgrade, no body.
  if (req.method() != http::verb::get || req.version() < 11)
    return {UpgradeAsk::none, refusal(400, "a WebSocket handshake is a GET request in HTTP/1.1")};
  if (!lists(req, http::field::connection, "upgrade"))
    return {UpgradeAsk::none, refusal(400, "a request with Upgrade: websocket must list upgrade in Connection")};
  if (had_body) return {UpgradeAsk::none, refusal(400, "a WebSocket handshake has no body")};
  return {UpgradeAsk::websocket, std::nullopt};
}

bool switches_to_websocket(const http::response_header<>& res) {
  return lists(res, http::field::upgrade, "websocket") && lists(res, http::field::connection, "upgrade");
}

}  // namespace netbox::proxy
