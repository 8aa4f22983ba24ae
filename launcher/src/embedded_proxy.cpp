// The proxy run in-process for the agent's lifetime (no --proxy-control).
#include "netbox/audit/location.hpp"
#include "netbox/audit/writer.hpp"
#include "netbox/launcher/ask_prompt.hpp"
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/proxy_link.hpp"
#include "netbox/launcher/subnet_pool.hpp"
#include "netbox/proxy/server.hpp"
#include "netbox/tls/certificate_authority.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <iostream>

namespace netbox::launcher {
namespace {

namespace ip = boost::asio::ip;

class EmbeddedProxy final : public ProxyLink {
 public:
  EmbeddedProxy(policy::Policy policy, std::filesystem::path audit_db, policy::Cidr subnet, EmbeddedLog log,
                EmbeddedInspection inspection, EmbeddedAsk ask, std::optional<std::filesystem::path> operator_socket)
      : policy_(std::move(policy)),
        audit_db_(std::move(audit_db)),
        inspection_(std::move(inspection)),
        subnet_(std::move(subnet)),
        log_(log),
        ask_(std::move(ask)),
        operator_socket_(std::move(operator_socket)) {}
  ~EmbeddedProxy() override { stop(); }

  // Opening the audit database and creating the io threads take a few ms and need
  // no agent; its sockets are added in attach, once they are made in its namespace.
  void prepare() override {
    try {
      if (audit_db_.empty()) {
        audit_db_ = audit::default_db_path();
        audit::prepare_default_location(audit_db_, "--audit-db (default)");
      }
      proxy::ProxyOptions options;
      options.policy = policy_;
      options.audit_db = audit_db_;
      options.ca_dir = inspection_.ca_dir;
      options.upstream_ca = inspection_.upstream_ca;
      options.threads = 2;  // one agent's traffic; the machine belongs to the agent
      options.shutdown_grace = std::chrono::milliseconds(1000);
      // The store is opened once per launch, and each open re-reads the whole WAL (a launch
      // adds about 9 pages): SQLite's 1,000-page bound made that 2 MB a launch on average;
      // a close that finds more than 64 pages empties it, one launch in seven (RESULTS.md, B6).
      options.audit_wal_close_limit = 64;
      options.control_socket = operator_socket_;  // `netbox agent`'s, for this launch's agent only
      options.control_operator_only = true;
      options.log_fd = log_.fd;
      if (log_.json) options.log_format = proxy::LogFormat::json;
      options.log_requests = log_.quiet          ? proxy::LogRequests::none
                             : log_.all_requests ? proxy::LogRequests::all
                                                 : proxy::LogRequests::refusals;
      // This launch's pool, and the default ones other launches use (every launch's IPv6
      // link addresses among them): none is a destination (another launch's embedded
      // proxy listens there).
      if (!(subnet_.base == options.launch_subnets.front().base && subnet_.prefix == options.launch_subnets.front().prefix))
        options.launch_subnets.push_back(subnet_);
      if (ask_.ask) {
        if (ask_.policy_file) options.ask_policy_file = *ask_.policy_file;
        prompt_ = AskPrompt::open();  // null: the agent owns the terminal, or there is none
        if (!prompt_ && !ask_.quiet) std::cerr << ask_elsewhere_hint(false);
      }
      server_ = std::make_unique<proxy::Server>(std::move(options));
      if (prompt_) prompt_->answer_with([s = server_.get()](const proxy::AskTarget& t, const proxy::AskAnswer& a) {
        return s->answer_ask(t, a);
      });
      server_->start();
    } catch (const tls::CaError& e) {
      prepare_error_ = e.what();  // --ca-dir is the operator's to fix: a usage error
      prepare_code_ = kExitUsage;
      server_.reset();
    } catch (const audit::DatabaseRejected& e) {
      // Where the store is (or what it is) is the operator's to fix: a usage error.
      prepare_error_ = e.what();
      prepare_code_ = kExitUsage;
      server_.reset();
    } catch (const std::exception& e) {
      prepare_error_ = e.what();
      server_.reset();
    }
  }

  void attach(const AgentIdentity& agent) override {
    try {
      if (!server_ && prepare_error_.empty()) prepare();
      if (!prepare_error_.empty()) {
        if (prepare_code_ == kExitUsage) throw LaunchError(kExitUsage, prepare_error_);
        throw std::runtime_error(prepare_error_);
      }
      proxy::AgentAttachment attachment;
      attachment.name = agent.name;
      attachment.profile = agent.profile;
      attachment.sockets = agent.sockets;
      attachment.launch = proxy::AgentLaunch{agent.pid, agent.command_line, "", agent.policy_digest, agent.sandbox};
      attachment.dns_pool = agent.dns_pool;
      attachment.dns_pool6 = agent.dns_pool6;
      attachment.credentials = agent.credentials;
      attachment.enforcer = agent.enforcer;
      attachment.ask = agent.ask;
      if (prompt_) attachment.ask_listener = prompt_->listener();
      attached_ = server_->attach_agent(attachment);
    } catch (const LaunchError&) {
      throw;
    } catch (const std::exception& e) {
      throw LaunchError(kExitLauncherFailure, std::string("starting the embedded proxy failed: ") + e.what());
    }
  }

  void detach(const AgentOutcome& outcome) noexcept override {
    if (!server_) return;
    try {
      if (attached_) server_->detach_agent(*attached_, {outcome.exit_status, outcome.resource_usage_json()});
    } catch (const std::exception& e) {
      std::cerr << "netbox launch: recording the agent's exit failed: " << e.what() << "\n";
    }
    stop();
  }

 private:
  void stop() noexcept {
    if (!server_) return;
    try {
      server_->stop();
      server_->wait();
    } catch (const std::exception& e) {
      std::cerr << "netbox launch: stopping the embedded proxy: " << e.what() << "\n";
    }
    server_.reset();
    prompt_.reset();  // after the server: nothing tells it of a question any more
  }

  policy::Policy policy_;
  std::filesystem::path audit_db_;
  EmbeddedInspection inspection_;
  policy::Cidr subnet_;
  std::string prepare_error_;
  int prepare_code_ = kExitLauncherFailure;
  std::optional<proxy::AttachedAgent> attached_;
  std::unique_ptr<proxy::Server> server_;
  EmbeddedLog log_;
  EmbeddedAsk ask_;
  std::unique_ptr<AskPrompt> prompt_;  // reset in stop(), after the server
  std::optional<std::filesystem::path> operator_socket_;
};

}  // namespace

std::unique_ptr<ProxyLink> make_embedded_proxy(policy::Policy policy, std::filesystem::path audit_db,
                                               policy::Cidr subnet, EmbeddedLog log,
                                               EmbeddedInspection inspection, EmbeddedAsk ask,
                                               std::optional<std::filesystem::path> operator_socket) {
  return std::make_unique<EmbeddedProxy>(std::move(policy), std::move(audit_db), std::move(subnet), log,
                                         std::move(inspection), std::move(ask), std::move(operator_socket));
}

}  // namespace netbox::launcher
