#include "netbox/content/git_push.hpp"

#include <openssl/evp.h>
#include <zlib.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace netbox::content {
namespace {

// A refusal thrown inside the reader and returned by read_git_push: the reader is deep
// (pkt-lines, pack entries, zlib, deltas) and any step may find the body unreadable.
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool all_zero(std::string_view s) { return std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; }); }

std::string hex(std::string_view raw) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// What git's check-ref-format refuses, so that the ref a rule matches is the ref the
// server would update (it refuses the others itself).
bool valid_ref(std::string_view ref) {
  if (!ref.starts_with("refs/") || ref.ends_with("/") || ref.ends_with(".lock") || ref.ends_with(".")) return false;
  if (ref.find("..") != std::string_view::npos || ref.find("//") != std::string_view::npos ||
      ref.find("@{") != std::string_view::npos || ref.find("/.") != std::string_view::npos)
    return false;
  return std::none_of(ref.begin(), ref.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f || c == ' ' || c == '~' || c == '^' || c == ':' || c == '?' || c == '*' ||
           c == '[' || c == '\\';
  });
}

class Digest {
 public:
  explicit Digest(bool sha256) : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_, sha256 ? EVP_sha256() : EVP_sha1(), nullptr) != 1)
      throw std::runtime_error("digest");
  }
  ~Digest() { EVP_MD_CTX_free(ctx_); }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;
  void add(std::string_view s) { EVP_DigestUpdate(ctx_, s.data(), s.size()); }
  std::string raw() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_DigestFinal_ex(ctx_, out, &len);
    return std::string(reinterpret_cast<const char*>(out), len);
  }

 private:
  EVP_MD_CTX* ctx_;
};

std::string object_id(bool sha256, std::string_view type, std::string_view data) {
  Digest d(sha256);
  d.add(type);
  d.add(" " + std::to_string(data.size()));
  d.add(std::string_view("\0", 1));
  d.add(data);
  return hex(d.raw());
}

// What a push may still inflate: the bound is per push, since a pack of small objects
// can claim as much as one huge one.
struct Inflation {
  std::uint64_t limit;
  std::uint64_t used = 0;
  void add(std::size_t n) {
    used += n;
    if (used > limit)
      throw Refused("the pack's objects inflate to more than " + std::to_string(limit) +
                    " bytes, more than netbox inflates for one push");
  }
};

// Inflates one zlib stream from the front of `in`; returns the bytes it used. The output
// is kept only when `keep` (else counted and dropped), and must be exactly `size` bytes.
std::size_t inflate_object(std::string_view in, std::uint64_t size, bool keep, std::string& out, Inflation& inflation) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) throw Refused("zlib");
  struct End {
    z_stream& z;
    ~End() { inflateEnd(&z); }
  } end{z};
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size(), UINT32_MAX));
  std::uint64_t produced = 0;
  char buffer[16384];
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    const int rc = inflate(&z, Z_NO_FLUSH);
    const std::size_t n = sizeof buffer - z.avail_out;
    produced += n;
    inflation.add(n);
    if (produced > size) throw Refused("a pack object is larger than its header says");
    if (keep) out.append(buffer, n);
    if (rc == Z_STREAM_END) break;
    if (rc != Z_OK) throw Refused("a pack object is not a zlib stream");
    if (n == 0 && z.avail_in == 0) throw Refused("the pack ends inside an object");
  }
  if (produced != size) throw Refused("a pack object is smaller than its header says");
  return in.size() - z.avail_in;
}

std::uint64_t delta_varint(std::string_view d, std::size_t& at) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= d.size()) throw Refused("a delta is cut short");
    const auto c = static_cast<unsigned char>(d[at++]);
    v |= static_cast<std::uint64_t>(c & 0x7f) << shift;
    if (!(c & 0x80)) return v;
  }
  throw Refused("a delta's size does not fit");
}

// Git's delta format: source size, target size, then copies from the base and inserts.
std::string apply_delta(std::string_view base, std::string_view delta, std::size_t limit) {
  std::size_t at = 0;
  if (delta_varint(delta, at) != base.size()) throw Refused("a delta does not fit its base");
  const std::uint64_t target = delta_varint(delta, at);
  if (target > limit) throw Refused("a delta builds an object larger than a commit may be");
  std::string out;
  out.reserve(static_cast<std::size_t>(target));
  while (at < delta.size()) {
    const auto op = static_cast<unsigned char>(delta[at++]);
    if (op & 0x80) {
      std::uint64_t offset = 0, size = 0;
      for (int i = 0; i < 4; ++i)
        if (op & (1 << i)) {
          if (at >= delta.size()) throw Refused("a delta is cut short");
          offset |= static_cast<std::uint64_t>(static_cast<unsigned char>(delta[at++])) << (8 * i);
        }
      for (int i = 0; i < 3; ++i)
        if (op & (0x10 << i)) {
          if (at >= delta.size()) throw Refused("a delta is cut short");
          size |= static_cast<std::uint64_t>(static_cast<unsigned char>(delta[at++])) << (8 * i);
        }
      if (size == 0) size = 0x10000;
      if (offset > base.size() || size > base.size() - offset || out.size() + size > target)
        throw Refused("a delta copies outside its base");
      out.append(base.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(size)));
    } else if (op != 0) {
      if (op > delta.size() - at || out.size() + op > target) throw Refused("a delta inserts past its end");
      out.append(delta.substr(at, op));
      at += op;
    } else {
      throw Refused("a delta holds a reserved instruction");
    }
  }
  if (out.size() != target) throw Refused("a delta builds another size than it says");
  return out;
}

// The lines of a commit's header, up to the blank line before its message.
class HeaderLines {
 public:
  explicit HeaderLines(std::string_view text) : text_(text) {}
  std::optional<std::string_view> next() {
    if (at_ >= text_.size()) return std::nullopt;
    const std::size_t eol = std::min(text_.find('\n', at_), text_.size());
    if (eol == at_) return std::nullopt;
    const std::string_view line = text_.substr(at_, eol - at_);
    at_ = eol + 1;
    return line;
  }

 private:
  std::string_view text_;
  std::size_t at_ = 0;
};

// A commit's parents as git reads them (parse_commit_buffer): the `tree` line first,
// then the `parent` lines right after it. git takes a `parent` line anywhere else for an
// unknown header (fsck accepts it after `committer`), so a commit that has one is not
// read (nullopt): counting it would show a root commit as a child of the old tip, and
// a force push as a fast-forward. Each parent is kept once: a commit may repeat one
// line many times, and each copy would be walked again.
std::optional<std::vector<std::string>> commit_parents(std::string_view text, std::size_t id_length,
                                                       std::size_t max_parents) {
  HeaderLines lines(text);
  auto line = lines.next();
  if (!line || !line->starts_with("tree ") || line->size() != 5 + id_length || !is_hex(line->substr(5)))
    return std::nullopt;
  std::vector<std::string> parents;
  for (line = lines.next(); line && line->starts_with("parent "); line = lines.next()) {
    const std::string_view id = line->substr(7);
    if (id.size() != id_length || !is_hex(id)) throw Refused("a commit names a parent that is not an object id");
    if (parents.size() == max_parents)
      throw Refused("a commit has more than " + std::to_string(max_parents) + " parents, more than netbox checks");
    parents.emplace_back(id);
  }
  for (; line; line = lines.next())
    if (line->starts_with("parent ")) return std::nullopt;
  std::sort(parents.begin(), parents.end());
  parents.erase(std::unique(parents.begin(), parents.end()), parents.end());
  return parents;
}

struct PackReader {
  std::string_view pack;
  bool sha256;
  const GitPushLimits& limits;
  GitPush& push;

  enum class Kind { commit, other, unknown };
  struct Entry {
    Kind kind = Kind::unknown;
    std::string commit;  // the commit's text, when kind is commit
  };
  std::map<std::size_t, Entry> by_offset;
  std::map<std::string, const Entry*, std::less<>> commit_by_id;
  std::size_t kept_bytes = 0;
  Inflation inflation;

  std::size_t id_bytes() const { return sha256 ? 32 : 20; }

  void add_commit(std::size_t offset, std::string text) {
    kept_bytes += text.size();
    if (kept_bytes > 64 * limits.max_commit_bytes) throw Refused("the pack holds more commit text than netbox checks");
    std::string id = object_id(sha256, "commit", text);
    if (auto parents = commit_parents(text, id_bytes() * 2, limits.max_parents)) push.commits[id] = std::move(*parents);
    Entry& e = by_offset[offset];
    e.kind = Kind::commit;
    e.commit = std::move(text);
    commit_by_id[id] = &e;
  }

  void read() {
    if (pack.size() < 12 + id_bytes() || !pack.starts_with("PACK")) throw Refused("the push carries no pack");
    auto u32 = [&](std::size_t at) {
      return (std::uint32_t{static_cast<unsigned char>(pack[at])} << 24) |
             (std::uint32_t{static_cast<unsigned char>(pack[at + 1])} << 16) |
             (std::uint32_t{static_cast<unsigned char>(pack[at + 2])} << 8) |
             std::uint32_t{static_cast<unsigned char>(pack[at + 3])};
    };
    const std::uint32_t version = u32(4);
    if (version != 2 && version != 3) throw Refused("a pack of version " + std::to_string(version));
    push.objects = u32(8);
    if (push.objects > limits.max_objects) throw Refused("the pack holds more objects than netbox checks");
    const std::size_t end = pack.size() - id_bytes();
    Digest d(sha256);
    d.add(pack.substr(0, end));
    if (d.raw() != pack.substr(end)) throw Refused("the pack's checksum does not match");
    std::size_t at = 12;
    for (std::size_t i = 0; i < push.objects; ++i) at = read_object(at, end);
    if (at != end) throw Refused("the pack holds bytes after its last object");
  }

  std::size_t read_object(std::size_t start, std::size_t end) {
    std::size_t at = start;
    auto next = [&]() -> unsigned char {
      if (at >= end) throw Refused("the pack ends inside an object header");
      return static_cast<unsigned char>(pack[at++]);
    };
    unsigned char c = next();
    const int type = (c >> 4) & 7;
    std::uint64_t size = c & 15;
    for (int shift = 4; c & 0x80; shift += 7) {
      if (shift > 57) throw Refused("a pack object's size does not fit");
      c = next();
      size |= static_cast<std::uint64_t>(c & 0x7f) << shift;
    }
    const Entry* base = nullptr;  // a delta's base, when the pack holds it
    if (type == 6) {  // OFS_DELTA: a base earlier in this pack
      c = next();
      std::uint64_t back = c & 0x7f;
      while (c & 0x80) {
        if (back > (UINT64_MAX >> 8)) throw Refused("a delta's base offset does not fit");
        c = next();
        back = ((back + 1) << 7) | (c & 0x7f);
      }
      auto it = back == 0 || back > start ? by_offset.end() : by_offset.find(start - back);
      if (it == by_offset.end()) throw Refused("a delta's base is not an object of the pack");
      base = &it->second;
    } else if (type == 7) {  // REF_DELTA: a base by id, in the pack or (thin pack) on the server
      if (end - at < id_bytes()) throw Refused("the pack ends inside a delta's base id");
      auto it = commit_by_id.find(hex(pack.substr(at, id_bytes())));
      at += id_bytes();
      if (it != commit_by_id.end()) base = it->second;
    } else if (type < 1 || type > 4) {
      throw Refused("a pack object of type " + std::to_string(type));
    }
    // Only a commit's text, or a delta that may build one, is kept; the rest is inflated
    // to find where the next object starts, and dropped.
    const bool delta = type == 6 || type == 7;
    const bool keep = (type == 1 || (delta && base && base->kind == Kind::commit)) &&
                      size <= 2 * static_cast<std::uint64_t>(limits.max_commit_bytes);
    if (type == 1 && !keep) throw Refused("a commit larger than netbox checks");
    std::string data;
    at += inflate_object(pack.substr(at, end - at), size, keep, data, inflation);
    if (type == 1) {
      add_commit(start, std::move(data));
      return at;
    }
    if (delta && base && base->kind == Kind::commit)
      add_commit(start, apply_delta(base->commit, data, limits.max_commit_bytes));
    else
      by_offset[start].kind = delta && (!base || base->kind == Kind::unknown) ? Kind::unknown : Kind::other;
    return at;
  }
};

// The pack's commits numbered, each with its parents' numbers, built once per push: the
// walks of all its updates step along integers rather than look ids up, and share one
// bound on the links they follow.
class Ancestry {
 public:
  explicit Ancestry(const std::map<std::string, std::vector<std::string>, std::less<>>& commits)
      : commits_(commits.size()) {
    for (const auto& [id, parents] : commits) number(id);
    first_.reserve(commits_ + 1);
    for (const auto& [id, parents] : commits) {
      first_.push_back(parents_.size());
      for (const std::string& parent : parents) parents_.push_back(number(parent));
    }
    first_.push_back(parents_.size());
    seen_.assign(numbers_.size(), 0);
  }

  // Whether `to` is an ancestor of the pack's commit `from`, each link followed taking
  // one of `links_left`; nullopt when they run out first.
  std::optional<bool> reaches(std::string_view from, std::string_view to, std::size_t& links_left) {
    const auto f = numbers_.find(from), t = numbers_.find(to);
    if (f == numbers_.end() || t == numbers_.end() || f->second >= commits_) return false;
    ++walk_;
    std::vector<std::uint32_t> todo{f->second};
    seen_[f->second] = walk_;
    while (!todo.empty()) {
      const std::uint32_t commit = todo.back();
      todo.pop_back();
      for (std::size_t i = first_[commit]; i < first_[commit + 1]; ++i) {
        if (links_left == 0) return std::nullopt;
        --links_left;
        const std::uint32_t parent = parents_[i];
        if (parent == t->second) return true;
        if (seen_[parent] == walk_) continue;
        seen_[parent] = walk_;
        if (parent < commits_) todo.push_back(parent);  // the others are not in the pack
      }
    }
    return false;
  }

 private:
  std::uint32_t number(std::string_view id) {
    return numbers_.try_emplace(id, static_cast<std::uint32_t>(numbers_.size())).first->second;
  }

  std::size_t commits_;  // numbers below are the pack's commits, the rest only parents
  std::unordered_map<std::string_view, std::uint32_t> numbers_;
  std::vector<std::size_t> first_;  // commit n's parents: parents_[first_[n] .. first_[n + 1])
  std::vector<std::uint32_t> parents_;
  std::vector<std::uint32_t> seen_;  // the walk that last reached each number
  std::uint32_t walk_ = 0;
};

// The (old, new) of every update the pack shows to be a fast-forward, each pair walked
// once and all of them within limits.max_walk_edges links: a push may name 1000 updates,
// each of which could walk the whole pack.
std::set<std::pair<std::string, std::string>> walk_fast_forwards(const GitPush& push, const GitPushLimits& limits) {
  std::set<std::pair<std::string, std::string>> shown, walked;
  std::optional<Ancestry> ancestry;
  std::size_t links_left = limits.max_walk_edges;
  for (const RefUpdate& u : push.updates) {
    if (u.deletes() || u.creates() || u.old_id == u.new_id || !walked.emplace(u.old_id, u.new_id).second) continue;
    if (!ancestry) ancestry.emplace(push.commits);
    const std::optional<bool> reached = ancestry->reaches(u.new_id, u.old_id, links_left);
    if (!reached)
      throw Refused("telling fast-forwards from force pushes takes more than " + std::to_string(limits.max_walk_edges) +
                    " steps from a commit to a parent, more than netbox walks for one push");
    if (*reached) shown.emplace(u.old_id, u.new_id);
  }
  return shown;
}

}  // namespace

bool RefUpdate::creates() const { return all_zero(old_id); }
bool RefUpdate::deletes() const { return all_zero(new_id); }

bool GitPush::shows_fast_forward(const RefUpdate& update) const {
  if (update.deletes()) return false;
  if (update.creates() || update.old_id == update.new_id) return true;
  return fast_forwards.contains({update.old_id, update.new_id});
}

PktLine read_pkt_line(std::string_view in) {
  PktLine p;
  if (in.size() < 4) {
    p.kind = PktLine::Kind::incomplete;
    return p;
  }
  std::size_t length = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = in[static_cast<std::size_t>(i)];
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (v < 0) return p;  // malformed
    length = length * 16 + static_cast<std::size_t>(v);
  }
  if (length == 0) {
    p.kind = PktLine::Kind::flush;
    p.used = 4;
    return p;
  }
  if (length < 4 || length > 65520) return p;  // delim/response-end packets have no place in a push
  if (in.size() < length) {
    p.kind = PktLine::Kind::incomplete;
    return p;
  }
  p.kind = PktLine::Kind::data;
  p.payload = in.substr(4, length - 4);
  p.used = length;
  return p;
}

std::string pkt_line(std::string_view payload) {
  payload = payload.substr(0, 65516);
  static constexpr char kDigits[] = "0123456789abcdef";
  const std::size_t n = payload.size() + 4;
  std::string out{kDigits[(n >> 12) & 15], kDigits[(n >> 8) & 15], kDigits[(n >> 4) & 15], kDigits[n & 15]};
  return out.append(payload);
}

namespace {

// A reason on one line, as git prints it after "ng REF ": no line breaks or NULs.
std::string one_line(std::string_view text) {
  std::string out(text.substr(0, 1000));
  std::replace_if(out.begin(), out.end(), [](char c) { return c == '\n' || c == '\r' || c == '\0'; }, ' ');
  return out;
}

bool has_capability(const std::string& caps, std::string_view cap) {
  return (" " + caps + " ").find(" " + std::string(cap) + " ") != std::string::npos;
}

}  // namespace

std::string git_push_refusal(const GitPush& push, const std::map<std::string, std::string, std::less<>>& reasons,
                             const std::string& summary) {
  std::string report = pkt_line("unpack ok\n");
  for (const auto& u : push.updates) {
    auto it = reasons.find(u.ref);
    const std::string why = it != reasons.end() ? it->second : "not pushed: netbox refused another ref of this push";
    report += pkt_line("ng " + u.ref + " " + one_line(why) + "\n");
  }
  report += "0000";
  const bool side_band = has_capability(push.capabilities, "side-band-64k") || has_capability(push.capabilities, "side-band");
  if (!side_band) return report;
  // Side-band: the report travels on channel 1 in pieces that fit the smaller band (1000
  // bytes for plain side-band), the message on channel 2.
  std::string out = pkt_line("\x02" + one_line("netbox: " + summary) + "\n");
  for (std::size_t at = 0; at < report.size(); at += 995) out += pkt_line("\x01" + report.substr(at, 995));
  return out + "0000";
}

std::string git_push_error(const std::string& message) { return pkt_line("ERR netbox: " + one_line(message) + "\n"); }

std::variant<GitPush, GitPushRefusal> read_git_push(std::string_view body, const GitPushLimits& limits) {
  GitPush push;
  try {
    std::size_t at = 0;
    auto line = [&]() {
      const PktLine p = read_pkt_line(body.substr(at));
      if (p.kind == PktLine::Kind::incomplete) throw Refused("the push ends inside its commands");
      if (p.kind == PktLine::Kind::malformed) throw Refused("the push's commands are not pkt-lines");
      at += p.used;
      return p;
    };
    std::size_t id_length = 0;
    for (PktLine p = line(); p.kind != PktLine::Kind::flush; p = line()) {
      std::string_view text = p.payload;
      if (text.ends_with('\n')) text.remove_suffix(1);
      if (push.updates.empty()) {
        if (text.starts_with("shallow ")) continue;  // a shallow clone's boundary: information only
        if (text.starts_with("push-cert")) throw Refused("a signed push (push-cert), which netbox's git rules do not read");
        if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
          push.capabilities = std::string(text.substr(nul + 1));
          text = text.substr(0, nul);
        }
      }
      const auto sp1 = text.find(' ');
      const auto sp2 = sp1 == std::string_view::npos ? sp1 : text.find(' ', sp1 + 1);
      if (sp2 == std::string_view::npos) throw Refused("a push command is not \"old new ref\"");
      RefUpdate u{std::string(text.substr(0, sp1)), std::string(text.substr(sp1 + 1, sp2 - sp1 - 1)),
                  std::string(text.substr(sp2 + 1))};
      if (!id_length) id_length = u.old_id.size();
      if ((id_length != 40 && id_length != 64) || u.old_id.size() != id_length || u.new_id.size() != id_length ||
          !is_hex(u.old_id) || !is_hex(u.new_id))
        throw Refused("a push command's object ids are not hex ids of one length");
      if (!valid_ref(u.ref)) throw Refused("\"" + u.ref.substr(0, 200) + "\" is not a ref name git accepts");
      if (push.updates.size() >= limits.max_updates) throw Refused("the push updates more refs than netbox checks");
      push.updates.push_back(std::move(u));
    }
    if (push.updates.empty()) throw Refused("the push names no ref");
    if ((" " + push.capabilities + " ").find(" push-options ") != std::string::npos)
      for (PktLine p = line(); p.kind != PktLine::Kind::flush; p = line()) {
      }
    const bool deletes_only =
        std::all_of(push.updates.begin(), push.updates.end(), [](const RefUpdate& u) { return u.deletes(); });
    const std::string_view rest = body.substr(at);
    if (deletes_only) {
      if (!rest.empty()) throw Refused("a push of deletions only carries a pack");
      return push;
    }
    PackReader reader{rest, id_length == 64, limits, push, {}, {}, 0, Inflation{limits.max_inflated_bytes, 0}};
    reader.read();
    push.fast_forwards = walk_fast_forwards(push, limits);
  } catch (const Refused& e) {
    return GitPushRefusal{e.what()};
  }
  return push;
}

}  // namespace netbox::content
