#include "netbox/policy/decide.hpp"

namespace netbox::policy {

Destination decide_destination(const Profile& profile, const Host& host, uint16_t port, const Decision& name,
                               std::span<const boost::asio::ip::address> addresses,
                               const OwnEndpoint& own_endpoint) {
  Destination out;
  std::optional<Decision> chosen;
  std::optional<Decision> first_deny;
  out.allowed.reserve(addresses.size());
  for (const auto& a : addresses) {
    auto d = decide_address(profile, host, port, a);
    // netbox itself is never a destination, whatever the mode.
    if (own_endpoint)
      if (auto why = own_endpoint(a, port); !why.empty()) d = {Verdict::deny, "netbox", std::move(why)};
    if (d.lets_through()) {
      if (out.allowed.empty()) out.shown = a;
      out.allowed.push_back(a);
      if (!chosen) chosen = std::move(d);
    } else if (!first_deny) {
      first_deny = std::move(d);
      if (out.allowed.empty()) out.shown = a;  // the address the refusal's reason is about
    }
  }
  if (out.allowed.empty()) {
    // No address at all (an empty answer) is refused too: nothing could be dialled.
    out.decision = first_deny ? std::move(*first_deny)
                              : Decision{Verdict::deny, "", host.name + " resolved to no address"};
    return out;
  }
  // A report on either step is what the row must show; otherwise the address decision.
  if (chosen->verdict == Verdict::report) out.decision = std::move(*chosen);
  else if (name.verdict == Verdict::report) out.decision = name;
  else out.decision = std::move(*chosen);
  return out;
}

}  // namespace netbox::policy
