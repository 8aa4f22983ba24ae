// netbox launch --ask (issue 27 item 3): a host the policy does not list is asked of a
// person, on the launch's terminal (driven here through a pseudo-terminal that is the
// launch's controlling terminal, its stdin /dev/null, so the agent does not own it) or,
// for a shared proxy, with `netbox agent approve --control`. Grants are rows in `events`
// and name themselves in the rows of the requests they let through; internal addresses
// are never asked; the agent has no way to answer for itself.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// `netbox launch ARGS` in a session of its own whose controlling terminal is a fresh
// pseudo-terminal (what /dev/tty is for the launch); stdin /dev/null, stdout and stderr in
// files. The test reads the terminal and types into it.
class TerminalLaunch {
 public:
  // `stdout_on_terminal`: the launch's stdout (and so the agent's) is the terminal too.
  TerminalLaunch(const std::vector<std::string>& args, const std::filesystem::path& dir, bool stdout_on_terminal = false)
      : out_(dir / "launch.out"), err_(dir / "launch.err") {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master_ < 0 || ::grantpt(master_) != 0 || ::unlockpt(master_) != 0) throw std::runtime_error("posix_openpt");
    const std::string slave = ::ptsname(master_);
    std::vector<std::string> argv = {test::netbox_binary().string(), "launch"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      ::setsid();
      const int tty = ::open(slave.c_str(), O_RDWR);  // the session's first terminal: its controlling one
      if (tty < 0 || ::ioctl(tty, TIOCSCTTY, 0) != 0) ::_exit(120);
      const int in = ::open("/dev/null", O_RDONLY);
      const int out = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || out < 0 || err < 0) ::_exit(121);
      ::dup2(in, 0);
      ::dup2(stdout_on_terminal ? tty : out, 1);
      ::dup2(err, 2);
      ::close_range(3, ~0U, 0);  // nothing of the test's own in the launch
      std::vector<char*> a;
      for (auto& s : argv) a.push_back(s.data());
      a.push_back(nullptr);
      ::execv(a[0], a.data());
      ::_exit(127);
    }
  }
  ~TerminalLaunch() {
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(master_);
  }

  // Waits (bounded) until the terminal has shown `text` `times` times in all.
  bool shown(const std::string& text, int times = 1) {
    return eventually([&] {
      drain();
      return count(text) >= times;
    }, std::chrono::seconds(60));
  }
  int count(const std::string& text) const {
    int n = 0;
    for (auto at = screen_.find(text); at != std::string::npos; at = screen_.find(text, at + 1)) ++n;
    return n;
  }
  void type(const std::string& line) { ASSERT_EQ(::write(master_, line.data(), line.size()), static_cast<ssize_t>(line.size())); }
  int wait() {
    int status = 0;
    // The terminal is read while the launch runs: a full pty would stop its writes.
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      drain();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    reaped_ = true;
    drain();
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  const std::string& screen() const { return screen_; }
  std::string out() const { return read(out_); }
  std::string err() const { return read(err_); }

 private:
  void drain() {
    char buf[4096];
    for (;;) {
      pollfd p{master_, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN)) return;
      const ssize_t n = ::read(master_, buf, sizeof buf);
      if (n <= 0) return;
      screen_.append(buf, static_cast<std::size_t>(n));
    }
  }
  static std::string read(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  int master_ = -1;
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string screen_;
  std::filesystem::path out_, err_;
};

constexpr const char* kQuestion = "netbox ask: agent asker wants denied.test:";

std::string curl(const std::string& url) { return std::string(kCurl) + " -s -m 90 " + url + "; echo; "; }

// A port free on 127.0.0.1 now (for the admin endpoint).
std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// The rows of the HTTP requests to denied.test: path, decision, rule.
std::vector<std::vector<std::string>> asked_rows(const std::filesystem::path& db) {
  // The captured connection's own row (no path) is its HTTP request's parent: left out.
  return query(db, "SELECT path, decision, rule FROM requests WHERE host = 'denied.test' AND path != '' ORDER BY id");
}

TEST(LaunchAsk, OnceLetsOneRequestThroughAndLaunchLetsTheRestThroughWithoutAsking) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(51);
  HostDir host;
  const auto work = host.folder("work");
  HttpServer upstream;
  test::TempDir db;
  const auto policy = db.write("policy.json", policy_json(upstream.port()));
  const std::string base = "http://denied.test:" + std::to_string(upstream.port());
  TerminalLaunch run({"--subnet", subnet.cidr, "--audit-db", (db.path() / "a.db").string(), "--policy",
                      policy.string(), "--workdir", work.string(), "--name", "asker", "--ask", "--", kSh, "-c",
                      // The first captured: the DNS view answers the unlisted name so that it can be asked.
                      std::string(kCurl) + " -s -m 90 --noproxy '*' " + base + "/one; echo; " + curl(base + "/two") +
                          curl(base + "/three")},
                     host.path());
  ASSERT_TRUE(run.shown(kQuestion)) << run.screen() << run.err();
  EXPECT_THAT(run.screen(), HasSubstr("(capture, not in the policy); [o]nce, for this [l]aunch, add to the [p]olicy file"));
  run.type("o\n");
  ASSERT_TRUE(run.shown(kQuestion, 2)) << "a grant for once asks again:\n" << run.screen();
  EXPECT_THAT(run.screen(), HasSubstr("(http, not in the policy)"));
  run.type("l\n");
  EXPECT_EQ(run.wait(), 0) << run.err();
  EXPECT_EQ(run.count(kQuestion), 2) << "the launch grant asks no more:\n" << run.screen();
  EXPECT_EQ(run.out(), std::string(HttpServer::kBody) + "\n" + HttpServer::kBody + "\n" + HttpServer::kBody + "\n");
  const auto rows = asked_rows(db.path() / "a.db");
  ASSERT_EQ(rows.size(), 3u) << ::testing::PrintToString(rows);
  for (const auto& r : rows) {
    EXPECT_EQ(r[1], "allow");
    EXPECT_THAT(r[2], ::testing::StartsWith("grant:"));
  }
  EXPECT_NE(rows[0][2], rows[1][2]) << "each question is a grant of its own";
  EXPECT_EQ(rows[1][2], rows[2][2]) << "the third request went through on the launch grant";
  EXPECT_EQ(query(db.path() / "a.db",
                  "SELECT json_extract(detail, '$.agent'), json_extract(detail, '$.scope'), json_extract(detail, '$.grantor') FROM events "
                  "WHERE kind = 'ask_granted' ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"asker", "once", "the launch's terminal"},
                                                   {"asker", "launch", "the launch's terminal"}}));
  expect_nothing_left(subnet);
}

TEST(LaunchAsk, DenyAndNoAnswerRefuseAndInternalAddressesAreNeverAsked) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(52);
  HostDir host;
  const auto work = host.folder("work");
  HttpServer upstream;
  test::TempDir db;
  const auto policy = db.write("policy.json", policy_json(upstream.port()));
  const std::string port = std::to_string(upstream.port());
  const std::string base = "http://denied.test:" + port;
  // 127.0.0.2 is loopback, which internal.allow does not list: refused at once, never asked.
  const std::string script = std::string(kCurl) + " -s -m 90 -o /dev/null -w '%{http_code} ' -D - " + base +
                             "/denied; echo; " + kCurl + " -s -m 90 -D - " + base + "/unanswered; echo; " + kCurl +
                             " -s -m 90 -D - http://127.0.0.2:" + port + "/internal; echo";
  TerminalLaunch run({"--subnet", subnet.cidr, "--audit-db", (db.path() / "a.db").string(), "--policy",
                      policy.string(), "--workdir", work.string(), "--name", "asker", "--ask", "--ask-timeout", "2s",
                      "--", kSh, "-c", script},
                     host.path());
  ASSERT_TRUE(run.shown(kQuestion)) << run.screen() << run.err();
  run.type("d\n");
  ASSERT_TRUE(run.shown(kQuestion, 2)) << run.screen();  // /unanswered: nobody answers
  EXPECT_EQ(run.wait(), 0) << run.err();
  EXPECT_THAT(run.screen(), HasSubstr("no answer for denied.test:" + port + "; refused"));
  EXPECT_EQ(run.count("wants 127.0.0.2"), 0) << run.screen();
  EXPECT_EQ(upstream.connections(), 0);
  EXPECT_THAT(run.out(), HasSubstr("403"));
  EXPECT_THAT(run.out(), HasSubstr("asked, and denied by the launch's terminal"));
  EXPECT_THAT(run.out(), HasSubstr("asked; no answer within 2s"));
  EXPECT_THAT(run.out(), HasSubstr("is internal (loopback)"));
  EXPECT_EQ(query(db.path() / "a.db", "SELECT path, decision FROM requests WHERE path IN ('/denied', '/unanswered', "
                                      "'/internal') ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"/denied", "deny"}, {"/unanswered", "deny"}, {"/internal", "deny"}}));
  EXPECT_EQ(query(db.path() / "a.db", "SELECT kind FROM events WHERE kind LIKE 'ask_%' AND kind != 'ask_pending' ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"ask_denied"}, {"ask_expired"}}));
  expect_nothing_left(subnet);
}

TEST(LaunchAsk, PolicyScopeWritesTheHostIntoThePolicyFile) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(53);
  HostDir host;
  const auto work = host.folder("work");
  HttpServer upstream;
  test::TempDir db;
  const std::string text = "// the team's policy\n" + policy_json(upstream.port());
  const auto policy = db.write("policy.json", text);
  const std::string port = std::to_string(upstream.port());
  TerminalLaunch run({"--subnet", subnet.cidr, "--audit-db", (db.path() / "a.db").string(), "--policy",
                      policy.string(), "--workdir", work.string(), "--name", "asker", "--ask", "--", kSh, "-c",
                      curl("http://denied.test:" + port + "/p")},
                     host.path());
  ASSERT_TRUE(run.shown(kQuestion)) << run.screen() << run.err();
  run.type("p\n");
  EXPECT_EQ(run.wait(), 0) << run.err();
  EXPECT_EQ(run.out(), std::string(HttpServer::kBody) + "\n");
  std::ifstream in(policy);
  std::stringstream now;
  now << in.rdbuf();
  std::string expected = text;
  expected.replace(expected.find("\"allow\": [") + 10, 0, "\"denied.test:" + port + "\", ");
  EXPECT_EQ(now.str(), expected) << "the entry added, the rest (comments too) as it was";
  EXPECT_EQ(test::run_netbox({"policy", "check", policy.string()}).exit_code, 0);
  expect_nothing_left(subnet);
}

// The agent writes to the terminal the question is asked on: it must not redraw the
// question (move the cursor back onto the host and print another, so that `p` adds its
// own) nor queue answers. Its output is held while the question is open and shown after.
TEST(LaunchAsk, TheAgentCannotRedrawAnOpenQuestion) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet();
  HostDir host;
  const auto work = host.folder("work");
  HttpServer upstream;
  test::TempDir db;
  const auto policy = db.write("policy.json", policy_json(upstream.port()));
  const std::string port = std::to_string(upstream.port());
  const std::string script = "(" + curl("http://denied.test:" + port + "/p") + ") & " +
                             "for i in $(seq 1 20); do printf '\\r\\033[32G\\033[KREDRAWN pypi.org:443 '; sleep 0.3; done; "
                             "printf '\\033[6n'; wait";
  TerminalLaunch run({"--subnet", subnet.cidr, "--audit-db", (db.path() / "a.db").string(), "--policy",
                      policy.string(), "--workdir", work.string(), "--name", "asker", "--ask", "--", kSh, "-c", script},
                     host.path(), true);
  ASSERT_TRUE(run.shown(kQuestion)) << run.screen() << run.err();
  const auto asked = run.screen().rfind(kQuestion);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // the agent tries ten times meanwhile
  run.shown(kQuestion);  // reads what the terminal has now
  EXPECT_EQ(run.screen().find("REDRAWN", asked), std::string::npos)
      << "the agent drew over the open question:\n" << run.screen().substr(asked);
  // Only the letter or its word answers: "oh no" is no "once", "probably not" no "policy".
  run.type("oh no\n");
  ASSERT_TRUE(run.shown("netbox ask: answer o, l, p, or d")) << run.screen().substr(asked);
  run.type("probably not\n");
  ASSERT_TRUE(run.shown("netbox ask: answer o, l, p, or d", 2)) << run.screen().substr(asked);
  run.type("d\n");
  EXPECT_EQ(run.wait(), 0) << run.err();
  const auto answered = run.screen().find("netbox ask: refused denied.test:", asked);
  ASSERT_NE(answered, std::string::npos) << run.screen().substr(asked);
  EXPECT_NE(run.screen().find("REDRAWN", answered), std::string::npos) << "its output is held, not lost";
  std::ifstream in(policy);
  std::stringstream now;
  now << in.rdbuf();
  EXPECT_EQ(now.str(), policy_json(upstream.port()));
  expect_nothing_left(subnet);
}

TEST(LaunchAsk, SharedProxyQuestionsAreAnsweredWithAgentApproveAndTheAdminApi) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(54);
  HttpServer upstream;
  HostDir host;
  test::TempDir dir;
  const auto token = dir.write("admin.token", "s3cret-admin-token\n");
  std::filesystem::permissions(token, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const std::string admin = "127.0.0.1:" + std::to_string(free_port());
  SharedProxy proxy(host, dir.write("policy.json", policy_json(upstream.port())),
                    {"--admin", admin, "--admin-token-file", token.string()});
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string dest = "denied.test:" + std::to_string(upstream.port());
  Background launch({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--proxy-control",
                     proxy.socket().string(), "--name", "shared-asker", "--ask", "--", kSh, "-c",
                     curl("http://" + dest + "/shared") + curl("http://" + dest + "/by-admin")},
                    host.path(), "launch");
  const std::string control = proxy.socket().string();
  auto waiting = [&] {
    return eventually([&] {
      return test::run_netbox({"agent", "pending", "--control", control}).out.find(dest) != std::string::npos;
    });
  };
  ASSERT_TRUE(waiting()) << launch.err() << proxy.err();
  EXPECT_THAT(launch.err(), HasSubstr("netbox agent pending --control PATH"));
  const auto pending = test::run_netbox({"agent", "pending", "--control", control, "--format", "json"});
  EXPECT_THAT(pending.out, HasSubstr("\"agent\": \"shared-asker\""));
  const auto wrong = test::run_netbox({"agent", "approve", "--control", control, "shared-asker", "other.test"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_THAT(wrong.err, HasSubstr("is not waiting on other.test"));
  const auto ok = test::run_netbox({"agent", "approve", "--control", control, "shared-asker", dest});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  // The second request asks again (once); the admin API answers it, with its token only.
  ASSERT_TRUE(waiting()) << launch.err() << proxy.err();
  const std::string body = R"({"agent":"shared-asker","host":")" + dest + R"(","scope":"launch"})";
  const auto no_token = test::run({kCurl, "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "--data", body,
                                   "http://" + admin + "/api/approve"});
  EXPECT_EQ(no_token.out, "401");
  const auto with_token = test::run({kCurl, "-s", "-X", "POST", "-H", "Authorization: Bearer s3cret-admin-token",
                                     "--data", body, "http://" + admin + "/api/approve"});
  EXPECT_EQ(with_token.out, "{\"ok\":true}\n");
  EXPECT_EQ(launch.wait(), 0) << launch.err();
  EXPECT_EQ(launch.out(), std::string(HttpServer::kBody) + "\n" + HttpServer::kBody + "\n");
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  EXPECT_EQ(query(proxy.store(), "SELECT path, decision, substr(rule, 1, 6) FROM requests WHERE host = 'denied.test' ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"/shared", "allow", "grant:"}, {"/by-admin", "allow", "grant:"}}));
  EXPECT_EQ(query(proxy.store(),
                  "SELECT json_extract(detail, '$.grantor') FROM events WHERE kind = 'ask_granted' ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"uid 0 (control socket)"}, {"the admin API (token holder)"}}));
  expect_nothing_left(subnet);
}

// The agent tries every way it has to answer its own question: the control socket (it
// knows the path), the launch's terminal (/dev/tty), a header saying it is approved. Each
// fails; the question times out and the request is refused.
// A launch with no terminal to ask on (an agent that owns the launch's terminal is the
// same for netbox: nothing to prompt on): its questions are found and answered from
// another terminal by the agent's name alone, over the launch's operator socket, with no
// --control (`netbox agent pending`, `netbox agent approve NAME HOST`).
TEST(LaunchAsk, AnEmbeddedLaunchIsAnsweredByNameFromAnotherTerminal) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(56);
  HostDir host;
  const auto work = host.folder("work");
  HttpServer upstream;
  test::TempDir db;
  const auto policy = db.write("policy.json", policy_json(upstream.port()));
  const std::string port = std::to_string(upstream.port());
  const std::string name = "asked-by-name-" + std::to_string(::getpid());
  Background launch({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db",
                     (db.path() / "a.db").string(), "--policy", policy.string(), "--workdir", work.string(), "--name",
                     name, "--ask", "--", kSh, "-c", curl("http://denied.test:" + port + "/by-name")},
                    host.path(), "by-name");
  test::RunResult pending;
  ASSERT_TRUE(eventually([&] {
    pending = test::run_netbox({"agent", "pending", "--format", "json"}, std::chrono::seconds(30));
    return pending.out.find("\"" + name + "\"") != std::string::npos;
  }))
      << pending.out << pending.err << launch.err();
  const auto approved =
      test::run_netbox({"agent", "approve", name, "denied.test:" + port}, std::chrono::seconds(30));
  EXPECT_EQ(approved.exit_code, 0) << approved.err;
  EXPECT_EQ(launch.wait(), 0) << launch.err();
  EXPECT_EQ(launch.out(), std::string(HttpServer::kBody) + "\n");
  const auto rows = asked_rows(db.path() / "a.db");
  ASSERT_FALSE(rows.empty());
  EXPECT_THAT(rows.back()[2], ::testing::StartsWith("grant:"));
  EXPECT_EQ(query(db.path() / "a.db",
                  "SELECT json_extract(detail, '$.grantor') FROM events WHERE kind = 'ask_granted'"),
            (std::vector<std::vector<std::string>>{{"uid 0 (control socket)"}}));
  expect_nothing_left(subnet);
}

TEST(LaunchAsk, TheAgentCannotApproveItself) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(55);
  HttpServer upstream;
  HostDir host;
  test::TempDir dir;
  const auto token = dir.write("admin.token", "s3cret-admin-token\n");
  std::filesystem::permissions(token, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const std::string admin = "127.0.0.1:" + std::to_string(free_port());
  SharedProxy proxy(host, dir.write("policy.json", policy_json(upstream.port())),
                    {"--admin", admin, "--admin-token-file", token.string()});
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string dest = "denied.test:" + std::to_string(upstream.port());
  const std::string approve = R"({"op":"approve","agent":"self","host":"denied.test","scope":"launch"})";
  const std::string admin_post = std::string(kCurl) + " -s -m 5 -D - -X POST --data '" + approve + "' ";
  const std::string script =
      std::string(kCurl) + " -s -m 90 -H 'X-Netbox-Decision: allow' -H 'X-Netbox-Approve: launch' http://" + dest +
      "/self & sleep 1; " + kPython + " -c \"import socket,sys\ntry:\n s=socket.socket(socket.AF_UNIX)\n s.connect('" +
      proxy.socket().string() + "')\n s.sendall(b'" + approve + "\\n')\n print('control:', s.recv(4096))\n" +
      "except Exception as e:\n print('control refused:', e)\"; (echo l > /dev/tty) 2>/dev/null && echo tty-written; " +
      kCurl + " -s -m 5 --unix-socket " + proxy.socket().string() + " http://x/ && echo curl-unix; " + admin_post +
      "--noproxy '' http://" + admin + "/api/approve; echo; " + admin_post + "--noproxy '*' http://" + admin +
      "/api/approve && echo admin-direct; wait; echo";
  auto r = launch(subnet, {"--proxy-control", proxy.socket().string(), "--name", "self", "--ask", "--ask-timeout",
                           "4s", "--", kSh, "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("control refused:"));
  EXPECT_THAT(r.out, Not(HasSubstr("control: b'{\"ok\":true")));
  EXPECT_THAT(r.out, Not(HasSubstr("tty-written")));
  EXPECT_THAT(r.out, Not(HasSubstr("curl-unix")));
  EXPECT_THAT(r.out, Not(HasSubstr("admin-direct")));
  EXPECT_THAT(r.out, Not(HasSubstr("\"ok\":true"))) << "nothing the agent reached took its answer";
  EXPECT_THAT(r.out, HasSubstr("Request: POST http://" + admin + "/api/approve\nReason: 127.0.0.1 is not in allow; "
                               "add it to allow to permit it\n"))
      << "the admin endpoint through the proxy: refused at once, never asked";
  EXPECT_THAT(r.out, Not(HasSubstr(HttpServer::kBody)));
  EXPECT_THAT(r.out, HasSubstr("asked; no answer within 4s"));
  EXPECT_EQ(upstream.connections(), 0);
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  EXPECT_EQ(query(proxy.store(), "SELECT kind, json_extract(detail, '$.host') FROM events WHERE kind LIKE 'ask_%' ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"ask_pending", "denied.test"}, {"ask_expired", "denied.test"}}));
  expect_nothing_left(subnet);
}

// A connection to a shared proxy's control socket, as a launcher (or a hostile client with
// its uid) holds one: lines out, lines in.
class ControlLine {
 public:
  explicit ControlLine(const std::filesystem::path& socket) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, socket.c_str(), sizeof a.sun_path - 1);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect");
    timeval tv{30, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~ControlLine() { ::close(fd_); }
  std::string ask(const std::string& line) {
    const std::string out = line + "\n";
    if (::send(fd_, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) return {};
    for (;;) {
      if (const auto nl = in_.find('\n'); nl != std::string::npos) {
        std::string got = in_.substr(0, nl);
        in_.erase(0, nl + 1);
        return got;
      }
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return {};
      in_.append(buf, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  std::string in_;
};

// The question ids waiting for `agent` on the proxy at `control`.
std::vector<std::uint64_t> waiting_ids(const std::string& control, const std::string& agent) {
  const auto r = test::run_netbox({"agent", "pending", "--control", control, "--format", "json"});
  std::vector<std::uint64_t> out;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  const auto& list = j.is_object() && j.contains("pending") ? j["pending"] : j;
  if (!list.is_array()) return out;
  for (const auto& q : list)
    if (q.value("agent", "") == agent) out.push_back(q.value("id", std::uint64_t{0}));
  return out;
}

// A launch registered with a shared proxy asks on its own terminal, as an embedded launch
// does (the agent does not own it): once lets the waiting request through, deny refuses
// the next; the grantor is the person at that terminal.
TEST(LaunchAsk, SharedProxyQuestionsAreAskedOnTheLaunchsOwnTerminal) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(160);
  HttpServer upstream;
  HostDir host;
  test::TempDir dir;
  SharedProxy proxy(host, dir.write("policy.json", policy_json(upstream.port())));
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string dest = "denied.test:" + std::to_string(upstream.port());
  TerminalLaunch run({"--subnet", subnet.cidr, "--proxy-control", proxy.socket().string(), "--name", "asker", "--ask",
                      "--", kSh, "-c", curl("http://" + dest + "/once") + curl("http://" + dest + "/denied")},
                     host.path());
  ASSERT_TRUE(run.shown(kQuestion)) << run.screen() << run.err() << proxy.err();
  EXPECT_THAT(run.screen(), HasSubstr("(http, not in the policy); [o]nce, for this [l]aunch, add to the [p]olicy file, [d]eny?"));
  run.type("o\n");
  ASSERT_TRUE(run.shown(kQuestion, 2)) << "a grant for once asks again:\n" << run.screen() << run.err();
  run.type("d\n");
  EXPECT_EQ(run.wait(), 0) << run.err();
  EXPECT_THAT(run.screen(), HasSubstr("netbox ask: allowed " + dest + " (once)"));
  EXPECT_THAT(run.screen(), HasSubstr("netbox ask: refused " + dest));
  EXPECT_THAT(run.err(), Not(HasSubstr("netbox agent pending"))) << "asked here, not elsewhere";
  EXPECT_THAT(run.out(), HasSubstr(HttpServer::kBody));
  EXPECT_THAT(run.out(), HasSubstr("asked, and denied by "));
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  EXPECT_EQ(query(proxy.store(), "SELECT path, decision, coalesce(substr(rule, 1, 6), '') = 'grant:' FROM requests WHERE host = "
                                 "'denied.test' ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"/once", "allow", "1"}, {"/denied", "deny", "0"}}));
  const auto answers = query(proxy.store(), "SELECT kind, json_extract(detail, '$.grantor') FROM events WHERE kind IN "
                                            "('ask_granted', 'ask_denied') ORDER BY id");
  ASSERT_EQ(answers.size(), 2u) << ::testing::PrintToString(answers);
  EXPECT_EQ(answers[0][0], "ask_granted");
  EXPECT_EQ(answers[1][0], "ask_denied");
  for (const auto& a : answers)
    EXPECT_THAT(a[1], ::testing::EndsWith(" at the launch's terminal (agent asker, control connection uid 0)"));
  expect_nothing_left(subnet);
}

// The same question answered elsewhere first (`netbox agent approve --control`): the first
// answer wins, and the launch's terminal stops asking and says so.
TEST(LaunchAsk, SharedProxyQuestionAnsweredElsewhereFirstEndsTheTerminalsPrompt) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(161);
  HttpServer upstream;
  HostDir host;
  test::TempDir dir;
  SharedProxy proxy(host, dir.write("policy.json", policy_json(upstream.port())));
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string dest = "denied.test:" + std::to_string(upstream.port());
  TerminalLaunch run({"--subnet", subnet.cidr, "--proxy-control", proxy.socket().string(), "--name", "asker", "--ask",
                      "--", kSh, "-c", curl("http://" + dest + "/elsewhere")},
                     host.path());
  ASSERT_TRUE(run.shown(kQuestion)) << run.screen() << run.err() << proxy.err();
  const auto ok = test::run_netbox({"agent", "approve", "--control", proxy.socket().string(), "asker", dest});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  ASSERT_TRUE(run.shown("netbox ask: " + dest + " was answered elsewhere: allowed (once) by uid 0 (control socket)"))
      << run.screen();
  EXPECT_EQ(run.wait(), 0) << run.err();
  EXPECT_EQ(run.out(), std::string(HttpServer::kBody) + "\n");
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  EXPECT_EQ(query(proxy.store(), "SELECT json_extract(detail, '$.grantor') FROM events WHERE kind LIKE 'ask_%' AND "
                                 "kind != 'ask_pending'"),
            (std::vector<std::vector<std::string>>{{"uid 0 (control socket)"}}));
  expect_nothing_left(subnet);
}

// A hostile client with the proxy's uid registers an agent of its own by address (inside
// the proxy's pool, where no test launches: so its connection
// is a registration connection) and answers another launch's question with the terminal's
// op: refused, and the question still waits for someone who may answer it.
TEST(LaunchAsk, ARegistrationConnectionCannotAnswerAnotherAgentsQuestion) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(162);
  HttpServer upstream;
  HostDir host;
  test::TempDir dir;
  SharedProxy proxy(host, dir.write("policy.json", policy_json(upstream.port())));
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string control = proxy.socket().string();
  const std::string dest = "denied.test:" + std::to_string(upstream.port());
  Background launch({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--proxy-control", control,
                     "--name", "victim", "--ask", "--", kSh, "-c", curl("http://" + dest + "/victim")},
                    host.path(), "victim");
  std::vector<std::uint64_t> ids;
  ASSERT_TRUE(eventually([&] { return !(ids = waiting_ids(control, "victim")).empty(); })) << launch.err() << proxy.err();
  ControlLine hostile(proxy.socket());
  EXPECT_EQ(hostile.ask(R"({"op":"register","addr":"10.213.255.7","agent":"hostile","ask":{"terminal":true}})"),
            R"({"ok":true})");
  const auto answered = hostile.ask(R"({"op":"answer","id":)" + std::to_string(ids.front()) +
                                    R"(,"approve":true,"scope":"launch","user":"mallory"})");
  EXPECT_THAT(answered, HasSubstr("\"ok\":false"));
  EXPECT_THAT(answered, HasSubstr("of an agent registered on this connection is waiting"));
  EXPECT_THAT(answered, Not(HasSubstr("victim"))) << "nothing of another launch's question is told";
  EXPECT_EQ(waiting_ids(control, "victim"), ids) << "the question still waits";
  const auto denied = test::run_netbox({"agent", "deny", "--control", control, "victim", dest});
  EXPECT_EQ(denied.exit_code, 0) << denied.err;
  EXPECT_EQ(launch.wait(), 0) << launch.err();
  EXPECT_THAT(launch.out(), HasSubstr("asked, and denied by uid 0 (control socket)"));
  EXPECT_EQ(upstream.connections(), 0);
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  EXPECT_EQ(query(proxy.store(), "SELECT kind, json_extract(detail, '$.grantor') FROM events WHERE kind IN "
                                 "('ask_granted', 'ask_denied')"),
            (std::vector<std::vector<std::string>>{{"ask_denied", "uid 0 (control socket)"}}));
  expect_nothing_left(subnet);
}

// A client that gives up while asked (curl -m 3, against a 600 s question) is let go at
// once: its row is closed saying so, long before the question's timeout; the question
// stays, and the agent's retry joins it (asked once) and goes through when approved.
TEST(LaunchAsk, AClientThatLeavesWhileAskedIsLetGoAtOnceAndItsRetryJoinsTheQuestion) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(163);
  HttpServer upstream;
  HostDir host;
  test::TempDir dir;
  SharedProxy proxy(host, dir.write("policy.json", policy_json(upstream.port())));
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string control = proxy.socket().string();
  const std::string dest = "denied.test:" + std::to_string(upstream.port());
  Background launch({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--proxy-control", control,
                     "--name", "leaver", "--ask", "--ask-timeout", "600s", "--", kSh, "-c",
                     std::string(kCurl) + " -s -m 3 http://" + dest + "/gave-up; echo; " + curl("http://" + dest + "/retry")},
                    host.path(), "leaver");
  std::vector<std::vector<std::string>> left;
  ASSERT_TRUE(eventually([&] {
    left = query(proxy.store(), "SELECT decision, reason FROM requests WHERE path = '/gave-up'");
    return !left.empty();
  }, std::chrono::seconds(90)))
      << "the row of the client that left stays open until the question's timeout\n" << launch.err() << proxy.err();
  EXPECT_EQ(left[0][0], "deny");
  EXPECT_THAT(left[0][1], HasSubstr("(asked; the client left while asking)"));
  std::vector<std::uint64_t> ids;
  ASSERT_TRUE(eventually([&] {
    const auto r = test::run_netbox({"agent", "pending", "--control", control, "--format", "json"});
    return r.out.find("\"waiters\": 1") != std::string::npos && !(ids = waiting_ids(control, "leaver")).empty();
  })) << launch.err();
  const auto ok = test::run_netbox({"agent", "approve", "--control", control, "leaver", dest});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(launch.wait(), 0) << launch.err();
  EXPECT_EQ(launch.out(), "\n" + std::string(HttpServer::kBody) + "\n");
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  EXPECT_EQ(query(proxy.store(), "SELECT kind FROM events WHERE kind LIKE 'ask_%' ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"ask_pending"}, {"ask_granted"}}))
      << "the retry joined the question its first try left";
  EXPECT_EQ(query(proxy.store(), "SELECT path, decision FROM requests WHERE host = 'denied.test' ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"/gave-up", "deny"}, {"/retry", "allow"}}));
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
