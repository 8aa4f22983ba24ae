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

}  // namespace

std::string host_table_name(const std::string& veth) { return kTablePrefix + veth; }

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
  // whole ruleset into its cache.
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
