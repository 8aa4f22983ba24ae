#pragma once
// Checking that text is safe to print on an operator's terminal: what an agent chose
// (a URL, a name) must not reach it as bytes a terminal acts on.
#include <cstddef>
#include <string>

namespace netbox::test {

// The offset of the first byte a terminal would act on (C0 controls but LF, and CR only
// as part of CRLF when `crlf_line_ends`; DEL; C1 controls; U+202E right-to-left override),
// or of a byte outside a UTF-8 sequence; npos if there is none.
std::size_t first_unsafe_byte(const std::string& s, bool crlf_line_ends = false);

}  // namespace netbox::test
