#pragma once
// Everything `netbox launch` was asked to do, as plain data (filled by the CLI).
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace netbox::launcher {

struct RlimitFlags {
  std::optional<std::string> as;      // SIZE, e.g. "4G"
  std::optional<std::string> cpu;     // seconds
  std::optional<std::string> nofile;
  std::optional<std::string> nproc;
  std::optional<std::string> fsize;   // SIZE
};

// cgroup limits, Docker's flag names; unset: the defaults (--memory half the RAM,
// --pids 1024, --cpus none).
struct CgroupFlags {
  std::optional<std::string> memory;  // SIZE, or "unlimited"
  std::optional<std::string> cpus;    // fractional CPUs, e.g. "0.5"
  std::optional<std::string> pids;    // count, or "unlimited"
};

struct LaunchOptions {
  std::optional<std::filesystem::path> policy_file;
  // A policy given as text (a --preset's), used when no policy_file is: its name in
  // messages ("preset claude") and its JSON.
  std::optional<std::pair<std::string, std::string>> policy_text;
  std::string name;                                   // empty: command basename + short id
  std::string profile;                                // the policy's agents.PROFILE entry; empty: see docs
  // enforce, or report (--mode report, --learn): the profile's policy refusals are let
  // through and recorded as `report` (docs/launch.md); internal addresses, netbox's own
  // endpoints, domain fronting and the credentials' tripwire stay refused.
  std::string mode = "enforce";
  std::optional<std::filesystem::path> proxy_control; // unset: embedded proxy
  std::filesystem::path audit_db;                     // empty: audit::default_db_path(), made 0700
  std::optional<std::filesystem::path> ca_dir;        // the embedded proxy's CA (TLS inspection)
  std::optional<std::filesystem::path> upstream_ca;   // and its extra trust anchors for upstreams
  std::string subnet = "10.213.0.0/16";
  std::optional<std::string> user;                    // unset: the sudo caller, else nobody
  std::vector<std::string> env;                       // KEY=VALUE
  std::vector<std::string> keep_env;                  // KEY
  std::optional<double> timeout_seconds;
  std::chrono::milliseconds kill_grace{5000};         // SIGTERM -> SIGKILL after --timeout
  RlimitFlags rlimits;
  CgroupFlags cgroup;
  std::string tmp_size = "1G";                        // SIZE of the tmpfs behind /tmp, /var/tmp, /dev/shm
  bool tmp_size_given = false;                        // --tmp-size was given (else the policy's sandbox may set it)
  std::string seccomp = "default";                    // default | off | FILE
  // transparent: the DNS view of the policy inside the namespace (issue 15) besides the
  // proxy variables; proxy-vars: only the variables (and no resolver at all).
  std::string network = "transparent";
  bool network_given = false;                         // --network was given
  std::filesystem::path state_dir = "/run/netbox";
  // The filesystem view (see filesystem_view.hpp).
  std::optional<std::string> workdir;                 // unset: the current directory
  std::vector<std::string> ro, rw, hide;              // --ro, --rw, --hide PATH (repeatable)
  std::optional<std::string> workdir_quota;           // SIZE: the workdir becomes an overlay on a tmpfs this big
  bool commit = false;                                // copy the overlay's changes back at exit
  bool writable_hooks = false;                        // git hooks/config, .envrc, .vscode writable
  std::vector<std::string> allow_degraded;            // LAYER names (degraded_layers.hpp)
  bool explain = false;                               // print the layers, run nothing
  // The terminal: by default the banner, the refusals and a summary at exit; --quiet
  // none. --log-file: every line of the embedded proxy into FILE (0600); see ProxyLogRelay.
  bool quiet = false;
  std::optional<std::string> log_file;
  // --ask: a destination the policy does not list is asked of a person (the launch's
  // terminal, or `netbox agent approve` from another) for up to ask_timeout, then refused.
  bool ask = false;
  std::chrono::milliseconds ask_timeout{60000};
  std::string explain_format = "text";                // text | json (the agents row's `sandbox`)
  std::vector<std::string> command;                   // COMMAND [ARG...]
};

}  // namespace netbox::launcher
