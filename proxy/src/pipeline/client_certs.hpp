#pragma once
// Client certificates on a shared proxy (issue 26 item 5, smokescreen's model): with
// `--client-ca CA --client-certs BOOK`, the proxy's TLS listener (tls_door.hpp) asks every
// client for a certificate; a client that netbox did not launch and that no registration
// names (it would be `anonymous`) is the agent and profile its certificate's subject maps
// to in the book (netbox/tokens/cert_book.hpp: the Common Name or a URI SAN). No
// certificate, one the CA did not sign, one out of its validity dates, or a subject the
// book does not name: the connection's first request is answered 407 and recorded (rule
// `client_cert`) and the connection closed; --allow-anonymous serves only a client that
// showed no certificate, as `anonymous`. The book is followed as followed_book.hpp says.
#include "netbox/tokens/cert_book.hpp"

#include "agents/agent_registry.hpp"
#include "pipeline/followed_book.hpp"

#include <openssl/ssl.h>

#include <filesystem>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace netbox::policy {
struct Policy;
}

namespace netbox::proxy {

// What the TLS handshake showed of the client's certificate.
struct PeerCertificate {
  bool presented = false;
  std::string problem;  // why it is not trusted (OpenSSL's verification error); empty: trusted
  tokens::CertSubject subject;
  std::int64_t not_after = 0;  // its end of validity, Unix seconds (0: none read)
};

// Read from a connection whose handshake is done (the listener's verification callback
// lets every certificate through and leaves the verdict to this).
PeerCertificate peer_certificate(SSL* ssl);

class ClientCerts {
 public:
  // Reads `book` now; throws tokens::TokenBookError (the proxy does not start) when it cannot.
  ClientCerts(std::filesystem::path book, bool allow_anonymous,
              std::function<void(bool ok, const std::string& text)> on_reload = {});

  // What a connection's certificate made it (its entry in the book, the book's generation
  // then, when the certificate ends): checked again before each later request, as a
  // token is (ClientTokens::Held), so a certificate taken out of the book, moved to
  // another agent, or past its notAfter stops a keep-alive connection there.
  struct Held {
    PeerCertificate cert;
    tokens::CertEntry entry;
    std::uint64_t generation = 0;
  };
  // As ClientTokens::Verdict: `who` (still `anonymous` for a client that showed none where
  // anonymous clients are allowed), else `why`, the reason of its 407.
  struct Verdict {
    std::optional<AgentIdentity> who;
    std::string why;
    std::optional<Held> held;  // with a certificate's `who`
  };
  Verdict identify(const PeerCertificate& cert, const policy::Policy& policy);
  // Empty: `held` still holds (brought up to the book's generation); else why not.
  std::string recheck(Held& held);

 private:
  const bool allow_anonymous_;
  FollowedBook<tokens::CertBook> book_;
};

}  // namespace netbox::proxy
