#include "upstream/upstream_link.hpp"

#include "pipeline/admission_steps.hpp"
#include "inspect/inspector.hpp"

#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/stream_traits.hpp>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

void upstream_key(std::string& out, std::string_view scope, const tcp::endpoint& ep, std::string_view host, bool tls,
                  DoorServices& rt) {
  if (!tls) return UpstreamPool::key(out, scope, ep, host);
  UpstreamPool::tls_key(out, scope, ep, host, rt.inspector->upstream_context().native_handle());
}

bool take_pooled(UpstreamPool& pool, const std::string& key, UpstreamLink<false>::Holder& into) {
  auto s = pool.take(key);
  if (!s) return false;
  into.emplace(std::move(*s));
  return true;
}

bool take_pooled(UpstreamPool& pool, const std::string& key, UpstreamLink<true>::Holder& into) {
  into = pool.take_tls(key);
  return into != nullptr;
}

void put_pooled(UpstreamPool& pool, const std::string& key, UpstreamLink<false>::Holder& from) {
  pool.put(key, from->release_socket());
  from.reset();
}

void put_pooled(UpstreamPool& pool, const std::string& key, UpstreamLink<true>::Holder& from) {
  beast::get_lowest_layer(*from).expires_never();
  pool.put(key, std::move(from));
}

void reset_upstream(UpstreamLink<false>::Holder& s) {
  if (!s) return;
  beast::error_code ignored;
  s->socket().set_option(asio::socket_base::linger(true, 0), ignored);
  s.reset();
}

void reset_upstream(UpstreamLink<true>::Holder& s) {
  if (!s) return;
  beast::error_code ignored;
  s->lowest_layer().set_option(asio::socket_base::linger(true, 0), ignored);
  s->lowest_layer().close(ignored);  // no TLS close_notify wait
  s.reset();
}

void connect_plain(DoorServices& rt, Worker& worker, const std::vector<tcp::endpoint>& to,
                   const policy::Limits& limits, std::function<void(UpstreamConnected<false>)> done) {
  dial_admitted(rt, worker, to, limits, [done = std::move(done)](DialResult r) {
    UpstreamConnected<false> c;
    c.endpoint = r.endpoint;
    if (r.failure != DialFailure::none) {
      c.failure_status = http_status(r.failure);
      c.error = std::move(r.error);
    } else {
      c.stream.emplace(std::move(r.socket));
    }
    done(std::move(c));
  });
}

namespace {

// SNI and the name (or address) the certificate must be for.
void name_the_host(SSL* s, const std::string& host) {
  boost::system::error_code ec;
  (void)asio::ip::make_address(host, ec);
  if (ec) {
    // SSL_set_tlsext_host_name, without its C cast.
    SSL_ctrl(s, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(host.c_str()));
    SSL_set1_host(s, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), host.c_str());
  }
}

}  // namespace

void connect_tls(DoorServices& rt, Worker& worker, const std::vector<tcp::endpoint>& to,
                 const policy::Limits& limits, const std::string& host,
                 std::function<void(UpstreamConnected<true>)> done) {
  dial_admitted(rt, worker, to, limits, [&rt, host, timeout = limits.idle_timeout, done = std::move(done)](DialResult r) {
    UpstreamConnected<true> c;
    c.endpoint = r.endpoint;
    if (r.failure != DialFailure::none) {
      c.failure_status = http_status(r.failure);
      c.error = std::move(r.error);
      return done(std::move(c));
    }
    c.stream = std::make_unique<UpstreamPool::TlsStream>(std::move(r.socket), rt.inspector->upstream_context());
    name_the_host(c.stream->native_handle(), host);
    auto& s = *c.stream;
    beast::get_lowest_layer(s).expires_after(timeout);
    s.async_handshake(ssl::stream_base::client,
                      [host, counters = &rt.counters, c = std::move(c),
                       done = std::move(done)](boost::system::error_code ec) mutable {
                        using R = Counters::UpstreamTls;
                        if (!ec) {
                          counters->count_tls(R::ok);
                          return done(std::move(c));
                        }
                        const long verify = SSL_get_verify_result(c.stream->native_handle());
                        counters->count_tls(verify != X509_V_OK           ? R::certificate_refused
                                            : ec == beast::error::timeout ? R::timeout
                                                                          : R::failed);
                        if (verify != X509_V_OK) {
                          c.failure_status = 502;
                          c.error = "the upstream's certificate for " + host +
                                    " was refused: " + X509_verify_cert_error_string(verify);
                        } else if (ec == beast::error::timeout) {
                          c.failure_status = 504;
                          c.error = "the TLS handshake with the upstream timed out";
                        } else {
                          c.failure_status = 502;
                          c.error = "the TLS handshake with the upstream failed: " + ec.message();
                        }
                        reset_upstream(c.stream);
                        done(std::move(c));
                      });
  });
}

}  // namespace netbox::proxy
