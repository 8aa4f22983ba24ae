// The Exporter as the proxy drives it: its shutdown, and what its sinks do when the disk or
// the receiver misbehaves.
#include "netbox/export/exporter.hpp"

#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
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

}  // namespace
}  // namespace netbox::siem
