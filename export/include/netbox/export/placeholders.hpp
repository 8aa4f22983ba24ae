#pragma once
// A credential's placeholder (nbx-NAME-<32 hex>, proxy/src/inspect/credential_secret.cpp) in text an
// agent chose: a path or a host name that the tripwire refused (or a request to the
// credential's own host) keeps it in its audit row. An export goes to more readers than the
// store, so a field that holds one, in any spelling the tripwire also sees through (case,
// percent-encoding, dots between DNS labels), is withheld whole.
#include <string>

namespace netbox::siem {

// Replaces `text` with a note when it holds a placeholder; true if it did.
bool withhold_placeholder(std::string& text);

}  // namespace netbox::siem
