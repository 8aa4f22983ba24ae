#pragma once
// The one accept loop every listener runs (HTTP and SOCKS5 listeners, capture listeners,
// the DNS view's TCP port, the control socket). Out of descriptors or memory (EMFILE,
// ENFILE, ENOBUFS, ENOMEM), the pending connection stays queued and the listening socket
// stays readable, so accepting again at once would spin a core: the loop pauses
// kAcceptPause, counts the failure (Counters::accept_errors) and logs `accept_error` once a
// second at most with the count, then accepts again. Only closing the acceptor ends it.
#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <memory>
#include <string_view>
#include <utility>

namespace netbox::proxy {

struct DoorServices;

inline constexpr std::chrono::milliseconds kAcceptPause{100};

// Counts an accept failure and logs it, rate-limited; `listener` names the socket.
void note_accept_error(DoorServices& rt, std::string_view listener, const boost::system::error_code& ec);

// Accepts on `acc` until it is closed, handing each connection to `on_socket(socket)` on the
// acceptor's executor. `keep` (a shared_ptr, or a plain pointer to an owner that outlives
// the io threads) is held by every pending operation: it is what keeps `acc` alive.
template <class Acceptor, class Keep, class OnSocket>
void accept_with_backoff(DoorServices& rt, Acceptor& acc, std::string_view listener, Keep keep, OnSocket on_socket) {
  using Socket = typename Acceptor::protocol_type::socket;
  acc.async_accept([&rt, &acc, listener, keep = std::move(keep), on_socket = std::move(on_socket)](
                       boost::system::error_code ec, Socket s) mutable {
    if (ec == boost::asio::error::operation_aborted || !acc.is_open()) return;
    if (!ec) {
      on_socket(std::move(s));
    } else if (ec != boost::asio::error::connection_aborted) {  // aborted: the peer left first
      note_accept_error(rt, listener, ec);
      auto pause = std::make_shared<boost::asio::steady_timer>(acc.get_executor(), kAcceptPause);
      return pause->async_wait([&rt, &acc, listener, pause, keep = std::move(keep),
                                on_socket = std::move(on_socket)](boost::system::error_code) mutable {
        if (acc.is_open()) accept_with_backoff(rt, acc, listener, std::move(keep), std::move(on_socket));
      });
    }
    accept_with_backoff(rt, acc, listener, std::move(keep), std::move(on_socket));
  });
}

}  // namespace netbox::proxy
