#pragma once
// What the token book and the certificate book share (token_book.hpp, cert_book.hpp): a
// JSON file read only when it is trusted like a policy file (owner and mode: whoever may
// write it can make up a client's identity), and errors that name the file and the key.
#include "netbox/tokens/token_book.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace netbox::tokens::book_file {

[[noreturn]] inline void fail(const std::filesystem::path& path, const std::string& what) {
  throw TokenBookError(path.string() + ": " + what);
}

// The file's JSON; nullopt when it is missing and `missing_is_empty`. `why` says, in the
// refusal of an untrusted file, what its writer could do.
std::optional<nlohmann::json> read_book_file(const std::filesystem::path& path, bool missing_is_empty,
                                             const char* why);

// `at.key` of the object `e`, a string; empty when absent and not `required`.
std::string text_of(const nlohmann::json& e, const std::filesystem::path& path, const std::string& at, const char* key,
                    bool required);

// The entries of a book's JSON `j`, {"version": 1, "<list>": [...]}, each read by
// `entry_of(item, path, "<list>[i]")`; anything else fails naming the file and the key.
template <class Entry, class Read>
std::vector<Entry> entries_of(const nlohmann::json& j, const std::filesystem::path& path, const std::string& list,
                              Read entry_of) {
  if (!j.is_object()) fail(path, "expected an object with \"version\" and \"" + list + "\"");
  if (j.value("version", 0) != 1) fail(path, "version: expected 1");
  const auto items = j.find(list);
  if (items == j.end() || !items->is_array()) fail(path, list + ": expected an array");
  std::vector<Entry> out;
  for (std::size_t i = 0; i < items->size(); ++i)
    out.push_back(entry_of((*items)[i], path, list + "[" + std::to_string(i) + "]"));
  return out;
}

}  // namespace netbox::tokens::book_file
