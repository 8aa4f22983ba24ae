// A line on the control socket (control_protocol.hpp), read as the proxy reads a request
// and as a launcher reads what the proxy sends it (an answer or an Act). Invariants (a
// violation aborts):
//  - a line is a message or a ProtocolError with a reason, never a crash;
//  - what is read writes back as one line ending in '\n' that reads as the same message
//    kind (an operator op stays that op for that agent, an Act stays that action and id).
#include "fuzz_invariant.hpp"
#include "netbox/proxy/control_protocol.hpp"

#include <string>

using netbox::fuzz::check;
namespace control = netbox::proxy::control;

namespace {

void one_line(const std::string& line) {
  check(!line.empty() && line.back() == '\n' && line.find('\n') == line.size() - 1, "a message is not one line");
}

void request(std::string_view text) {
  control::Request r;
  try {
    r = control::parse_request(text);
  } catch (const control::ProtocolError& e) {
    check(*e.what() != '\0', "a refusal without a reason");
    return;
  }
  std::string line;
  try {
    line = control::to_line(r);
  } catch (const control::ProtocolError&) {
    return;  // a sandbox or resource_usage that is not an object: refused on the way out
  }
  one_line(line);
  const auto back = control::parse_request(line);
  check(back.index() == r.index(), "a request read back as another kind");
  if (const auto* op = std::get_if<control::Operator>(&r)) {
    const auto& again = std::get<control::Operator>(back);
    check(again.op == op->op && again.agent == op->agent, "an operator op changed on the way back");
  }
}

void from_proxy(std::string_view text) {
  control::FromProxy m;
  try {
    m = control::parse_from_proxy(text);
  } catch (const control::ProtocolError& e) {
    check(*e.what() != '\0', "a refusal without a reason");
    return;
  }
  if (const auto* act = std::get_if<control::Act>(&m)) {
    const auto line = control::to_line(*act);
    one_line(line);
    const auto again = std::get<control::Act>(control::parse_from_proxy(line));
    check(again.id == act->id && again.action == act->action, "an Act changed on the way back");
    return;
  }
  one_line(control::to_line(std::get<control::Reply>(m)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  request(text);
  from_proxy(text);
  return 0;
}
