#pragma once
// An agent's TLS connection through a real CONNECT to the proxy (a raw OpenSSL client,
// trusting anything: the tests check what arrives, not the chain), with its own cipher
// choice; the server name is the authority's host.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>
#include <string>

namespace netbox::test {

// An agent's TLS connection through a CONNECT to the proxy, with its own cipher choice.
class AgentTls {
 public:
  AgentTls(unsigned short proxy_port, const std::string& authority, const char* tls12_ciphers = nullptr)
      : ctx_(SSL_CTX_new(TLS_client_method()), SSL_CTX_free), tls_(nullptr, SSL_free) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(proxy_port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return;
    const std::string connect = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
    if (::write(fd_, connect.data(), connect.size()) != static_cast<ssize_t>(connect.size())) return;
    std::string head;
    for (char c; head.find("\r\n\r\n") == std::string::npos && ::read(fd_, &c, 1) == 1;) head += c;
    if (head.rfind("HTTP/1.1 200", 0) != 0) return;
    if (tls12_ciphers) {
      SSL_CTX_set_max_proto_version(ctx_.get(), TLS1_2_VERSION);
      SSL_CTX_set_cipher_list(ctx_.get(), tls12_ciphers);
    }
    tls_.reset(SSL_new(ctx_.get()));
    SSL_set_fd(tls_.get(), fd_);
    std::string server_name = authority.substr(0, authority.rfind(':'));
    // SSL_set_tlsext_host_name, without its C cast.
    SSL_ctrl(tls_.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, server_name.data());
    connected_ = SSL_connect(tls_.get()) == 1;
  }
  ~AgentTls() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return connected_; }
  std::string cipher() const { return SSL_get_cipher_name(tls_.get()); }
  // Sends `bytes`, then reads until the proxy closes or 64 KiB came.
  std::string exchange(const std::string& bytes) {
    SSL_write(tls_.get(), bytes.data(), static_cast<int>(bytes.size()));
    std::string got;
    char buf[4096];
    for (int n; got.size() < 65536 && (n = SSL_read(tls_.get(), buf, sizeof buf)) > 0;)
      got.append(buf, static_cast<std::size_t>(n));
    return got;
  }
  void send(const std::string& bytes) {
    for (std::size_t at = 0; at < bytes.size();) {
      const int n = SSL_write(tls_.get(), bytes.data() + at, static_cast<int>(bytes.size() - at));
      if (n <= 0) return;
      at += static_cast<std::size_t>(n);
    }
  }
  // Reads until `needle` has arrived (since the last call), the proxy closes, or 10 s of
  // silence; returns what was read.
  std::string read_until(const std::string& needle) {
    char buf[4096];
    while (pending_.find(needle) == std::string::npos) {
      const int n = SSL_read(tls_.get(), buf, sizeof buf);
      if (n <= 0) break;
      pending_.append(buf, static_cast<std::size_t>(n));
    }
    const auto at = pending_.find(needle);
    const std::size_t upto = at == std::string::npos ? pending_.size() : at + needle.size();
    std::string got = pending_.substr(0, upto);
    pending_.erase(0, upto);
    return got;
  }

 private:
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx_;
  std::unique_ptr<SSL, decltype(&SSL_free)> tls_;
  int fd_ = -1;
  bool connected_ = false;
  std::string pending_;  // read past the last needle
};

}  // namespace netbox::test
