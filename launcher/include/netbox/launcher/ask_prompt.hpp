#pragma once
// The launch's terminal asking a person (netbox launch --ask, with the embedded proxy or a
// shared one, --proxy-control: control_client.cpp pushes it the proxy's questions): one line per
// question on /dev/tty, naming the agent, host:port and door, answered with one line:
// o (once), l (for this launch), p (add to the policy file, when offered), d (deny). Read
// from /dev/tty of the launch, never the agent's stdin; nothing is asked there when the
// agent owns the terminal (its stdin is the terminal: a full-screen agent), and questions
// then wait for `netbox agent pending` / `netbox agent approve` from another terminal.
//
// The proxy tells of a question on an io thread (AgentAttachment::ask_listener; or the
// control connection's reader), which must not block: the question is queued, and a thread
// of the prompt's own asks, waits for the line (until the question's expiry) and hands the
// answer to the proxy. A question answered elsewhere first (`netbox agent approve`, the
// dashboard) stops being asked, and the terminal says by whom.
#include "netbox/proxy/approval.hpp"

#include <condition_variable>
#include <deque>
#include <map>
#include <optional>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace netbox::launcher {

class AskPrompt {
 public:
  using Answer = std::function<std::string(const proxy::AskTarget&, const proxy::AskAnswer&)>;

  // The launch's terminal, or null when there is none to ask on (no /dev/tty) or the agent
  // owns it (its stdin is a terminal).
  static std::unique_ptr<AskPrompt> open();
  ~AskPrompt();
  AskPrompt(const AskPrompt&) = delete;
  AskPrompt& operator=(const AskPrompt&) = delete;

  // What the proxy calls for each new question and each end of one (queues; never blocks).
  proxy::AskListener listener();
  // Where answers go (the embedded proxy's Server::answer_ask, or the control connection);
  // questions asked before wait.
  void answer_with(Answer answer);

 private:
  explicit AskPrompt(int tty);
  void run();
  void ask(const proxy::PendingAsk& q);
  void settled(std::uint64_t id, bool answered, const std::string& how);
  // A line from the terminal before `deadline`; empty when none came, the prompt stops, or
  // question `id` ended elsewhere (then in settled_).
  std::string read_line(std::chrono::system_clock::time_point deadline, std::uint64_t id);
  // How question `id` ended elsewhere, taken; nullopt: it has not.
  std::optional<std::pair<bool, std::string>> take_settled(std::uint64_t id);
  void say(const std::string& text);
  void fresh_line();

  int tty_ = -1;
  int wake_ = -1;  // eventfd: a question queued, or stop
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<proxy::PendingAsk> queue_;
  std::map<std::uint64_t, std::pair<bool, std::string>> settled_;  // questions that ended: answered?, how
  Answer answer_;
  bool stop_ = false;
  std::thread thread_;
};

// What the launch's stderr says at start about answering its questions when its terminal
// does not ask (the agent owns it, there is none, or the proxy is a shared one).
std::string ask_elsewhere_hint(bool shared_proxy);

}  // namespace netbox::launcher
