#include "netbox/launcher/ask_prompt.hpp"
#include "netbox/launcher/terminal_lock.hpp"

#include <fcntl.h>
#include <termios.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace netbox::launcher {
namespace {

std::string authority_of(const proxy::PendingAsk& q) {
  const bool v6 = q.host.find(':') != std::string::npos;
  return (v6 ? "[" + q.host + "]" : q.host) + ":" + std::to_string(q.port);
}

std::string seconds_left(std::chrono::system_clock::time_point until) {
  const auto left = std::chrono::duration_cast<std::chrono::seconds>(until - std::chrono::system_clock::now()).count();
  return std::to_string(left > 0 ? left : 0) + "s";
}

}  // namespace

std::unique_ptr<AskPrompt> AskPrompt::open() {
  if (::isatty(0) == 1) return nullptr;  // the agent reads the terminal: nothing is asked there
  const int tty = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (tty < 0) return nullptr;
  return std::unique_ptr<AskPrompt>(new AskPrompt(tty));
}

AskPrompt::AskPrompt(int tty) : tty_(tty), wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  thread_ = std::thread([this] { run(); });
}

AskPrompt::~AskPrompt() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  const std::uint64_t one = 1;
  if (wake_ >= 0) [[maybe_unused]] auto n = ::write(wake_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  if (wake_ >= 0) ::close(wake_);
  ::close(tty_);
}

proxy::AskListener AskPrompt::listener() {
  proxy::AskListener l;
  l.asked = [this](const proxy::PendingAsk& q) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(q);
    }
    cv_.notify_all();
  };
  l.settled = [this](std::uint64_t id, bool answered, const std::string& how) { settled(id, answered, how); };
  return l;
}

// Kept until the question comes up (or is being asked: the read wakes); the prompt's own
// answer takes its entry back.
void AskPrompt::settled(std::uint64_t id, bool answered, const std::string& how) {
  {
    std::lock_guard lock(mu_);
    if (settled_.size() >= 1024) settled_.erase(settled_.begin());  // ends of questions never queued here
    settled_[id] = {answered, how};
  }
  const std::uint64_t one = 1;
  if (wake_ >= 0) [[maybe_unused]] auto n = ::write(wake_, &one, sizeof one);
}

std::optional<std::pair<bool, std::string>> AskPrompt::take_settled(std::uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = settled_.find(id);
  if (it == settled_.end()) return std::nullopt;
  auto out = std::move(it->second);
  settled_.erase(it);
  return out;
}

void AskPrompt::answer_with(Answer answer) {
  {
    std::lock_guard lock(mu_);
    answer_ = std::move(answer);
  }
  cv_.notify_all();
}

void AskPrompt::run() {
  for (;;) {
    proxy::PendingAsk q;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stop_ || (!queue_.empty() && answer_); });
      if (stop_) return;
      q = std::move(queue_.front());
      queue_.pop_front();
    }
    ask(q);
  }
}

namespace {

// What an answer line says: exactly a letter or its word (any case); nullopt for anything
// else ("oh no" is no "once", "probably not" no "policy").
std::optional<char> answer_letter(const std::string& line) {
  std::string word = line;
  while (!word.empty() && (word.back() == ' ' || word.back() == '\t')) word.pop_back();
  for (char& c : word) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  for (const char* w : {"once", "launch", "policy", "deny"})
    if (word == std::string(1, w[0]) || word == w) return w[0];
  return std::nullopt;
}

}  // namespace

// Before a question: the agent's output is held (terminal_lock.hpp), what the terminal
// was sent to answer is dropped (replies to the agent's queries, keys typed ahead), and
// its drawing state is reset (colours, a character set, margins the agent set), on a line
// of its own, so that the question reads as netbox wrote it.
void AskPrompt::fresh_line() {
  ::tcflush(tty_, TCIFLUSH);
  say("\x1b[!p\x1b[0m\x0f\x1b[?25h\r\n");
}

void AskPrompt::ask(const proxy::PendingAsk& q) {
  // Waited in the queue past its time, or ended meanwhile: nothing to ask.
  if (take_settled(q.id) || q.expires <= std::chrono::system_clock::now() || terminal_questions_ended()) return;
  const std::string what = "agent " + q.agent + " wants " + authority_of(q) + " (" + q.door + ", not in the policy)";
  const std::string choices = std::string("[o]nce, for this [l]aunch, ") +
                              (q.policy_offered ? "add to the [p]olicy file, " : "") + "[d]eny";
  std::lock_guard terminal(terminal_lock());
  fresh_line();
  for (;;) {
    say("netbox ask: " + what + "; " + choices + "? (" + seconds_left(q.expires) + ") ");
    const std::string line = read_line(q.expires, q.id);
    if (auto ended = take_settled(q.id); ended && ended->first) {
      say("\nnetbox ask: " + authority_of(q) + " was answered elsewhere: " + ended->second + "\n");
      return;
    }
    if (line.empty()) {  // no answer in time (the proxy's timer may have said so first)
      say("\nnetbox ask: no answer for " + authority_of(q) + "; refused\n");
      return;
    }
    proxy::AskAnswer a;
    a.grantor = "the launch's terminal";
    const char c = answer_letter(line).value_or('?');
    if (c == 'd') {
      a.approve = false;
    } else if (auto scope = c == '?' ? std::nullopt : proxy::parse_ask_scope(std::string(1, c));
               scope && (*scope != proxy::AskScope::policy || q.policy_offered)) {
      a.approve = true;
      a.scope = *scope;
    } else {
      say("netbox ask: answer o, l, " + std::string(q.policy_offered ? "p, " : "") + "or d\n");
      continue;
    }
    Answer answer;
    {
      std::lock_guard lock(mu_);
      answer = answer_;
    }
    const auto why = answer({q.id, {}, {}, 0}, a);
    const auto ended = take_settled(q.id);  // this answer's own end, or (when refused) one elsewhere
    if (!why.empty()) {
      say("netbox ask: " + why + "\n");
      if (ended) return;
      continue;  // not taken (the policy file could not be changed, say): asked again
    }
    say(std::string("netbox ask: ") + (a.approve ? "allowed " : "refused ") + authority_of(q) +
        (a.approve ? " (" + std::string(proxy::to_string(a.scope)) + ")" : "") + "\n");
    return;
  }
}

std::string AskPrompt::read_line(std::chrono::system_clock::time_point deadline, std::uint64_t id) {
  std::string line;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::system_clock::now());
    if (left.count() <= 0) return {};
    pollfd fds[2] = {{tty_, POLLIN, 0}, {wake_, POLLIN, 0}};
    const int n = ::poll(fds, 2, static_cast<int>(std::min<std::int64_t>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) return {};
    if (n > 0 && (fds[1].revents & POLLIN)) {
      std::uint64_t drained = 0;
      [[maybe_unused]] auto r = ::read(wake_, &drained, sizeof drained);
    }
    {
      std::lock_guard lock(mu_);
      if (stop_ || settled_.count(id)) return {};
    }
    if (terminal_questions_ended()) return {};
    if (n <= 0 || !(fds[0].revents & (POLLIN | POLLHUP))) continue;
    char c = 0;
    const ssize_t got = ::read(tty_, &c, 1);
    if (got <= 0) return {};
    if (c == '\n' || c == '\r') {
      const auto first = line.find_first_not_of(" \t");
      if (first == std::string::npos) continue;  // an empty line asks again below
      return line.substr(first);
    }
    line += c;
  }
}

void AskPrompt::say(const std::string& text) {
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(tty_, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

std::string ask_elsewhere_hint(bool shared_proxy) {
  return std::string("netbox launch: --ask: requests the policy does not allow wait for an answer; list them with "
                     "`netbox agent pending") +
         (shared_proxy ? " --control PATH" : "") + "` and answer with `netbox agent approve NAME HOST` or `netbox "
         "agent deny NAME HOST` from another terminal" +
         (shared_proxy ? " (or the proxy's dashboard)" : "") + "\n";
}

}  // namespace netbox::launcher
