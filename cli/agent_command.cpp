// `netbox agent list | kill | freeze | resume NAME` (issue 25 item 3): operator control of
// running agents over sockets the agents cannot reach: each embedded launch's own
// operator socket (/run/netbox/launches/PID.sock) and a shared proxy's --control socket.
// An agent NAME is looked for among the launches first, then at the shared proxy. A kill
// is reported done only when the agent's launcher says no process of it is left.
#include "agent_channel.hpp"
#include "audit_reading.hpp"
#include "commands.hpp"
#include "flag_table.hpp"
#include "usage.hpp"

#include "netbox/audit/tables.hpp"

#include <iostream>
#include <memory>

namespace netbox::cli {
namespace {

struct AgentArgs {
  std::string control;  // empty: kDefaultProxyControl, when it exists
  std::string launches = kDefaultLaunchesDir.string();
  std::string format = "table";
  std::string name;
};

// The shared proxy to ask: --control, else the default socket when there is one.
std::optional<std::filesystem::path> shared_control(const AgentArgs& a) {
  if (!a.control.empty()) return std::filesystem::path(a.control);
  std::error_code ec;
  if (std::filesystem::is_socket(kDefaultProxyControl, ec)) return kDefaultProxyControl;
  return std::nullopt;
}

// Every agent the launches and the shared proxy list; what could not be asked goes to stderr.
std::vector<ListedAgent> everyone(const CLI::App& cmd, const AgentArgs& a) {
  std::vector<ListedAgent> all;
  const auto take = [&](const std::filesystem::path& socket) {
    try {
      auto got = list_agents(socket);
      all.insert(all.end(), got.begin(), got.end());
    } catch (const std::exception& e) {
      std::cerr << command_path(cmd) << ": " << e.what() << "\n";
    }
  };
  std::string problem;
  for (const auto& s : launch_sockets(a.launches, problem)) take(s);
  if (!problem.empty()) std::cerr << command_path(cmd) << ": the launches' sockets are not readable (" << problem << ")\n";
  if (const auto shared = shared_control(a)) take(*shared);
  return all;
}

int run_list(const CLI::App& cmd, const AgentArgs& a) {
  return run_reporting(cmd, [&] {
    if (a.format != "table" && a.format != "text" && a.format != "json" && a.format != "csv")
      throw UsageError("--format '" + a.format + "' is not one of table (or text), json, csv");
    std::vector<audit::TableRow> rows;
    for (const auto& l : everyone(cmd, a))
      rows.push_back({l.name, l.profile, std::to_string(l.pid), l.state, l.started, std::to_string(l.denied),
                      l.via.string()});
    std::cout << audit::format_running_agents(rows, a.format) << std::flush;
    return 0;
  });
}

// The socket that answers for agent `name`: the launch that lists it, else the shared proxy.
std::filesystem::path find_agent(const CLI::App& cmd, const AgentArgs& a) {
  for (const auto& l : everyone(cmd, a))
    if (l.name == a.name) return l.via;
  const auto shared = shared_control(a);
  throw std::runtime_error("no running agent is named " + a.name + ": no launch's operator socket in " + a.launches +
                           " lists it" +
                           (shared ? ", nor the proxy at " + shared->string() : std::string(", and no --control was given")));
}

int run_act(const CLI::App& cmd, const AgentArgs& a, const std::string& action) {
  return run_reporting(cmd, [&] {
    if (a.name.empty()) throw UsageError("NAME: give the agent's name (netbox agent list shows them)");
    const auto socket = find_agent(cmd, a);
    const auto reply = ask(socket, proxy::control::Operator{action, a.name, ""});
    if (!reply.ok) {
      std::cerr << command_path(cmd) << ": " << a.name << (action == "kill" ? " may still be running: " : ": ")
                << reply.error << "\n";
      return 1;
    }
    std::cout << a.name << (action == "kill" ? " is gone: " : ": ") << reply.result << "\n";
    return 0;
  });
}

void common(FlagTable& f, AgentArgs& a) {
  f.option("--control", a.control,
           "A shared proxy's control socket (netbox proxy --control); default /run/netbox/proxy.sock when it exists");
  f.option("--launches", a.launches, "Folder of the launches' operator sockets")->capture_default_str();
}

}  // namespace

std::filesystem::path socket_for_agent(const CLI::App& cmd, const std::string& name, const std::string& control) {
  AgentArgs a;
  a.control = control;
  a.name = name;
  return find_agent(cmd, a);
}

std::vector<std::filesystem::path> every_agent_socket(const CLI::App& cmd, const std::string& control) {
  AgentArgs a;
  a.control = control;
  std::string problem;
  auto all = launch_sockets(a.launches, problem);
  if (!problem.empty()) std::cerr << command_path(cmd) << ": the launches' sockets are not readable (" << problem << ")\n";
  if (const auto shared = shared_control(a)) all.push_back(*shared);
  return all;
}

// The dispatcher: one subcommand per op. The approval ops (pending, approve, deny) are
// added by add_agent_approval_commands (cli/agent_approval_command.cpp), called below.
void add_agent_command(CLI::App& app, int& rc) {
  auto* agent = app.add_subcommand("agent", "Operator control of running agents: list, kill, freeze, resume");
  agent->require_subcommand(1);

  auto* list = agent->add_subcommand("list", "Every running agent: each launch's, and those attached to the shared proxy");
  auto l = std::make_shared<Bound<AgentArgs>>(*list);
  common(l->flags, l->args);
  l->flags.option("--format", l->args.format, "Output: table (or text), json or csv")->capture_default_str();
  list->callback([&rc, l, list] { rc = run_list(*list, l->args); });

  struct Act {
    const char* name;
    const char* help;
  };
  for (const Act act : {Act{"kill", "End the agent (SIGTERM, a grace, SIGKILL); exits 0 only once no process of it is left"},
                        Act{"freeze", "Freeze the agent's processes (cgroup freezer)"},
                        Act{"resume", "Thaw a frozen agent"}}) {
    auto* cmd = agent->add_subcommand(act.name, act.help);
    auto b = std::make_shared<Bound<AgentArgs>>(*cmd);
    common(b->flags, b->args);
    cmd->add_option("NAME", b->args.name, "The agent's name (netbox agent list shows them)")->required();
    cmd->callback([&rc, b, cmd, op = std::string(act.name)] { rc = run_act(*cmd, b->args, op); });
  }
  add_agent_approval_commands(*agent, rc);  // pending, approve, deny (agent_approval_command.cpp)
}

}  // namespace netbox::cli
