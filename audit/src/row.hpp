#pragma once
// One result row, whichever backend it came from: what the readers' callbacks see.
#include <cstdint>
#include <string>

namespace netbox::audit::detail {

class Row {
 public:
  virtual bool is_null(int column) const = 0;
  virtual std::int64_t column_int(int column) const = 0;  // 0 for NULL
  virtual std::string column_text(int column) const = 0;  // "" for NULL

 protected:
  ~Row() = default;
};

}  // namespace netbox::audit::detail
