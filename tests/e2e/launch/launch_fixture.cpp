#include "launch_fixture.hpp"

#include <ifaddrs.h>
#include <netdb.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace netbox::launch_test {

namespace fs = std::filesystem;

namespace {

std::uint16_t bound_port(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

HttpServer::HttpServer(const std::string& bind_addr, int barrier) : barrier_(barrier) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, bind_addr.c_str(), &a.sin_addr);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 64) != 0)
    throw std::runtime_error("test server: cannot listen on " + bind_addr);
  port_ = bound_port(fd_);
  if (pipe2(stop_, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  thread_ = std::thread([this] { serve(); });
}

HttpServer::~HttpServer() {
  [[maybe_unused]] auto n = ::write(stop_[1], "x", 1);
  thread_.join();
  ::close(fd_);
  ::close(stop_[0]);
  ::close(stop_[1]);
}

void HttpServer::serve() {
  std::vector<int> waiting;
  auto answer_all = [&waiting] {
    const std::string body = kBody;
    const std::string resp = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    for (int c : waiting) {
      [[maybe_unused]] auto n = ::write(c, resp.data(), resp.size());
      ::close(c);
    }
    waiting.clear();
  };
  auto first_wait = std::chrono::steady_clock::now();
  for (;;) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    int ready = ::poll(fds, 2, waiting.empty() ? -1 : 200);
    if (ready < 0) continue;
    if (fds[1].revents) {
      answer_all();
      return;
    }
    if (!waiting.empty() && std::chrono::steady_clock::now() - first_wait > std::chrono::seconds(60)) answer_all();
    if (!(fds[0].revents & POLLIN)) continue;
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    ++connections_;
    std::string req;
    char buf[4096];
    pollfd cp{c, POLLIN, 0};
    while (req.find("\r\n\r\n") == std::string::npos && ::poll(&cp, 1, 5000) > 0) {
      ssize_t n = ::read(c, buf, sizeof buf);
      if (n <= 0) break;
      req.append(buf, static_cast<std::size_t>(n));
    }
    if (req.find("\r\n\r\n") == std::string::npos) {
      ::close(c);
      continue;
    }
    if (waiting.empty()) first_wait = std::chrono::steady_clock::now();
    waiting.push_back(c);
    if (static_cast<int>(waiting.size()) >= std::max(barrier_, 1)) answer_all();
  }
}

UdpSink::UdpSink() {
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("udp sink: bind");
  port_ = bound_port(fd_);
}

UdpSink::~UdpSink() { ::close(fd_); }

int UdpSink::packets() {
  char buf[2048];
  while (::recv(fd_, buf, sizeof buf, 0) >= 0) ++count_;
  return count_;
}

namespace {

constexpr int kSubnetIndices = 156;  // 10.213.100.0/24 .. 10.213.255.0/24

Subnet subnet_of(int index) {
  Subnet s;
  s.index = index;
  const int third = 100 + index;
  s.cidr = "10.213." + std::to_string(third) + ".0/24";
  s.addr_prefix = "10.213." + std::to_string(third) + ".";
  char veth[16];
  std::snprintf(veth, sizeof veth, "nbx0ad5%02x", third);
  s.veth_prefix = veth;
  return s;
}

// Where the claims live: /run (root, as these tests are), else the temporary folder.
std::string claims_folder() {
  for (const char* dir : {"/run/netbox-test-subnets", "/tmp/netbox-test-subnets"}) {
    ::mkdir(dir, 01777);
    if (::access(dir, W_OK) == 0) return dir;
  }
  throw std::runtime_error("test_subnet: neither /run nor /tmp holds a writable netbox-test-subnets folder");
}

// An exclusive lock on the index's file, held (its descriptor open, close-on-exec) until
// this process ends: a test process that dies releases its subnets with it.
bool claim(const std::string& folder, int index) {
  const std::string path = folder + "/" + std::to_string(index) + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) throw std::runtime_error("test_subnet: cannot open " + path);
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;  // kept open: the claim lasts
  ::close(fd);
  return false;
}

}  // namespace

// A subnet no other test process holds: each index is claimed with an exclusive flock,
// so tests that ctest runs in parallel never share one, whatever numbers they ask for.
// `hint` is tried first (it keeps a test's subnet stable from run to run), then the next
// free index; within one process the same hint gives the same subnet again.
Subnet test_subnet(int hint) {
  static std::mutex mu;
  static std::map<int, int> claimed;  // hint -> index; -1: test_subnet()
  static const std::string folder = claims_folder();
  std::lock_guard lock(mu);
  if (hint >= 0)
    if (auto it = claimed.find(hint); it != claimed.end()) return subnet_of(it->second);
  const int start = hint >= 0 ? hint % kSubnetIndices : 0;
  for (int i = 0; i < kSubnetIndices; ++i) {
    const int index = (start + i) % kSubnetIndices;
    bool mine = false;
    for (const auto& [h, taken] : claimed) mine = mine || taken == index;
    if (mine || !claim(folder, index)) continue;
    claimed.emplace(hint >= 0 ? hint : -1 - static_cast<int>(claimed.size()), index);
    return subnet_of(index);
  }
  throw std::runtime_error("test_subnet: all " + std::to_string(kSubnetIndices) + " test subnets are taken");
}

Subnet test_subnet() { return test_subnet(-1); }

std::vector<std::string> host_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (auto* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6)) continue;
    char text[NI_MAXHOST];
    const socklen_t len = a->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (::getnameinfo(a->ifa_addr, len, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0) continue;
    const std::string s = text;
    if (s == "127.0.0.1" || s == "::1" || s.find('%') != std::string::npos || s.starts_with("fe80")) continue;
    out.push_back(s);
  }
  ::freeifaddrs(list);
  return out;
}

bool lease_exists(const Subnet& subnet) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/run/netbox/leases", ec))
    if (e.path().filename().string().starts_with(subnet.addr_prefix)) return true;
  return false;
}

bool host_table_exists(const Subnet& subnet) {
  auto r = test::run({"nft", "list", "tables"});
  return r.out.find("netbox_" + subnet.veth_prefix) != std::string::npos;
}

void expect_nothing_left(const Subnet& subnet) {
  auto links = test::run({"ip", "-o", "link", "show"});
  EXPECT_EQ(links.out.find(subnet.veth_prefix), std::string::npos) << "a veth was left behind:\n" << links.out;
  EXPECT_FALSE(host_table_exists(subnet)) << "an nftables table was left behind:\n" << test::run({"nft", "list", "tables"}).out;
  EXPECT_FALSE(lease_exists(subnet)) << "a lease in /run/netbox/leases was left behind";
  auto addrs = test::run({"ip", "-o", "-4", "addr", "show"});
  EXPECT_EQ(addrs.out.find(subnet.addr_prefix), std::string::npos) << "an address was left behind:\n" << addrs.out;
}

std::vector<fs::path> agent_cgroups(const Subnet& subnet) {
  const std::string prefix = "netbox-" + subnet.veth_prefix;
  std::vector<fs::path> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator("/sys/fs/cgroup", fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (!it->is_directory(ec) || it->is_symlink(ec)) {
      it.disable_recursion_pending();
      continue;
    }
    if (it.depth() > 6) it.disable_recursion_pending();
    if (it->path().filename().string().starts_with(prefix)) found.push_back(it->path());
  }
  return found;
}

void expect_no_cgroup_left(const Subnet& subnet) {
  std::string left;
  for (const auto& p : agent_cgroups(subnet)) left += p.string() + "\n";
  EXPECT_TRUE(left.empty()) << "cgroups were left behind:\n" << left;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/run/netbox/cgroups", ec))
    EXPECT_FALSE(e.path().filename().string().starts_with("netbox-" + subnet.veth_prefix))
        << "a cgroup record was left behind: " << e.path();
}

test::RunResult launch(const Subnet& subnet, const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  std::vector<std::string> full = {"launch", "--subnet", subnet.cidr};
  full.insert(full.end(), args.begin(), args.end());
  return test::run_netbox(full, timeout);
}

std::set<std::string> network_namespaces() {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    std::error_code lec;
    auto target = fs::read_symlink(e.path() / "ns" / "net", lec);
    if (!lec) out.insert(target.string());
  }
  return out;
}

std::size_t host_mounts() {
  std::ifstream in("/proc/self/mountinfo");
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

std::string policy_json(std::uint16_t upstream_port) {
  return R"({
  "version": 1,
  "allow": ["allowed.test"],
  "ports": [80, )" + std::to_string(upstream_port) + R"(],
  "internal": { "allow": ["127.0.0.1/32"] },
  "resolve": { "allowed.test": ["127.0.0.1"], "denied.test": ["127.0.0.1"] }
})";
}

Background::Background(const std::vector<std::string>& argv, const fs::path& out_dir, const std::string& tag)
    : out_(out_dir / (tag + ".out")), err_(out_dir / (tag + ".err")) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // Nothing of the test's own (its sockets, its pipes) leaks into the child.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  if (posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), environ) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&fa);
  if (pid_ < 0) throw std::runtime_error("cannot spawn " + argv[0]);
}

Background::~Background() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

int Background::wait() {
  int st = 0;
  ::waitpid(pid_, &st, 0);
  reaped_ = true;
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return -1;
}

std::string Background::out() const { return slurp(out_); }
std::string Background::err() const { return slurp(err_); }

namespace {
std::vector<std::string> shared_proxy_argv(const fs::path& policy, const fs::path& socket, const fs::path& store,
                                           const std::vector<std::string>& extra) {
  std::vector<std::string> argv{test::netbox_binary().string(), "proxy", "--policy", policy.string(), "--control",
                                socket.string(), "--audit-db", store.string(), "--listen", "127.0.0.1:0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}
}  // namespace

SharedProxy::SharedProxy(const HostDir& host, const fs::path& policy, const std::vector<std::string>& extra)
    : store_(host.folder("store") / "audit.db"),
      socket_(host.folder("control") / "proxy.sock"),
      proxy_(shared_proxy_argv(policy, socket_, store_, extra), host.path(), "proxy") {}

bool SharedProxy::ready() {
  return eventually([&] { return fs::exists(socket_); });
}

int SharedProxy::stop() {
  ::kill(proxy_.pid(), SIGTERM);
  return proxy_.wait();
}

namespace {

const char* kIpv6LoopbackServer = R"PY(
import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    data = b""
    while b"\r\n\r\n" not in data:
        d = c.recv(4096)
        if not d:
            break
        data += d
    body = b"hello over ipv6\n"
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
    c.close()
)PY";

}  // namespace

Ipv6LoopbackUpstream::Ipv6LoopbackUpstream(const fs::path& out_dir)
    : server_({kPython, "-c", kIpv6LoopbackServer}, out_dir, "ipv6-upstream") {
  eventually([&] {
    std::istringstream in(server_.out());
    return static_cast<bool>(in >> port_);
  });
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

namespace {

// Where host folders an agent must see go: the build tree, unless the agent could not
// see it there (a checkout under /tmp, which it gets fresh, or below a folder its user
// may not search, such as /root); then a folder of the tests' own under /srv.
std::filesystem::path host_dir_root() {
  namespace fs = std::filesystem;
  const fs::path build = fs::weakly_canonical(NETBOX_BUILD_DIR);
  bool visible = true;
  for (const char* fresh : {"/tmp", "/var/tmp", "/dev/shm", "/run", "/var/run"}) {
    const auto rel = build.lexically_relative(fresh);
    if (!rel.empty() && *rel.begin() != "..") visible = false;
  }
  for (fs::path p = build; visible && p != p.root_path(); p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0 || !(st.st_mode & S_IXOTH)) visible = false;
  }
  if (visible) return build;
  const fs::path srv = "/srv/netbox-e2e";
  fs::create_directories(srv);
  fs::permissions(srv, fs::perms(0755));
  return srv;
}

}  // namespace

HostDir::HostDir() {
  std::string tmpl = (host_dir_root() / "e2e-launch-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl);
  path_ = tmpl;
  std::filesystem::permissions(path_, std::filesystem::perms(0755));
}

HostDir::~HostDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::filesystem::path HostDir::folder(const std::string& name, std::filesystem::perms mode) const {
  std::filesystem::create_directories(path_ / name);
  std::filesystem::permissions(path_ / name, mode);
  return path_ / name;
}

std::filesystem::path HostDir::file(const std::string& name, const std::string& text,
                                    std::filesystem::perms mode) const {
  const auto p = path_ / name;
  std::ofstream(p) << text;
  std::filesystem::permissions(p, mode);
  return p;
}

std::filesystem::path HostDir::java_get() const {
  folder("java");
  return file("java/Get.java", R"(import java.net.URI;
import java.net.http.*;
public class Get {
  public static void main(String[] a) throws Exception {
    var r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(a[0])).build(),
                                            HttpResponse.BodyHandlers.ofString());
    System.out.println("java: " + r.statusCode() + " " + r.body());
  }
})");
}

}  // namespace netbox::launch_test
