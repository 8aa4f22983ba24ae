#pragma once
// How the SOCKS5 door answers (RFC 1928 replies), all the shared step (target_step.hpp)
// needs of it: "succeeded" once the upstream is there, and for a refusal before that the
// reply code by why it was refused.
#include "doors/socks_request.hpp"
#include "pipeline/outcome.hpp"
#include "pipeline/target_step.hpp"
#include "upstream/dialer.hpp"

namespace netbox::proxy {

socks::Reply socks_reply_for(Outcome outcome);
socks::Reply socks_reply_for(DialFailure failure);
DoorAnswer socks_answer();

}  // namespace netbox::proxy
