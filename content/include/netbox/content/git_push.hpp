#pragma once
// A `git push` over smart HTTP as the proxy sees it: the body of POST
// .../git-receive-pack, read before anything is forwarded. Its pkt-lines name each ref
// update (old id, new id, ref); the pack after them holds the pushed objects, of which
// the commits (and their parents) are decoded, so that a rule can tell a fast-forward
// from a force push by walking from the new commit to the old one. Anything that cannot
// be read is refused, and a walk that cannot be completed from the pack shows nothing
// (the caller fails closed). The work is linear in the body: the bytes inflated, a
// commit's parents and the walks of all the updates together are bounded
// (GitPushLimits), and a push past a bound is refused, naming it.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace netbox::content {

struct RefUpdate {
  std::string old_id;  // hex; all zeros when the ref is created
  std::string new_id;  // hex; all zeros when the ref is deleted
  std::string ref;     // "refs/heads/agent/x"
  bool creates() const;
  bool deletes() const;
};

struct GitPush {
  std::vector<RefUpdate> updates;
  std::string capabilities;  // as the client sent them after the first command's NUL
  // The pack's commits: id -> parent ids (each once), read as git reads them: the
  // `parent` lines right after the `tree` line. Missing from here, so that no walk passes
  // through them: commits that are deltas against objects the pack does not hold (a thin
  // pack's bases on the server), and commits with a `parent` line anywhere else (git
  // does not count it; reading it would show a root commit as a child).
  std::map<std::string, std::vector<std::string>, std::less<>> commits;
  std::size_t objects = 0;  // what the pack's header announced
  // The updates' (old id, new id) the pack shows to be fast-forwards: read_git_push walks
  // them all at once, within one bound.
  std::set<std::pair<std::string, std::string>> fast_forwards;

  // Whether `update`'s new commit is shown by the pack to descend from its old one (a
  // fast-forward). False when it does not, or when the pack cannot show it.
  bool shows_fast_forward(const RefUpdate& update) const;
};

struct GitPushRefusal {
  std::string reason;
};

// What all of a push's objects may inflate to, per byte of its rule's body window: a
// zlib stream of a few KiB can claim gigabytes, and its header's size bounds nothing.
inline constexpr std::uint64_t kInflatedPerWindowByte = 8;

struct GitPushLimits {
  std::size_t max_updates = 1000;
  std::size_t max_objects = 1'000'000;
  std::size_t max_commit_bytes = 1 << 20;  // one commit's text (and a delta that builds one)
  // `parent` lines of one commit: real octopus merges have dozens (the largest in Linux
  // has 66); thousands only make every walk longer.
  std::size_t max_parents = 100;
  // Commit-to-parent links walked for all of a push's updates together: one update's
  // walk visits each commit once, but a push may name 1000 updates.
  std::size_t max_walk_edges = std::size_t{1} << 22;
  // Bytes inflated for all of the pack's objects together: kInflatedPerWindowByte times
  // the largest body window (16M); check_body passes its rule's window.
  std::uint64_t max_inflated_bytes = kInflatedPerWindowByte << 24;
};

// `body` is the whole request body (the caller bounds it). A push with only deletions
// carries no pack; every other push must carry one, whole, with its trailing checksum.
std::variant<GitPush, GitPushRefusal> read_git_push(std::string_view body, const GitPushLimits& limits = {});

// The answer to a push netbox refuses, as receive-pack's report (status 200, content type
// application/x-git-receive-pack-result), so that `git push` prints each ref's reason:
// "unpack ok", then "ng REF REASON" for every update (nothing was forwarded, so even the
// refs a rule allows are not updated: their reason says so), inside side-band channel 1
// when the client asked for side-band(-64k), with `summary` on channel 2, which git shows
// as "remote: ...". `reasons` maps refused refs to why.
std::string git_push_refusal(const GitPush& push, const std::map<std::string, std::string, std::less<>>& reasons,
                             const std::string& summary);
// A push that could not be read at all: one "ERR ..." pkt-line, which git prints as
// "remote error: ...".
std::string git_push_error(const std::string& message);
// A pkt-line holding `payload` (at most 65516 bytes; longer text is cut).
std::string pkt_line(std::string_view payload);

// One pkt-line from the front of `in` (four hex digits of length, then the payload; "0000"
// is a flush). Exposed for the fuzzer and tests.
struct PktLine {
  enum class Kind { data, flush, incomplete, malformed };
  Kind kind = Kind::malformed;
  std::string_view payload;
  std::size_t used = 0;
};
PktLine read_pkt_line(std::string_view in);

}  // namespace netbox::content
