#pragma once
// A TCP relay in front of a PostgreSQL server that can lose a commit's answer: once armed,
// it passes a transaction's COMMIT to the server and, when the server answers that it
// committed (CommandComplete "COMMIT"), closes the client's connection instead of passing
// the answer on. The client then knows its transaction failed or committed, not which:
// the case a writer's retry (or its shipped-up-to marker) must get right. It reads the
// protocol only as far as framing: the startup, then one type byte and a length per
// message; an SSL or GSS encryption request is answered "no" by the relay itself, so what
// follows is plain.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace netbox::test {

class PgCutRelay {
 public:
  explicit PgCutRelay(unsigned short server_port);
  ~PgCutRelay();
  PgCutRelay(const PgCutRelay&) = delete;
  PgCutRelay& operator=(const PgCutRelay&) = delete;

  unsigned short port() const { return port_; }
  // The next COMMIT the server answers after a client message holding `marker` (a
  // statement's text or a parameter's) is not passed on (once).
  void arm(const std::string& marker) {
    std::lock_guard lk(mu_);
    marker_ = marker;
    seen_ = false;
    armed_ = true;
  }
  // Commits whose answer the relay kept from the client so far.
  int cuts() const { return cuts_; }
  // From the cut on, every new connection is closed at once (the server looks away) until
  // release(): the client stays unsure whether its commit happened.
  void hold_after_cut() { hold_after_cut_ = true; }
  void release() {
    hold_after_cut_ = false;
    holding_ = false;
  }

 private:
  struct Link;
  void accept_loop();
  void serve(int client);
  bool relay_server_answers(Link& link);

  unsigned short server_port_;
  unsigned short port_ = 0;
  int listener_ = -1;
  std::atomic<bool> armed_{false};
  std::atomic<int> cuts_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> seen_{false};  // the armed marker went by
  std::atomic<bool> hold_after_cut_{false};
  std::atomic<bool> holding_{false};  // cut, and held: new connections are closed
  std::string marker_;             // under mu_
  std::mutex mu_;
  std::vector<std::shared_ptr<Link>> links_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

}  // namespace netbox::test
