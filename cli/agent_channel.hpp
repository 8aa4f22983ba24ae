#pragma once
// `netbox agent`'s way to its agents (issue 25 item 3): the operator sockets of the
// launches on this machine (each answers for its one agent, operator_socket.hpp) and a
// shared proxy's control socket (`netbox proxy --control`), one request and its answer
// per connection (docs/proxy.md "Operator ops").
#include "netbox/proxy/control_protocol.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace netbox::cli {

// Where `netbox agent` looks when no --control is given.
inline const std::filesystem::path kDefaultLaunchesDir = "/run/netbox/launches";
inline const std::filesystem::path kDefaultProxyControl = "/run/netbox/proxy.sock";

// A socket that could not be asked (not there, refused, no answer): what() names it.
struct ChannelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One request on `socket`, its answer awaited up to `wait`. Throws ChannelError.
proxy::control::Reply ask(const std::filesystem::path& socket, const proxy::control::Request& request,
                          std::chrono::seconds wait = std::chrono::seconds(30));

// The operator sockets in `dir` (PID.sock), of launches whose launcher is alive; `problem`
// says why the folder could not be read (not root), if it could not.
std::vector<std::filesystem::path> launch_sockets(const std::filesystem::path& dir, std::string& problem);

// An agent as a launch or a proxy lists it, and the socket that answered for it.
struct ListedAgent {
  std::string name, profile, state, started;
  std::int64_t pid = 0;
  std::uint64_t denied = 0;
  std::filesystem::path via;
};
// What `socket` lists (its "agents"). Throws ChannelError, or for a refusal std::runtime_error.
std::vector<ListedAgent> list_agents(const std::filesystem::path& socket);

// For `netbox agent pending | approve | deny` (agent_approval_command.cpp), found as the
// other ops find them (agent_command.cpp): the socket that answers for agent `name` (the
// launch that lists it, else the shared proxy: `control`, or the default socket), and every
// socket there is to ask. Throw naming what was looked at.
std::filesystem::path socket_for_agent(const CLI::App& cmd, const std::string& name, const std::string& control);
std::vector<std::filesystem::path> every_agent_socket(const CLI::App& cmd, const std::string& control);

}  // namespace netbox::cli
