#include "netbox/policy/request_path.hpp"

#include <vector>

namespace netbox::policy {
namespace {

bool is_unreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

// pchar of RFC 3986 less '%' (handled apart): unreserved, sub-delims, ':' and '@'.
bool is_path_char(char c) {
  switch (c) {
    case '!': case '$': case '&': case '\'': case '(': case ')': case '*': case '+': case ',': case ';': case '=':
    case ':': case '@':
      return true;
    default:
      return is_unreserved(c);
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

RequestPath refuse(std::string why) {
  RequestPath r;
  r.refusal = std::move(why);
  return r;
}

struct Segment {
  std::string text;     // canonical
  bool escaped_dot = false;  // some '.' in it came from %2E
};

// "." or ".." once any ";params" are cut off: what a server might resolve as a dot segment.
bool dot_like(const std::string& s, bool* with_params) {
  const auto semi = s.find(';');
  const std::string head = s.substr(0, semi);
  *with_params = semi != std::string::npos;
  return head == "." || head == "..";
}

}  // namespace

RequestPath normalize_request_path(std::string_view target) {
  if (target.empty() || target.front() != '/') return refuse("the path does not start with '/'");
  if (target.find('#') != std::string_view::npos) return refuse("a fragment ('#') in the request target");
  RequestPath out;
  const auto q = target.find('?');
  std::string_view raw = target.substr(0, q);
  if (q != std::string_view::npos) {
    out.has_query = true;
    out.query = std::string(target.substr(q + 1));
  }

  // Decode into segments, keeping what each byte was.
  std::vector<Segment> segments;
  Segment cur;
  for (std::size_t i = 1; i <= raw.size(); ++i) {
    if (i == raw.size() || raw[i] == '/') {
      segments.push_back(std::move(cur));
      cur = Segment{};
      continue;
    }
    const char c = raw[i];
    if (c == '%') {
      if (i + 2 >= raw.size()) return refuse("a '%' not followed by two hex digits");
      const int hi = hex_value(raw[i + 1]);
      const int lo = hex_value(raw[i + 2]);
      if (hi < 0 || lo < 0) return refuse("a '%' not followed by two hex digits");
      const char decoded = static_cast<char>(hi * 16 + lo);
      if (decoded == '/' || decoded == '\\') return refuse("an encoded slash or backslash in the path");
      if (decoded == '\0') return refuse("an encoded NUL in the path");
      if (is_unreserved(decoded)) {
        cur.text.push_back(decoded);
        if (decoded == '.') cur.escaped_dot = true;
      } else {
        static const char* hex = "0123456789ABCDEF";
        cur.text += '%';
        cur.text += hex[hi];
        cur.text += hex[lo];
      }
      i += 2;
      continue;
    }
    if (c == '\\') return refuse("a backslash in the path (some servers read it as '/')");
    if (!is_path_char(c)) return refuse("a byte not allowed in a path (RFC 3986): send it percent-encoded");
    cur.text.push_back(c);
  }

  // Resolve dot segments and fold empty ones.
  std::vector<std::string> kept;
  bool trailing_slash = false;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const bool last = i + 1 == segments.size();
    Segment& s = segments[i];
    bool with_params = false;
    if (dot_like(s.text, &with_params)) {
      if (s.escaped_dot) return refuse("a dot segment spelled with escapes (%2E) in the path");
      if (with_params) return refuse("a dot segment with parameters ('..;') in the path");
      if (s.text == "..") {
        if (kept.empty()) return refuse("the path climbs above the root ('..')");
        kept.pop_back();
      }
      trailing_slash = last;  // "/a/." and "/a/b/.." name a folder
      continue;
    }
    if (s.text.empty()) {
      trailing_slash = last && !kept.empty();
      continue;
    }
    kept.push_back(std::move(s.text));
    trailing_slash = false;
  }
  out.path = "/";
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (i) out.path += '/';
    out.path += kept[i];
  }
  if (trailing_slash && !kept.empty()) out.path += '/';
  return out;
}

// One pass with one place to go back to (the last '*' seen, and where its run began),
// not a try of every split per star: `/a/*-*-*.json` against a segment of 8,000 dashes
// took minutes of an io thread that way, with every agent on it waiting. Going back to the
// last star is enough, since a star can absorb whatever an earlier one in its segment
// could; a '/' of the path ends what any star before it may take (only a final star
// crosses segments), so once one is matched there is nothing to go back to.
bool path_matches(std::string_view pattern, std::string_view path) {
  constexpr auto none = std::string_view::npos;
  std::size_t p = 0, s = 0, star = none, run = 0;
  while (s < path.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      if (p + 1 == pattern.size()) return true;  // the rest, slashes included
      star = p++;
      run = s;  // the star takes nothing yet
    } else if (p < pattern.size() && pattern[p] == path[s]) {
      if (path[s] == '/') star = none;
      ++p;
      ++s;
    } else if (star != none && path[run] != '/') {
      p = star + 1;  // the star takes one more character
      s = ++run;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') {
    if (p + 1 == pattern.size()) return true;
    ++p;
  }
  return p == pattern.size();
}

}  // namespace netbox::policy
