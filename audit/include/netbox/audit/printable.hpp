#pragma once
// Text an agent chose (URLs, host names, methods, reasons quoting them) made safe to put in
// front of an operator: no byte of it may drive a terminal or reorder what is shown.
#include <string>
#include <string_view>

namespace netbox::audit {

// C0 controls and DEL become \xNN, C1 controls (U+0080-U+009F, which terminals read as
// ESC-sequences), the Unicode line/paragraph separators and bidirectional controls become
// \uNNNN, and bytes that are not UTF-8 become \xNN. Everything else, non-ASCII UTF-8
// included, is kept. A backslash is kept as is, so the result is for reading, not for
// reversing: `netbox audit --format json` gives the exact stored values.
std::string escape_controls(std::string_view text);

// Whether escape_controls would change `text`; allocates nothing, for hot paths that
// mostly see plain ASCII.
bool needs_escaping(std::string_view text);

// The same code points, left raw by a JSON serializer (it escapes only U+0000-U+001F),
// rewritten as JSON \u escapes in serialized JSON text, which must be UTF-8: the document
// parses to the same values.
std::string escape_controls_in_json(std::string_view json);

}  // namespace netbox::audit
