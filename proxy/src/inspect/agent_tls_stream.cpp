#include "inspect/agent_tls_stream.hpp"

#include <stdexcept>

namespace netbox::proxy {
namespace {

// A BIO that grew past this (a large record, a large answer's slices) is replaced once
// empty; below it, keeping the buffer saves an allocation per request.
constexpr std::size_t kKeptBio = 4 * 1024;

BIO* fresh_bio() {
  BIO* b = BIO_new(BIO_s_mem());
  if (b == nullptr) throw std::runtime_error("OpenSSL could not allocate a memory BIO");
  return b;
}

bool oversized(BIO* b) {
  BUF_MEM* m = nullptr;
  BIO_get_mem_ptr(b, &m);
  return m != nullptr && m->max > kKeptBio;
}

}  // namespace

AgentTlsStream::AgentTlsStream(boost::asio::ip::tcp::socket socket, SSL_CTX* ctx, std::string_view early)
    : socket_(std::move(socket)), ssl_(SSL_new(ctx)) {
  if (ssl_ == nullptr) throw std::runtime_error("OpenSSL could not allocate a TLS session");
  in_ = BIO_new(BIO_s_mem());
  out_bio_ = BIO_new(BIO_s_mem());
  if (in_ == nullptr || out_bio_ == nullptr) {
    BIO_free(in_);
    BIO_free(out_bio_);
    SSL_free(ssl_);
    throw std::runtime_error("OpenSSL could not allocate a memory BIO");
  }
  SSL_set_bio(ssl_, in_, out_bio_);
  SSL_set_accept_state(ssl_);
  if (!early.empty()) BIO_write(in_, early.data(), static_cast<int>(early.size()));
  // Reads happen only once the socket is readable; the socket itself never blocks.
  boost::system::error_code ignored;
  socket_.socket().non_blocking(true, ignored);
}

AgentTlsStream::~AgentTlsStream() { SSL_free(ssl_); }

AgentTlsStream::Step AgentTlsStream::classify(int r, boost::system::error_code& ec) {
  if (r > 0) {
    ec = {};
    return Step::done;
  }
  switch (SSL_get_error(ssl_, r)) {
    case SSL_ERROR_WANT_READ:
      return Step::want_input;
    case SSL_ERROR_ZERO_RETURN:
      ec = boost::asio::error::eof;  // the agent's close_notify: the end of the stream
      return Step::failed;
    default: {
      const unsigned long e = ERR_get_error();
      ec = e != 0 ? boost::system::error_code(static_cast<int>(e), boost::asio::error::get_ssl_category())
                  : boost::system::error_code(boost::asio::ssl::error::unspecified_system_error);
      return Step::failed;
    }
  }
}

bool AgentTlsStream::take_output() {
  const std::size_t pending = BIO_ctrl_pending(out_bio_);
  if (pending == 0) return false;
  const std::size_t had = out_.size();
  out_.resize(had + pending);
  const int got = BIO_read(out_bio_, out_.data() + had, static_cast<int>(pending));
  out_.resize(had + static_cast<std::size_t>(got > 0 ? got : 0));
  return !out_.empty();
}

// The engine asked for input, so what in_ holds is less than a record: reading on until
// it holds one whole record (or the socket has no more) gives it what it needs without
// waiting for the socket again. Never more: reading all the socket had (up to its receive
// buffer, 32 MiB here) into the BIO let an agent uploading fast to a slow upstream make
// the proxy hold that much per connection, with the io thread copying it meanwhile.
void AgentTlsStream::feed(std::size_t n) {
  BIO_write(in_, in_chunk_.data(), static_cast<int>(n));
  if (n < in_chunk_.size()) return;
  // A record and its header at most; it lives only for this call.
  std::array<char, 17 * 1024> more;
  while (BIO_ctrl_pending(in_) < more.size()) {
    boost::system::error_code ec;
    const std::size_t got = socket_.socket().read_some(boost::asio::buffer(more), ec);
    // would_block: all of it is in; an error or the end: the next read reports it.
    if (ec || got == 0) return;
    BIO_write(in_, more.data(), static_cast<int>(got));
    if (got < more.size()) return;
  }
}

void AgentTlsStream::trim() {
  if (BIO_ctrl_pending(in_) == 0 && oversized(in_)) {
    in_ = fresh_bio();
    SSL_set0_rbio(ssl_, in_);  // frees the old one
  }
  if (BIO_ctrl_pending(out_bio_) == 0 && oversized(out_bio_)) {
    out_bio_ = fresh_bio();
    SSL_set0_wbio(ssl_, out_bio_);
  }
  if (!writing_ && out_.capacity() > kKeptBio) std::string().swap(out_);
  if (!write_op_ && gather_.capacity() > kKeptBio) std::string().swap(gather_);
}

}  // namespace netbox::proxy
