#pragma once
// The ask step of `decide` (admission_steps.hpp), for an agent launched with --ask: an
// askable refusal (Refused::askable) is decided again under a launch grant if the agent has
// one, or parked in the approval book (approvals.hpp) until a person answers, the waiter's
// timeout passes, or the launch ends. Nothing waits on an io thread: the parked request is
// a callback, resumed on its connection's executor (the worker's io_context), where its
// timer runs too. A grant decides the request again (decide_as with the grant: every
// step but the missing allow entry still applies); anything else answers the refusal it
// had, its reason saying what the asking came to. A client that closes its connection
// while its request waits is let go at once (its connection, slot and row end then, the
// row's reason saying the client left); the question stays (ApprovalBook::leave).
#include "pipeline/admission.hpp"
#include "pipeline/approvals.hpp"
#include "base/door_services.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace netbox::proxy {

template <class Then>
void decide_as(Admission& admission, Worker& worker, Counters& counters, const policy::Host& host,
               std::uint16_t port, const Grant* grant, Then then);

// One parked request: its refusal, its door's continuation and its timer, on one executor.
template <class Then>
class AskWait : public std::enable_shared_from_this<AskWait<Then>> {
 public:
  AskWait(Admission& admission, Worker& worker, Counters& counters, policy::Host host, std::uint16_t port, Refused no,
          Then then)
      : admission_(admission), worker_(worker), counters_(counters), host_(std::move(host)), port_(port),
        no_(std::move(no)), then_(std::move(then)), timer_(worker.ioc), client_(worker.ioc) {}

  void park(ApprovalBook& book, const AskSettings& settings) {
    auto self = this->shared_from_this();
    auto parked = book.park(admission_.agent(), host_.name, port_, admission_.door(),
                            std::chrono::system_clock::now() + settings.timeout, [self](AskOutcome o) {
                              boost::asio::post(self->worker_.ioc, [self, o = std::move(o)]() mutable {
                                self->finish(std::move(o));
                              });
                            });
    if (auto* why = std::get_if<std::string>(&parked)) return finish(AskOutcome{std::nullopt, *why});
    parked_ = std::get<ApprovalBook::Parked>(parked);
    const auto seconds = std::chrono::duration_cast<std::chrono::milliseconds>(settings.timeout).count() / 1000.0;
    timer_.expires_after(settings.timeout);
    timer_.async_wait([self, &book, seconds](boost::system::error_code ec) {
      if (ec || self->done_) return;
      std::string why = "asked; no answer within " + trimmed(seconds) + "s";
      // False: an answer took the waiter first; its resume is on its way here.
      if (book.leave(self->parked_, why)) self->finish(AskOutcome{std::nullopt, std::move(why)});
    });
    watch_client(book);
  }

 private:
  static std::string trimmed(double s) {
    std::string t = std::to_string(s);
    t.erase(t.find_last_not_of('0') + 1);
    if (!t.empty() && t.back() == '.') t.pop_back();
    return t;
  }

  // The agent's socket, through a duplicate of its descriptor (the door owns the socket):
  // readable with nothing to read is its end (or a reset), and the waiter leaves then. A
  // client that sends more bytes while it waits is not watched further (its timer remains).
  void watch_client(ApprovalBook& book) {
    if (admission_.client() < 0) return;
    const int fd = ::fcntl(admission_.client(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return;  // not watched: its timer still ends the wait
    boost::system::error_code ec;
    client_.assign(fd, ec);
    if (ec) return static_cast<void>(::close(fd));
    wait_for_client(book);
  }

  void wait_for_client(ApprovalBook& book) {
    auto self = this->shared_from_this();
    client_.async_wait(boost::asio::posix::stream_descriptor::wait_read, [self, &book](boost::system::error_code ec) {
      if (ec || self->done_) return;
      char c = 0;
      const ssize_t n = ::recv(self->client_.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n > 0) return;  // it spoke: not leaving
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return self->wait_for_client(book);
      std::string why = "asked; the client left while asking";
      if (book.leave(self->parked_, why, ApprovalBook::Leaving::client_left))
        self->finish(AskOutcome{std::nullopt, std::move(why)});
    });
  }

  void finish(AskOutcome o) {
    if (done_) return;
    done_ = true;
    timer_.cancel();
    boost::system::error_code ignored;
    client_.close(ignored);  // the duplicate only; the door's socket is its own
    if (o.grant) return decide_as(admission_, worker_, counters_, host_, port_, &*o.grant, std::move(*then_));
    no_.reason += " (" + o.why_refused + ")";
    no_.refusal.reason += " (" + o.why_refused + ")";
    (*then_)(AdmissionResult(std::move(no_)));
  }

  Admission& admission_;
  Worker& worker_;
  Counters& counters_;
  policy::Host host_;
  std::uint16_t port_;
  Refused no_;
  std::optional<Then> then_;
  boost::asio::steady_timer timer_;
  boost::asio::posix::stream_descriptor client_;  // a duplicate of the agent's socket, watched
  ApprovalBook::Parked parked_;
  bool done_ = false;
};

// `no` is askable: a launch grant decides it again at once; otherwise it waits for a person.
template <class Then>
void ask_person(Admission& admission, Worker& worker, Counters& counters, const policy::Host& host,
                std::uint16_t port, Refused no, Then then) {
  ApprovalBook& book = *admission.asks();
  if (auto g = book.granted(admission.agent(), host.name, port))
    return decide_as(admission, worker, counters, host, port, &*g, std::move(then));
  const auto settings = book.settings(admission.agent());
  if (!settings) return then(AdmissionResult(std::move(no)));  // its launch has ended
  std::make_shared<AskWait<Then>>(admission, worker, counters, host, port, std::move(no), std::move(then))
      ->park(book, *settings);
}

}  // namespace netbox::proxy
