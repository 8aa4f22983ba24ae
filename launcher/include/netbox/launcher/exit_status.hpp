#pragma once

namespace netbox::launcher {

// A wait(2) status as a shell reports it: the exit code, or 128+N for signal N.
int shell_exit_status(int wait_status);

}  // namespace netbox::launcher
