#include "pipeline/admission_steps.hpp"

namespace netbox::proxy {

void note_unaudited(ProxyRuntime& rt, Exchange& exchange, const std::string& host, const std::string& agent,
                    const std::string& why) {
  // Fail closed: no connection. A row already queued is completed by the Exchange.
  exchange.end();
  rt.log.write("audit_refused", {{"host", host}, {"agent", agent}, {"reason", why}});
}

}  // namespace netbox::proxy
