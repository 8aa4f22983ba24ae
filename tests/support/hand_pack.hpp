#pragma once
// A git pack written by hand, for what git itself will not write: a blob whose header
// declares more bytes than its stream holds, a commit repeating one parent line hundreds
// of times. Objects are stored whole (no deltas); the trailing SHA-1 is git's.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace netbox::test {

class HandPack {
 public:
  // Adds an object of `type` (1 commit, 3 blob) whose zlib stream inflates to `data`
  // and whose entry header declares `declared` bytes (its size when not given). Its id.
  std::string add(int type, const std::string& data, std::optional<std::uint64_t> declared = std::nullopt);
  // Adds the last object `copies` more times, the same bytes (deflated once).
  void repeat_last(int copies);
  // A commit's text: `tree`, a `parent` line for each of `parents` (repeats kept), author,
  // committer, and a message.
  static std::string commit_text(const std::vector<std::string>& parents);
  std::string bytes() const;  // the header, the entries and the checksum

 private:
  std::string entries_;
  std::string last_;
  std::uint32_t count_ = 0;
};

// Hex SHA-1 of `data`: ids that are not in any pack.
std::string sha1_hex(const std::string& data);

}  // namespace netbox::test
