#pragma once
// dnsmasq on a loopback UDP port, answering only from its own command line (no
// upstream servers, no /etc/hosts, no resolv.conf): names it does not know fail.
#include "support/background_process.hpp"
#include "support/temp_dir.hpp"

#include <memory>
#include <string>
#include <vector>

namespace netbox::test {

class Dnsmasq {
 public:
  // `records` are extra dnsmasq options, e.g. "--address=/rebind.test/10.0.0.5",
  // "--host-record=upstream.test,127.0.0.1".
  explicit Dnsmasq(std::vector<std::string> records);
  unsigned short port() const { return port_; }
  std::string server() const { return "127.0.0.1:" + std::to_string(port_); }
  // What dnsmasq logged so far (with "--log-queries" among the records: every query).
  std::string log() const;

 private:
  TempDir dir_;
  unsigned short port_ = 0;
  std::unique_ptr<BackgroundProcess> proc_;
};

}  // namespace netbox::test
