#include "netbox/launcher/rtnetlink.hpp"

#include <arpa/inet.h>
#include <net/if.h>  // before the linux/ headers, which would redefine its names
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <stdexcept>
#include <vector>

namespace netbox::launcher {
namespace {

struct SocketCloser {
  void operator()(mnl_socket* s) const { mnl_socket_close(s); }
};

// Sends one request and waits for its acknowledgement. Returns 0 or an errno.
int request(nlmsghdr* nlh) {
  std::unique_ptr<mnl_socket, SocketCloser> nl(mnl_socket_open(NETLINK_ROUTE));
  if (!nl) return errno;
  if (mnl_socket_bind(nl.get(), 0, MNL_SOCKET_AUTOPID) < 0) return errno;
  unsigned portid = mnl_socket_get_portid(nl.get());
  auto seq = static_cast<unsigned>(std::time(nullptr));
  nlh->nlmsg_seq = seq;
  nlh->nlmsg_flags |= NLM_F_ACK;
  if (mnl_socket_sendto(nl.get(), nlh, nlh->nlmsg_len) < 0) return errno;
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  ssize_t n = mnl_socket_recvfrom(nl.get(), buf.data(), buf.size());
  while (n > 0) {
    int rc = mnl_cb_run(buf.data(), static_cast<size_t>(n), seq, portid, nullptr, nullptr);
    if (rc == -1) return errno;
    if (rc <= MNL_CB_STOP) return 0;
    n = mnl_socket_recvfrom(nl.get(), buf.data(), buf.size());
  }
  return n < 0 ? errno : 0;
}

void check(int err, const std::string& what) {
  if (err != 0) throw std::runtime_error(what + ": " + std::strerror(err));
}

unsigned index_of(const std::string& ifname) {
  unsigned index = if_nametoindex(ifname.c_str());
  if (index == 0) throw std::runtime_error("no network interface " + ifname + ": " + std::strerror(errno));
  return index;
}

class Message {
 public:
  Message(std::uint16_t type, std::uint16_t flags) : buf_(MNL_SOCKET_BUFFER_SIZE) {
    nlh_ = mnl_nlmsg_put_header(buf_.data());
    nlh_->nlmsg_type = type;
    nlh_->nlmsg_flags = NLM_F_REQUEST | flags;
  }
  template <typename T>
  T* extra_header() {
    return static_cast<T*>(mnl_nlmsg_put_extra_header(nlh_, sizeof(T)));
  }
  nlmsghdr* get() { return nlh_; }

 private:
  std::vector<char> buf_;
  nlmsghdr* nlh_;
};

// An address in its family's bytes, or a message naming the text.
struct RawAddress {
  unsigned char family = AF_INET;
  unsigned char bytes[sizeof(in6_addr)]{};
  std::size_t size = 0;
};
RawAddress raw_address(int family, const std::string& text) {
  RawAddress a;
  a.family = static_cast<unsigned char>(family);
  a.size = family == AF_INET ? sizeof(in_addr) : sizeof(in6_addr);
  if (inet_pton(family, text.c_str(), a.bytes) != 1)
    throw std::runtime_error(std::string("bad ") + (family == AF_INET ? "IPv4" : "IPv6") + " address " + text);
  return a;
}

// `flags`: IFA_F_NODAD for IPv6 (see add_ipv6_address).
void add_address(const std::string& ifname, const RawAddress& a, const std::string& text, int prefix,
                 unsigned char flags) {
  Message msg(RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE);
  auto* ifa = msg.extra_header<ifaddrmsg>();
  ifa->ifa_family = a.family;
  ifa->ifa_prefixlen = static_cast<unsigned char>(prefix);
  ifa->ifa_flags = flags;
  ifa->ifa_scope = RT_SCOPE_UNIVERSE;
  ifa->ifa_index = index_of(ifname);
  mnl_attr_put(msg.get(), IFA_LOCAL, a.size, a.bytes);
  mnl_attr_put(msg.get(), IFA_ADDRESS, a.size, a.bytes);
  check(request(msg.get()), "adding address " + text + "/" + std::to_string(prefix) + " to " + ifname);
}

}  // namespace

void add_ipv4_address(const std::string& ifname, const std::string& address, int prefix) {
  add_address(ifname, raw_address(AF_INET, address), address, prefix, 0);
}

void add_ipv6_address(const std::string& ifname, const std::string& address, int prefix) {
  add_address(ifname, raw_address(AF_INET6, address), address, prefix, IFA_F_NODAD);
}

void set_link_up(const std::string& ifname) {
  Message msg(RTM_NEWLINK, 0);
  auto* ifm = msg.extra_header<ifinfomsg>();
  ifm->ifi_family = AF_UNSPEC;
  ifm->ifi_index = static_cast<int>(index_of(ifname));
  ifm->ifi_flags = IFF_UP;
  ifm->ifi_change = IFF_UP;
  check(request(msg.get()), "bringing up " + ifname);
}

void add_local_default_route(int family) {
  Message msg(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL);
  auto* rtm = msg.extra_header<rtmsg>();
  rtm->rtm_family = static_cast<unsigned char>(family);
  rtm->rtm_dst_len = 0;
  rtm->rtm_table = RT_TABLE_MAIN;
  rtm->rtm_protocol = RTPROT_BOOT;
  rtm->rtm_scope = RT_SCOPE_HOST;
  rtm->rtm_type = RTN_LOCAL;
  mnl_attr_put_u32(msg.get(), RTA_OIF, index_of("lo"));
  check(request(msg.get()), std::string("adding the local default route (") + (family == AF_INET ? "IPv4" : "IPv6") + ")");
}

bool delete_link(const std::string& ifname) {
  Message msg(RTM_DELLINK, 0);
  auto* ifm = msg.extra_header<ifinfomsg>();
  ifm->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(msg.get(), IFLA_IFNAME, ifname.c_str());
  int err = request(msg.get());
  if (err == ENODEV) return false;
  check(err, "deleting link " + ifname);
  return true;
}

}  // namespace netbox::launcher
