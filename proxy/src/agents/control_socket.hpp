#pragma once
// The control socket `netbox launch` talks to: a Unix stream socket (mode 0600) carrying
// one JSON object per line each way. See docs/proxy.md, "Control socket".
#include "netbox/proxy/proxy_options.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include <filesystem>
#include <memory>
#include <string>

namespace netbox::proxy {

struct ProxyRuntime;

class ControlServer {
 public:
  // Binds `path` (replacing a stale socket file there) and sets mode 0600.
  // Throws std::runtime_error naming the path. `operator_only`: it answers the operator
  // ops (and ping) only, as a launch's own operator socket does.
  ControlServer(ProxyRuntime& impl, boost::asio::io_context& ioc, std::filesystem::path path,
                bool operator_only = false);
  ~ControlServer();
  void start();
  void stop();  // call on the io thread

 private:
  void accept();
  ProxyRuntime& impl_;
  std::filesystem::path path_;
  bool operator_only_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
};

}  // namespace netbox::proxy
