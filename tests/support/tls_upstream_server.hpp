#pragma once
// A real HTTPS/1.1 server on 127.0.0.1 for inspection tests, with a certificate for
// `name` minted by a test CA of its own (made with netbox's tls module, so the proxy has
// to be told to trust it: --upstream-ca ca_pem()). Any request is answered 200 with a
// JSON echo: method, target, host, headers, body and which connection (1, 2, ... in
// accept order) carried it. Each connection is answered once and closed, or, with
// `keep_alive`, served until the client closes it (connections in parallel, a thread
// each). Hostile answers on request, by path: `/extra` is answered, then followed in the
// same write by an answer nobody asked for; `/cut` gets a head promising more body than
// comes before the connection closes; `/then-close` is answered with keep-alive, then the
// connection is closed. A test may script a hostile answer of its own (script()). Every
// wait is bounded.
#include "support/temp_dir.hpp"

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <cstdint>

namespace netbox::test {

class TlsUpstreamServer {
 public:
  // `cert_name`: the name the served certificate is for (another than the one clients
  // ask for makes a wrong-name upstream). `expired`: the certificate's validity ended
  // yesterday (re-signed by the test CA, so only its dates are wrong).
  explicit TlsUpstreamServer(const std::string& cert_name, bool expired = false, bool keep_alive = false);
  ~TlsUpstreamServer();
  TlsUpstreamServer(const TlsUpstreamServer&) = delete;
  TlsUpstreamServer& operator=(const TlsUpstreamServer&) = delete;

  // Writes the answer instead of the echo: `echo` is the request's JSON echo (its headers
  // hold what the proxy injected), `send` writes bytes as they are given (false once the
  // client is gone), so a script can stream or go silent. The connection closes after it.
  using Send = std::function<bool(std::string_view)>;
  using Script = std::function<void(const std::string& echo, const Send& send)>;
  void script(Script s) { script_ = std::move(s); }  // before the first request

  unsigned short port() const { return port_; }
  std::filesystem::path ca_pem() const { return ca_pem_; }  // the test CA's certificate
  std::uint64_t requests() const { return requests_.load(); }
  std::uint64_t handshakes() const { return handshakes_.load(); }  // completed ones
  // The JSON echo of the last request, as the upstream saw it (before any proxy between
  // it and the client could change the answer).
  std::string last_echo() const;
  std::uint64_t accepts() const { return accepts_.load(); }
  std::uint64_t open_connections() const { return open_.load(); }

 private:
  struct State;
  void serve();
  void handle(int fd, std::uint64_t id);

  TempDir dir_;
  std::filesystem::path ca_pem_;
  std::unique_ptr<State> state_;
  unsigned short port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> handshakes_{0};
  mutable std::mutex echo_mu_;
  std::string last_echo_;
  std::atomic<std::uint64_t> accepts_{0};
  std::atomic<std::uint64_t> open_{0};
  bool keep_alive_;
  Script script_;
  std::thread thread_;
};

}  // namespace netbox::test
