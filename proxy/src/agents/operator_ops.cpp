#include "agents/operator_ops.hpp"

#include <array>
#include <utility>

namespace netbox::proxy {

OperatorHandler operator_handler(std::string_view op) {
  // One row per op. The approval ops (pending, approve, deny) are added here, each with
  // its own handler in a file of its own.
  static constexpr std::array<std::pair<std::string_view, OperatorHandler>, 4> kTable{{
      {"list", operator_list},
      {"kill", operator_act},
      {"freeze", operator_act},
      {"resume", operator_act},
  }};
  for (const auto& [name, handler] : kTable)
    if (name == op) return handler;
  return nullptr;
}

}  // namespace netbox::proxy
