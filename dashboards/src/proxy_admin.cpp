#include "netbox/dashboards/proxy_admin.hpp"
#include "netbox/proxy/approval_ops.hpp"

#include "netbox/audit/writer.hpp"
#include "netbox/dashboards/proxy_metrics.hpp"

#include <sys/stat.h>

#include <fstream>
#include <stdexcept>

namespace netbox::dashboards {

std::string read_token_file(const std::filesystem::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) throw std::runtime_error("--admin-token-file " + file.string() + ": no such file");
  // A token others can read is no secret: refuse it rather than serve with it.
  if (st.st_mode & (S_IRWXG | S_IRWXO))
    throw std::runtime_error("--admin-token-file " + file.string() +
                             ": readable by group or others; chmod 600 it");
  std::ifstream f(file);
  std::string token;
  std::getline(f, token);
  const auto first = token.find_first_not_of(" \t\r");
  const auto last = token.find_last_not_of(" \t\r");
  token = first == std::string::npos ? "" : token.substr(first, last - first + 1);
  if (token.empty()) throw std::runtime_error("--admin-token-file " + file.string() + ": the first line is empty");
  return token;
}

std::unique_ptr<AdminServer> start_admin(proxy::Server& server, const boost::asio::ip::tcp::endpoint& listen,
                                         const std::filesystem::path& audit_db, std::string bearer_token) {
  AdminOptions o;
  o.listen = listen;
  o.audit_db = audit_db;
  o.bearer_token = std::move(bearer_token);
  o.metrics = [&server] { return render_metrics(server.counters(), server.audit().stats()); };
  o.live = [&server] { return live_stats(server.counters()); };
  o.agent = [&server](const std::string& name) { return server.guardian_report(name); };
  o.ready = [&server] { return server.audit().healthy() && !server.local_endpoints().empty(); };
  o.approvals = [&server](const std::string& line) {
    const proxy::ApprovalDesk desk{[&server] { return server.pending_asks(); },
                                   [&server](const proxy::AskTarget& t, const proxy::AskAnswer& a) {
                                     return server.answer_ask(t, a);
                                   }};
    return proxy::approval_op(desk, line, "the admin API (token holder)");
  };
  auto admin = std::make_unique<AdminServer>(std::move(o));
  // The admin API shows every agent's traffic: no agent may reach it through the proxy,
  // even with 127.0.0.1 under internal.allow.
  server.protect_endpoint(admin->local_endpoint());
  return admin;
}

}  // namespace netbox::dashboards
