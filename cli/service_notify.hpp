// Telling systemd (Type=notify) that the proxy is ready or stopping, over the plain
// datagram protocol of sd_notify(3): one sendto on $NOTIFY_SOCKET, no libsystemd.
#pragma once

#include <string_view>

namespace netbox::cli {

// Sends STATE (e.g. "READY=1") when NOTIFY_SOCKET is set; a no-op otherwise. Returns
// false only when a socket was named and the message could not be sent.
bool notify_service_manager(std::string_view state);

}  // namespace netbox::cli
