#pragma once
// One line per event on stderr, as `key=value` text or as a JSON object.
#include "netbox/proxy/server.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace netbox::proxy {

using LogFields = std::vector<std::pair<std::string_view, std::string>>;

class Logger {
 public:
  explicit Logger(LogFormat format) : format_(format) {}
  // `event` names what happened ("request", "listening", "policy_reload_failed" ...).
  void write(std::string_view event, const LogFields& fields) const;
  std::string render(std::string_view event, const LogFields& fields) const;

 private:
  LogFormat format_;
};

}  // namespace netbox::proxy
