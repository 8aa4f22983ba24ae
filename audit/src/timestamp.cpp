#include "timestamp.hpp"

#include "netbox/audit/query.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace netbox::audit {

namespace {

void two_digits(char* out, int v) {
  out[0] = static_cast<char>('0' + v / 10);
  out[1] = static_cast<char>('0' + v % 10);
}

}  // namespace

// Every audit row and log line carries one, so this runs on the request path: the
// "YYYY-MM-DDTHH:MM:SS" part is kept per thread for the second it names (gmtime_r and
// snprintf once a second, not once a row), and the milliseconds are written by hand.
TimestampText::TimestampText(Clock::time_point tp) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(tp.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  long frac = static_cast<long>(ms % 1000);
  if (frac < 0) { frac += 1000; --secs; }
  thread_local std::time_t cached_secs = -1;
  thread_local char prefix[32];
  thread_local std::size_t prefix_len = 0;
  if (secs != cached_secs || prefix_len == 0) {
    std::tm tm{};
    gmtime_r(&secs, &tm);
    const int n = std::snprintf(prefix, sizeof prefix, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    prefix_len = n > 0 ? std::min<std::size_t>(static_cast<std::size_t>(n), sizeof prefix - 1) : 0;
    cached_secs = secs;
  }
  static_assert(sizeof text_ >= sizeof prefix + 5);  // the prefix, '.', 3 digits, 'Z'
  std::memcpy(text_, prefix, prefix_len);
  char* p = text_ + prefix_len;
  *p++ = '.';
  *p++ = static_cast<char>('0' + frac / 100);
  two_digits(p, static_cast<int>(frac % 100));
  p += 2;
  *p++ = 'Z';
  size_ = static_cast<std::size_t>(p - text_);
}

std::string format_timestamp(Clock::time_point tp) { return std::string(TimestampText(tp).view()); }

namespace detail {
namespace {

// A cursor over the text; each reader consumes exactly what it accepts.
struct Cursor {
  std::string_view text;
  std::size_t pos = 0;

  bool done() const { return pos == text.size(); }
  bool take(char c) {
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  // Exactly `n` decimal digits.
  std::optional<int> digits(std::size_t n) {
    if (text.size() - pos < n) return std::nullopt;
    int value = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const char c = text[pos + i];
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + (c - '0');
    }
    pos += n;
    return value;
  }
};

std::optional<Clock::time_point> clamped(std::chrono::sys_time<std::chrono::milliseconds> tp) {
  using namespace std::chrono;
  const auto latest = floor<milliseconds>(Clock::time_point::max());
  const auto earliest = ceil<milliseconds>(Clock::time_point::min());
  return time_point_cast<Clock::duration>(std::clamp(tp, earliest, latest));
}

}  // namespace

std::optional<Clock::time_point> parse_iso8601(std::string_view text) {
  using namespace std::chrono;
  Cursor in{text};
  const auto y = in.digits(4);
  if (!y || !in.take('-')) return std::nullopt;
  const auto mo = in.digits(2);
  if (!mo || !in.take('-')) return std::nullopt;
  const auto d = in.digits(2);
  if (!d) return std::nullopt;
  const year_month_day date{year{*y}, month{static_cast<unsigned>(*mo)}, day{static_cast<unsigned>(*d)}};
  if (!date.ok()) return std::nullopt;
  // Milliseconds reach far beyond any calendar year; the clock's own range does not
  // (nanoseconds end in 2262), so the result is clamped to it at the end.
  sys_time<milliseconds> tp = sys_days{date};
  if (in.done()) return clamped(tp);

  if (!in.take('T') && !in.take('t') && !in.take(' ')) return std::nullopt;
  const auto h = in.digits(2);
  if (!h || *h > 23 || !in.take(':')) return std::nullopt;
  const auto mi = in.digits(2);
  if (!mi || *mi > 59) return std::nullopt;
  tp += hours{*h} + minutes{*mi};
  if (in.take(':')) {
    const auto s = in.digits(2);
    if (!s || *s > 59) return std::nullopt;
    tp += seconds{*s};
    if (in.take('.') || in.take(',')) {
      // Any number of fraction digits; the store keeps milliseconds.
      long scale = 100;
      std::size_t count = 0;
      while (!in.done() && in.text[in.pos] >= '0' && in.text[in.pos] <= '9') {
        tp += milliseconds{(in.text[in.pos] - '0') * scale};
        scale /= 10;
        ++in.pos;
        ++count;
      }
      if (count == 0) return std::nullopt;
    }
  }
  if (in.done() || in.take('Z') || in.take('z')) return in.done() ? clamped(tp) : std::nullopt;

  // "+02:00" means the local time is two hours ahead of UTC.
  int sign = 0;
  if (in.take('+')) sign = 1;
  else if (in.take('-')) sign = -1;
  else return std::nullopt;
  const auto oh = in.digits(2);
  if (!oh || *oh > 23) return std::nullopt;
  in.take(':');
  const auto om = in.digits(2);
  if (!om || *om > 59 || !in.done()) return std::nullopt;
  return clamped(tp - sign * (hours{*oh} + minutes{*om}));
}

}  // namespace detail
}  // namespace netbox::audit
