#pragma once
// Small helpers shared by the CA and the leaf minter: OpenSSL's error queue as text, and
// the X.509 fields both kinds of certificate fill the same way.
#include "netbox/tls/certificate_authority.hpp"

#include <chrono>
#include <string>

namespace netbox::tls::detail {

// "what: reason" with the oldest error OpenSSL queued (and the queue cleared).
[[noreturn]] void fail(const std::string& what);
// A fresh v3 certificate with a random positive 127-bit serial and the given validity.
CertHandle new_certificate(std::chrono::system_clock::time_point not_before,
                           std::chrono::system_clock::time_point not_after);
// Adds an extension written in OpenSSL's config syntax; `value` is always a constant of
// ours, never text from a request.
void add_extension(X509* cert, X509* issuer, int nid, const char* value);
void set_common_name(X509_NAME* name, const std::string& cn);

}  // namespace netbox::tls::detail
