// The proxy's threads carry names (top -H, perf, gdb): which thread burns the CPU is the
// first question when a proxy is slow, and the benchmark profiles read them per thread.
#include "proxy_fixture.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

namespace netbox::test {
namespace {

std::map<std::string, int> thread_names() {
  std::map<std::string, int> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    ++names[name];
  }
  return names;
}

int named(const std::map<std::string, int>& names, const std::string& name) {
  const auto it = names.find(name);
  return it == names.end() ? 0 : it->second;
}

TEST_F(ProxyTest, IoAuditAndLogThreadsAreNamed) {
  const auto before = thread_names();
  start_proxy(base_policy(), {}, 3);
  // Each thread names itself as it starts, a moment after start_proxy returns.
  auto after = thread_names();
  auto all_named = [&] {
    return named(after, "netbox-io") - named(before, "netbox-io") >= 3 && named(after, "netbox-audit") > 0 &&
           named(after, "netbox-log") > 0;
  };
  for (int i = 0; i < 100 && !all_named(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    after = thread_names();
  }
  EXPECT_EQ(named(after, "netbox-io") - named(before, "netbox-io"), 3) << "one named thread per io context";
  EXPECT_GE(named(after, "netbox-audit"), 1) << "the audit writer's thread";
  EXPECT_GE(named(after, "netbox-log"), 1) << "the logger's thread";
}

}  // namespace
}  // namespace netbox::test
