// Which limits.destinations entries cover a host, most specific first.
#include "netbox/policy/policy.hpp"

#include <algorithm>
#include <tuple>

namespace netbox::policy {

std::string DestinationLimits::cite() const { return host.cite(); }

std::vector<const DestinationLimits*> destination_limits_for(const Limits& limits, const std::string& host,
                                                             std::uint16_t port) {
  std::vector<const DestinationLimits*> out;
  for (const auto& d : limits.destinations)
    if ((!d.host.port || *d.host.port == port) && d.host.covers_name(host)) out.push_back(&d);
  // Exact before wildcard; a longer suffix (*.api.github.com) before a shorter one
  // (*.github.com); an entry with its own :port before one for every port; then file order.
  auto rank = [](const DestinationLimits* d) {
    return std::tuple(d->host.kind != Rule::Kind::exact_host, -static_cast<long>(d->host.host.size()),
                      !d->host.port.has_value(), d->host.index);
  };
  std::stable_sort(out.begin(), out.end(), [&](auto* a, auto* b) { return rank(a) < rank(b); });
  return out;
}

}  // namespace netbox::policy
