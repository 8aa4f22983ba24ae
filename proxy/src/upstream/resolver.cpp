#include "upstream/resolver.hpp"

#include <ares.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace netbox::proxy {

namespace asio = boost::asio;

struct Resolver::Watch {
  explicit Watch(asio::io_context& ioc, int f) : fd(f), sd(ioc, f) {}
  int fd;
  asio::posix::stream_descriptor sd;
  bool want_read = false;
  bool want_write = false;
  bool reading = false;
  bool writing = false;
  bool alive = true;
};

struct Resolver::Query {
  Resolver* self;
  std::string name;
  Callback cb;
  std::chrono::steady_clock::time_point started;
};

namespace {

std::once_flag g_ares_init;

std::string server_csv(const std::vector<asio::ip::udp::endpoint>& servers) {
  std::string csv;
  for (const auto& ep : servers) {
    if (!csv.empty()) csv += ',';
    if (ep.address().is_v6())
      csv += "[" + ep.address().to_string() + "]:" + std::to_string(ep.port());
    else
      csv += ep.address().to_string() + ":" + std::to_string(ep.port());
  }
  return csv;
}

}  // namespace

Resolver::Resolver(asio::io_context& ioc, const std::vector<asio::ip::udp::endpoint>& servers)
    : ioc_(ioc), timer_(ioc) {
  std::call_once(g_ares_init, [] { ares_library_init(ARES_LIB_INIT_ALL); });
  ares_options opts{};
  int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_FLAGS | ARES_OPT_LOOKUPS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
  opts.sock_state_cb = &Resolver::on_sock_state;
  opts.sock_state_cb_data = this;
  // The proxy resolves exactly the name it was given: no search domains, no /etc/hosts
  // (static answers belong in the policy's `resolve` pins, where they are audited).
  opts.flags = ARES_FLAG_NOSEARCH;
  char lookups[] = "b";
  opts.lookups = lookups;
  opts.timeout = 2000;
  opts.tries = 2;
  if (int rc = ares_init_options(&channel_, &opts, mask); rc != ARES_SUCCESS)
    throw std::runtime_error(std::string("cannot set up the DNS resolver: ") + ares_strerror(rc));
  if (!servers.empty()) {
    const auto csv = server_csv(servers);
    if (int rc = ares_set_servers_ports_csv(channel_, csv.c_str()); rc != ARES_SUCCESS) {
      ares_destroy(channel_);
      throw std::runtime_error("--dns-server " + csv + ": " + ares_strerror(rc));
    }
  }
}

Resolver::~Resolver() {
  // ares_destroy runs pending callbacks with ARES_EDESTRUCTION; on_addrinfo drops them.
  ares_destroy(channel_);
  for (auto& [fd, w] : watches_) {
    w->alive = false;
    w->sd.release();
  }
}

void Resolver::on_sock_state(void* data, int fd, int readable, int writable) {
  static_cast<Resolver*>(data)->sock_state(fd, readable != 0, writable != 0);
}

void Resolver::sock_state(int fd, bool readable, bool writable) {
  auto it = watches_.find(fd);
  if (!readable && !writable) {
    if (it != watches_.end()) {
      it->second->alive = false;
      // c-ares owns and closes the socket; release() hands it back and aborts our waits.
      it->second->sd.release();
      watches_.erase(it);
    }
    return;
  }
  if (it == watches_.end()) it = watches_.emplace(fd, std::make_shared<Watch>(ioc_, fd)).first;
  it->second->want_read = readable;
  it->second->want_write = writable;
  arm(it->second);
}

void Resolver::arm(const std::shared_ptr<Watch>& w) {
  if (w->want_read && !w->reading) {
    w->reading = true;
    w->sd.async_wait(asio::posix::stream_descriptor::wait_read, [this, w](boost::system::error_code ec) {
      w->reading = false;
      if (ec || !w->alive) return;
      process(w->fd, ARES_SOCKET_BAD);
      if (w->alive) arm(w);
    });
  }
  if (w->want_write && !w->writing) {
    w->writing = true;
    w->sd.async_wait(asio::posix::stream_descriptor::wait_write, [this, w](boost::system::error_code ec) {
      w->writing = false;
      if (ec || !w->alive) return;
      process(ARES_SOCKET_BAD, w->fd);
      if (w->alive) arm(w);
    });
  }
}

void Resolver::process(int read_fd, int write_fd) {
  ares_process_fd(channel_, read_fd, write_fd);
  reset_timer();
}

void Resolver::reset_timer() {
  timeval tv{};
  if (!ares_timeout(channel_, nullptr, &tv)) {
    timer_.cancel();
    return;
  }
  timer_.expires_after(std::chrono::seconds(tv.tv_sec) + std::chrono::microseconds(tv.tv_usec));
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec) return;
    process(ARES_SOCKET_BAD, ARES_SOCKET_BAD);
  });
}

void Resolver::resolve(const std::string& name, Callback cb) {
  const auto now = std::chrono::steady_clock::now();
  if (auto it = cache_.find(name); it != cache_.end()) {
    if (it->second.expires > now) {
      ResolveResult r{it->second.addresses, {}, true};
      asio::post(ioc_, [cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
      return;
    }
    cache_.erase(it);
  }
  auto* q = new Query{this, name, std::move(cb), now};
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_flags = ARES_AI_NOSORT;  // sorting would connect() probe sockets; keep the server's order
  ares_getaddrinfo(channel_, name.c_str(), nullptr, &hints, &Resolver::on_addrinfo, q);
  reset_timer();
}

void Resolver::on_addrinfo(void* arg, int status, int /*timeouts*/, ares_addrinfo* res) {
  auto* q = static_cast<Query*>(arg);
  if (status == ARES_EDESTRUCTION) {
    if (res) ares_freeaddrinfo(res);
    delete q;
    return;
  }
  ResolveResult r;
  int ttl = -1;
  if (status != ARES_SUCCESS || !res) {
    r.error = std::string("DNS lookup of ") + q->name + " failed: " + ares_strerror(status);
  } else {
    for (auto* n = res->nodes; n; n = n->ai_next) {
      asio::ip::address a;
      if (n->ai_family == AF_INET) {
        const auto* sa = reinterpret_cast<const sockaddr_in*>(n->ai_addr);
        asio::ip::address_v4::bytes_type b;
        std::memcpy(b.data(), &sa->sin_addr, 4);
        a = asio::ip::address_v4(b);
      } else if (n->ai_family == AF_INET6) {
        const auto* sa = reinterpret_cast<const sockaddr_in6*>(n->ai_addr);
        asio::ip::address_v6::bytes_type b;
        std::memcpy(b.data(), &sa->sin6_addr, 16);
        a = asio::ip::address_v6(b);
      } else {
        continue;
      }
      if (std::find(r.addresses.begin(), r.addresses.end(), a) == r.addresses.end()) r.addresses.push_back(a);
      ttl = ttl < 0 ? n->ai_ttl : std::min(ttl, n->ai_ttl);
    }
    if (r.addresses.empty()) r.error = "DNS lookup of " + q->name + " returned no addresses";
  }
  if (res) ares_freeaddrinfo(res);
  q->self->finish(q, std::move(r), std::chrono::seconds(ttl > 0 ? ttl : 0));
}

void Resolver::finish(Query* q, ResolveResult r, std::chrono::seconds ttl) {
  if (r.error.empty() && ttl.count() > 0)
    cache_[q->name] = CacheEntry{r.addresses, std::chrono::steady_clock::now() + ttl};
  // Posted, so the callback never runs inside ares_process_fd.
  asio::post(ioc_, [cb = std::move(q->cb), r = std::move(r)]() mutable { cb(std::move(r)); });
  delete q;
}

}  // namespace netbox::proxy
