#include "netbox/tls/certificate_authority.hpp"

#include "openssl_text.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

namespace netbox::tls {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::system_clock;
constexpr std::chrono::hours kCaLifetime{24 * 3653};

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using Bio = std::unique_ptr<BIO, BioFree>;

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(n));
}

std::string errno_text(const fs::path& p, const char* what) {
  return p.string() + ": " + what + ": " + std::strerror(errno);
}

// Writes a new file, refusing to follow a link or to replace anything already there.
void write_new_file(const fs::path& p, const std::string& bytes, mode_t mode) {
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) throw CaError(errno_text(p, "cannot create"));
  // The umask may have taken bits away; a CA certificate must stay readable by agents.
  bool ok = ::fchmod(fd, mode) == 0;
  std::size_t off = 0;
  while (ok && off < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) off += static_cast<std::size_t>(n);
  }
  ok = ::fsync(fd) == 0 && ok;
  int err = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(p.c_str());
    errno = err;
    throw CaError(errno_text(p, "cannot write"));
  }
}

// Reads a file of ours. With `secret`, the file must be ours and unreadable by anyone
// else: a CA key that another user can read is as good as published.
std::string read_checked(const fs::path& p, bool secret) {
  int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw CaError(errno_text(p, "cannot open"));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw CaError(errno_text(p, "cannot stat"));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw CaError(p.string() + ": not a regular file");
  }
  if (secret && st.st_uid != ::geteuid()) {
    ::close(fd);
    throw CaError(p.string() + ": owned by uid " + std::to_string(st.st_uid) + ", not by the user loading it (uid " +
                  std::to_string(::geteuid()) + "); refusing a CA key someone else controls");
  }
  if (secret && (st.st_mode & 077) != 0) {
    ::close(fd);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw CaError(p.string() + ": mode " + mode +
                  " lets other users read or change the CA key; refusing it (chmod 600 it, or make a new CA)");
  }
  std::string out;
  std::array<char, 4096> buf{};
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      throw CaError(errno_text(p, "cannot read"));
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<std::size_t>(n));
    if (out.size() > (1 << 20)) {
      ::close(fd);
      throw CaError(p.string() + ": larger than 1 MiB; not a CA file");
    }
  }
  ::close(fd);
  return out;
}

// The CA folder must not let anyone else swap its files.
void check_folder(const fs::path& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throw CaError(errno_text(dir, "cannot open the CA folder"));
  if (!S_ISDIR(st.st_mode)) throw CaError(dir.string() + ": not a folder");
  if (st.st_uid != ::geteuid() || (st.st_mode & 022) != 0)
    throw CaError(dir.string() + ": the CA folder must belong to uid " + std::to_string(::geteuid()) +
                  " and be writable by it alone");
}

std::string ca_common_name() {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  std::array<char, 16> day{};
  std::strftime(day.data(), day.size(), "%Y-%m-%d", &tm);
  std::string cn = std::string("netbox CA ") + host.data() + " " + day.data();
  return cn.size() > 64 ? cn.substr(0, 64) : cn;
}

}  // namespace

CertificateAuthority CertificateAuthority::create(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    // Missing parents too (a fresh /var/lib/netbox), readable by the owner alone.
    fs::path made;
    for (const auto& part : dir) {
      made /= part;
      if (::mkdir(made.c_str(), 0700) != 0 && errno != EEXIST)
        throw CaError(errno_text(made, "cannot create the CA folder"));
    }
  }
  check_folder(dir);
  for (const char* f : {"ca.key", "ca.crt"})
    if (fs::exists(dir / f, ec) || fs::is_symlink(dir / f, ec))
      throw CaError((dir / f).string() +
                    ": already exists; a CA is never replaced in place (agents and bundles trust the old one). "
                    "Remove the folder's ca.key and ca.crt first to make a new one");

  KeyHandle key(EVP_EC_gen("P-256"));
  if (!key) detail::fail("generating the CA key");
  const auto now = Clock::now();
  CertHandle cert = detail::new_certificate(now - std::chrono::hours(1), now + kCaLifetime);
  X509_NAME* name = X509_get_subject_name(cert.get());
  detail::set_common_name(name, ca_common_name());
  if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>("netbox"), -1, -1,
                                 0) != 1 ||
      X509_set_issuer_name(cert.get(), name) != 1 || X509_set_pubkey(cert.get(), key.get()) != 1)
    detail::fail("filling in the CA certificate");
  detail::add_extension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
  detail::add_extension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  detail::add_extension(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0) detail::fail("signing the CA certificate");

  Bio key_pem(BIO_new(BIO_s_mem()));
  if (!key_pem || PEM_write_bio_PrivateKey(key_pem.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
    detail::fail("encoding the CA key");
  CertificateAuthority ca(std::move(cert), std::move(key));
  write_new_file(dir / "ca.key", bio_text(key_pem.get()), 0600);
  try {
    write_new_file(dir / "ca.crt", ca.certificate_pem(), 0644);
  } catch (...) {
    ::unlink((dir / "ca.key").c_str());
    throw;
  }
  return ca;
}

CertificateAuthority CertificateAuthority::load(const fs::path& dir) {
  check_folder(dir);
  const fs::path key_path = dir / "ca.key";
  const fs::path cert_path = dir / "ca.crt";
  const std::string key_text = read_checked(key_path, true);
  const std::string cert_text = read_checked(cert_path, false);
  Bio kb(BIO_new_mem_buf(key_text.data(), static_cast<int>(key_text.size())));
  KeyHandle key(kb ? PEM_read_bio_PrivateKey(kb.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) detail::fail(key_path.string() + ": not a PEM private key (or an encrypted one)");
  Bio cb(BIO_new_mem_buf(cert_text.data(), static_cast<int>(cert_text.size())));
  CertHandle cert(cb ? PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!cert) detail::fail(cert_path.string() + ": not a PEM certificate");
  if (X509_check_ca(cert.get()) < 1) throw CaError(cert_path.string() + ": not a CA certificate (CA:true missing)");
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    throw CaError(key_path.string() + ": does not belong to " + cert_path.string());
  }
  if (X509_cmp_current_time(X509_get0_notBefore(cert.get())) > 0)
    throw CaError(cert_path.string() + ": not valid yet (is the clock right?)");
  if (X509_cmp_current_time(X509_get0_notAfter(cert.get())) < 0)
    throw CaError(cert_path.string() + ": expired; make a new CA");
  return CertificateAuthority(std::move(cert), std::move(key));
}

std::string CertificateAuthority::certificate_pem() const {
  Bio out(BIO_new(BIO_s_mem()));
  if (!out || PEM_write_bio_X509(out.get(), cert_.get()) != 1) detail::fail("encoding the CA certificate");
  return bio_text(out.get());
}

std::string CertificateAuthority::fingerprint_sha256() const {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  if (X509_digest(cert_.get(), EVP_sha256(), md.data(), &n) != 1) detail::fail("fingerprint");
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    if (i) out += ':';
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

std::string CertificateAuthority::subject() const {
  Bio out(BIO_new(BIO_s_mem()));
  if (!out || X509_NAME_print_ex(out.get(), X509_get_subject_name(cert_.get()), 0, XN_FLAG_RFC2253) < 0)
    detail::fail("printing the subject");
  return bio_text(out.get());
}

std::string CertificateAuthority::not_after() const {
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert_.get()), &tm) != 1) detail::fail("reading the expiry");
  std::array<char, 32> buf{};
  std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf.data();
}

}  // namespace netbox::tls
