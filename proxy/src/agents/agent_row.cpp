#include "agents/agent_row.hpp"

#include "netbox/audit/writer.hpp"

#include "base/proxy_runtime.hpp"

#include <utility>

namespace netbox::proxy {

void open_agent_row(ProxyRuntime& core, const AgentLaunch& launch, std::string address, AttachedAgent& attached) {
  audit::AgentRecord rec;
  rec.name = attached.name;
  rec.pid = launch.pid;
  rec.command_line = launch.command_line;
  rec.address = std::move(address);
  rec.policy_digest = launch.policy_digest.empty() ? core.current_policy()->digest : launch.policy_digest;
  rec.sandbox = launch.sandbox;
  rec.started = audit::Clock::now();
  attached.pid = rec.pid;
  attached.row_opened = true;
  core.writer->agent_started(std::move(rec));
}

}  // namespace netbox::proxy
