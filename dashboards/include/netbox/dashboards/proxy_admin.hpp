#pragma once
// Wires an AdminServer to a running proxy: its counters, its audit store and writer.
#include "netbox/dashboards/admin_server.hpp"
#include "netbox/proxy/server.hpp"

#include <filesystem>
#include <memory>
#include <string>

namespace netbox::dashboards {

// Reads the token file (first line, surrounding white space trimmed). Throws
// std::runtime_error naming the file when it can't be read, is empty, or is readable by others.
std::string read_token_file(const std::filesystem::path& file);

std::unique_ptr<AdminServer> start_admin(proxy::Server& server, const boost::asio::ip::tcp::endpoint& listen,
                                         const std::filesystem::path& audit_db, std::string bearer_token);

}  // namespace netbox::dashboards
