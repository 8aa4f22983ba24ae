#include "netbox/launcher/nft_rules.hpp"

#include <nftables/libnftables.h>

#include <memory>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace netbox::launcher {
namespace {

constexpr const char* kTablePrefix = "netbox_";

struct CtxFree {
  void operator()(nft_ctx* ctx) const { nft_ctx_free(ctx); }
};

// One libnftables context per call: cheap, and never shared between threads.
class Nft {
 public:
  Nft() : ctx_(nft_ctx_new(NFT_CTX_DEFAULT)) {
    if (!ctx_) throw std::runtime_error("libnftables: cannot create a context");
    nft_ctx_buffer_output(ctx_.get());
    nft_ctx_buffer_error(ctx_.get());
  }
  // Returns the command's output; throws with nft's own message on failure.
  std::string run(const std::string& commands, const std::string& what) {
    if (nft_run_cmd_from_buffer(ctx_.get(), commands.c_str()) != 0) {
      const char* err = nft_ctx_get_error_buffer(ctx_.get());
      throw std::runtime_error("nftables: " + what + ": " + (err ? err : "failed"));
    }
    const char* out = nft_ctx_get_output_buffer(ctx_.get());
    return out ? out : "";
  }

 private:
  std::unique_ptr<nft_ctx, CtxFree> ctx_;
};

// "3128" or "{ 3128, 1080 }": one rule for every port the agent may reach.
std::string port_set(const ProxyPorts& ports) {
  const auto tcp = ports.tcp();
  if (tcp.size() == 1) return std::to_string(tcp.front());
  std::string s = "{ ";
  for (std::size_t i = 0; i < tcp.size(); ++i) s += (i ? ", " : "") + std::to_string(tcp[i]);
  return s + " }";
}

}  // namespace

std::string host_table_name(const std::string& veth) { return kTablePrefix + veth; }

// Neighbour discovery on the link: without it no IPv6 packet reaches the host side.
constexpr const char* kNeighbourDiscovery = "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept\n";

void install_agent_rules(const std::string& proxy_addr, const ProxyPorts& ports, bool dns,
                         const std::string& proxy_addr6) {
  std::ostringstream r;
  // policy drop is the backstop; the reject rules make every other attempt fail at
  // once instead of after a timeout.
  r << "table inet netbox {\n"
       "  chain output {\n"
       "    type filter hook output priority 0; policy drop;\n"
       "    oifname \"lo\" accept\n"
    << "    ip daddr " << proxy_addr << " tcp dport " << port_set(ports) << " accept\n";
  if (dns) r << "    ip daddr " << proxy_addr << " meta l4proto { tcp, udp } th dport 53 accept\n";
  // Captured: every TCP connection goes out to the host side, whose prerouting sends it
  // to the proxy's capture port (the conntrack that knows the original destination must
  // be the proxy's, so the DNAT is the host's, see install_host_rules).
  // IPv6 only with IPv6 on the link: else the namespace has no IPv6 route but link-local,
  // the host side has IPv6 off, and an IPv6 connection let out would hang; the reset below
  // refuses it at once.
  if (ports.capture) r << "    meta nfproto ipv4 meta l4proto tcp accept\n";
  if (ports.capture && !proxy_addr6.empty())
    r << "    meta nfproto ipv6 meta l4proto tcp accept\n"
      << "    " << kNeighbourDiscovery;
  r << "    meta l4proto tcp reject with tcp reset\n"
       "    reject with icmpx type admin-prohibited\n"
       "  }\n"
       "}\n";
  Nft().run(r.str(), "installing the agent's output rules");
}

void install_host_rules(const std::string& veth, const LinkAddresses& link, const ProxyPorts& ports, bool dns) {
  const std::string& proxy_addr = link.host;
  const std::string& proxy_addr6 = link.host6;
  const bool v6 = ports.capture && !proxy_addr6.empty();
  const std::string iif = "iifname \"" + veth + "\" ";
  std::ostringstream r;
  r << "table inet " << host_table_name(veth) << " {\n";
  // What comes from the link with a source other than the agent's registered addresses
  // (one it made up: an IPv6 link-local address needs no privilege, IP_FREEBIND binds any):
  // counted and refused, so it never reaches the proxy, which would not know it as this
  // agent's. Input is the only way in from the link (forward drops it all), and every
  // captured connection passes it after its DNAT. A link-local source is answered at once
  // (ICMPv6 goes back out the link it came in on; a TCP reset to it would be routed by
  // address alone); any other is dropped, as an answer would go to whoever owns it.
  r << "  chain foreign_source {\n"
       "    counter\n"
       "    ip6 saddr fe80::/10 reject with icmpx type admin-prohibited\n"
       "    drop\n"
       "  }\n";
  // Priority -10 runs before ordinary host firewalls, so the agent's veth is closed
  // whatever else the host accepts (services on 0.0.0.0 included).
  r << "  chain input {\n"
       "    type filter hook input priority -10; policy accept;\n";
  // Neighbour discovery first: link-local ND (from fe80::, or :: while detecting
  // duplicates) is what makes the agent's IPv6 address reachable at all.
  if (v6) r << "    " << iif << kNeighbourDiscovery;
  r << "    " << iif << "ip saddr != " << link.agent << " jump foreign_source\n";
  if (v6) r << "    " << iif << "ip6 saddr != " << link.agent6 << " jump foreign_source\n";
  else r << "    " << iif << "meta nfproto ipv6 jump foreign_source\n";
  r << "    " << iif << "ip daddr " << proxy_addr << " tcp dport " << port_set(ports) << " accept\n";
  if (dns) r << "    " << iif << "ip daddr " << proxy_addr << " meta l4proto { tcp, udp } th dport 53 accept\n";
  if (v6) r << "    " << iif << "ip6 daddr " << proxy_addr6 << " tcp dport " << ports.capture << " accept\n";
  r << "    " << iif << "meta l4proto tcp reject with tcp reset\n"
    << "    " << iif << "reject with icmpx type admin-prohibited\n"
    << "  }\n";
  if (ports.capture) {
    // Every other TCP connection from the agent to the capture port, before routing: the
    // proxy reads the original destination back from this conntrack (SO_ORIGINAL_DST).
    // What is not NATed (no new connection) finds input rejecting and forward dropping.
    // The proxy's own ports (HTTP, SOCKS5, DNS, capture) are left alone.
    std::string own = "{ 53";
    for (auto p : ports.tcp()) own += ", " + std::to_string(p);
    own += " }";
    r << "  chain capture {\n"
         "    type nat hook prerouting priority -100; policy accept;\n"
      << "    " << iif << "ip daddr " << proxy_addr << " tcp dport " << own << " return\n"
      << "    " << iif << "meta nfproto ipv4 meta l4proto tcp dnat ip to " << proxy_addr << ":" << ports.capture
      << "\n";
    // IPv6: only the capture port itself is the proxy's there; every other connection,
    // to the host side's own address included, is captured and decided like a CONNECT.
    if (v6)
      r << "    " << iif << "ip6 daddr " << proxy_addr6 << " tcp dport " << ports.capture << " return\n"
        << "    " << iif << "meta nfproto ipv6 meta l4proto tcp dnat ip6 to [" << proxy_addr6 << "]:" << ports.capture
        << "\n";
    r << "  }\n";
  }
  r << "  chain forward {\n"
       "    type filter hook forward priority -10; policy accept;\n"
    << "    " << iif << "drop\n"
    << "    oifname \"" << veth << "\" drop\n"
    << "  }\n"
       "}\n";
  Nft().run(r.str(), "installing host rules for " + veth);
}

void install_link_rules(const ProxyPorts& ports, const std::string& dns_addr) {
  std::ostringstream r;
  r << "table inet netbox {\n";
  if (ports.capture) {
    // Every address is local (add_local_default_route): what is not loopback is captured,
    // DNS to the view's sockets, any other TCP to the capture socket (SO_ORIGINAL_DST
    // reads the address the agent dialled back from this namespace's conntrack).
    r << "  chain capture {\n"
         "    type nat hook output priority -100; policy accept;\n"
         "    ip daddr 127.0.0.0/8 return\n"
         "    ip6 daddr ::1 return\n"
      << "    meta nfproto ipv4 meta l4proto { tcp, udp } th dport 53 dnat ip to " << dns_addr << ":53\n"
      << "    meta l4proto tcp redirect to :" << ports.capture << "\n"
      << "  }\n";
  }
  // Loopback only (after the capture, the proxy's sockets are loopback too), and the
  // answers of the capture and DNS sockets, which go back to the address the agent dialled
  // (every address is local here) until conntrack restores it; everything else is refused
  // at once rather than left to time out: other UDP, ICMP, QUIC.
  r << "  chain output {\n"
       "    type filter hook output priority 0; policy drop;\n"
       "    ip daddr 127.0.0.0/8 accept\n"
       "    ip6 daddr ::1 accept\n"
       "    ct direction reply accept\n"
       "    meta l4proto tcp reject with tcp reset\n"
       "    reject with icmpx type admin-prohibited\n"
       "  }\n"
       "}\n";
  Nft().run(r.str(), "installing the agent's capture rules");
}

std::vector<std::string> list_host_tables() {
  std::string out = Nft().run("list tables inet", "listing tables");
  std::vector<std::string> names;
  std::istringstream lines(out);
  std::string word, family, name;
  while (lines >> word >> family >> name)
    if (word == "table" && name.starts_with(std::string(kTablePrefix) + "nbx")) names.push_back(name);
  return names;
}

bool remove_host_rules(const std::string& veth) {
  const std::string table = host_table_name(veth);
  // Deleting outright instead of listing first: each libnftables command dumps the host's
  // whole ruleset into its cache, and this runs on every launch's way out.
  Nft nft;
  try {
    nft.run("delete table inet " + table, "removing table " + table);
  } catch (const std::runtime_error& e) {
    if (std::string_view(e.what()).find("No such file or directory") != std::string_view::npos) return false;
    throw;
  }
  return true;
}

}  // namespace netbox::launcher
