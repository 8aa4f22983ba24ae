// A `git push` body (content/git_push.hpp): pkt-line commands, then the pack, read the way
// rules on an inspected git host will read it. Invariants (a violation aborts):
//  - a refusal says why;
//  - a body that is read names at least one update, each with hex ids of one length (40
//    or 64) and a ref under refs/;
//  - a body that is read is whole: cutting its last byte, or its second half, is refused;
//  - walking from any update's new commit ends, and a deletion is never a fast-forward.
#include "fuzz_invariant.hpp"
#include "netbox/content/git_push.hpp"

#include <openssl/sha.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using netbox::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace netbox::content;
  // Random bytes almost never carry a pack's right checksum, which would keep the fuzzer
  // out of the object reader: a body holding "PACK" gets its last 20 bytes made the SHA-1
  // of the pack before them, as git writes it (the checksum check itself is unit-tested).
  std::string text(reinterpret_cast<const char*>(data), size);
  if (const auto at = text.find("PACK"); at != std::string::npos && text.size() - at >= 32) {
    unsigned char sum[SHA_DIGEST_LENGTH];
    SHA1(reinterpret_cast<const unsigned char*>(text.data() + at), text.size() - at - SHA_DIGEST_LENGTH, sum);
    text.replace(text.size() - SHA_DIGEST_LENGTH, SHA_DIGEST_LENGTH, reinterpret_cast<const char*>(sum), SHA_DIGEST_LENGTH);
  }
  const std::string_view body(text);
  (void)read_pkt_line(body);
  const auto r = read_git_push(body);
  if (const auto* refusal = std::get_if<GitPushRefusal>(&r)) {
    check(!refusal->reason.empty(), "a refusal without a reason");
    return 0;
  }
  const auto& push = std::get<GitPush>(r);
  check(!push.updates.empty(), "a push with no update");
  const std::size_t id_length = push.updates.front().old_id.size();
  check(id_length == 40 || id_length == 64, "ids of neither length");
  for (const auto& u : push.updates) {
    check(u.old_id.size() == id_length && u.new_id.size() == id_length, "ids of mixed lengths");
    check(u.ref.starts_with("refs/"), "a ref outside refs/");
    const bool ff = push.shows_fast_forward(u);
    check(!(u.deletes() && ff), "a deletion shown as a fast-forward");
  }
  check(std::holds_alternative<GitPushRefusal>(read_git_push(body.substr(0, size - 1))), "a cut body is read");
  check(std::holds_alternative<GitPushRefusal>(read_git_push(body.substr(0, size / 2))), "half a body is read");
  return 0;
}
