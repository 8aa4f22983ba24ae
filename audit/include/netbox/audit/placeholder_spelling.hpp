#pragma once
// How far a credential's placeholder may be percent-encoded and still be seen. The
// tripwire (proxy/src/inspect/credentials.cpp) refuses a request that holds a placeholder
// in any spelling it decodes, and the refused row keeps the text as sent; the SIEM export
// (export/src/placeholders.cpp) must withhold every such row's text, so it has to decode
// at least as far. Here, in audit, because the rows are where the two meet and both
// modules read audit; neither may include the other's headers.
namespace netbox::audit {

// Rounds of percent-decoding ("%6e", "%256e", "%25256e" all read as "n").
inline constexpr int kPlaceholderPercentRounds = 3;

}  // namespace netbox::audit
