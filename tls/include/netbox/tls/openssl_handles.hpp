#pragma once
// Owning handles for the OpenSSL objects netbox keeps: each frees with its own _free, and
// a shared certificate or key is shared by up_ref (see Leaf), never by raw pointer.
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>

namespace netbox::tls {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
using KeyHandle = std::unique_ptr<EVP_PKEY, KeyFree>;
using CertHandle = std::unique_ptr<X509, CertFree>;

}  // namespace netbox::tls
