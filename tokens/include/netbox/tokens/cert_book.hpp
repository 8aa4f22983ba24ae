#pragma once
// The certificate book (issue 26 item 5, smokescreen's model): on a proxy whose listener
// asks for client certificates (`netbox proxy --client-ca CA --client-certs FILE`), which
// agent and policy profile a certificate's subject is. A subject is the certificate's
// Common Name (`cn`) or one of its URI subject alternative names (`uri`, e.g. a SPIFFE
// ID); an entry names exactly one of the two. Whoever may write the book can make up a
// client's identity, so it is checked like the token book and a policy file (owner, mode).
//
//   {"version": 1, "certificates": [{"cn": "ci-runner-01", "agent": "ci", "profile": "builders"},
//                                   {"uri": "spiffe://corp/ci", "agent": "ci"}]}
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace netbox::tokens {

struct CertEntry {
  std::string cn;   // the subject's Common Name, exactly; or
  std::string uri;  // one of its URI subject alternative names, exactly
  std::string agent;
  std::string profile;  // empty: the top-level profile
};

// What the proxy read from a verified client certificate.
struct CertSubject {
  std::string cn;
  std::vector<std::string> uris;
  // As rows and messages name the certificate: "CN=ci-runner-01" or the first URI.
  std::string text() const;
};

class CertBook {
 public:
  CertBook() = default;
  explicit CertBook(std::vector<CertEntry> entries) : entries_(std::move(entries)) {}
  // The entry `subject` maps to (a `uri` entry before a `cn` one); nullptr: none.
  const CertEntry* find(const CertSubject& subject) const;
  const std::vector<CertEntry>& entries() const { return entries_; }

 private:
  std::vector<CertEntry> entries_;
};

// Reads the book at `path`; throws TokenBookError naming the file and the key at fault.
CertBook load_cert_book(const std::filesystem::path& path);

}  // namespace netbox::tokens
