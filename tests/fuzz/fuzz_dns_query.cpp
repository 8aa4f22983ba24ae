// dns::read_query on arbitrary bytes, as an agent's packet to the proxy's DNS view would
// be, then the answers built from what it read. Invariants (a violation aborts):
//  - a response or a runt is never answered (no reflection);
//  - a read query's name is at most 253 bytes of lower-case printable ASCII whose labels
//    are 1-63 bytes, so what reaches the policy and the audit is a plain name;
//  - every answer keeps the query's id, is a response, and fits the client's UDP size;
//  - a refusal always says why.
#include "fuzz_invariant.hpp"
#include "netbox/dns/message.hpp"

#include <cstdio>
#include <cstdlib>

namespace {

using netbox::fuzz::check;

void check_answer(const std::vector<std::uint8_t>& a, const netbox::dns::Query& q) {
  check(a.size() >= 12, "an answer shorter than a header");
  check(a[0] == (q.id >> 8) && a[1] == (q.id & 0xff), "the answer lost the query's id");
  check((a[2] & 0x80) != 0, "an answer that is not a response");
  check(a.size() <= q.udp_size, "an answer larger than the client takes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace netbox::dns;
  std::span<const std::uint8_t> in(data, size);
  ReadResult r = read_query(in);
  if (size < 12 || (data[2] & 0x80)) check(r.kind == ReadResult::Kind::drop, "a response or runt got an answer");
  if (r.kind == ReadResult::Kind::drop) return 0;
  if (r.kind == ReadResult::Kind::answer_error) {
    check(!r.problem.empty(), "a refusal without a reason");
    check_answer(empty_answer(r.query, r.rcode), r.query);
    return 0;
  }
  const std::string& n = r.query.name;
  check(n.size() <= kMaxName, "a name over 253 bytes");
  std::size_t label = 0;
  for (char c : n) {
    check(c > 0x20 && c < 0x7f && !(c >= 'A' && c <= 'Z'), "a byte no plain name holds");
    label = c == '.' ? 0 : label + 1;
    check(label <= kMaxLabel, "a label over 63 bytes");
  }
  check(n.find("..") == std::string::npos && (n.empty() || (n.front() != '.' && n.back() != '.')),
        "an empty label");
  std::vector<boost::asio::ip::address> addrs = {boost::asio::ip::make_address("198.18.0.1"),
                                                 boost::asio::ip::make_address("fd00::1")};
  check_answer(answer(r.query, addrs, 60), r.query);
  check_answer(empty_answer(r.query, Rcode::nxdomain), r.query);
  return 0;
}
