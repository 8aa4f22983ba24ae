#pragma once
// Checking what the CA minted the way a TLS client would: OpenSSL's own chain and
// host-name verification against a store that trusts only the given CA.
#include "netbox/tls/certificate_authority.hpp"

#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <string>

namespace netbox::tls_test {

// X509_V_OK when `leaf` chains to `ca` and is valid for `host` (a name or an IP literal).
inline int verify_for(X509* leaf, X509* ca, const std::string& host) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx);
  X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
  if (X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) != 1) X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
  int ok = X509_verify_cert(ctx);
  int err = ok == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return err;
}

}  // namespace netbox::tls_test
