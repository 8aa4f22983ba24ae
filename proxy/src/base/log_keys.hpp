#pragma once
// Every key and event name of the proxy's log lines (docs/proxy.md "Logging"), named once:
// a log line spells them as log_key::agent, log_event::request ..., so a key cannot be
// misspelled in one place, and renaming one is one edit here (which changes the log
// format: tests read these names). Fields of a `request` line are named like the audit
// store's `requests` columns. The JSON and text renderings use the names as written.
#include <string_view>

namespace netbox::proxy {

namespace log_key {
inline constexpr std::string_view ts = "ts";  // the logger's own, first on every line
inline constexpr std::string_view level = "level";  // the logger's own, first on every line
inline constexpr std::string_view event = "event";  // the logger's own, first on every line
inline constexpr std::string_view action = "action";
inline constexpr std::string_view addr = "addr";
inline constexpr std::string_view address = "address";
inline constexpr std::string_view agent = "agent";
inline constexpr std::string_view agent_connections = "agent_connections";
inline constexpr std::string_view attempts = "attempts";
inline constexpr std::string_view bytes_down = "bytes_down";
inline constexpr std::string_view bytes_up = "bytes_up";
inline constexpr std::string_view certificates = "certificates";
inline constexpr std::string_view client = "client";
inline constexpr std::string_view client_addr = "client_addr";
inline constexpr std::string_view client_exe = "client_exe";
inline constexpr std::string_view count = "count";
inline constexpr std::string_view credential = "credential";
inline constexpr std::string_view decision = "decision";
inline constexpr std::string_view descriptors = "descriptors";
inline constexpr std::string_view detail = "detail";
inline constexpr std::string_view dial_fd_ceiling = "dial_fd_ceiling";
inline constexpr std::string_view digest = "digest";
inline constexpr std::string_view dns_pool = "dns_pool";
inline constexpr std::string_view dns_pool6 = "dns_pool6";
inline constexpr std::string_view door = "door";
inline constexpr std::string_view duration_ms = "duration_ms";
inline constexpr std::string_view effect = "effect";
inline constexpr std::string_view encoding = "encoding";
inline constexpr std::string_view error = "error";
inline constexpr std::string_view file = "file";
inline constexpr std::string_view folder = "folder";
inline constexpr std::string_view held_back = "held_back";
inline constexpr std::string_view host = "host";
inline constexpr std::string_view idle_upstream = "idle_upstream";
inline constexpr std::string_view idle_upstream_per_agent = "idle_upstream_per_agent";
inline constexpr std::string_view io_threads = "io_threads";
inline constexpr std::string_view kept = "kept";
inline constexpr std::string_view kind = "kind";
inline constexpr std::string_view label = "label";
inline constexpr std::string_view link = "link";
inline constexpr std::string_view listen = "listen";
inline constexpr std::string_view listener = "listener";
inline constexpr std::string_view message = "message";
inline constexpr std::string_view method = "method";
inline constexpr std::string_view path = "path";
inline constexpr std::string_view pause_ms = "pause_ms";
inline constexpr std::string_view per_agent = "per_agent";
inline constexpr std::string_view port = "port";
inline constexpr std::string_view profile = "profile";
inline constexpr std::string_view protocol = "protocol";
inline constexpr std::string_view reason = "reason";
inline constexpr std::string_view received = "received";
inline constexpr std::string_view resolved_addr = "resolved_addr";
inline constexpr std::string_view result = "result";
inline constexpr std::string_view rule = "rule";
inline constexpr std::string_view socks_listen = "socks_listen";
inline constexpr std::string_view status = "status";
inline constexpr std::string_view tokens = "tokens";
inline constexpr std::string_view trigger = "trigger";
inline constexpr std::string_view url = "url";
inline constexpr std::string_view where = "where";
inline constexpr std::string_view why = "why";
}  // namespace log_key

namespace log_event {
inline constexpr std::string_view accept_error = "accept_error";
inline constexpr std::string_view agent_registered = "agent_registered";
inline constexpr std::string_view agent_unregister_failed = "agent_unregister_failed";
inline constexpr std::string_view agent_unregistered = "agent_unregistered";
inline constexpr std::string_view attribution_unavailable = "attribution_unavailable";
inline constexpr std::string_view audit_error = "audit_error";
inline constexpr std::string_view audit_refused = "audit_refused";
inline constexpr std::string_view client_certs_reloaded = "client_certs_reloaded";
inline constexpr std::string_view client_certs_unreadable = "client_certs_unreadable";
inline constexpr std::string_view client_tokens_reloaded = "client_tokens_reloaded";
inline constexpr std::string_view client_tokens_unreadable = "client_tokens_unreadable";
inline constexpr std::string_view connection_limits = "connection_limits";
inline constexpr std::string_view connection_refused = "connection_refused";
inline constexpr std::string_view dns_refused = "dns_refused";
inline constexpr std::string_view endpoint_registry_unavailable = "endpoint_registry_unavailable";
inline constexpr std::string_view exfiltration_attempt = "exfiltration_attempt";
inline constexpr std::string_view foreign_source_refused = "foreign_source_refused";
inline constexpr std::string_view guardian_action = "guardian_action";
inline constexpr std::string_view guardian_action_failed = "guardian_action_failed";
inline constexpr std::string_view header_timeout = "header_timeout";
inline constexpr std::string_view listener_closed = "listener_closed";
inline constexpr std::string_view listening = "listening";
inline constexpr std::string_view policy_load = "policy_load";
inline constexpr std::string_view policy_reload_failed = "policy_reload_failed";
inline constexpr std::string_view policy_watch_unavailable = "policy_watch_unavailable";
inline constexpr std::string_view request = "request";
inline constexpr std::string_view socks_refused = "socks_refused";
inline constexpr std::string_view stopped = "stopped";
inline constexpr std::string_view webhook_failed = "webhook_failed";
}  // namespace log_event

}  // namespace netbox::proxy
