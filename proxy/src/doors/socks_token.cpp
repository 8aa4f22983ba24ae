// The SOCKS5 door's client token (client_tokens.hpp): on a proxy with --client-tokens, a
// client that would be `anonymous` shows its token as the password of RFC 1929's
// username/password sub-negotiation; it then is the token's agent for the connection.
#include "doors/socks_session.hpp"

#include "pipeline/policy_answer.hpp"

namespace netbox::proxy {

bool SocksSession::needs_token() const { return impl_.client_tokens && conn_.who.is_anonymous(); }

bool SocksSession::take_token(const std::string& password) {
  auto v = impl_.client_tokens->identify(password, *conn_.policy);
  if (!v.who) {
    refuse_token(std::move(v.why), socks::credentials_status(false));
    return false;
  }
  if (v.who->is_anonymous()) return true;
  conn_.become(std::move(*v.who), impl_);
  conn_.token = std::move(v.held);  // plain HTTP carried on it checks it again per request
  conn_.bind(exchange_);
  return true;
}

// The row of a client refused for its token: no request was read, so it names the handshake.
void SocksSession::refuse_token(std::string why, std::array<std::uint8_t, 2> answer) {
  exchange_.begin();
  exchange_.kind("socks");
  auto no = refusal_of(policy::Decision::refused("client_token", std::move(why)), 407);
  no.what = "SOCKS5 authentication";
  exchange_.refuse(no, {});
  send_handshake(answer, true);
}

}  // namespace netbox::proxy
