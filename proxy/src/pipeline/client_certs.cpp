#include "pipeline/client_certs.hpp"

#include "pipeline/client_tokens.hpp"

#include "netbox/policy/policy.hpp"

#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>

namespace netbox::proxy {
namespace {

std::string common_name(X509* cert) {
  X509_NAME* name = X509_get_subject_name(cert);
  const int at = name ? X509_NAME_get_index_by_NID(name, NID_commonName, -1) : -1;
  if (at < 0) return {};
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, at));
  unsigned char* utf8 = nullptr;
  const int n = ASN1_STRING_to_UTF8(&utf8, data);
  if (n < 0) return {};
  std::string out(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(n));
  OPENSSL_free(utf8);
  return out;
}

std::vector<std::string> uri_names(X509* cert) {
  std::vector<std::string> out;
  auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (!names) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(names, i);
    if (g->type != GEN_URI) continue;
    const ASN1_IA5STRING* s = g->d.uniformResourceIdentifier;
    out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)), static_cast<std::size_t>(ASN1_STRING_length(s)));
  }
  GENERAL_NAMES_free(names);
  return out;
}

}  // namespace

PeerCertificate peer_certificate(SSL* ssl) {
  PeerCertificate p;
  std::unique_ptr<X509, decltype(&X509_free)> cert(SSL_get1_peer_certificate(ssl), X509_free);
  if (!cert) return p;
  p.presented = true;
  p.subject.cn = common_name(cert.get());
  p.subject.uris = uri_names(cert.get());
  if (const long v = SSL_get_verify_result(ssl); v != X509_V_OK) p.problem = X509_verify_cert_error_string(v);
  if (std::tm end{}; ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &end) == 1) p.not_after = ::timegm(&end);
  return p;
}

ClientCerts::ClientCerts(std::filesystem::path book, bool allow_anonymous,
                         std::function<void(bool, const std::string&)> on_reload)
    : allow_anonymous_(allow_anonymous),
      book_(std::move(book), [](const std::filesystem::path& p) { return tokens::load_cert_book(p); },
            [](const tokens::CertBook& b) { return std::to_string(b.entries().size()) + " certificates"; },
            std::move(on_reload)) {}

ClientCerts::Verdict ClientCerts::identify(const PeerCertificate& cert, const policy::Policy& policy) {
  if (!cert.presented) {
    if (allow_anonymous_) return {AgentIdentity{}, {}, {}};
    return {std::nullopt, "this proxy needs a client certificate signed by its client CA (--client-ca)", {}};
  }
  // The subject as the certificate spells it may be anything: it is printed escaped (rows
  // and log lines escape control characters), and only an exact match maps it.
  const std::string named = "the client certificate " + cert.subject.text();
  if (!cert.problem.empty()) return {std::nullopt, named + " is not trusted: " + cert.problem, {}};
  const auto now = book_.snapshot();
  const auto* entry = now.book->find(cert.subject);
  if (!entry) return {std::nullopt, named + " is not in the certificate book (--client-certs)", {}};
  if (auto why = missing_profile(named, entry->profile, policy)) return {std::nullopt, std::move(*why), {}};
  AgentIdentity who;
  who.agent = entry->agent;
  who.profile = entry->profile;
  return {std::move(who), {}, Held{cert, *entry, now.generation}};
}

std::string ClientCerts::recheck(Held& held) {
  const std::string named = "the client certificate " + held.cert.subject.text();
  if (held.cert.not_after > 0 && std::time(nullptr) >= held.cert.not_after) return named + " has expired";
  const auto now = book_.snapshot();
  if (held.generation == now.generation) return {};
  const auto* entry = now.book->find(held.cert.subject);
  if (!entry) return named + " is no longer in the certificate book (--client-certs)";
  if (entry->agent != held.entry.agent || entry->profile != held.entry.profile)
    return named + " changed in the certificate book: connect again";
  held.generation = now.generation;
  return {};
}

}  // namespace netbox::proxy
