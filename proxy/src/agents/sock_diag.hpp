#pragma once
// The kernel's socket table of one network namespace, asked over NETLINK_SOCK_DIAG
// (inet_diag, as ss(8) does): which socket is the other end of a TCP connection. The
// netlink socket must have been made in that namespace (the launcher makes it there and
// hands it over with the agent's listeners), so the proxy never enters the namespace and
// needs no privilege for this step.
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstdint>
#include <optional>

namespace netbox::proxy {

// The inode of the socket whose own end is `peer` and whose other end is `local` (the
// client's socket of a connection accepted on `local` from `peer`), as /proc/PID/fd shows it
// ("socket:[INODE]"). Nullopt: no such socket (gone, or not TCP in that namespace), or no
// answer within `wait`. Blocks up to `wait`: for the attribution thread only.
std::optional<std::uint64_t> peer_socket_inode(int diag_fd, const boost::asio::ip::tcp::endpoint& local,
                                               const boost::asio::ip::tcp::endpoint& peer,
                                               std::chrono::milliseconds wait);

// Whether `fd` is a NETLINK_SOCK_DIAG socket.
bool is_sock_diag_socket(int fd);

}  // namespace netbox::proxy
