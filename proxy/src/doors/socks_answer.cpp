#include "doors/socks_answer.hpp"

#include "pipeline/denial.hpp"

namespace netbox::proxy {
namespace {

std::string bytes_of(socks::Reply code) {
  const auto bytes = socks::reply(code);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace

socks::Reply socks_reply_for(Outcome outcome) {
  // A refusal by the policy or a limit is "not allowed"; anything else failed.
  return refused_by_policy(outcome) || outcome == Outcome::cap ? socks::Reply::not_allowed
                                                             : socks::Reply::general_failure;
}

socks::Reply socks_reply_for(DialFailure failure) {
  switch (failure) {
    case DialFailure::refused: return socks::Reply::connection_refused;
    case DialFailure::timeout: return socks::Reply::ttl_expired;
    case DialFailure::other: return socks::Reply::host_unreachable;
    case DialFailure::none:
    case DialFailure::descriptors: break;
  }
  return socks::Reply::general_failure;
}

DoorAnswer socks_answer() {
  return {bytes_of(socks::Reply::succeeded), [](const Snag& s) {
            // A name that does not resolve is unreachable; any other refusal is the ruleset's or netbox's.
            if (s.dial != DialFailure::none) return bytes_of(socks_reply_for(s.dial));
            if (s.unresolved) return bytes_of(socks::Reply::host_unreachable);
            return bytes_of(socks_reply_for(s.refusal.outcome));
          }};
}

}  // namespace netbox::proxy
