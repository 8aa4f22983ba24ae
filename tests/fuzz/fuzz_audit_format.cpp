// `netbox audit --format table|json|csv` on rows whose text an agent controls (host,
// path, method, reason...), as arbitrary bytes. Invariants (a violation aborts):
//  - json parses back to one object per row, with every valid UTF-8 string unchanged;
//  - csv (RFC 4180) reads back to a header plus one record per row, every field as
//    escape_controls made it, with a ' before a leading = + - @ TAB or CR;
//  - no line of any format holds a character escape_controls would escape (controls, C1,
//    bidi controls, bytes that are not UTF-8), and the table has one line per row plus
//    the header, so an agent cannot forge lines or send escape sequences to a reader's
//    terminal, nor formulas to a spreadsheet.
#include "netbox/audit/printable.hpp"
#include "netbox/audit/query.hpp"

#include <fuzzer/FuzzedDataProvider.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

using netbox::audit::AuditRecord;

[[noreturn]] void violated(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_audit_format invariant: %s\n  %s\n", what, detail.c_str());
  std::abort();
}

bool valid_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

// RFC 4180 records; fields may be quoted, with "" for a quote inside.
std::vector<std::vector<std::string>> read_csv(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') field += c;
      else if (i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      record.push_back(std::move(field));
      field.clear();
      records.push_back(std::move(record));
      record.clear();
      ++i;
    } else {
      field += c;
    }
  }
  if (quoted || !field.empty() || !record.empty()) violated("csv does not end with a complete record", text);
  return records;
}

// Every line of `text` (split at LF, and at CRLF for csv) is safe for a terminal.
void expect_printable_lines(const std::string& text, const char* format) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    if (!line.empty() && line.back() == '\r' && std::string_view(format) == "csv") line.remove_suffix(1);
    if (netbox::audit::needs_escaping(line)) violated("a line a terminal would act on", std::string(format) + ": " + text);
    start = end + 1;
  }
}

std::string expected_csv_field(const std::string& value) {
  std::string e = netbox::audit::escape_controls(value);
  if (!e.empty() && std::string_view("=+-@\t\r").find(e.front()) != std::string_view::npos) e.insert(0, 1, '\'');
  return e;
}

const char* const kKeys[] = {"agent", "client_addr", "kind", "method", "host", "path",
                             "resolved_addr", "decision", "rule", "reason", "error"};

// The text columns, in kKeys' order; const or not as the record is.
template <class Record>
auto texts(Record& r) {
  return std::vector{&r.agent, &r.client_addr, &r.kind, &r.method, &r.host, &r.path,
                     &r.resolved_addr, &r.decision, &r.rule, &r.reason, &r.error};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  std::vector<AuditRecord> rows(in.ConsumeIntegralInRange<std::size_t>(1, 4));
  for (auto& r : rows) {
    r.id = in.ConsumeIntegral<std::int64_t>();
    // Between 1970 and 2262, the range the store's clock can hold.
    r.ts = netbox::audit::Clock::time_point(
        std::chrono::milliseconds(in.ConsumeIntegralInRange<std::int64_t>(0, 9'000'000'000'000)));
    for (std::string* s : texts(r)) *s = in.ConsumeRandomLengthString(64);
    r.port = in.ConsumeIntegral<std::uint16_t>();
    if (in.ConsumeBool()) r.status = in.ConsumeIntegral<int>();
    r.bytes_up = in.ConsumeIntegral<std::uint64_t>();
    r.bytes_down = in.ConsumeIntegral<std::uint64_t>();
    if (in.ConsumeBool()) r.duration_ms = in.ConsumeIntegral<std::int64_t>();
  }

  const std::string json_text = netbox::audit::format_requests(rows, "json");
  expect_printable_lines(json_text, "json");
  const auto json = nlohmann::json::parse(json_text);
  if (!json.is_array() || json.size() != rows.size()) violated("json rows", json.dump());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto fields = texts(rows[i]);
    for (std::size_t k = 0; k < fields.size(); ++k) {
      const auto& value = json[i].at(kKeys[k]);
      // A nullable column the writer would store as NULL is null in JSON (an empty string).
      if (value.is_null()) {
        if (!fields[k]->empty()) violated("json gave null for a value", kKeys[k]);
        continue;
      }
      if (valid_utf8(*fields[k]) && value.get<std::string>() != *fields[k])
        violated("json changed a valid UTF-8 string", kKeys[k]);
    }
  }

  const std::string csv_text = netbox::audit::format_requests(rows, "csv");
  expect_printable_lines(csv_text, "csv");
  const auto csv = read_csv(csv_text);
  if (csv.size() != rows.size() + 1) violated("csv record count", std::to_string(csv.size()));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& rec = csv[i + 1];
    if (rec.size() != csv[0].size()) violated("csv field count", std::to_string(rec.size()));
    for (std::size_t k = 0; k < std::size(kKeys); ++k) {
      auto col = std::find(csv[0].begin(), csv[0].end(), kKeys[k]) - csv[0].begin();
      if (static_cast<std::size_t>(col) >= rec.size() ||
          rec[static_cast<std::size_t>(col)] != expected_csv_field(*texts(rows[i])[k]))
        violated("csv changed a field", kKeys[k]);
    }
  }

  const std::string table = netbox::audit::format_requests(rows, "table");
  if (static_cast<std::size_t>(std::count(table.begin(), table.end(), '\n')) != rows.size() + 1)
    violated("table lines", table);
  expect_printable_lines(table, "table");
  return 0;
}
