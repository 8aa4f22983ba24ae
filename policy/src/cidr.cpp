#include "netbox/policy/cidr.hpp"

#include "cidr_parse.hpp"
#include "embedded_ipv4.hpp"

#include <array>
#include <charconv>

namespace netbox::policy {
namespace detail {
namespace {

template <class Bytes>
bool prefix_equal(const Bytes& a, const Bytes& b, unsigned prefix) {
  std::size_t full = prefix / 8;
  for (std::size_t i = 0; i < full; ++i)
    if (a[i] != b[i]) return false;
  unsigned rest = prefix % 8;
  if (rest == 0) return true;
  auto mask = static_cast<unsigned char>(0xff << (8 - rest));
  return (a[full] & mask) == (b[full] & mask);
}

template <class Bytes>
bool host_bits_zero(const Bytes& a, unsigned prefix) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    unsigned first_bit = static_cast<unsigned>(i * 8);
    if (first_bit + 8 <= prefix) continue;
    unsigned keep = prefix > first_bit ? prefix - first_bit : 0;
    auto host_mask = static_cast<unsigned char>(0xff >> keep);
    if ((a[i] & host_mask) != 0) return false;
  }
  return true;
}

template <class Bytes>
Bytes masked(Bytes a, unsigned prefix) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    unsigned first_bit = static_cast<unsigned>(i * 8);
    if (first_bit + 8 <= prefix) continue;
    unsigned keep = prefix > first_bit ? prefix - first_bit : 0;
    a[i] = static_cast<unsigned char>(a[i] & ~(0xff >> keep));
  }
  return a;
}

}  // namespace

std::optional<boost::asio::ip::address> parse_strict_address(std::string_view text) {
  if (text.empty() || text.find('%') != std::string_view::npos) return std::nullopt;
  boost::system::error_code ec;
  // inet_pton underneath: dotted quad only for IPv4, which is what a file should say.
  auto a = boost::asio::ip::make_address(std::string(text), ec);
  if (ec) return std::nullopt;
  return a;
}

std::variant<Cidr, std::string> parse_cidr(std::string_view text) {
  std::string_view addr_text = text;
  std::optional<unsigned> prefix;
  if (auto slash = text.find('/'); slash != std::string_view::npos) {
    addr_text = text.substr(0, slash);
    std::string_view p = text.substr(slash + 1);
    if (p.empty()) return std::string("'") + std::string(text) + "' has no prefix length after '/'";
    unsigned v = 0;
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
    if (ec != std::errc() || end != p.data() + p.size() || p.size() > 3)
      return "'" + std::string(text) + "' has a prefix length that is not a number";
    prefix = v;
  }
  if (addr_text.find('%') != std::string_view::npos)
    return "'" + std::string(text) + "' has a zone id; zone ids are not allowed";
  auto a = parse_strict_address(addr_text);
  if (!a) return "'" + std::string(addr_text) + "' is not an IP address";
  unsigned max = a->is_v4() ? 32 : 128;
  unsigned len = prefix.value_or(max);
  if (len > max)
    return "prefix length " + std::to_string(len) + " is out of range 0-" + std::to_string(max) +
           " for '" + std::string(text) + "'";
  bool clean = a->is_v4() ? host_bits_zero(a->to_v4().to_bytes(), len)
                          : host_bits_zero(a->to_v6().to_bytes(), len);
  if (!clean) {
    Cidr fixed;
    fixed.prefix = len;
    if (a->is_v4()) fixed.base = boost::asio::ip::address_v4(masked(a->to_v4().to_bytes(), len));
    else fixed.base = boost::asio::ip::address_v6(masked(a->to_v6().to_bytes(), len));
    return "'" + std::string(text) + "' has host bits set after the /" + std::to_string(len) +
           " prefix; did you mean " + fixed.to_string() + "?";
  }
  return Cidr{*a, len};
}

}  // namespace detail

bool Cidr::contains(const boost::asio::ip::address& a) const {
  if (base.is_v4()) {
    if (a.is_v4()) return detail::prefix_equal(base.to_v4().to_bytes(), a.to_v4().to_bytes(), prefix);
    if (auto m = detail::mapped_ipv4(a.to_v6()))
      return detail::prefix_equal(base.to_v4().to_bytes(), m->to_bytes(), prefix);
    return false;
  }
  if (a.is_v6()) return detail::prefix_equal(base.to_v6().to_bytes(), a.to_v6().to_bytes(), prefix);
  // An IPv6 range written in the mapped form (::ffff:10.0.0.0/104) covers the plain IPv4 too.
  auto mapped = boost::asio::ip::make_address_v6(boost::asio::ip::v4_mapped, a.to_v4());
  return detail::prefix_equal(base.to_v6().to_bytes(), mapped.to_bytes(), prefix);
}

std::optional<Cidr> Cidr::next() const {
  if (prefix == 0) return std::nullopt;
  // The address as 16 bytes (IPv4 in the last four), plus one at the prefix's last bit.
  boost::asio::ip::address_v6::bytes_type b{};
  const unsigned first = base.is_v4() ? 12 : 0;
  if (base.is_v4()) {
    const auto v4 = base.to_v4().to_bytes();
    std::copy(v4.begin(), v4.end(), b.begin() + first);
  } else {
    b = base.to_v6().to_bytes();
  }
  const unsigned bit = first * 8 + prefix - 1;
  unsigned carry = 1u << (7 - bit % 8);
  for (int i = static_cast<int>(bit / 8); i >= static_cast<int>(first) && carry; --i) {
    const unsigned sum = b[static_cast<std::size_t>(i)] + carry;
    b[static_cast<std::size_t>(i)] = static_cast<unsigned char>(sum & 0xff);
    carry = sum >> 8;
  }
  if (carry) return std::nullopt;
  if (base.is_v4()) return Cidr{boost::asio::ip::address_v4({b[12], b[13], b[14], b[15]}), prefix};
  return Cidr{boost::asio::ip::address_v6(b), prefix};
}

std::string Cidr::to_string() const {
  return base.to_string() + "/" + std::to_string(prefix);
}

std::optional<Cidr> Cidr::parse(std::string_view text) {
  auto r = detail::parse_cidr(text);
  if (auto* c = std::get_if<Cidr>(&r)) return *c;
  return std::nullopt;
}

}  // namespace netbox::policy
