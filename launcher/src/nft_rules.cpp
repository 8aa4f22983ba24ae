#include "netbox/launcher/nft_rules.hpp"

// The rules are built as nf_tables netlink messages with libnftnl and sent in one batch
// (one transaction, as `nft -f` sends them) over libmnl. libnftables would parse the same
// rules from text, but it costs every launch its loading (with libxtables, libjansson and
// libgmp) and the 128 KiB hash tables of its cache, built and zeroed at each call
// (tests/bench/RESULTS.md, B6). The expressions are the ones `nft --debug=netlink` shows
// for the text rules in the comments.
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

namespace netbox::launcher {
namespace {

constexpr const char* kTablePrefix = "netbox_";
constexpr const char* kLinkTable = "netbox";
// Larger than the 8 KiB a netlink message may take (MNL_SOCKET_BUFFER_SIZE), so a dump
// of many tables comes in fewer reads.
constexpr std::size_t kReceiveBuffer = 65536;

struct SocketClose {
  void operator()(mnl_socket* s) const { mnl_socket_close(s); }
};
using NetlinkSocket = std::unique_ptr<mnl_socket, SocketClose>;

// What failed and the kernel's errno, so a caller can tell "no such table" apart.
struct NftError : std::runtime_error {
  NftError(const std::string& what, int e) : std::runtime_error("nftables: " + what + ": " + std::strerror(e)), err(e) {}
  int err;
};

[[noreturn]] void fail(const std::string& what, int err) { throw NftError(what, err); }

NetlinkSocket open_netlink(const std::string& what) {
  NetlinkSocket nl(mnl_socket_open(NETLINK_NETFILTER));
  if (!nl || mnl_socket_bind(nl.get(), 0, MNL_SOCKET_AUTOPID) < 0) fail(what, errno);
  // The kernel answers a batch at once; a bound keeps a kernel that never answers from
  // holding the launch forever.
  timeval bound{5, 0};
  setsockopt(mnl_socket_get_fd(nl.get()), SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  return nl;
}

// One nf_tables transaction: every message asks for an answer, and the kernel answers
// each (an error or an acknowledgement) once the whole batch committed or aborted.
class Batch {
 public:
  // libmnl writes a message before it tells the batch is past its limit: the buffer is
  // twice the limit, as its documentation asks.
  Batch() : batch_(mnl_nlmsg_batch_start(buf_.data(), buf_.size() / 2)) {
    nftnl_batch_begin(static_cast<char*>(mnl_nlmsg_batch_current(batch_)), seq_++);
    mnl_nlmsg_batch_next(batch_);
  }
  ~Batch() { mnl_nlmsg_batch_stop(batch_); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  nlmsghdr* message(uint16_t type, uint16_t flags) {
    nlmsghdr* nlh = nftnl_nlmsg_build_hdr(static_cast<char*>(mnl_nlmsg_batch_current(batch_)), type, NFPROTO_INET,
                                          flags | NLM_F_ACK, seq_++);
    ++answers_;
    return nlh;
  }
  void next() {
    if (!mnl_nlmsg_batch_next(batch_)) throw std::logic_error("nftables: the rules outgrew the batch buffer");
  }

  void commit(const std::string& what) {
    nftnl_batch_end(static_cast<char*>(mnl_nlmsg_batch_current(batch_)), seq_++);
    // A batch sent without its end is only checked by the kernel, never committed.
    next();
    NetlinkSocket nl = open_netlink(what);
    if (mnl_socket_sendto(nl.get(), mnl_nlmsg_batch_head(batch_), mnl_nlmsg_batch_size(batch_)) < 0) fail(what, errno);
    std::vector<char> in(kReceiveBuffer);
    for (int answered = 0; answered < answers_;) {
      ssize_t n = mnl_socket_recvfrom(nl.get(), in.data(), in.size());
      if (n < 0) fail(what, errno == EAGAIN ? ETIMEDOUT : errno);
      int len = static_cast<int>(n);
      for (auto* h = reinterpret_cast<nlmsghdr*>(in.data()); mnl_nlmsg_ok(h, len); h = mnl_nlmsg_next(h, &len)) {
        if (h->nlmsg_type != NLMSG_ERROR) continue;
        const auto* e = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(h));
        if (e->error != 0) fail(what, -e->error);
        ++answered;
      }
    }
  }

 private:
  std::array<char, 32768> buf_{};
  mnl_nlmsg_batch* batch_;
  uint32_t seq_ = 1;
  int answers_ = 0;
};

// The expressions of one rule, in order.
class Rule {
 public:
  explicit Rule(const char* chain) : rule_(nftnl_rule_alloc()) {
    if (!rule_) throw std::bad_alloc();
    nftnl_rule_set_u32(rule_.get(), NFTNL_RULE_FAMILY, NFPROTO_INET);
    nftnl_rule_set_str(rule_.get(), NFTNL_RULE_TABLE, kLinkTable);
    nftnl_rule_set_str(rule_.get(), NFTNL_RULE_CHAIN, chain);
  }

  // meta KEY == value (one byte: nfproto, l4proto)
  Rule& meta_is(uint32_t key, uint8_t value) {
    nftnl_expr* e = add("meta");
    nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
    nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
    return equals(&value, 1);
  }
  // LEN bytes at OFFSET of the header BASE == data
  Rule& payload_is(uint32_t base, uint32_t offset, const void* data, uint32_t len) {
    nftnl_expr* e = add("payload");
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
    return equals(data, len);
  }
  Rule& ct_direction_is(uint8_t direction) {
    nftnl_expr* e = add("ct");
    nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, NFT_CT_DIRECTION);
    nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
    return equals(&direction, 1);
  }
  Rule& load(uint32_t reg, const void* data, uint32_t len) {
    nftnl_expr* e = add("immediate");
    nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, reg);
    nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, data, len);
    return *this;
  }
  Rule& verdict(int32_t verdict) {
    nftnl_expr* e = add("immediate");
    nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
    nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, static_cast<uint32_t>(verdict));
    return *this;
  }
  Rule& reject(uint32_t type, uint8_t code) {
    nftnl_expr* e = add("reject");
    nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, type);
    nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, code);
    return *this;
  }
  // dnat ip to reg 1 : reg 2
  Rule& dnat_ipv4() {
    nftnl_expr* e = add("nat");
    nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_TYPE, NFT_NAT_DNAT);
    nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FAMILY, NFPROTO_IPV4);
    nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_ADDR_MIN, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_PROTO_MIN, NFT_REG_2);
    nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FLAGS, NF_NAT_RANGE_PROTO_SPECIFIED);
    return *this;
  }
  // redirect to : reg 1
  Rule& redirect() {
    nftnl_expr* e = add("redir");
    nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MIN, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_FLAGS, NF_NAT_RANGE_PROTO_SPECIFIED);
    return *this;
  }

  void append_to(Batch& batch) const {
    nftnl_rule_nlmsg_build_payload(batch.message(NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND), rule_.get());
    batch.next();
  }

 private:
  struct Free {
    void operator()(nftnl_rule* r) const { nftnl_rule_free(r); }
  };

  nftnl_expr* add(const char* name) {
    nftnl_expr* e = nftnl_expr_alloc(name);
    if (!e) throw std::bad_alloc();
    nftnl_rule_add_expr(rule_.get(), e);  // the rule owns it from here
    return e;
  }
  Rule& equals(const void* data, uint32_t len) {
    nftnl_expr* e = add("cmp");
    nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, NFT_CMP_EQ);
    nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
    return *this;
  }

  std::unique_ptr<nftnl_rule, Free> rule_;
};

void add_table(Batch& batch, uint16_t type, const std::string& name) {
  std::unique_ptr<nftnl_table, decltype(&nftnl_table_free)> t(nftnl_table_alloc(), nftnl_table_free);
  if (!t) throw std::bad_alloc();
  nftnl_table_set_u32(t.get(), NFTNL_TABLE_FAMILY, NFPROTO_INET);
  nftnl_table_set_str(t.get(), NFTNL_TABLE_NAME, name.c_str());
  nftnl_table_nlmsg_build_payload(batch.message(type, type == NFT_MSG_NEWTABLE ? NLM_F_CREATE : 0), t.get());
  batch.next();
}

void add_base_chain(Batch& batch, const char* name, const char* type, int32_t priority, uint32_t policy) {
  std::unique_ptr<nftnl_chain, decltype(&nftnl_chain_free)> c(nftnl_chain_alloc(), nftnl_chain_free);
  if (!c) throw std::bad_alloc();
  nftnl_chain_set_str(c.get(), NFTNL_CHAIN_TABLE, kLinkTable);
  nftnl_chain_set_str(c.get(), NFTNL_CHAIN_NAME, name);
  nftnl_chain_set_str(c.get(), NFTNL_CHAIN_TYPE, type);
  nftnl_chain_set_u32(c.get(), NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
  nftnl_chain_set_s32(c.get(), NFTNL_CHAIN_PRIO, priority);
  nftnl_chain_set_u32(c.get(), NFTNL_CHAIN_POLICY, policy);
  nftnl_chain_nlmsg_build_payload(batch.message(NFT_MSG_NEWCHAIN, NLM_F_CREATE), c.get());
  batch.next();
}

constexpr uint8_t kIpv4 = NFPROTO_IPV4;
constexpr uint8_t kIpv6 = NFPROTO_IPV6;
constexpr uint8_t kLoopbackNet = 127;  // the first byte of 127.0.0.0/8
constexpr uint32_t kIpv4Daddr = 16;    // offsets in the network header
constexpr uint32_t kIpv6Daddr = 24;
constexpr uint8_t kReplyDirection = 1;  // IP_CT_DIR_REPLY

// ip daddr 127.0.0.0/8 VERDICT; ip6 daddr ::1 VERDICT
void loopback_rules(Batch& batch, const char* chain, int32_t verdict) {
  Rule(chain).meta_is(NFT_META_NFPROTO, kIpv4).payload_is(NFT_PAYLOAD_NETWORK_HEADER, kIpv4Daddr, &kLoopbackNet, 1)
      .verdict(verdict).append_to(batch);
  Rule(chain).meta_is(NFT_META_NFPROTO, kIpv6)
      .payload_is(NFT_PAYLOAD_NETWORK_HEADER, kIpv6Daddr, &in6addr_loopback, sizeof in6addr_loopback)
      .verdict(verdict).append_to(batch);
}

// Every address is local (add_local_default_route): what is not loopback is captured,
// DNS to the view's sockets, any other TCP to the capture socket (SO_ORIGINAL_DST reads
// the address the agent dialled back from this namespace's conntrack).
void capture_chain(Batch& batch, uint16_t capture_port, const std::string& dns_addr) {
  in_addr dns{};
  if (inet_pton(AF_INET, dns_addr.c_str(), &dns) != 1)
    throw std::invalid_argument("nftables: the DNS view's address " + dns_addr + " is not IPv4");
  add_base_chain(batch, "capture", "nat", -100, NF_ACCEPT);
  loopback_rules(batch, "capture", NFT_RETURN);
  const uint16_t dns_port = htons(53);
  // meta nfproto ipv4 meta l4proto { tcp, udp } th dport 53 dnat ip to DNS:53
  for (uint8_t proto : {uint8_t{IPPROTO_TCP}, uint8_t{IPPROTO_UDP}})
    Rule("capture").meta_is(NFT_META_NFPROTO, kIpv4).meta_is(NFT_META_L4PROTO, proto)
        .payload_is(NFT_PAYLOAD_TRANSPORT_HEADER, 2, &dns_port, 2)
        .load(NFT_REG_1, &dns, sizeof dns).load(NFT_REG_2, &dns_port, 2).dnat_ipv4().append_to(batch);
  // meta l4proto tcp redirect to :CAPTURE
  const uint16_t port = htons(capture_port);
  Rule("capture").meta_is(NFT_META_L4PROTO, IPPROTO_TCP).load(NFT_REG_1, &port, 2).redirect().append_to(batch);
}

// Loopback only (after the capture, the proxy's sockets are loopback too), and the
// answers of the capture and DNS sockets, which go back to the address the agent dialled
// (every address is local here) until conntrack restores it; everything else is refused
// at once rather than left to time out: other UDP, ICMP, QUIC.
void output_chain(Batch& batch) {
  add_base_chain(batch, "output", "filter", 0, NF_DROP);
  loopback_rules(batch, "output", NF_ACCEPT);
  Rule("output").ct_direction_is(kReplyDirection).verdict(NF_ACCEPT).append_to(batch);
  Rule("output").meta_is(NFT_META_L4PROTO, IPPROTO_TCP).reject(NFT_REJECT_TCP_RST, 0).append_to(batch);
  Rule("output").reject(NFT_REJECT_ICMPX_UNREACH, NFT_REJECT_ICMPX_ADMIN_PROHIBITED).append_to(batch);
}

int collect_table_name(const nlmsghdr* nlh, void* data) {
  std::unique_ptr<nftnl_table, decltype(&nftnl_table_free)> t(nftnl_table_alloc(), nftnl_table_free);
  if (!t || nftnl_table_nlmsg_parse(nlh, t.get()) < 0) return MNL_CB_ERROR;
  if (const char* name = nftnl_table_get_str(t.get(), NFTNL_TABLE_NAME))
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return MNL_CB_OK;
}

}  // namespace

std::string host_table_name(const std::string& veth) { return kTablePrefix + veth; }

void install_link_rules(const ProxyPorts& ports, const std::string& dns_addr) {
  Batch batch;
  add_table(batch, NFT_MSG_NEWTABLE, kLinkTable);
  if (ports.capture) capture_chain(batch, ports.capture, dns_addr);
  output_chain(batch);
  batch.commit("installing the agent's capture rules");
}

namespace {

std::vector<std::string> dump_tables(const std::string& what) {
  NetlinkSocket nl = open_netlink(what);
  std::vector<char> buf(kReceiveBuffer);
  const uint32_t seq = 1;
  nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf.data(), NFT_MSG_GETTABLE, NFPROTO_INET, NLM_F_DUMP, seq);
  if (mnl_socket_sendto(nl.get(), nlh, nlh->nlmsg_len) < 0) fail(what, errno);
  std::vector<std::string> all;
  const unsigned portid = mnl_socket_get_portid(nl.get());
  int r = MNL_CB_OK;
  while (r > MNL_CB_STOP) {
    ssize_t n = mnl_socket_recvfrom(nl.get(), buf.data(), buf.size());
    if (n < 0) fail(what, errno == EAGAIN ? ETIMEDOUT : errno);
    r = mnl_cb_run(buf.data(), static_cast<size_t>(n), seq, portid, collect_table_name, &all);
    if (r == MNL_CB_ERROR) fail(what, errno);
  }
  return all;
}

}  // namespace

std::vector<std::string> list_host_tables() {
  // A dump the ruleset changed under (another launch's rules) ends with EINTR: asked again.
  std::vector<std::string> all;
  for (int attempt = 1;; ++attempt) {
    try {
      all = dump_tables("listing tables");
      break;
    } catch (const NftError& e) {
      if (e.err != EINTR || attempt == 5) throw;
    }
  }
  std::vector<std::string> names;
  for (auto& name : all)
    if (name.starts_with(std::string(kTablePrefix) + "nbx")) names.push_back(std::move(name));
  return names;
}

bool remove_host_rules(const std::string& veth) {
  const std::string table = host_table_name(veth);
  Batch batch;
  add_table(batch, NFT_MSG_DELTABLE, table);
  try {
    batch.commit("removing table " + table);
  } catch (const NftError& e) {
    if (e.err == ENOENT) return false;
    throw;
  }
  return true;
}

}  // namespace netbox::launcher
