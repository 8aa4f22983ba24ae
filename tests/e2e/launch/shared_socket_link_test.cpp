// A running `netbox proxy --control` serves its launched agents through the sockets each
// launch made inside the agent's namespace and passed over the control socket (SCM_RIGHTS,
// issue 24): the agent has no veth, reaches no host address and no other agent, and is
// known by the socket its connection arrived on. A hostile control client passing other
// descriptors is refused, and nothing it sent stays open in the proxy.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <sched.h>

#include <thread>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(LaunchSharedSocketLink, TheAgentHasNoInterfaceLeadingOutOfItsNamespace) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(95);
  HostDir host;
  test::TempDir dir;
  SharedProxy proxy(host, dir.write("policy.json", policy_json(8080)));
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  auto r = launch(subnet, {"--proxy-control", proxy.socket().string(), "--", kSh, "-c",
                           "ls /sys/class/net; echo --; cat /proc/net/dev | tail -n +3 | cut -d: -f1; echo $http_proxy"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "lo\n--\n    lo\nhttp://127.0.0.1:3128\n");
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  EXPECT_EQ(query(proxy.store(), "SELECT exit_status FROM agents"), (std::vector<std::vector<std::string>>{{"0"}}));
  expect_nothing_left(subnet);
  EXPECT_FALSE(lease_exists(subnet));
}

TEST(LaunchSharedSocketLink, TheAgentReachesNoHostAddress) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(96);
  HttpServer host_server("0.0.0.0");  // on every host address
  auto addresses = host_addresses();
  addresses.push_back("127.0.0.1");  // the host's loopback: the agent's own there
  addresses.push_back(subnet.addr_prefix + "1");  // where its veth's host side used to be
  HostDir host;
  test::TempDir dir;
  const auto policy = dir.write(
      "policy.json", R"({"version": 1, "allow": ["0.0.0.0/0", "::/0"], "internal": {"allow": ["0.0.0.0/0", "::/0"]}})");
  SharedProxy proxy(host, policy);
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string port = std::to_string(host_server.port());
  std::string script = "for a in";
  for (const auto& a : addresses) script += " " + a;
  script += "; do u=http://$(echo $a | sed 's/.*:.*/[&]/'):" + port + "/; " + kCurl +
            " -s -m 5 -o /dev/null -w '%{http_code}' --noproxy '*' -g $u | grep -q 200 && echo reached-direct $a; " +
            kCurl + " -s -m 5 -o /dev/null -w '%{http_code}' -g $u | grep -q 200 && echo reached-proxied $a; done; echo finished";
  auto r = launch(subnet, {"--proxy-control", proxy.socket().string(), "--", kSh, "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("finished"));
  EXPECT_THAT(r.out, Not(HasSubstr("reached"))) << r.out;
  EXPECT_EQ(host_server.connections(), 0);
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  expect_nothing_left(subnet);
}

// Two agents on one proxy: each connection is the agent whose socket accepted it (the rows
// say so), and A's own server on its loopback is nothing in B's namespace.
TEST(LaunchSharedSocketLink, TwoAgentsOnOneProxyAreToldApartBySocket) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet_a = test_subnet(97);
  const auto subnet_b = test_subnet(98);
  HttpServer upstream;
  HostDir host;
  test::TempDir dir;
  SharedProxy proxy(host, dir.write("policy.json", policy_json(upstream.port())));
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string url = "http://allowed.test:" + std::to_string(upstream.port());
  const auto done = host.folder("flags") / "done";
  Background a({test::netbox_binary().string(), "launch", "--subnet", subnet_a.cidr, "--proxy-control",
                proxy.socket().string(), "--name", "agent-a", "--", kSh, "-c",
                std::string(kPython) + " -m http.server --bind 127.0.0.1 8765 >/dev/null 2>&1 & " + kCurl + " -s -m 10 " +
                    url + "/a; echo; echo fetched; while [ ! -e " + done.string() + " ]; do sleep 0.1; done; kill $!"},
               host.path(), "agent-a");
  ASSERT_TRUE(eventually([&] { return a.out().find("fetched") != std::string::npos; }, std::chrono::seconds(60)))
      << a.out() << a.err();
  auto b = launch(subnet_b, {"--proxy-control", proxy.socket().string(), "--name", "agent-b", "--", kSh, "-c",
                             std::string(kCurl) + " -s -m 5 --noproxy '*' http://127.0.0.1:8765/ && echo reached-a; " +
                                 kCurl + " -s -m 10 " + url + "/b; echo; " + kCurl + " -s -m 10 --noproxy '*' " + url +
                                 "/b-captured; echo"});
  std::ofstream(done).put('\n');
  EXPECT_EQ(a.wait(), 0) << a.err();
  EXPECT_EQ(b.exit_code, 0) << b.err;
  EXPECT_THAT(a.out(), HasSubstr(HttpServer::kBody));
  EXPECT_THAT(b.out, HasSubstr(HttpServer::kBody));
  EXPECT_THAT(b.out, Not(HasSubstr("reached-a")));
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  EXPECT_EQ(query(proxy.store(), "SELECT path, agent FROM requests WHERE path IS NOT NULL AND path != '' ORDER BY path"),
            (std::vector<std::vector<std::string>>{{"/a", "agent-a"}, {"/b", "agent-b"}, {"/b-captured", "agent-b"}}));
  EXPECT_EQ(query(proxy.store(), "SELECT name, exit_status FROM agents ORDER BY name"),
            (std::vector<std::vector<std::string>>{{"agent-a", "0"}, {"agent-b", "0"}}));
}

// One name is one agent on a shared proxy: a second launch under the name of one still
// running is refused before its agent runs (125, the reason named, no other noise), and
// the name is free again once the first has ended.
TEST(LaunchSharedSocketLink, ASecondLaunchUnderARunningAgentsNameIsRefused) {
  NETBOX_REQUIRE_ROOT();
  HttpServer upstream;
  HostDir host;
  test::TempDir dir;
  SharedProxy proxy(host, dir.write("policy.json", policy_json(upstream.port())));
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const auto done = host.folder("flags") / "done";
  Background first({test::netbox_binary().string(), "launch", "--subnet", test_subnet().cidr, "--proxy-control",
                    proxy.socket().string(), "--name", "twin", "--", kSh, "-c",
                    "echo started; while [ ! -e " + done.string() + " ]; do sleep 0.1; done"},
                   host.path(), "twin-1");
  ASSERT_TRUE(eventually([&] { return first.out().find("started") != std::string::npos; }, std::chrono::seconds(60)))
      << first.out() << first.err();
  const auto marker = host.folder("flags") / "second-ran";
  auto second = launch(test_subnet(), {"--proxy-control", proxy.socket().string(), "--name", "twin", "--", kSh, "-c",
                                       "touch " + marker.string()});
  EXPECT_EQ(second.exit_code, 125) << second.err;
  EXPECT_THAT(second.err, HasSubstr("an agent named twin is attached to this proxy already"));
  EXPECT_THAT(second.err, Not(HasSubstr("unregister"))) << "a refused registration has nothing to unregister";
  EXPECT_FALSE(fs::exists(marker)) << "the refused launch's agent ran";
  std::ofstream(done).put('\n');
  EXPECT_EQ(first.wait(), 0) << first.err();
  auto third = launch(test_subnet(), {"--proxy-control", proxy.socket().string(), "--name", "twin", "--", "true"});
  EXPECT_EQ(third.exit_code, 0) << third.err;
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  EXPECT_EQ(query(proxy.store(), "SELECT COUNT(*) FROM agents WHERE name = 'twin' AND exit_status = 0"),
            (std::vector<std::vector<std::string>>{{"2"}}));
}

// A launcher killed with SIGKILL: its agent dies with it (parent-death signal), the proxy
// sees the control connection close and detaches it (the slot ends its row), and
// `netbox gc` removes the lease and cgroup it left.
TEST(LaunchSharedSocketLink, AKilledLaunchersAgentIsDetachedAndGcCleansTheRest) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(99);
  HostDir host;
  test::TempDir dir;
  SharedProxy proxy(host, dir.write("policy.json", policy_json(8080)));
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  Background launcher({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--proxy-control",
                       proxy.socket().string(), "--name", "victim", "--", kSh, "-c", "echo ready; exec sleep 60"},
                      host.path(), "victim");
  ASSERT_TRUE(eventually([&] { return launcher.out().find("ready") != std::string::npos; })) << launcher.err();
  ASSERT_TRUE(lease_exists(subnet));
  ::kill(launcher.pid(), SIGKILL);
  EXPECT_EQ(launcher.wait(), 137);
  EXPECT_TRUE(eventually([&] { return proxy.err().find("agent_unregistered agent=victim") != std::string::npos; }))
      << proxy.err();
  auto gc = test::run_netbox({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  expect_nothing_left(subnet);
  EXPECT_FALSE(lease_exists(subnet));
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  EXPECT_EQ(query(proxy.store(), "SELECT name, ended IS NOT NULL FROM agents"),
            (std::vector<std::vector<std::string>>{{"victim", "1"}}));
}

// --- a hostile control client -------------------------------------------------------

int connect_control(const fs::path& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// Sends `line` with `fds` (SCM_RIGHTS) and returns the proxy's one-line answer.
std::string exchange(int fd, const std::string& line, const std::vector<int>& fds) {
  std::vector<char> control(CMSG_SPACE(sizeof(int) * std::max<std::size_t>(fds.size(), 1)));
  iovec iov{const_cast<char*>(line.data()), line.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  if (::sendmsg(fd, &msg, MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) return "send failed";
  std::string reply;
  char ch;
  while (::recv(fd, &ch, 1, 0) == 1 && ch != '\n') reply += ch;
  return reply;
}

std::size_t open_fds(pid_t pid) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) ++n;
  return n;
}

int tcp_listener_here() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  ::listen(fd, 4);
  return fd;
}

// A listening TCP socket and a NETLINK_SOCK_DIAG socket made in a network namespace of
// their own (a thread unshares; the test's own namespace is untouched).
std::pair<int, int> listener_and_diag_elsewhere() {
  std::pair<int, int> out{-1, -1};
  std::thread([&] {
    if (::unshare(CLONE_NEWNET) != 0) return;
    out.first = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    if (::bind(out.first, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(out.first, 4) != 0) return;
    out.second = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  }).join();
  return out;
}

TEST(LaunchSharedSocketLink, AHostileControlClientsDescriptorsAreRefusedAndNoneStaysOpen) {
  NETBOX_REQUIRE_ROOT();
  HostDir host;
  test::TempDir dir;
  SharedProxy proxy(host, dir.write("policy.json", policy_json(8080)));
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const int c = connect_control(proxy.socket());
  ASSERT_GE(c, 0);
  ASSERT_EQ(exchange(c, "{\"op\":\"ping\"}\n", {}), "{\"ok\":true}");
  const std::size_t before = open_fds(proxy.pid());

  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  const int file = ::open("/etc/hostname", O_RDONLY | O_CLOEXEC);
  const int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const int unbound = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int host_listener = tcp_listener_here();  // listening, but in the proxy's own namespace
  const std::string reg = R"({"op":"register","agent":"intruder","sockets":{"http":1}})"
                          "\n";
  struct Case {
    std::string line;
    std::vector<int> fds;
    std::string refusal;
  };
  std::vector<int> many;
  for (int i = 0; i < 20; ++i) many.push_back(pipe_fds[0]);
  // The sock_diag socket the proxy finds the agent's processes through (issue 27): one of
  // another namespace would name another namespace's processes; anything else is refused.
  const auto [elsewhere, diag_elsewhere] = listener_and_diag_elsewhere();
  ASSERT_GE(diag_elsewhere, 0);
  const int diag_here = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  const std::string reg_diag = R"({"op":"register","agent":"intruder","sockets":{"http":1,"diag":true}})"
                               "\n";
  const std::vector<Case> cases{
      {reg, {pipe_fds[0]}, "the agent's HTTP proxy socket is no IP socket"},
      {reg, {file}, "the agent's HTTP proxy socket is no IP socket"},
      {reg, {udp}, "of the wrong type"},
      {reg, {unbound}, "is not listening"},
      {reg, {host_listener}, "is not in a network namespace of the agent's own"},
      {reg, {}, "the registration names 1 sockets (\"sockets\"), but 0 descriptors came with it"},
      {reg, {file, udp}, "the registration names 1 sockets (\"sockets\"), but 2 descriptors came with it"},
      {reg, many, "more than 16 descriptors came with the request; none was kept"},
      {"{\"op\":\"ping\"}\n", {file, udp}, "2 descriptors came with a request that takes none; none was kept"},
      {reg_diag, {elsewhere, udp}, "the agent's sock_diag socket is no NETLINK_SOCK_DIAG socket"},
      {reg_diag, {elsewhere, diag_here}, "the agent's sock_diag socket is in another network namespace than its listeners"},
      {R"({"op":"register","agent":"x","sockets":{"http":40}})"
       "\n",
       {file}, "\"sockets\" \"http\" is out of range: 40"},
  };
  for (const auto& k : cases) {
    const auto reply = nlohmann::json::parse(exchange(c, k.line, k.fds), nullptr, false);
    ASSERT_TRUE(reply.is_object()) << k.refusal;
    EXPECT_EQ(reply.value("ok", true), false) << k.refusal;
    EXPECT_THAT(reply.value("error", ""), HasSubstr(k.refusal));
  }
  // The connection still answers, and every descriptor sent is closed in the proxy.
  EXPECT_EQ(exchange(c, "{\"op\":\"ping\"}\n", {}), "{\"ok\":true}");
  EXPECT_EQ(open_fds(proxy.pid()), before);
  for (int fd : {pipe_fds[0], pipe_fds[1], file, udp, unbound, host_listener, elsewhere, diag_elsewhere, diag_here, c})
    ::close(fd);
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  EXPECT_TRUE(query(proxy.store(), "SELECT name FROM agents").empty()) << "a refused registration opened a row";
}

// The launch's pid names the init of the agent's PID namespace: the proxy takes the processes
// below it for the agent's (attribution) and the row names it. A hostile control client
// naming the proxy itself, or another process of the host, is refused; its own child is
// taken. SO_PEERCRED tells the proxy who registers.
TEST(LaunchSharedSocketLink, AControlClientNamesNoInitButOneItStarted) {
  NETBOX_REQUIRE_ROOT();
  HostDir host;
  test::TempDir dir;
  SharedProxy proxy(host, dir.write("policy.json", policy_json(8080)));
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const auto [listener, diag] = listener_and_diag_elsewhere();
  ASSERT_GE(diag, 0);
  Background own_child({"/bin/sleep", "60"}, dir.path(), "child");
  const auto reg = [](std::int64_t pid) {
    return nlohmann::json{{"op", "register"}, {"agent", "intruder"}, {"sockets", {{"http", 1}, {"diag", true}}},
                          {"launch", {{"pid", pid}, {"command_line", "sh"}}}}
               .dump() +
           "\n";
  };
  const int c = connect_control(proxy.socket());
  ASSERT_GE(c, 0);
  // The proxy (this test's child, so the descent alone would not refuse it).
  auto reply = nlohmann::json::parse(exchange(c, reg(proxy.pid()), {listener, diag}), nullptr, false);
  ASSERT_TRUE(reply.is_object());
  EXPECT_EQ(reply.value("ok", true), false);
  EXPECT_THAT(reply.value("error", ""), HasSubstr("\"launch\" \"pid\" " + std::to_string(proxy.pid()) + " is this proxy"));
  // The host's init, the client itself, no process at all.
  for (const std::int64_t hostile : {std::int64_t{1}, static_cast<std::int64_t>(::getpid()), std::int64_t{-5}}) {
    reply = nlohmann::json::parse(exchange(c, reg(hostile), {listener, diag}), nullptr, false);
    ASSERT_TRUE(reply.is_object()) << hostile;
    EXPECT_EQ(reply.value("ok", true), false) << hostile;
    EXPECT_THAT(reply.value("error", ""), HasSubstr("\"launch\" \"pid\" " + std::to_string(hostile) +
                                                    " is not a process the registering client (pid " +
                                                    std::to_string(::getpid()) + ") started"));
  }
  // Its own child: attached.
  reply = nlohmann::json::parse(exchange(c, reg(own_child.pid()), {listener, diag}), nullptr, false);
  ASSERT_TRUE(reply.is_object());
  EXPECT_EQ(reply.value("ok", false), true) << reply.dump();
  ::close(c);
  ::close(listener);
  ::close(diag);
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  EXPECT_EQ(query(proxy.store(), "SELECT name, pid FROM agents"),
            (std::vector<std::vector<std::string>>{{"intruder", std::to_string(own_child.pid())}}));
}

}  // namespace
}  // namespace netbox::launch_test
