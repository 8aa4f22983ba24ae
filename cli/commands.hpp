#pragma once
// Each subcommand registers itself on the app; its callback stores the exit status in `rc`.
// Exit statuses: 0 ok, 1 runtime failure, 2 usage or configuration error
// (launch also uses 125/126/127 and the agent's own status).
#include <CLI/CLI.hpp>

#include <string_view>

namespace netbox::cli {

// What `netbox version` prints, for the proxy's start line too.
std::string_view version();
std::string_view commit();

void add_policy_command(CLI::App& app, int& rc);
// `netbox policy suggest` (policy_suggest_command.cpp), under `policy`.
void add_policy_suggest_command(CLI::App& policy, int& rc);
// `netbox policy push` (policy_push_command.cpp), under `policy`.
void add_policy_push_command(CLI::App& policy, int& rc);
// `netbox audit events` and `audit agents` (audit_tables_command.cpp), under `audit`.
void add_audit_tables_command(CLI::App& audit, int& rc);
void add_audit_command(CLI::App& app, int& rc);
// `netbox audit verify`, a subcommand of `audit`; returns it so `audit` can tell it ran.
CLI::App* add_audit_verify_command(CLI::App& audit, int& rc);
void add_proxy_command(CLI::App& app, int& rc);
void add_launch_command(CLI::App& app, int& rc);
void add_gc_command(CLI::App& app, int& rc);
void add_ca_command(CLI::App& app, int& rc);
// `netbox token create | list | revoke` (token_command.cpp): client tokens for a shared proxy.
void add_token_command(CLI::App& app, int& rc);
// `netbox agent list | kill | freeze | resume` (agent_command.cpp): operator control of running agents.
void add_agent_command(CLI::App& app, int& rc);
// `netbox agent pending | approve | deny` (agent_approval_command.cpp), under `agent`.
void add_agent_approval_commands(CLI::App& agent, int& rc);

}  // namespace netbox::cli
