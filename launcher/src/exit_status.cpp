#include "netbox/launcher/exit_status.hpp"

#include <sys/wait.h>

namespace netbox::launcher {

int shell_exit_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace netbox::launcher
