#pragma once
// `ocsf-jsonl:PATH`: one OCSF record per line, appended. Created like the audit store
// (0600, or 0640 in the group of a folder that lets its group in; never readable by
// others), reopened on reopen() so logrotate can move the file away (SIGHUP).
#include "sink.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace netbox::siem {

class JsonlSink final : public Sink {
 public:
  // Throws std::runtime_error naming the path and the system's reason.
  JsonlSink(std::string name, std::filesystem::path path);
  ~JsonlSink() override;
  void put(const nlohmann::json& record) override;
  void flush() override;
  void reopen() override;

 private:
  void open();
  std::size_t write_some(std::string_view text);
  std::filesystem::path path_;
  int fd_ = -1;
  std::string pending_;
  std::size_t pending_records_ = 0;
  bool failing_ = false;  // said once on stderr until a write succeeds
  bool line_open_ = false;  // a write stopped partway through a line: the next starts a new one
};

}  // namespace netbox::siem
