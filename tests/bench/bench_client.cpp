// Load client for scripts/bench.sh: the measurements wrk cannot make.
//   http    — exactly N keep-alive requests (absolute-form through a proxy, or origin-form
//             inside one CONNECT tunnel per connection with --connect 1), progress lines
//   tunnels — new CONNECT tunnel (or new direct connection) per request, for a bounded time
//   bulk    — one transfer of N bytes down (GET) or up (POST), direct or through one tunnel
//   idle    — open N tunnels, hold them until stdin closes or the hold time ends
//   https   — keep-alive HTTPS requests inside CONNECT tunnels, or on direct connections
//             without --proxy (one TLS session per connection; --per-conn N closes it after
//             N requests), for a bounded time: inspected, blind or bumped alike
// --name sets the Host header (and SNI) where the target is an address, as a client that
// resolved the name itself sends it (a captured connection must name its host).
//   https-idle — open N tunnels, complete TLS in each, hold them (memory per idle
//             inspected connection)
// Blocking sockets and one thread per connection: simple, and the proxy, not the client,
// is what saturates. Every socket has send/receive timeouts so no loop can hang.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using SteadyClock = std::chrono::steady_clock;

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
};

Endpoint parse_endpoint(const std::string& s) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument("expected HOST:PORT, got '" + s + "'");
  return Endpoint{s.substr(0, colon), static_cast<std::uint16_t>(std::stoul(s.substr(colon + 1)))};
}

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { reset(); }
  int fd() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

Socket connect_tcp(const Endpoint& ep) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(ep.port);
  if (::inet_pton(AF_INET, ep.host.c_str(), &sa.sin_addr) != 1)
    throw std::invalid_argument("not an IPv4 address: '" + ep.host + "'");
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.fd() < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  timeval tv{10, 0};
  ::setsockopt(s.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(s.fd(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0)
    throw std::runtime_error("connect " + ep.text() + ": " + std::strerror(errno));
  return s;
}

void write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw std::runtime_error(std::string("send: ") + std::strerror(errno));
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}
void write_all(int fd, const std::string& s) { write_all(fd, s.data(), s.size()); }

// Reads one HTTP response head (and what arrived after it into `rest`); returns the head.
std::string read_head(int fd, std::string& rest) {
  std::string buf = std::move(rest);
  rest.clear();
  char chunk[4096];
  for (;;) {
    auto end = buf.find("\r\n\r\n");
    if (end != std::string::npos) {
      rest = buf.substr(end + 4);
      buf.resize(end + 4);
      return buf;
    }
    if (buf.size() > 65536) throw std::runtime_error("response head over 64 KiB");
    ssize_t r = ::recv(fd, chunk, sizeof chunk, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) throw std::runtime_error("connection closed before a response head");
    if (r < 0) throw std::runtime_error(std::string("recv: ") + std::strerror(errno));
    buf.append(chunk, static_cast<std::size_t>(r));
  }
}

int status_of(const std::string& head) {
  auto sp = head.find(' ');
  if (sp == std::string::npos || head.size() < sp + 4) throw std::runtime_error("bad status line");
  return std::atoi(head.c_str() + sp + 1);
}

std::optional<std::uint64_t> content_length(const std::string& head) {
  std::string lower = head;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto p = lower.find("\r\ncontent-length:");
  if (p == std::string::npos) return std::nullopt;
  return std::strtoull(lower.c_str() + p + 17, nullptr, 10);
}

// Reads a body of known length, discarding it; `rest` holds bytes already received.
std::uint64_t discard_body(int fd, std::uint64_t length, std::string& rest, std::vector<char>& scratch) {
  std::uint64_t have = std::min<std::uint64_t>(rest.size(), length);
  rest.erase(0, static_cast<std::size_t>(have));
  while (have < length) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(scratch.size(), length - have));
    ssize_t r = ::recv(fd, scratch.data(), want, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw std::runtime_error("connection closed inside a body");
    have += static_cast<std::uint64_t>(r);
  }
  return have;
}

// One full response with a Content-Length body; returns the status.
int read_response(int fd, std::string& rest, std::vector<char>& scratch) {
  std::string head = read_head(fd, rest);
  const int status = status_of(head);
  if (status == 204 || status == 304) return status;  // no body by definition
  auto len = content_length(head);
  if (!len) throw std::runtime_error("response without Content-Length: " + head.substr(0, head.find('\r')));
  discard_body(fd, *len, rest, scratch);
  return status;
}

// Opens a tunnel through `proxy` to `target` and checks the 200.
Socket open_tunnel(const Endpoint& proxy, const Endpoint& target) {
  Socket s = connect_tcp(proxy);
  write_all(s.fd(), "CONNECT " + target.text() + " HTTP/1.1\r\nHost: " + target.text() + "\r\n\r\n");
  std::string rest;
  std::string head = read_head(s.fd(), rest);
  if (status_of(head) != 200) throw std::runtime_error("CONNECT refused: " + head.substr(0, head.find('\r')));
  if (!rest.empty()) throw std::runtime_error("bytes after the CONNECT answer");
  return s;
}

struct Args {
  std::map<std::string, std::string> named;
  std::string get(const std::string& k, const std::string& def = "") const {
    auto it = named.find(k);
    if (it != named.end()) return it->second;
    if (def.empty()) throw std::invalid_argument("missing --" + k);
    return def;
  }
  bool has(const std::string& k) const { return named.count(k) != 0; }
  std::uint64_t num(const std::string& k, const std::string& def = "") const { return std::stoull(get(k, def)); }
};

// The Host header's value: --name (default the target's host) and the target's port.
std::string host_header(const Args& a, const Endpoint& target) {
  return a.get("name", target.host) + ":" + std::to_string(target.port);
}

double seconds_since(SteadyClock::time_point t0) {
  return std::chrono::duration<double>(SteadyClock::now() - t0).count();
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  return v[i];
}

// Exactly `requests` keep-alive requests over `conns` connections; a progress line every 250 ms.
int run_http(const Args& a) {
  Endpoint target = parse_endpoint(a.get("target"));
  std::optional<Endpoint> proxy;
  if (a.has("proxy")) proxy = parse_endpoint(a.get("proxy"));
  std::string path = a.get("path", "/small");
  std::uint64_t requests = a.num("requests");
  std::uint64_t conns = a.num("conns", "50");
  double max_seconds = std::stod(a.get("max-seconds", "120"));
  const bool tunnel = proxy && a.get("connect", "0") == "1";
  const bool absolute = proxy && !tunnel;
  std::string line = "GET " + (absolute ? "http://" + target.text() + path : path) + " HTTP/1.1\r\nHost: " +
                     host_header(a, target) + "\r\n\r\n";
  std::atomic<std::uint64_t> done{0}, errors{0}, non200{0};
  std::atomic<bool> stop{false};
  auto t0 = SteadyClock::now();
  std::vector<std::thread> threads;
  for (std::uint64_t c = 0; c < conns; ++c) {
    std::uint64_t share = requests / conns + (c < requests % conns ? 1 : 0);
    threads.emplace_back([&, share] {
      std::vector<char> scratch(65536);
      std::uint64_t sent = 0;
      while (sent < share && !stop.load(std::memory_order_relaxed)) {
        try {
          Socket s = tunnel ? open_tunnel(*proxy, target) : connect_tcp(proxy ? *proxy : target);
          std::string rest;
          while (sent < share && !stop.load(std::memory_order_relaxed)) {
            write_all(s.fd(), line);
            ++sent;
            if (read_response(s.fd(), rest, scratch) != 200) non200.fetch_add(1);
            done.fetch_add(1, std::memory_order_relaxed);
          }
        } catch (const std::exception& e) {
          if (errors.fetch_add(1) < 3) std::fprintf(stderr, "bench_client http: %s\n", e.what());
        }
      }
    });
  }
  std::thread progress([&] {
    while (!stop.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      std::printf("progress t=%.3f done=%llu\n", seconds_since(t0), static_cast<unsigned long long>(done.load()));
      std::fflush(stdout);
      if (seconds_since(t0) > max_seconds) stop.store(true);
    }
  });
  for (auto& t : threads) t.join();
  double secs = seconds_since(t0);
  stop.store(true);
  progress.join();
  std::printf("{\"sent\":%llu,\"done\":%llu,\"errors\":%llu,\"non200\":%llu,\"seconds\":%.6f,\"rps\":%.1f}\n",
              static_cast<unsigned long long>(requests), static_cast<unsigned long long>(done.load()),
              static_cast<unsigned long long>(errors.load()), static_cast<unsigned long long>(non200.load()), secs,
              static_cast<double>(done.load()) / secs);
  return errors.load() == 0 && non200.load() == 0 ? 0 : 1;
}

// A new tunnel (or a new direct connection) per request, for `seconds`.
int run_tunnels(const Args& a) {
  Endpoint target = parse_endpoint(a.get("target"));
  std::optional<Endpoint> proxy;
  if (a.has("proxy")) proxy = parse_endpoint(a.get("proxy"));
  std::string path = a.get("path", "/small");
  std::uint64_t conns = a.num("conns", "50");
  double seconds = std::stod(a.get("seconds", "5"));
  std::uint64_t max_ops = a.num("max-ops", "10000000");
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + host_header(a, target) + "\r\nConnection: close\r\n\r\n";
  std::atomic<std::uint64_t> ops{0}, errors{0};
  std::vector<std::vector<double>> lat(conns);
  auto t0 = SteadyClock::now();
  auto deadline = t0 + std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (std::uint64_t c = 0; c < conns; ++c) {
    threads.emplace_back([&, c] {
      std::vector<char> scratch(65536);
      while (SteadyClock::now() < deadline && ops.load(std::memory_order_relaxed) < max_ops) {
        auto s0 = SteadyClock::now();
        try {
          Socket s = proxy ? open_tunnel(*proxy, target) : connect_tcp(target);
          write_all(s.fd(), req);
          std::string rest;
          if (read_response(s.fd(), rest, scratch) != 200) throw std::runtime_error("status not 200");
          lat[c].push_back(seconds_since(s0) * 1000.0);
          ops.fetch_add(1, std::memory_order_relaxed);
        } catch (const std::exception& e) {
          if (errors.fetch_add(1) < 3) std::fprintf(stderr, "bench_client tunnels: %s\n", e.what());
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  double secs = seconds_since(t0);
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  std::printf("{\"ops\":%llu,\"errors\":%llu,\"seconds\":%.6f,\"rate\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f}\n",
              static_cast<unsigned long long>(ops.load()), static_cast<unsigned long long>(errors.load()), secs,
              static_cast<double>(ops.load()) / secs, percentile(all, 0.5), percentile(all, 0.99));
  return errors.load() == 0 ? 0 : 1;
}

// One transfer of `bytes` through one connection: down = GET path (a file of that size),
// up = POST of that many bytes. Timed from before connecting to the complete answer.
int run_bulk(const Args& a) {
  Endpoint target = parse_endpoint(a.get("target"));
  std::optional<Endpoint> proxy;
  if (a.has("proxy")) proxy = parse_endpoint(a.get("proxy"));
  std::string direction = a.get("direction");
  std::uint64_t bytes = a.num("bytes");
  std::vector<char> scratch(1 << 20, 'x');
  auto t0 = SteadyClock::now();
  Socket s = proxy ? open_tunnel(*proxy, target) : connect_tcp(target);
  std::string rest;
  std::uint64_t moved = 0;
  if (direction == "down") {
    write_all(s.fd(), "GET " + a.get("path", "/big") + " HTTP/1.1\r\nHost: " + target.text() + "\r\n\r\n");
    std::string head = read_head(s.fd(), rest);
    auto len = content_length(head);
    if (status_of(head) != 200 || !len || *len != bytes)
      throw std::runtime_error("unexpected answer for the download: " + head.substr(0, head.find('\r')));
    moved = discard_body(s.fd(), *len, rest, scratch);
  } else if (direction == "up") {
    write_all(s.fd(), "POST " + a.get("path", "/sink") + " HTTP/1.1\r\nHost: " + target.text() +
                          "\r\nContent-Length: " + std::to_string(bytes) + "\r\n\r\n");
    while (moved < bytes) {
      std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(scratch.size(), bytes - moved));
      write_all(s.fd(), scratch.data(), n);
      moved += n;
    }
    int status = read_response(s.fd(), rest, scratch);
    if (status / 100 != 2) throw std::runtime_error("upload answered " + std::to_string(status));
  } else {
    throw std::invalid_argument("--direction must be down or up, got '" + direction + "'");
  }
  double secs = seconds_since(t0);
  std::printf("{\"bytes\":%llu,\"seconds\":%.6f,\"gbit_s\":%.3f}\n", static_cast<unsigned long long>(moved), secs,
              static_cast<double>(moved) * 8 / secs / 1e9);
  return 0;
}

// Opens `count` tunnels and holds them until stdin reaches EOF or `hold-seconds` pass.
int run_idle(const Args& a) {
  Endpoint target = parse_endpoint(a.get("target"));
  Endpoint proxy = parse_endpoint(a.get("proxy"));
  std::uint64_t count = a.num("count");
  double hold = std::stod(a.get("hold-seconds", "120"));
  std::vector<Socket> open;
  open.reserve(count);
  std::uint64_t errors = 0;
  auto t0 = SteadyClock::now();
  for (std::uint64_t i = 0; i < count && errors < 20 && seconds_since(t0) < 120; ++i) {
    try {
      open.push_back(open_tunnel(proxy, target));
    } catch (const std::exception& e) {
      if (errors++ < 3) std::fprintf(stderr, "bench_client idle: %s\n", e.what());
    }
  }
  std::printf("ready opened=%zu errors=%llu seconds=%.3f\n", open.size(), static_cast<unsigned long long>(errors),
              seconds_since(t0));
  std::fflush(stdout);
  auto hold_start = SteadyClock::now();
  pollfd in{0, POLLIN, 0};
  while (seconds_since(hold_start) < hold) {
    int r = ::poll(&in, 1, 200);
    if (r > 0) {
      char c;
      if (::read(0, &c, 1) <= 0) break;
    }
  }
  return open.size() == count ? 0 : 1;
}

// TLS over a tunnel, blocking, on the tunnel's descriptor. The benchmark measures the
// proxies, not trust: the client does not verify (every contender's certificate chain
// differs), but it sends SNI like any client.
struct Tls {
  SSL_CTX* ctx = nullptr;
  Tls() {
    ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    SSL_CTX_set_alpn_protos(ctx, kHttp11, sizeof kHttp11);
  }
  ~Tls() { SSL_CTX_free(ctx); }
  Tls(const Tls&) = delete;
  Tls& operator=(const Tls&) = delete;
};

struct TlsConn {
  Socket sock;
  SSL* ssl = nullptr;
  TlsConn(const Tls& tls, Socket s, const std::string& name) : sock(std::move(s)), ssl(SSL_new(tls.ctx)) {
    SSL_set_fd(ssl, sock.fd());
    SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(name.c_str()));
    if (SSL_connect(ssl) != 1) {
      SSL_free(ssl);
      throw std::runtime_error("TLS handshake through the tunnel failed");
    }
  }
  ~TlsConn() { SSL_free(ssl); }
  TlsConn(const TlsConn&) = delete;
  TlsConn& operator=(const TlsConn&) = delete;
  void write(const std::string& data) {
    if (SSL_write(ssl, data.data(), static_cast<int>(data.size())) != static_cast<int>(data.size()))
      throw std::runtime_error("TLS write failed");
  }
  // One answer with a Content-Length body; returns the status.
  int read_response(std::string& rest, std::vector<char>& scratch) {
    std::size_t end;
    while ((end = rest.find("\r\n\r\n")) == std::string::npos) fill(rest, scratch);
    const std::string head = rest.substr(0, end + 4);
    rest.erase(0, end + 4);
    const auto len = content_length(head);
    if (!len) throw std::runtime_error("response without Content-Length: " + head.substr(0, head.find('\r')));
    while (rest.size() < *len) fill(rest, scratch);
    rest.erase(0, static_cast<std::size_t>(*len));
    return status_of(head);
  }

 private:
  void fill(std::string& rest, std::vector<char>& scratch) {
    const int n = SSL_read(ssl, scratch.data(), static_cast<int>(scratch.size()));
    if (n <= 0) throw std::runtime_error("TLS connection closed inside an answer");
    rest.append(scratch.data(), static_cast<std::size_t>(n));
  }
};

// Keep-alive GETs of `path` over `conns` TLS connections, each inside a CONNECT tunnel
// to `target` through `proxy` or straight to `target` (SNI and Host: `name`), for `seconds`.
int run_https(const Args& a) {
  const Endpoint target = parse_endpoint(a.get("target"));
  std::optional<Endpoint> proxy;
  if (a.has("proxy")) proxy = parse_endpoint(a.get("proxy"));
  const std::uint64_t per_conn = a.num("per-conn", "18446744073709551615");
  const std::string name = a.get("name", target.host);
  const std::string path = a.get("path", "/small");
  const std::uint64_t conns = a.num("conns", "50");
  const double seconds = std::stod(a.get("seconds", "5"));
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + name + ":" + std::to_string(target.port) + "\r\n\r\n";
  const Tls tls;
  std::atomic<std::uint64_t> done{0}, errors{0}, non200{0};
  const auto t0 = SteadyClock::now();
  const auto deadline = t0 + std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (std::uint64_t c = 0; c < conns; ++c) {
    threads.emplace_back([&] {
      std::vector<char> scratch(65536);
      while (SteadyClock::now() < deadline) {
        try {
          TlsConn t(tls, proxy ? open_tunnel(*proxy, target) : connect_tcp(target), name);
          std::string rest;
          for (std::uint64_t n = 0; n < per_conn && SteadyClock::now() < deadline; ++n) {
            t.write(req);
            if (t.read_response(rest, scratch) != 200) non200.fetch_add(1);
            done.fetch_add(1, std::memory_order_relaxed);
          }
        } catch (const std::exception& e) {
          if (errors.fetch_add(1) < 3) std::fprintf(stderr, "bench_client https: %s\n", e.what());
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const double secs = seconds_since(t0);
  std::printf("{\"done\":%llu,\"errors\":%llu,\"non200\":%llu,\"seconds\":%.6f,\"rps\":%.1f}\n",
              static_cast<unsigned long long>(done.load()), static_cast<unsigned long long>(errors.load()),
              static_cast<unsigned long long>(non200.load()), secs, static_cast<double>(done.load()) / secs);
  return errors.load() == 0 && non200.load() == 0 ? 0 : 1;
}

// Opens `count` tunnels, completes TLS and one request in each (so the proxy holds a
// session past its handshake, as an agent between requests leaves it), and holds them
// until stdin reaches EOF or `hold-seconds` pass.
int run_https_idle(const Args& a) {
  const Endpoint target = parse_endpoint(a.get("target"));
  const Endpoint proxy = parse_endpoint(a.get("proxy"));
  const std::string name = a.get("name", target.host);
  const std::uint64_t count = a.num("count");
  const double hold = std::stod(a.get("hold-seconds", "120"));
  const std::string req = "GET " + a.get("path", "/small") + " HTTP/1.1\r\nHost: " + name + ":" +
                          std::to_string(target.port) + "\r\n\r\n";
  const Tls tls;
  std::vector<std::unique_ptr<TlsConn>> open;
  std::vector<char> scratch(65536);
  std::uint64_t errors = 0;
  const auto t0 = SteadyClock::now();
  for (std::uint64_t i = 0; i < count && errors < 20 && seconds_since(t0) < 120; ++i) {
    try {
      auto t = std::make_unique<TlsConn>(tls, open_tunnel(proxy, target), name);
      std::string rest;
      t->write(req);
      if (t->read_response(rest, scratch) != 200) throw std::runtime_error("status not 200");
      open.push_back(std::move(t));
    } catch (const std::exception& e) {
      if (errors++ < 3) std::fprintf(stderr, "bench_client https-idle: %s\n", e.what());
    }
  }
  std::printf("ready opened=%zu errors=%llu seconds=%.3f\n", open.size(), static_cast<unsigned long long>(errors),
              seconds_since(t0));
  std::fflush(stdout);
  const auto hold_start = SteadyClock::now();
  pollfd in{0, POLLIN, 0};
  while (seconds_since(hold_start) < hold) {
    if (::poll(&in, 1, 200) > 0) {
      char c;
      if (::read(0, &c, 1) <= 0) break;
    }
  }
  return open.size() == count ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_client http|tunnels|bulk|idle|https|https-idle --key value ...\n");
    return 2;
  }
  std::string mode = argv[1];
  Args a;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0) {
      std::fprintf(stderr, "bench_client: expected --key, got '%s'\n", k.c_str());
      return 2;
    }
    a.named[k.substr(2)] = argv[i + 1];
  }
  try {
    if (mode == "http") return run_http(a);
    if (mode == "tunnels") return run_tunnels(a);
    if (mode == "bulk") return run_bulk(a);
    if (mode == "idle") return run_idle(a);
    if (mode == "https") return run_https(a);
    if (mode == "https-idle") return run_https_idle(a);
    std::fprintf(stderr, "bench_client: unknown mode '%s'\n", mode.c_str());
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "bench_client %s: %s\n", mode.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_client %s: %s\n", mode.c_str(), e.what());
    return 1;
  }
}
