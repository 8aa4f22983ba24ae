#pragma once
// The trust an agent is given when its HTTPS is inspected: the host's roots plus the
// netbox CA certificate, as a PEM bundle (for OpenSSL, curl, Python, git, Node) and as a
// PKCS#12 trust store for the JVM, which reads no PEM bundle. Certificates only: a key
// never goes into either.
#include <string>
#include <string_view>

namespace netbox::tls {

// Every certificate of `pem` (one or more PEM CERTIFICATE blocks; anything else between
// them is ignored, as OpenSSL does), each re-encoded as PEM. Throws std::runtime_error
// naming `what` when no certificate parses or a block is broken.
std::string certificates_pem(std::string_view pem, const std::string& what);

// A PKCS#12 file (DER) of the certificates in `pem`, each in a certificate bag of its
// own with a friendlyName alias and the JDK's trusted-key-usage attribute (OID
// 2.16.840.1.113894.746875.1.1 = anyExtendedKeyUsage), which is what makes the JDK read
// a certificate bag as a trusted certificate entry. No key, no encryption and no MAC
// (the contents are public), so the JVM needs no trustStorePassword. Throws
// std::runtime_error as certificates_pem does.
std::string java_trust_store(std::string_view pem, const std::string& what);

}  // namespace netbox::tls
