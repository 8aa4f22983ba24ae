#pragma once
// Where a client's token travels to the proxy: in HTTP, the Proxy-Authorization header
// ("Basic base64(USER:TOKEN)", which curl, git, pip and npm send for a proxy URL
// http://USER:TOKEN@host:port, or "Bearer TOKEN"); in SOCKS5, the password of the
// username/password method (RFC 1929), which socks5h://USER:TOKEN@host:port sends. USER
// is not checked: the token alone says who the client is.
#include <optional>
#include <string>
#include <string_view>

namespace netbox::tokens {

// The token in a Proxy-Authorization value, or nullopt when it carries none we read.
std::optional<std::string> token_from_proxy_authorization(std::string_view value);

}  // namespace netbox::tokens
