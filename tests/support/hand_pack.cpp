#include "support/hand_pack.hpp"

#include <openssl/sha.h>
#include <zlib.h>

#include <stdexcept>

namespace netbox::test {
namespace {

std::string sha1_raw(const std::string& data) {
  unsigned char sum[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(data.data()), data.size(), sum);
  return std::string(reinterpret_cast<const char*>(sum), sizeof sum);
}

std::string hex(const std::string& raw) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) out += {kDigits[c >> 4], kDigits[c & 15]};
  return out;
}

std::string deflated(const std::string& data) {
  uLongf size = compressBound(data.size());
  std::string out(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &size, reinterpret_cast<const Bytef*>(data.data()), data.size(),
                Z_BEST_SPEED) != Z_OK)
    throw std::runtime_error("compress2");
  out.resize(size);
  return out;
}

// A pack entry's header: the type and the size in 4 bits, then 7 bits a byte.
std::string entry_header(int type, std::uint64_t size) {
  std::string out(1, static_cast<char>((type << 4) | (size & 15)));
  size >>= 4;
  while (size) {
    out.back() = static_cast<char>(out.back() | 0x80);
    out += static_cast<char>(size & 0x7f);
    size >>= 7;
  }
  return out;
}

}  // namespace

std::string sha1_hex(const std::string& data) { return hex(sha1_raw(data)); }

std::string HandPack::add(int type, const std::string& data, std::optional<std::uint64_t> declared) {
  last_ = entry_header(type, declared.value_or(data.size())) + deflated(data);
  entries_ += last_;
  ++count_;
  const std::string name = type == 1 ? "commit" : type == 2 ? "tree" : type == 3 ? "blob" : "tag";
  return sha1_hex(name + " " + std::to_string(data.size()) + std::string(1, '\0') + data);
}

void HandPack::repeat_last(int copies) {
  for (int i = 0; i < copies; ++i) entries_ += last_;
  count_ += static_cast<std::uint32_t>(copies);
}

std::string HandPack::commit_text(const std::vector<std::string>& parents) {
  std::string text = "tree " + std::string(40, 'e') + "\n";
  for (const std::string& p : parents) text += "parent " + p + "\n";
  return text + "author a <a@example.test> 1700000000 +0000\ncommitter a <a@example.test> 1700000000 +0000\n\nm\n";
}

std::string HandPack::bytes() const {
  std::string out = "PACK";
  for (std::uint32_t v : {2u, count_})
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
  out += entries_;
  return out + sha1_raw(out);
}

}  // namespace netbox::test
