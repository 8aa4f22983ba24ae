#include "doors/dns_view.hpp"

#include "agents/agent_sockets.hpp"

#include "pipeline/client_identity.hpp"
#include "pipeline/audit_room.hpp"
#include "inspect/credentials.hpp"

#include "base/door_services.hpp"

#include "netbox/policy/decide.hpp"
#include "netbox/proxy/endpoint.hpp"
#include "netbox/policy/host.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <array>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace ip = boost::asio::ip;

namespace {

constexpr unsigned short kDnsPort = 53;

// The block without its first address (x.x.0.0 is a network's own address to many tools)
// and, for IPv4, its last (a broadcast address).
std::uint64_t pool_size(const policy::Cidr& c) {
  const unsigned bits = c.base.is_v4() ? 32 : 128;
  const unsigned free = bits - c.prefix;
  const std::uint64_t n = free >= 32 ? std::uint64_t{1} << 32 : std::uint64_t{1} << free;
  return std::min<std::uint64_t>(n > 2 ? n - 2 : 0, dns::SyntheticPool::kMostAddresses);
}

ip::address pool_first(const policy::Cidr& c) {
  if (c.base.is_v4()) return ip::address_v4(c.base.to_v4().to_uint() + 1);
  auto b = c.base.to_v6().to_bytes();
  b[15] = static_cast<unsigned char>(b[15] + 1);
  return ip::address_v6(b);
}

std::string type_text(std::uint16_t t) {
  switch (t) {
    case 1: return "A";
    case 28: return "AAAA";
    case 5: return "CNAME";
    case 15: return "MX";
    case 16: return "TXT";
    case 33: return "SRV";
    case 255: return "ANY";
    default: return "TYPE" + std::to_string(t);
  }
}

}  // namespace

bool DnsRefusalRows::take(const std::string& name, Clock::time_point now) {
  if (window_over(now)) {
    window_start_ = now;
    written_.clear();
  }
  // A repeat (its row this minute names it already) is counted for that name; a name past
  // the bound in the one summary row, which stands for every name that got no row.
  if (auto it = written_.find(name); it != written_.end()) {
    ++it->second;
    return false;
  }
  if (written_.size() >= kRowsPerMinute) {
    ++past_bound_;
    return false;
  }
  written_.emplace(name, 0);
  return true;
}

DnsRefusalRows::Suppressed DnsRefusalRows::take_suppressed() {
  Suppressed out;
  for (auto& [name, repeats] : written_)
    if (repeats) out.repeats.emplace_back(name, std::exchange(repeats, 0));
  out.past_bound = std::exchange(past_bound_, 0);
  return out;
}

DnsView::DnsView(DoorServices& rt, asio::io_context& ioc, ip::address host, ip::address agent_addr,
                 const policy::Cidr& pool, const std::optional<policy::Cidr>& pool6)
    : rt_(rt),
      ioc_(ioc),
      host_(host),
      agent_addr_(agent_addr),
      udp_(ioc),
      tcp_(ioc),
      udp_buffer_(kMaxMessage),
      pool_(pool_first(pool), pool_size(pool), kRetain),
      pool_range_(pool),
      pool6_range_(pool6) {
  if (pool6) pool6_.emplace(pool_first(*pool6), pool_size(*pool6), kRetain);
  const auto where = host.to_string() + " port 53";
  try {
    const ip::udp::endpoint uep(host, kDnsPort);
    udp_.open(uep.protocol());
    udp_.bind(uep);
    udp_.non_blocking(true);  // an answer the kernel cannot take now is dropped; the client asks again
    const ip::tcp::endpoint tep(host, kDnsPort);
    tcp_.open(tep.protocol());
    tcp_.set_option(ip::tcp::acceptor::reuse_address(true));
    tcp_.bind(tep);
    tcp_.listen();
  } catch (const boost::system::system_error& e) {
    throw std::runtime_error("cannot serve DNS on " + where + ": " + e.code().message());
  }
}

DnsView::DnsView(DoorServices& rt, asio::io_context& ioc, int udp_fd, int tcp_fd, ip::address agent,
                 const policy::Cidr& pool, const std::optional<policy::Cidr>& pool6)
    : rt_(rt),
      ioc_(ioc),
      agent_addr_(agent),
      own_sockets_(true),
      udp_(ioc),
      tcp_(ioc),
      udp_buffer_(kMaxMessage),
      pool_(pool_first(pool), pool_size(pool), kRetain),
      pool_range_(pool),
      pool6_range_(pool6) {
  if (pool6) pool6_.emplace(pool_first(*pool6), pool_size(*pool6), kRetain);
  boost::system::error_code ec;
  const bool v6 = socket_family(udp_fd) == AF_INET6;
  udp_.assign(v6 ? ip::udp::v6() : ip::udp::v4(), udp_fd, ec);
  if (ec) ::close(udp_fd);
  const bool tcp_v6 = socket_family(tcp_fd) == AF_INET6;
  boost::system::error_code tcp_ec;
  tcp_.assign(tcp_v6 ? ip::tcp::v6() : ip::tcp::v4(), tcp_fd, tcp_ec);
  if (tcp_ec) ::close(tcp_fd);
  if (ec || tcp_ec) throw std::runtime_error("the agent's DNS sockets: " + (ec ? ec : tcp_ec).message());
  udp_.non_blocking(true, ec);
  host_ = udp_.local_endpoint(ec).address();
}

DnsView::~DnsView() = default;

bool DnsView::from_agent(const ip::address& peer) const {
  return own_sockets_ || canonical_address(peer) == canonical_address(agent_addr_);
}

void DnsView::start() {
  asio::post(ioc_, [self = shared_from_this()] {
    self->receive();
    self->accept();
  });
}

void DnsView::stop() {
  {
    std::lock_guard lock(mu_);
    if (auto n = rows_.take_suppressed(); !n.empty()) write_summary(who(), n);
  }
  // On the view's own thread (the control socket's too) at once, so port 53 is free for
  // a registration that follows in the same handler; from elsewhere, posted there.
  asio::dispatch(ioc_, [self = shared_from_this()] {
    boost::system::error_code ignored;
    self->udp_.close(ignored);
    self->tcp_.close(ignored);
  });
}

AgentIdentity DnsView::who() const { return rt_.agents.lookup(agent_addr_); }

void DnsView::refuse_foreign(const ip::address& peer, std::uint16_t port) {
  boost::system::error_code ec;
  const auto local = udp_.local_endpoint(ec);
  note_foreign_source(rt_, "dns", endpoint_text({local.address(), local.port()}), endpoint_text({peer, port}));
}

void DnsView::receive() {
  // Back pressure: while the audit writer is full, queries stay in the socket's buffer
  // (past it the kernel drops them and the agent asks again), never a row lost.
  if (!audit_room_or_wait(*rt_.writer, udp_.get_executor(), [self = shared_from_this()] { self->receive(); }))
    return;
  udp_.async_receive_from(asio::buffer(udp_buffer_), udp_peer_,
                          [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                            if (ec == asio::error::operation_aborted || !self->udp_.is_open()) return;
                            // Only the agent itself asks here; anything else on the link is ignored.
                            if (!ec && self->from_agent(self->udp_peer_.address())) {
                              const auto peer = self->udp_peer_;
                              auto reply = self->answer(std::span(self->udp_buffer_.data(), n),
                                                        peer.address().to_string() + ":" + std::to_string(peer.port()));
                              boost::system::error_code send_ec;
                              if (!reply.empty()) self->udp_.send_to(asio::buffer(reply), peer, 0, send_ec);
                            } else if (!ec) {
                              self->refuse_foreign(self->udp_peer_.address(), self->udp_peer_.port());
                            }
                            self->receive();
                          });
}

std::vector<std::uint8_t> DnsView::answer(std::span<const std::uint8_t> message, const std::string& peer) {
  const auto identity = who();
  const auto label = rt_.metric_label(identity);
  auto read = dns::read_query(message);
  if (read.kind == dns::ReadResult::Kind::drop) {
    rt_.counters.count_request(label, "dns", "error");  // kind dns, decision error: malformed
    return {};
  }
  if (read.kind == dns::ReadResult::Kind::answer_error) {
    rt_.counters.count_request(label, "dns", "error");
    return dns::empty_answer(read.query, read.rcode);
  }
  const dns::Query& q = read.query;
  const auto policy = rt_.current_policy();
  const auto& profile = identity.profile.empty() ? policy->base : policy->profile_for(identity.profile);

  policy::Decision d;
  auto host = policy::parse_host(q.name);
  if (!host || host.host->is_ip())
    d = policy::Decision::refused("", q.name + " is not a host name the DNS view answers (" +
                                          (host ? std::string("an address needs no lookup") : host.error.message) +
                                          ")");
  else if (auto r = identity.tripwire ? identity.tripwire->check_host_name(host.host->name) : std::nullopt)
    d = policy::Decision::refused(r->rule, r->reason);  // a placeholder asked for by name
  else {
    d = policy::decide_dns_name(profile, host.host->name);
    // A name the connection could not be resolved for is refused now, with that reason.
    if (auto no = policy::unlisted_lookup_refused(*policy, profile, d, host.host->name)) d = std::move(*no);
    // An agent that asks (--ask): a name no entry lists gets a synthetic address like any
    // other, so that its connection reaches the proxy and is asked about. The answer sends
    // nothing anywhere and grants nothing; a deny entry's name stays NXDOMAIN.
    else if (identity.asks)
      d = policy::answer_to_ask(std::move(d), host.host->name);
  }

  const auto now = dns::SyntheticPool::Clock::now();
  const std::string decision(policy::to_string(d.verdict));
  rt_.counters.count_request(label, "dns", decision);
  if (!d.plain_allow()) {
    std::lock_guard lock(mu_);
    if (rows_.window_over(now))
      if (auto n = rows_.take_suppressed(); !n.empty()) write_summary(identity, n);
    if (rows_.take(q.name, now)) write_row(identity, peer, q, decision, d.rule, d.reason);
  }
  if (!d.lets_through()) return dns::empty_answer(q, dns::Rcode::nxdomain);

  // Other types of an answered name, and AAAA when the agent's link has no IPv6: NOERROR
  // without records (the name exists; clients go on with what the link has).
  std::optional<ip::address> a;
  {
    std::lock_guard lock(mu_);
    dns::SyntheticPool* pool = nullptr;
    if (q.qtype == static_cast<std::uint16_t>(dns::Type::a) && pool_range_.base.is_v4()) pool = &pool_;
    if (q.qtype == static_cast<std::uint16_t>(dns::Type::aaaa) && pool6_) pool = &*pool6_;
    if (!pool) return dns::empty_answer(q, dns::Rcode::noerror);
    a = pool->address_for(host.host->name, now);
  }
  if (!a) return dns::empty_answer(q, dns::Rcode::servfail);  // every address mapped and in use
  return dns::answer(q, {*a}, kTtl);
}

void DnsView::write_row(const AgentIdentity& who, const std::string& peer, const dns::Query& q,
                        const std::string& decision, const std::string& rule, const std::string& reason) {
  audit::AuditRecord r;
  r.ts = audit::Clock::now();
  r.agent = who.agent;
  r.client_addr = peer;
  r.kind = "dns";
  r.method = type_text(q.qtype);
  r.host = q.name;
  r.port = kDnsPort;
  r.decision = decision;
  r.rule = rule;
  r.reason = reason;
  r.duration_ms = 0;
  if (!rt_.writer->insert_complete(r))
    rt_.log.write(log_event::audit_error,
                  {{log_key::message, "audit store refused a dns row"}, {log_key::host, r.host}});
  rt_.export_row(r);
  rt_.log.write(
      LogLevel::warn, log_event::dns_refused,
      {{log_key::agent, r.agent}, {log_key::host, r.host}, {log_key::rule, r.rule}, {log_key::reason, r.reason}});
}

void DnsView::write_summary(const AgentIdentity& who, const DnsRefusalRows::Suppressed& suppressed) {
  auto summary = [&](const std::string& host, std::uint64_t n, std::string reason) {
    audit::AuditRecord r;
    r.ts = audit::Clock::now();
    r.agent = who.agent;
    r.kind = "dns";
    r.host = host;
    r.port = kDnsPort;
    r.decision = "deny";
    r.count = n;  // SUM(count) is every refused query, as for requests
    r.reason = std::move(reason);
    r.duration_ms = 0;
    rt_.writer->insert_complete(r);
    rt_.export_row(r);
  };
  for (const auto& [name, n] : suppressed.repeats)
    summary(name, n, std::to_string(n) + " more refused DNS queries of this name in the minute of its first row " +
                         "(other record types, retries) were counted here, not written one by one");
  if (suppressed.past_bound)
    summary("*", suppressed.past_bound,
            std::to_string(suppressed.past_bound) + " more refused DNS queries of this agent in the minute before, " +
                "for names past " + std::to_string(DnsRefusalRows::kRowsPerMinute) +
                " a minute, were counted, not written one by one");
}

dns::SyntheticPool* DnsView::pool_of(const ip::address& a) {
  if (pool_range_.contains(a)) return &pool_;
  if (pool6_range_ && pool6_range_->contains(a)) return &*pool6_;
  return nullptr;
}

std::optional<std::string> DnsView::hold(const ip::address& a) {
  std::lock_guard lock(mu_);
  auto* pool = pool_of(a);
  return pool ? pool->hold(a, dns::SyntheticPool::Clock::now()) : std::nullopt;
}

void DnsView::release(const ip::address& a) {
  std::lock_guard lock(mu_);
  if (auto* pool = pool_of(a)) pool->release(a);
}

bool DnsView::is_synthetic(const ip::address& a) const {
  return pool_range_.contains(a) || (pool6_range_ && pool6_range_->contains(a));
}

}  // namespace netbox::proxy
