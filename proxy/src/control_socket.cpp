#include "control_socket.hpp"

#include "netbox/proxy/agent_name.hpp"
#include "netbox/proxy/endpoint.hpp"

#include "server_impl.hpp"
#include "target.hpp"

#include "netbox/audit/printable.hpp"
#include "netbox/audit/writer.hpp"

#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <map>

namespace netbox::proxy {

namespace asio = boost::asio;
using stream = asio::local::stream_protocol;
using json = nlohmann::json;

namespace {

// A launcher registers its agents' addresses and the host side of their links, both in
// its --subnet. Outside this proxy's pool (--subnet) they would be ordinary destinations
// here, so a launcher whose --subnet differs is refused instead of silently unprotected.
// Loopback is no launch's address: host processes registered as agents, whose listener on
// loopback is protected as this proxy's own anyway.
std::string outside_pool(const char* key, const asio::ip::address& addr, const std::vector<policy::Cidr>& pool) {
  const auto a = destination_form(addr);
  if (a.is_loopback()) return {};
  for (const auto& net : pool)
    if (net.contains(a)) return {};
  std::string nets;
  for (const auto& net : pool) nets += (nets.empty() ? "" : ", ") + net.to_string();
  return std::string("\"") + key + "\" " + addr.to_string() + " is outside this proxy's launch subnet pool (" + nets +
         "), so its requests could reach it; start the launcher with a --subnet inside the proxy's --subnet";
}

class ControlSession : public std::enable_shared_from_this<ControlSession> {
 public:
  ControlSession(Server::Impl& impl, stream::socket s) : impl_(impl), socket_(std::move(s)) {}
  ~ControlSession() {
    // A launcher that dies without saying goodbye leaves nothing registered.
    for (auto& [addr, reg] : regs_) release(reg, std::nullopt, {});
  }
  void start() { read(); }

 private:
  void read() {
    asio::async_read_until(socket_, in_, '\n', [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
      self->on_line(ec, n);
    });
  }

  void on_line(boost::system::error_code ec, std::size_t n) {
    if (ec) return;  // closed: the destructor unregisters
    std::string line(asio::buffers_begin(in_.data()), asio::buffers_begin(in_.data()) + static_cast<std::ptrdiff_t>(n));
    in_.consume(n);
    json reply;
    try {
      reply = handle(json::parse(line));
    } catch (const std::exception& e) {
      reply = {{"ok", false}, {"error", e.what()}};
    }
    out_ = reply.dump() + "\n";
    asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](boost::system::error_code e, std::size_t) {
      if (!e) self->read();
    });
  }

  json handle(const json& req) {
    const auto op = req.value("op", std::string());
    if (op == "ping") return {{"ok", true}};
    if (op == "info") return info();
    if (op == "register") return do_register(req);
    if (op == "unregister") return do_unregister(req);
    return {{"ok", false}, {"error", "unknown op \"" + op + "\" (expected register, unregister or ping)"}};
  }

  // What the launcher hides from the agents it registers: this proxy's own files.
  json info() const {
    json reply = {{"ok", true}, {"audit_db", std::filesystem::absolute(impl_.options.audit_db).string()}};
    if (!impl_.options.policy_file.empty()) reply["policy_file"] = std::filesystem::absolute(impl_.options.policy_file).string();
    return reply;
  }

  json do_register(const json& req) {
    const auto addr_text = req.at("addr").get<std::string>();
    boost::system::error_code ec;
    const auto addr = asio::ip::make_address(addr_text, ec);
    if (ec) return {{"ok", false}, {"error", "\"addr\" is not an IP address: \"" + addr_text + "\""}};
    if (auto why = outside_pool("addr", addr, impl_.options.launch_subnets); !why.empty())
      return {{"ok", false}, {"error", why}};
    const auto agent = req.value("agent", std::string());
    if (auto problem = proxy::agent_name_problem(agent); !problem.empty())
      return {{"ok", false}, {"error", "\"agent\" " + problem}};
    const auto profile = req.value("profile", std::string());
    if (!profile.empty()) {
      auto pol = impl_.current_policy();
      if (!pol->agents.count(profile))
        return {{"ok", false}, {"error", "the policy has no agents." + profile + " profile"}};
    }
    ControlRegistration reg;
    reg.addr = addr.to_string();
    reg.agent = agent;
    json reply = {{"ok", true}};
    if (req.contains("listen") && !req["listen"].is_null()) {
      asio::ip::tcp::endpoint want;
      try {
        want = parse_endpoint(req["listen"].get<std::string>());
      } catch (const std::invalid_argument& e) {
        return {{"ok", false}, {"error", std::string("\"listen\" ") + e.what()}};
      }
      if (auto why = outside_pool("listen", want.address(), impl_.options.launch_subnets); !why.empty())
        return {{"ok", false}, {"error", why}};
      const auto existing = impl_.local_endpoints();
      bool present = false;
      for (const auto& ep : existing)
        if (ep == want) present = true;
      asio::ip::tcp::endpoint got = want;
      if (!present) {
        got = impl_.add_listener(want);  // throws naming the address when it cannot bind
        reg.listener_added = true;
      }
      reg.listen = authority(got.address().to_string(), got.port());
      reply["listen"] = reg.listen;
      reg_listen_[reg.addr] = got;
    }
    {
      // Checked again under the reload lock: a reload between the check above and this
      // registration would otherwise leave the agent with a profile the policy lacks.
      std::lock_guard reload(impl_.reload_mu);
      if (!profile.empty() && !impl_.current_policy()->agents.count(profile))
        return {{"ok", false}, {"error", "the policy has no agents." + profile + " profile"}};
      impl_.agents.add(addr, AgentIdentity{agent, profile});
    }
    if (req.contains("launch") && req["launch"].is_object()) {
      const auto& l = req["launch"];
      audit::AgentRecord rec;
      rec.name = agent;
      rec.pid = l.value("pid", std::int64_t{0});
      rec.command_line = l.value("command_line", std::string());
      rec.address = l.value("address", reg.addr);
      rec.policy_digest = l.value("policy_digest", impl_.current_policy()->digest);
      // What the launcher says the agent runs under (its --explain report), kept as JSON.
      if (l.contains("sandbox") && l["sandbox"].is_object())
        rec.sandbox = l["sandbox"].dump(-1, ' ', false, json::error_handler_t::replace);
      rec.started = audit::Clock::now();
      reg.pid = rec.pid;
      impl_.writer->agent_started(std::move(rec));
    }
    impl_.log.write("agent_registered", {{"agent", agent}, {"addr", reg.addr}, {"profile", profile}, {"listen", reg.listen}});
    if (auto old = regs_.find(reg.addr); old != regs_.end()) {
      // Re-registering the same address replaces the earlier entry (its listener stays if reused).
      if (old->second.listener_added && old->second.listen != reg.listen) impl_.remove_listener(listen_of(old->second));
      regs_.erase(old);
    }
    regs_[reg.addr] = reg;
    return reply;
  }

  json do_unregister(const json& req) {
    const auto addr_text = req.at("addr").get<std::string>();
    boost::system::error_code ec;
    const auto addr = asio::ip::make_address(addr_text, ec);
    if (ec) return {{"ok", false}, {"error", "\"addr\" is not an IP address: \"" + addr_text + "\""}};
    auto it = regs_.find(addr.to_string());
    if (it == regs_.end()) return {{"ok", false}, {"error", addr_text + " is not registered on this connection"}};
    std::optional<int> status;
    if (req.contains("exit_status") && req["exit_status"].is_number_integer()) status = req["exit_status"].get<int>();
    std::string usage = req.contains("resource_usage") ? req["resource_usage"].dump() : std::string();
    release(it->second, status, usage);
    regs_.erase(it);
    return {{"ok", true}};
  }

  asio::ip::tcp::endpoint listen_of(const ControlRegistration& r) { return reg_listen_[r.addr]; }

  void release(const ControlRegistration& reg, std::optional<int> exit_status, const std::string& usage) {
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(reg.addr, ec);
    if (!ec) impl_.agents.remove(addr);
    if (reg.listener_added) impl_.remove_listener(listen_of(reg));
    if (reg.pid != 0 || exit_status) {
      audit::AgentExit ex;
      ex.name = reg.agent;
      ex.pid = reg.pid;
      ex.ended = audit::Clock::now();
      ex.exit_status = exit_status;
      ex.resource_usage = usage;
      impl_.writer->agent_exited(std::move(ex));
    }
    impl_.log.write("agent_unregistered", {{"agent", reg.agent}, {"addr", reg.addr}});
  }

  Server::Impl& impl_;
  stream::socket socket_;
  asio::streambuf in_{64 * 1024};
  std::string out_;
  std::map<std::string, ControlRegistration> regs_;
  std::map<std::string, asio::ip::tcp::endpoint> reg_listen_;
};

}  // namespace

ControlServer::ControlServer(Server::Impl& impl, asio::io_context& ioc, std::filesystem::path path)
    : impl_(impl), path_(std::move(path)), acceptor_(ioc) {
  std::error_code fec;
  if (std::filesystem::is_socket(path_, fec)) std::filesystem::remove(path_, fec);
  boost::system::error_code ec;
  acceptor_.open(stream(), ec);
  if (!ec) acceptor_.bind(stream::endpoint(path_.string()), ec);
  if (ec) throw std::runtime_error("--control " + path_.string() + ": cannot bind: " + ec.message());
  // Only the proxy's own user may register agents: chmod before listen, so nobody
  // can connect in between.
  if (::chmod(path_.c_str(), 0600) != 0)
    throw std::runtime_error("--control " + path_.string() + ": cannot set mode 0600");
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("--control " + path_.string() + ": cannot listen: " + ec.message());
}

ControlServer::~ControlServer() {
  std::error_code fec;
  std::filesystem::remove(path_, fec);
}

void ControlServer::start() { accept(); }

void ControlServer::stop() {
  boost::system::error_code ec;
  acceptor_.close(ec);
}

void ControlServer::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, stream::socket s) {
    if (ec) return;
    std::make_shared<ControlSession>(impl_, std::move(s))->start();
    accept();
  });
}

}  // namespace netbox::proxy
