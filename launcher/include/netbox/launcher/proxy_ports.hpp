#pragma once
// The proxy's ports on the agent's loopback (agent_link.hpp): what the agent's environment
// names and its nftables rules redirect to.
#include <cstdint>

namespace netbox::launcher {

struct ProxyPorts {
  std::uint16_t http = 0;   // HTTP_PROXY / HTTPS_PROXY: forward and CONNECT
  std::uint16_t socks = 0;  // ALL_PROXY=socks5h://; 0 when the proxy offers no SOCKS5 listener
  std::uint16_t capture = 0;  // the transparent listener other TCP is redirected to; 0: no capture
};

}  // namespace netbox::launcher
