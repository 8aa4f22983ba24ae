#pragma once
// The host-wide list of netbox endpoints. Each proxy refuses its own listeners, but a
// second netbox on the same host (another `netbox proxy`, or a launch's embedded proxy)
// would otherwise be an ordinary loopback destination: a request relayed through it
// becomes `anonymous` there and can read its admin API. So every netbox proxy writes its
// listeners and admin endpoint to <dir>/<pid>.<n> (one file per Server in the process;
// written to a temporary name and renamed, removed at stop), and treats every endpoint
// in every live file as a `netbox` destination.
//
// The folder is root's (0755, files 0644): only root can list an endpoint, so nobody can
// use the registry to make proxies refuse a destination. A folder not owned by root or
// writable by others is ignored. A file whose process is gone (or whose pid now belongs
// to another process: the file records the process start time) is ignored and removed.
// A proxy that cannot write the folder (not root) runs on; its caller logs that once.
#include <boost/asio/ip/tcp.hpp>

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace netbox::proxy {

class EndpointRegistry {
 public:
  explicit EndpointRegistry(std::filesystem::path dir = default_dir());
  ~EndpointRegistry();
  EndpointRegistry(const EndpointRegistry&) = delete;
  EndpointRegistry& operator=(const EndpointRegistry&) = delete;

  // Replaces this proxy's file with `endpoints`. Returns why it could not, or empty.
  // After withdraw() it does nothing: a listener removed while stopping must not bring
  // the file back.
  std::string publish(const std::vector<boost::asio::ip::tcp::endpoint>& endpoints);
  void withdraw();
  // Every endpoint listed by a live netbox process on this host (this one's included).
  // `problem` is set when the folder exists but is not trusted.
  std::vector<boost::asio::ip::tcp::endpoint> read_all(std::string* problem = nullptr) const;

  const std::filesystem::path& dir() const { return dir_; }
  static std::filesystem::path default_dir() { return "/run/netbox/endpoints"; }

 private:
  std::filesystem::path dir_;
  std::filesystem::path file_;
  std::mutex mu_;
  bool published_ = false;
  bool withdrawn_ = false;
};

}  // namespace netbox::proxy
