// `netbox agent pending | approve NAME HOST | deny NAME HOST` (issue 27 item 3): the
// questions of agents launched with --ask, answered from another terminal than the
// agent's, over the socket that answers for the agent: the launch's operator socket that
// lists it, else a shared proxy's control socket (--control PATH, default
// /run/netbox/proxy.sock), found as `netbox agent kill` finds it (agent_channel.hpp). Only the socket's owner or root may (the proxy checks the peer's uid);
// nothing an agent can reach answers anything. See docs/launch.md, "Asking".
#include "agent_channel.hpp"
#include "commands.hpp"
#include "flag_table.hpp"
#include "usage.hpp"

#include "netbox/proxy/approval_ops.hpp"

#include <nlohmann/json.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>

namespace netbox::cli {
namespace {

using json = nlohmann::json;

struct ApprovalArgs {
  std::string control;
  std::string agent;
  std::string host;
  std::string scope = "once";
  std::string format = "text";
};

// One request line to the control socket, its one reply line back. Throws naming the socket.
json ask_control(const std::string& path, const json& request) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    ::close(fd);
    throw UsageError("--control " + path + ": the path is too long for a Unix socket");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    ::close(fd);
    throw UsageError("--control " + path + ": cannot connect: " + std::strerror(e));
  }
  const std::string line = request.dump() + "\n";
  std::string reply;
  bool ok = ::send(fd, line.data(), line.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(line.size());
  char buf[4096];
  while (ok && reply.find('\n') == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    reply.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  auto j = json::parse(reply, nullptr, false);
  if (!j.is_object()) throw std::runtime_error("--control " + path + ": no answer from the proxy");
  if (!j.value("ok", false)) throw std::runtime_error(j.value("error", std::string("refused")));
  return j;
}

void print_pending(const json& list, const std::string& format) {
  if (format == "json") {
    std::cout << list.dump(2) << "\n";
    return;
  }
  if (list.empty()) {
    std::cout << "nothing is waiting\n";
    return;
  }
  std::cout << "ID\tAGENT\tDESTINATION\tDOOR\tWAITING\tEXPIRES\tSCOPES\n";
  for (const auto& p : list) {
    const std::string host = p.value("host", std::string());
    const std::string dest = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                             std::to_string(p.value("port", 0));
    std::string scopes;
    for (const auto& s : p.value("scopes", json::array())) scopes += (scopes.empty() ? "" : ",") + s.get<std::string>();
    std::cout << p.value("id", 0) << "\t" << p.value("agent", std::string()) << "\t" << dest << "\t"
              << p.value("door", std::string()) << "\t" << p.value("waiters", 0) << "\t"
              << p.value("expires", std::string()) << "\t" << scopes << "\n";
  }
}

template <class Body>
int approval_reporting(const CLI::App& cmd, Body body) {
  try {
    return body();
  } catch (const UsageError& e) {
    return usage_error(cmd, e.what());
  } catch (const std::exception& e) {
    std::cerr << command_path(cmd) << ": " << e.what() << "\n";
    return 1;
  }
}

void bind_control(FlagTable& f, ApprovalArgs& a) {
  f.option("--control", a.control,
           "A shared proxy's control socket (netbox proxy --control), or a launch's operator socket; default: the "
           "launches' sockets and /run/netbox/proxy.sock when it exists");
}

void add_pending(CLI::App& agent, int& rc) {
  auto* sub = agent.add_subcommand("pending", "List the requests of agents launched with --ask that wait for an answer");
  auto cmd = std::make_shared<Bound<ApprovalArgs>>(*sub);
  bind_control(cmd->flags, cmd->args);
  cmd->flags.option("--format", cmd->args.format, "text (default) or json")->check(CLI::IsMember({"text", "json"}));
  sub->callback([cmd, sub, &rc] {
    rc = approval_reporting(*sub, [&] {
      json all = json::array();
      const auto sockets = cmd->args.control.empty() ? every_agent_socket(*sub, "")
                                                     : std::vector<std::filesystem::path>{cmd->args.control};
      for (const auto& socket : sockets)
        for (auto& p : ask_control(socket.string(), {{"op", "pending"}}).value("pending", json::array()))
          all.push_back(std::move(p));
      print_pending(all, cmd->args.format);
      return 0;
    });
  });
}

void add_answer(CLI::App& agent, int& rc, bool approve) {
  auto* sub = agent.add_subcommand(approve ? "approve" : "deny",
                                   approve ? "Let agent NAME reach HOST (or HOST:PORT) it is waiting on"
                                           : "Refuse agent NAME the HOST (or HOST:PORT) it is waiting on");
  auto cmd = std::make_shared<Bound<ApprovalArgs>>(*sub);
  bind_control(cmd->flags, cmd->args);
  if (approve)
    cmd->flags.option("--scope", cmd->args.scope,
                      "once (the waiting requests), launch (every later request of this launch) or policy (also "
                      "written into the policy file)")
        ->check(CLI::IsMember({"once", "launch", "policy"}))
        ->default_str("once");
  sub->add_option("NAME", cmd->args.agent, "The agent's name (`netbox agent pending` shows it)")->required();
  sub->add_option("HOST", cmd->args.host, "HOST or HOST:PORT it waits on")->required();
  sub->callback([cmd, sub, approve, &rc] {
    rc = approval_reporting(*sub, [&] {
      proxy::AskTarget t;
      if (auto why = proxy::read_ask_host(cmd->args.host, t); !why.empty()) throw UsageError("HOST: " + why);
      json req = {{"op", approve ? "approve" : "deny"}, {"agent", cmd->args.agent}, {"host", t.host}};
      if (t.port) req["port"] = t.port;
      if (approve) req["scope"] = cmd->args.scope;
      ask_control((cmd->args.control.empty() ? socket_for_agent(*sub, cmd->args.agent, "")
                                             : std::filesystem::path(cmd->args.control))
                      .string(),
                  req);
      std::cout << (approve ? "approved " : "denied ") << cmd->args.agent << " " << cmd->args.host
                << (approve ? " (" + cmd->args.scope + ")" : "") << "\n";
      return 0;
    });
  });
}

}  // namespace

void add_agent_approval_commands(CLI::App& agent, int& rc) {
  add_pending(agent, rc);
  add_answer(agent, rc, true);
  add_answer(agent, rc, false);
}

}  // namespace netbox::cli
