#pragma once
// The agent's mount namespace: private propagation, its own /proc, and empty tmpfs
// on /run, /var/run and /tmp so host Unix sockets (docker.sock, ...) are out of reach.
namespace netbox::launcher {

// Call inside the new mount and PID namespaces. Throws std::runtime_error naming the mount.
void setup_agent_mounts();

}  // namespace netbox::launcher
