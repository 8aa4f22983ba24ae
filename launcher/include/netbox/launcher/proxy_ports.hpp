#pragma once
// The proxy's ports on the host side of an agent's veth, as the proxy answered its
// attachment: what the agent's environment names and its nftables rules let through.
#include <cstdint>
#include <vector>

namespace netbox::launcher {

struct ProxyPorts {
  std::uint16_t http = 0;   // HTTP_PROXY / HTTPS_PROXY: forward and CONNECT
  std::uint16_t socks = 0;  // ALL_PROXY=socks5h://; 0 when the proxy offers no SOCKS5 listener
  std::uint16_t capture = 0;  // the transparent listener other TCP is DNATed to; 0: no capture

  // Every TCP port of the proxy the agent's packets may reach, for the firewall rules.
  std::vector<std::uint16_t> tcp() const {
    std::vector<std::uint16_t> out{http};
    if (socks) out.push_back(socks);
    if (capture) out.push_back(capture);
    return out;
  }
};

}  // namespace netbox::launcher
