#include "pipeline/admission_steps.hpp"

namespace netbox::proxy {

void note_unaudited(DoorServices& rt, Exchange& exchange, const std::string& host, const std::string& agent,
                    const std::string& why) {
  // Fail closed: no connection. A row already queued is completed by the Exchange.
  exchange.end();
  rt.log.write(log_event::audit_refused, {{log_key::host, host}, {log_key::agent, agent}, {log_key::reason, why}});
}

}  // namespace netbox::proxy
