#pragma once
// Reading the destination out of a request target: absolute-form for plain HTTP
// ("http://host:port/path?q"), authority-form for CONNECT ("host:port"). The target is
// the only truth about the destination; the Host header is never consulted.
#include <cstdint>
#include <string>
#include <string_view>

namespace netbox::proxy {

struct Target {
  std::string host;           // as written, brackets removed from IPv6 literals
  std::uint16_t port = 0;
  std::string path_and_query; // origin-form to send upstream ("/" when absent)
  std::string path;           // without the query, for the audit log
  std::string error;          // empty when the target is usable
};

Target parse_absolute_target(std::string_view target);
Target parse_connect_target(std::string_view target);

// The Host header for the upstream: the normalised host the policy decided on (never the
// spelling the agent used), brackets around IPv6 literals, the port omitted when it is
// the scheme's default (80 for http, 443 for https).
std::string host_header(std::string_view host, std::uint16_t port, std::uint16_t default_port);

// "host:port", with brackets around IPv6 literals.
std::string authority(std::string_view host, std::uint16_t port);

}  // namespace netbox::proxy
