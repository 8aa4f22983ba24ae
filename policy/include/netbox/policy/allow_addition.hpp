#pragma once
// Adding one entry to a policy file's allow list (`netbox launch --ask`, scope `policy`):
// the file's text is kept as written, comments and layout included, with the entry put
// first in the list; the new text is loaded as a policy before it replaces the file, so a
// file that would not load is never written. The replacement is atomic (a file beside it,
// with its mode and owner, renamed over it).
#include <filesystem>
#include <string>

namespace netbox::policy {

// Adds "HOST:PORT" (`entry`) to the `allow` list of `profile` (the key of `agents`; empty:
// the top level) in `file`. Throws PolicyError when the file or the result does not load,
// std::runtime_error naming the file when it has no such allow list or cannot be written.
// An entry already there is not added twice.
void add_allow_entry(const std::filesystem::path& file, const std::string& profile, const std::string& entry);

}  // namespace netbox::policy
