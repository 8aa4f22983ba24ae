#include "netbox/dns/message.hpp"

#include <algorithm>

namespace netbox::dns {
namespace {

constexpr std::size_t kHeader = 12;
constexpr std::uint16_t kClassIn = 1;
constexpr std::uint16_t kTypeOpt = 41;
constexpr std::uint16_t kOurUdpSize = 1232;  // the size DNS Flag Day 2020 settled on

std::uint16_t u16(std::span<const std::uint8_t> b, std::size_t at) {
  return static_cast<std::uint16_t>((b[at] << 8) | b[at + 1]);
}

void put16(std::vector<std::uint8_t>& out, std::uint16_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v));
}

void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  put16(out, static_cast<std::uint16_t>(v >> 16));
  put16(out, static_cast<std::uint16_t>(v));
}

ReadResult error(const Query& q, Rcode rcode, std::string problem) {
  ReadResult r;
  r.kind = ReadResult::Kind::answer_error;
  r.query = q;
  r.rcode = rcode;
  r.problem = std::move(problem);
  return r;
}

// The question's name at `at`; moves `at` past it. Empty optional-like: problem set.
bool read_name(std::span<const std::uint8_t> m, std::size_t& at, std::string& name, std::string& problem) {
  std::size_t wire = 0;
  for (;;) {
    if (at >= m.size()) {
      problem = "the question's name runs past the end";
      return false;
    }
    const std::uint8_t len = m[at++];
    ++wire;
    if (len == 0) break;
    if ((len & 0xc0) == 0xc0) {
      // A query has nothing earlier to point to; a pointer in one is a crafted message.
      problem = "a compression pointer in the question";
      return false;
    }
    if (len > kMaxLabel) {  // 64-191: a label too long (or a reserved label type)
      problem = "a label longer than 63 bytes";
      return false;
    }
    if (m.size() - at < len) {
      problem = "a label runs past the end";
      return false;
    }
    if (!name.empty()) name.push_back('.');
    for (std::size_t i = 0; i < len; ++i) {
      char c = static_cast<char>(m[at + i]);
      // A '.' inside a label would read as two labels; a byte that is not printable
      // ASCII is no host name anyone could allow.
      if (c == '.' || m[at + i] <= 0x20 || m[at + i] >= 0x7f) {
        problem = "a byte no host name holds in the question's name";
        return false;
      }
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      name.push_back(c);
    }
    at += len;
    wire += len;
    if (name.size() > kMaxName || wire > 255) {
      problem = "a name longer than 253 bytes";
      return false;
    }
  }
  return true;
}

std::vector<std::uint8_t> header(const Query& q, Rcode rcode, std::uint16_t answers, bool with_question) {
  std::vector<std::uint8_t> out;
  out.reserve(kHeader + q.question.size() + 64);
  put16(out, q.id);
  // QR, AA (the answer is ours, not a cache's), RD echoed, RA.
  std::uint16_t flags = 0x8000 | 0x0400 | (q.recursion_desired ? 0x0100 : 0) | 0x0080 |
                        static_cast<std::uint16_t>(rcode);
  put16(out, flags);
  put16(out, with_question ? 1 : 0);
  put16(out, answers);
  put16(out, 0);
  put16(out, q.edns ? 1 : 0);
  if (with_question) out.insert(out.end(), q.question.begin(), q.question.end());
  return out;
}

void add_opt(std::vector<std::uint8_t>& out) {
  out.push_back(0);  // root
  put16(out, kTypeOpt);
  put16(out, kOurUdpSize);
  put32(out, 0);
  put16(out, 0);
}

}  // namespace

ReadResult read_query(std::span<const std::uint8_t> m) {
  ReadResult r;
  if (m.size() < kHeader) {
    r.problem = "shorter than a DNS header";
    return r;  // drop: nothing to address an answer to
  }
  const std::uint16_t flags = u16(m, 2);
  if (flags & 0x8000) {
    r.problem = "a response, not a query";
    return r;  // drop: answering responses would make the proxy a reflector
  }
  Query q;
  q.id = u16(m, 0);
  q.recursion_desired = (flags & 0x0100) != 0;
  const unsigned opcode = (flags >> 11) & 0xf;
  if (opcode != 0) return error(q, Rcode::notimp, "opcode " + std::to_string(opcode) + " (only QUERY is answered)");
  if (u16(m, 4) != 1) return error(q, Rcode::formerr, "not exactly one question");
  if (u16(m, 6) != 0 || u16(m, 8) != 0) return error(q, Rcode::formerr, "answer or authority records in a query");
  const std::uint16_t additional = u16(m, 10);
  if (additional > 1) return error(q, Rcode::formerr, "more than one additional record");

  std::size_t at = kHeader;
  std::string problem;
  if (!read_name(m, at, q.name, problem)) return error(q, Rcode::formerr, problem);
  if (m.size() - at < 4) return error(q, Rcode::formerr, "the question ends early");
  q.qtype = u16(m, at);
  q.qclass = u16(m, at + 2);
  at += 4;
  q.question = m.subspan(kHeader, at - kHeader);

  if (additional == 1) {
    // Only an OPT record (EDNS) may follow: root name, type 41.
    if (m.size() - at < 11 || m[at] != 0 || u16(m, at + 1) != kTypeOpt)
      return error(q, Rcode::formerr, "an additional record that is not EDNS OPT");
    const std::uint16_t size = u16(m, at + 3);
    const std::uint8_t version = m[at + 6];
    const std::uint16_t rdlen = u16(m, at + 9);
    at += 11;
    if (m.size() - at < rdlen) return error(q, Rcode::formerr, "the OPT record runs past the end");
    at += rdlen;
    if (version != 0) return error(q, Rcode::formerr, "EDNS version " + std::to_string(version));
    q.edns = true;
    q.udp_size = std::clamp<std::uint16_t>(size, kMaxUdpAnswer, kOurUdpSize);
  }
  if (at != m.size()) return error(q, Rcode::formerr, "bytes after the message");
  if (q.qclass != kClassIn) return error(q, Rcode::notimp, "class " + std::to_string(q.qclass) + " (only IN)");
  r.kind = ReadResult::Kind::query;
  r.query = q;
  r.rcode = Rcode::noerror;
  return r;
}

std::vector<std::uint8_t> answer(const Query& q, const std::vector<boost::asio::ip::address>& addresses,
                                 std::uint32_t ttl) {
  std::vector<std::uint8_t> out = header(q, Rcode::noerror, 0, true);
  const std::size_t limit = q.udp_size;
  std::uint16_t count = 0;
  for (const auto& a : addresses) {
    const std::size_t rdlen = a.is_v4() ? 4 : 16;
    // What is left for the OPT record must still fit; the rest is cut, and TC says so.
    if (out.size() + 12 + rdlen + (q.edns ? 11 : 0) > limit) {
      out[2] |= 0x02;
      break;
    }
    put16(out, 0xc000 | kHeader);  // the question's name
    put16(out, a.is_v4() ? static_cast<std::uint16_t>(Type::a) : static_cast<std::uint16_t>(Type::aaaa));
    put16(out, kClassIn);
    put32(out, ttl);
    put16(out, static_cast<std::uint16_t>(rdlen));
    if (a.is_v4()) {
      auto b = a.to_v4().to_bytes();
      out.insert(out.end(), b.begin(), b.end());
    } else {
      auto b = a.to_v6().to_bytes();
      out.insert(out.end(), b.begin(), b.end());
    }
    ++count;
  }
  out[6] = static_cast<std::uint8_t>(count >> 8);
  out[7] = static_cast<std::uint8_t>(count);
  if (q.edns) add_opt(out);
  return out;
}

std::vector<std::uint8_t> empty_answer(const Query& q, Rcode rcode) {
  std::vector<std::uint8_t> out = header(q, rcode, 0, !q.question.empty());
  if (q.edns) add_opt(out);
  return out;
}

}  // namespace netbox::dns
