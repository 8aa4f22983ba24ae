#include "pipeline/client_identity.hpp"

#include "netbox/proxy/endpoint.hpp"

#include "base/door_services.hpp"

namespace netbox::proxy {

std::optional<AgentIdentity> identify_client(DoorServices& rt, boost::asio::ip::tcp::socket& s, std::string_view door) {
  boost::system::error_code local_ec, peer_ec;
  const auto local = s.local_endpoint(local_ec);
  const auto peer = s.remote_endpoint(peer_ec);
  std::optional<AgentIdentity> who;
  if (!local_ec && !peer_ec) who = rt.agents.identify(local, peer.address(), netns_cookie(s.native_handle()));
  // Who opened it (issue 27), looked up off the io thread; the rows take the answer.
  if (who && who->netns) who->origin = rt.attribution.look_up(who->netns, s);
  if (who) return who;
  if (!local_ec && !peer_ec) note_foreign_source(rt, door, endpoint_text(local), endpoint_text(peer));
  boost::system::error_code ignored;
  s.set_option(boost::asio::socket_base::linger(true, 0), ignored);
  s.close(ignored);
  return std::nullopt;
}

ClientSlotResult acquire_client_slot(DoorServices& rt, boost::asio::ip::tcp::socket& s,
                                     const boost::asio::ip::address& peer) {
  const std::uint64_t netns = netns_cookie(s.native_handle());
  // An agent known by its sockets is counted under its key, whatever address it comes from.
  if (netns != 0 && netns != rt.agents.own_netns()) return rt.client_slots->acquire(netns_key(netns));
  return rt.client_slots->acquire(rt.agents.lookup(peer).slot_address(peer));
}

void note_foreign_source(DoorServices& rt, std::string_view door, const std::string& local, const std::string& peer) {
  rt.counters.foreign_sources_refused.fetch_add(1);
  if (rt.foreign_source_log.note())
    rt.log.write(log_event::foreign_source_refused, {{log_key::door, door},
                                                     {log_key::listener, local},
                                                     {log_key::client, peer},
                                                     {log_key::count, rt.foreign_source_log.take()}});
}

}  // namespace netbox::proxy
