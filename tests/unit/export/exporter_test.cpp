// The Exporter as the proxy drives it: its shutdown, and what its sinks do when the disk or
// the receiver misbehaves.
#include "netbox/export/exporter.hpp"

#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace netbox::siem {
namespace {

using namespace std::chrono_literals;

// Runs `work` on a thread and waits for it at most `guard`: a hang guard, far above what
// the work should take, not a speed target. A hung destructor cannot be abandoned and the
// test go on, so the binary ends there, failing.
template <typename Work>
void completes_within(std::chrono::seconds guard, Work work) {
  std::packaged_task<void()> task(std::move(work));
  auto done = task.get_future();
  std::thread runner(std::move(task));
  if (done.wait_for(guard) != std::future_status::ready) {
    ADD_FAILURE() << "still running after " << guard.count() << " s";
    std::cerr.flush();
    std::_Exit(1);
  }
  runner.join();
  done.get();
}

std::vector<nlohmann::json> lines_of(const std::filesystem::path& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line, nullptr, false));
  return out;
}

audit::AuditRecord denied_request(std::string path) {
  audit::AuditRecord r;
  r.agent = "builder";
  r.kind = "http";
  r.method = "GET";
  r.host = "evil.test";
  r.port = 80;
  r.path = std::move(path);
  r.decision = "deny";
  r.rule = "default";
  r.status = 403;
  return r;
}

// A proxy shutting down with a queue full of records (an agent's flood of denied requests)
// does not wait for each to be mapped and written: past shutdown_wait what is queued is
// counted dropped. Each record here has an 8 KB path of "nbx-nbx-..." (the flood that once
// cost 0.7 s a record, hours for the queue).
TEST(Exporter, IsDestroyedPromptlyWithALargeQueueOfRecords) {
  test::TempDir dir;
  const auto file = dir.path() / "ocsf.jsonl";
  ExporterOptions options;
  options.queue_capacity = 100000;
  options.shutdown_wait = 100ms;
  std::string flood;
  while (flood.size() < 8192) flood += "nbx-";
  constexpr int kRecords = 2000;
  auto exporter = std::make_unique<Exporter>(std::vector<SinkSpec>{parse_sink("ocsf-jsonl:" + file.string())}, options);
  for (int i = 0; i < kRecords; ++i) exporter->row(denied_request("/" + flood));
  completes_within(60s, [&] { exporter.reset(); });
  const auto lines = lines_of(file);
  EXPECT_LE(lines.size(), 2u * kRecords) << "an activity and a finding a record at most";
  for (const auto& j : lines) EXPECT_FALSE(j.is_discarded()) << "every line written is a whole record";
}

// Waits (under a hang guard) until the sink has settled `records` records either way.
void wait_settled(const Exporter& exporter, std::uint64_t records) {
  completes_within(60s, [&] {
    for (;;) {
      const auto s = exporter.stats()[0];
      if (s.exported + s.dropped >= records) return;
      std::this_thread::sleep_for(5ms);
    }
  });
}

// A file size limit stands for a full disk: the write stops partway through a record.
// The records written whole count as exported, only the cut one as dropped, and the next
// write starts on a new line, so only that one line is broken.
TEST(Exporter, AWriteCutShortCountsWhatWasWrittenAndTheNextRecordStartsItsOwnLine) {
  test::TempDir dir;
  const auto file = dir.path() / "ocsf.jsonl";
  ExporterOptions options;
  options.shutdown_wait = 5s;
  Exporter exporter({parse_sink("ocsf-jsonl:" + file.string())}, options);
  auto allowed = denied_request("/v1/chat/completions");
  allowed.decision = "allow";
  allowed.status = 200;
  exporter.row(allowed);  // one record a row
  wait_settled(exporter, 1);
  const auto record = std::filesystem::file_size(file);

  rlimit was{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &was), 0);
  const auto sigxfsz = std::signal(SIGXFSZ, SIG_IGN);
  rlimit cut = was;
  cut.rlim_cur = record * 3 + record / 2;  // the third record of the next three is cut
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &cut), 0);
  for (int i = 0; i < 3; ++i) exporter.row(allowed);
  wait_settled(exporter, 4);
  ::setrlimit(RLIMIT_FSIZE, &was);
  std::signal(SIGXFSZ, sigxfsz);

  EXPECT_EQ(exporter.stats()[0].exported, 3u);
  EXPECT_EQ(exporter.stats()[0].dropped, 1u);
  exporter.row(allowed);
  wait_settled(exporter, 5);
  EXPECT_EQ(exporter.stats()[0].exported, 4u);
  const auto lines = lines_of(file);
  ASSERT_EQ(lines.size(), 5u);
  for (const std::size_t whole : {0, 1, 2, 4}) EXPECT_FALSE(lines[whole].is_discarded()) << whole;
  EXPECT_TRUE(lines[3].is_discarded()) << "the record cut short";
}

// A kB figure of /proc/self/status ("VmRSS", "VmHWM").
std::size_t status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(field + ":")) return std::stoul(line.substr(field.size() + 1));
  return 0;
}

// The peak of resident memory from now on: the kernel resets VmHWM to the present RSS on
// "5" to clear_refs; where it refuses, the peak so far is the baseline (a looser check).
std::size_t reset_peak_kb() {
  std::ofstream("/proc/self/clear_refs") << "5";
  return status_kb("VmHWM");
}

// An OTLP receiver on loopback that answers every POST "200, chunked", then a chunk
// header whose extension never ends ("1;x=aaaa..."), until the client hangs up or
// `cap` bytes went (so the old, unbounded client cannot take the machine's memory).
class EndlessChunkExtension {
 public:
  explicit EndlessChunkExtension(std::size_t cap) : cap_(cap) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd_, 8) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("cannot listen on loopback");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~EndlessChunkExtension() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }
  int answered() const { return answered_; }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      read_request(c);
      answer(c);
      ::close(c);
    }
  }
  // The head, then Content-Length bytes: the whole POST, so the close sends no reset.
  static void read_request(int c) {
    std::string in;
    char buf[16384];
    std::size_t need = std::string::npos;
    while (need == std::string::npos || in.size() < need) {
      const auto n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<std::size_t>(n));
      const auto end = in.find("\r\n\r\n");
      if (need != std::string::npos || end == std::string::npos) continue;
      const auto at = in.find("Content-Length: ");
      need = end + 4 + (at < end ? std::stoul(in.substr(at + 16)) : 0);
    }
  }
  void answer(int c) {
    std::string out = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;x=";
    std::size_t sent = 0;
    ++answered_;
    while (!stop_ && sent < cap_) {
      const auto n = ::send(c, out.data(), out.size(), MSG_NOSIGNAL);
      if (n <= 0) return;  // the client hung up
      sent += static_cast<std::size_t>(n);
      out.assign(64 * 1024, 'a');
    }
  }

  std::size_t cap_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> answered_{0};
  std::thread thread_;
};

// A receiver's answer is read within bounds. Beast's body limit does not count chunk
// extensions: a receiver answering "1;x=" and endless bytes once grew the proxy to 6 GB.
// Now the POST fails at the read buffer's bound, each retry with a fresh buffer, and the
// batch is dropped and counted like any other failing delivery.
TEST(Exporter, AReceiverAnsweringAnEndlessChunkExtensionFailsTheBatchWithinBoundedMemory) {
  EndlessChunkExtension receiver(256u << 20);
  ExporterOptions options;
  options.otlp_attempts = 2;
  options.otlp_backoff_first = 10ms;
  options.otlp_timeout = 30s;  // failing on the bound, not on the clock
  options.shutdown_wait = 0ms;
  const auto rss_before = status_kb("VmRSS");
  const auto peak_before = reset_peak_kb();
  auto exporter = std::make_unique<Exporter>(
      std::vector<SinkSpec>{parse_sink("otlp-http://127.0.0.1:" + std::to_string(receiver.port()))}, options);
  auto allowed = denied_request("/v1/chat/completions");
  allowed.decision = "allow";
  allowed.status = 200;
  exporter->row(allowed);  // one record, one batch
  completes_within(120s, [&] {
    while (exporter->stats()[0].dropped == 0) std::this_thread::sleep_for(10ms);
  });
  const auto stats = exporter->stats()[0];
  completes_within(60s, [&] { exporter.reset(); });
  EXPECT_EQ(stats.dropped, 1u);
  EXPECT_EQ(stats.exported, 0u);
  EXPECT_EQ(receiver.answered(), 2) << "each attempt read the hostile answer";
  const auto peak = status_kb("VmHWM");
  EXPECT_LT(peak - std::min(peak, std::max(rss_before, peak_before)), 64u * 1024)
      << "resident memory grew from " << rss_before << " kB to a peak of " << peak << " kB";
}

}  // namespace
}  // namespace netbox::siem
