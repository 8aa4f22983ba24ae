#include "http/body_gate.hpp"

#include "netbox/content/body_coding.hpp"
#include "netbox/content/git_push.hpp"
#include "netbox/content/json_rpc.hpp"

namespace netbox::proxy {
namespace {

namespace http = boost::beast::http;

// The one value of a header that may appear once; `problem` says when it appears twice
// (one server would read the first, another the last).
std::string single(const http::fields& head, http::field f, std::string& problem) {
  auto [it, end] = head.equal_range(f);
  if (it == end) return {};
  std::string value(it->value());
  if (std::next(it) != end && problem.empty())
    problem = "the request has more than one " + std::string(http::to_string(f)) +
              " header, so the server may read the body otherwise than netbox would check it";
  return value;
}

// What the row says of a JSON-RPC body: each call's method, and the tool of a tools/call.
std::string describe_calls(std::string_view body) {
  auto read = content::read_json_rpc(body);
  const auto* calls = std::get_if<content::JsonRpcBody>(&read);
  if (!calls) return {};
  std::string out;
  for (const auto& c : calls->calls) {
    if (c.kind == content::JsonRpcCall::Kind::response) continue;
    if (!out.empty()) out += ", ";
    out += c.method;
    if (c.tool) out += " " + *c.tool;
  }
  return out.empty() ? out : "the body's JSON-RPC calls: " + out;
}

// What the row says of a push: each ref update's ref and kind, from the command
// pkt-lines alone (check_body reads the pack).
std::string describe_push(std::string_view body) {
  std::string out;
  static const std::string kZero(40, '0');
  for (int n = 0; n < 1000; ++n) {
    const auto line = content::read_pkt_line(body);
    if (line.kind != content::PktLine::Kind::data) break;
    body.remove_prefix(line.used);
    const std::string_view command = line.payload.substr(0, line.payload.find('\0'));
    const auto a = command.find(' '), b = command.find(' ', a == std::string_view::npos ? a : a + 1);
    if (b == std::string_view::npos) break;
    std::string_view ref = command.substr(b + 1);
    while (!ref.empty() && ref.back() == '\n') ref.remove_suffix(1);
    const bool creates = command.substr(0, a) == kZero, deletes = command.substr(a + 1, b - a - 1) == kZero;
    out += (out.empty() ? "" : ", ") + std::string(ref) + (creates ? " (create)" : deletes ? " (delete)" : "");
  }
  return out.empty() ? out : "the push's ref updates: " + out;
}

}  // namespace

BodyGate::BodyGate(const policy::RequestRule& rule, policy::Mode mode, const http::fields& head)
    : rule_(&rule), mode_(mode) {
  content_type_ = single(head, http::field::content_type, header_problem_);
  coding_ = single(head, http::field::content_encoding, header_problem_);
}

const policy::BodyCheck& BodyGate::check(std::string_view body) {
  if (!header_problem_.empty()) return result_ = policy::body_refused(*rule_, 403, header_problem_, mode_);
  // The relay stops reading one piece past the window: the body's size is not known.
  if (body.size() > window())
    return result_ = policy::body_refused(*rule_, 413,
                                          "the body is larger than the body_window of " + std::to_string(window()) +
                                              " bytes; body checks read the whole body, so a larger one is refused "
                                              "rather than passed unchecked",
                                          mode_);
  auto decoded = content::decode_body(coding_, body, window());
  if (auto* no = std::get_if<content::CodingRefusal>(&decoded))
    return result_ = policy::body_refused(*rule_, no->too_large ? 413 : 415, no->reason, mode_);
  const std::string& plain = std::get<std::string>(decoded);
  if (rule_->body->jsonrpc) calls_ = describe_calls(plain);
  if (rule_->body->git) calls_ = describe_push(plain);
  return result_ = policy::check_body(*rule_, content_type_, plain, mode_);
}

}  // namespace netbox::proxy
