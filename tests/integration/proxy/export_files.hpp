#pragma once
// What an export test reads back: an OCSF JSONL file, a real OTLP/HTTP receiver on a free
// loopback port (otlp_receiver.py) and check_ocsf.py's verdict on a file. Shared by the
// export, client token and guardian tests, which grep or validate what the proxy exported.
#include "support/background_process.hpp"
#include "support/process.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace netbox::test {

inline std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::vector<nlohmann::json> json_lines(const std::filesystem::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

// check_ocsf.py against the OCSF schema subset in tests/data/ocsf: exit 0 when every record
// of `file` validates against its class.
inline RunResult check_ocsf(const std::filesystem::path& file) {
  return run({"python3", "-B", (source_dir() / "tests/data/ocsf/check_ocsf.py").string(),
              (source_dir() / "tests/data/ocsf").string(), file.string()});
}

// An OTLP receiver (otlp_receiver.py) on a free loopback port.
struct Receiver {
  Receiver(const std::filesystem::path& folder, const std::string& mode)
      : port(free_port()), out(folder / ("otlp-" + mode + ".jsonl")),
        process({"python3", "-B", (source_dir() / "tests/integration/proxy/otlp_receiver.py").string(),
                 std::to_string(port), out.string(), mode},
                folder / ("otlp-" + mode + ".log")) {
    wait_for_port(port);
  }
  std::string sink() const { return "otlp-http://127.0.0.1:" + std::to_string(port); }
  // Every log record it was sent, across the POSTs.
  std::vector<nlohmann::json> log_records() const {
    std::vector<nlohmann::json> out_records;
    for (const auto& body : json_lines(out))
      for (const auto& rl : body["resourceLogs"])
        for (const auto& sl : rl["scopeLogs"])
          for (const auto& lr : sl["logRecords"]) out_records.push_back(lr);
    return out_records;
  }
  unsigned short port;
  std::filesystem::path out;
  BackgroundProcess process;
};

}  // namespace netbox::test
