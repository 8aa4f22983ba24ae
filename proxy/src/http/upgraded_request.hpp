#pragma once
// What an `Upgrade` on a request asks for (issue 23): a WebSocket is carried on every HTTP
// path (the request is decided like any other; after the upstream's 101 the connection
// becomes an UpgradedRelay, upgraded_relay.hpp); anything else (h2c, TLS/1.0, a made-up
// protocol) is refused with a reason, never stripped into a different request that the
// upstream would answer as if no upgrade had been asked for.
#include "pipeline/denial.hpp"

#include <boost/beast/http/message.hpp>

#include <optional>
#include <string>

namespace netbox::proxy {

enum class UpgradeAsk { none, websocket };

// The refusal for a request whose Upgrade netbox does not carry (501 for a protocol it
// does not relay, 400 for a WebSocket handshake that is not one), or the kind of upgrade.
// `had_body`: the request announced a body (a WebSocket handshake has none).
struct UpgradeCheck {
  UpgradeAsk ask = UpgradeAsk::none;
  std::optional<Refusal> refused;
};
UpgradeCheck check_upgrade(const boost::beast::http::request_header<>& req, bool had_body);

// The upstream's 101 switches to the WebSocket the request asked for: its Upgrade names
// websocket and its Connection lists upgrade.
bool switches_to_websocket(const boost::beast::http::response_header<>& res);

// The two hop-by-hop fields an upgrade needs, which every forwarded head otherwise loses.
inline constexpr std::string_view kUpgradeFields = "Connection: Upgrade\r\nUpgrade: websocket\r\n";

}  // namespace netbox::proxy
