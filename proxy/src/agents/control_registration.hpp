#pragma once
// What a line on the control socket asks for, read and checked before anything is attached:
// the peer's credentials, a registration's attachment (by address or by the sockets that
// came with it), its named init, and the reply that says where the agent's doors are. Free
// functions of the request alone, so the session (control_socket.cpp) keeps its connection.
#include "agents/received_fds.hpp"

#include "netbox/proxy/agent_attachment.hpp"
#include "netbox/proxy/control_protocol.hpp"

#include <boost/asio/ip/address.hpp>

#include <sys/types.h>

#include <string>
#include <vector>

namespace netbox::proxy {

// Empty, or why `text` is not an IP address ("addr").
std::string address_problem(const std::string& text, boost::asio::ip::address& out);
// SO_PEERCRED of a Unix socket's peer: its uid (-1 when unknown, which operates nothing) and
// its pid at connect (0 when unknown: a peer in a PID namespace the proxy does not see).
uid_t peer_uid(int fd);
pid_t peer_pid(int fd);

// Exactly the descriptors a request names may come with it. Empty: they match.
std::string descriptors_problem(const control::Request& request, const ReceivedFds& fds);
// A registration by address: the attachment it asks for; empty, or what is wrong with it.
std::string read_attachment(const control::Register& r, AgentAttachment& a);
// A registration by sockets: likewise, its sockets taken from `fds` in the order it counts them.
std::string read_socket_attachment(const control::Register& r, const std::vector<int>& fds, AgentAttachment& a);
// A registration may name as its launch's init only a process its client (pid `peer`) started.
std::string init_problem(const control::Register& r, pid_t peer);
// What the launcher is told of an agent attached by address: where its listeners and views are.
control::Reply reply_of(const AttachedAgent& got);

}  // namespace netbox::proxy
