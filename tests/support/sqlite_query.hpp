#pragma once
// Reading an audit database back in tests: the real SQLite file, opened read-only.
#include <filesystem>
#include <string>
#include <vector>

namespace netbox::test {

// Rows of a query against an SQLite file, each column as text ("" for NULL).
// Throws std::runtime_error naming the file or SQLite's message.
std::vector<std::vector<std::string>> query(const std::filesystem::path& db, const std::string& sql);

// The first column of every row.
std::vector<std::string> query_column(const std::filesystem::path& db, const std::string& sql);

}  // namespace netbox::test
