#pragma once
// DNS messages as the proxy's resolver for agents needs them (RFC 1035, RFC 6891): a
// query is read whole and checked strictly, and every answer is built from the query
// alone. Nothing here forwards anything: the answers come from the policy and the
// synthetic pool, so no byte of a query name ever leaves the proxy (no DNS tunnelling).
#include <boost/asio/ip/address.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace netbox::dns {

enum class Type : std::uint16_t { a = 1, aaaa = 28 };  // the two the proxy answers
enum class Rcode : std::uint8_t { noerror = 0, formerr = 1, servfail = 2, nxdomain = 3, notimp = 4, refused = 5 };

inline constexpr std::size_t kMaxUdpAnswer = 512;  // without EDNS (RFC 1035 4.2.1)
inline constexpr std::size_t kMaxName = 253;        // presentation form, without the final dot
inline constexpr std::size_t kMaxLabel = 63;

struct Query {
  std::uint16_t id = 0;
  bool recursion_desired = false;
  std::string name;         // lower-cased, labels joined by '.', no final dot; "" for the root
  std::uint16_t qtype = 0;
  std::uint16_t qclass = 0;
  bool edns = false;        // an OPT record came with it
  std::uint16_t udp_size = kMaxUdpAnswer;  // what the client takes over UDP (EDNS), at least 512
  std::span<const std::uint8_t> question;  // the question's bytes, echoed in the answer
};

// What reading a message gave: a query to answer, or an error to answer with (FORMERR,
// NOTIMP), or nothing at all (too short to carry an id, or a response: dropped, never
// answered, so the proxy cannot be made to reflect).
struct ReadResult {
  enum class Kind { query, answer_error, drop };
  Kind kind = Kind::drop;
  Query query;              // for answer_error, id and the question when they were readable
  Rcode rcode = Rcode::formerr;
  std::string problem;      // what was wrong, for the counters and logs
};

ReadResult read_query(std::span<const std::uint8_t> message);

// An answer with the given addresses (all of the query's type), TTL seconds each.
std::vector<std::uint8_t> answer(const Query& q, const std::vector<boost::asio::ip::address>& addresses,
                                 std::uint32_t ttl);
// An answer without records: NXDOMAIN, NOTIMP, FORMERR, SERVFAIL, REFUSED, or NOERROR
// with nothing (a name that exists, asked for a type it has none of).
std::vector<std::uint8_t> empty_answer(const Query& q, Rcode rcode);

}  // namespace netbox::dns
