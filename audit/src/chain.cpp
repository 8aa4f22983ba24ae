#include "chain.hpp"

#include "pg.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <tuple>
#include <stdexcept>

namespace netbox::audit::detail {
namespace {

constexpr const char* kRowV1 = "netbox-audit-row-v1";
constexpr const char* kRowV2 = "netbox-audit-row-v2";

// Every encoding a batch member can name, by its index (encode_members' table byte), so a
// member keeps the encoding it was written with. 0..2: the columns as schema version 8 has
// them (row tag v1). 3: requests with the process that opened the connection (schema 10's
// client_pid, client_exe, client_argv), row tag v2, since schema version 11. A column added
// later is not covered until it is named in a new entry with a new row tag; the columns of
// an older entry of a table are a prefix of the newer one's (verify reads the newest).
constexpr ChainedTable kTables[] = {
    {"requests",
     "id, ts, agent, client_addr, kind, method, host, port, path, resolved_addr, decision, rule, reason, status, "
     "bytes_up, bytes_down, duration_ms, error, count, parent_id, proxy_id",
     "ts", "ts", kRowV1},
    {"events", "id, ts, kind, message, detail, count, proxy_id", "ts", "ts", kRowV1},
    {"agents",
     "id, name, pid, command_line, policy_digest, address, started, ended, exit_status, resource_usage, sandbox, "
     "proxy_id",
     "ended", "started", kRowV1},
    {"requests",
     "id, ts, agent, client_addr, kind, method, host, port, path, resolved_addr, decision, rule, reason, status, "
     "bytes_up, bytes_down, duration_ms, error, count, parent_id, proxy_id, client_pid, client_exe, client_argv",
     "ts", "ts", kRowV2},
};

// What writers encode now and verify reads rows with: the newest entry of each table.
constexpr const ChainedTable* kCurrent[] = {&kTables[3], &kTables[1], &kTables[2]};

int column_count(const ChainedTable& t) {
  int n = 1;
  for (const char* c = t.columns; *c; ++c) n += *c == ',';
  return n;
}

int column_index(const ChainedTable& t, std::string_view name) {
  std::string_view cols = t.columns;
  int i = 0;
  while (!cols.empty()) {
    const auto comma = cols.find(',');
    std::string_view c = cols.substr(0, comma);
    while (!c.empty() && c.front() == ' ') c.remove_prefix(1);
    if (c == name) return i;
    if (comma == std::string_view::npos) break;
    cols.remove_prefix(comma + 1);
    ++i;
  }
  throw std::logic_error("no column " + std::string(name));
}

void put_length(std::string& out, std::size_t n) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((n >> shift) & 0xff);
}

void put_text(std::string& out, std::string_view text) {
  put_length(out, text.size());
  out += text;
}

// The digest fetched once and one context per thread: EVP_Digest with EVP_sha256() looks the
// algorithm up in OpenSSL 3's provider tables on every call, a tenth of the writer's chain work.
Sha256 sha256(std::string_view data) {
  struct Ctx {
    EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ~Ctx() {
      EVP_MD_CTX_free(ctx);
      EVP_MD_free(md);
    }
  };
  thread_local Ctx c;
  Sha256 out{};
  unsigned int n = 0;
  if (!c.md || !c.ctx || EVP_DigestInit_ex2(c.ctx, c.md, nullptr) != 1 ||
      EVP_DigestUpdate(c.ctx, data.data(), data.size()) != 1 || EVP_DigestFinal_ex(c.ctx, out.data(), &n) != 1 ||
      n != out.size())
    throw std::runtime_error("SHA-256 failed");
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "" for text that is not hex (a hash edited into something else then matches nothing).
std::string from_hex(std::string_view hex) {
  std::string out;
  if (hex.size() % 2) return out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = hex_digit(hex[i]), lo = hex_digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return {};
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

Pkey read_key(const std::filesystem::path& file, std::string_view flag, bool private_key) {
  std::FILE* f = std::fopen(file.c_str(), "r");
  if (!f) throw std::runtime_error(std::string(flag) + " " + file.string() + ": cannot open");
  EVP_PKEY* k = private_key ? PEM_read_PrivateKey(f, nullptr, nullptr, nullptr) : PEM_read_PUBKEY(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  Pkey key(k);
  if (!key || EVP_PKEY_id(key.get()) != EVP_PKEY_ED25519)
    throw std::runtime_error(std::string(flag) + " " + file.string() + ": not an Ed25519 " +
                             (private_key ? "private key in PEM (openssl genpkey -algorithm ed25519 -out FILE)"
                                          : "public key in PEM (openssl pkey -in PRIVATE -pubout -out FILE)"));
  return key;
}

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

}  // namespace

std::span<const ChainedTable* const> chained_tables() { return kCurrent; }

const ChainedTable* chained_table(std::string_view name) {
  for (const auto* t : kCurrent)
    if (name == t->name) return t;
  return nullptr;
}

const ChainedTable* v1_table(std::string_view name) {
  for (const auto& t : kTables)
    if (name == t.name && t.tag == std::string_view(kRowV1)) return &t;
  return nullptr;
}

std::string to_hex(std::span<const unsigned char> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

namespace {
// The writer encodes a row for every request; the buffer stays with the thread between
// rows (taken by a RowEncoding, given back by its destructor), so encoding allocates only
// for a row longer than any before it. Kept only up to a bound: one huge row must not
// pin its memory for the thread's life.
thread_local std::string spare_encoding;
constexpr std::size_t kSpareEncodingMax = 64 * 1024;
}  // namespace

RowEncoding::RowEncoding(const ChainedTable& table) : table_(&table), data_(std::move(spare_encoding)) {
  data_.clear();
  data_.reserve(512);
  data_ = table.tag;
  data_ += '\0';
  data_ += table.name;
  data_ += '\0';
}

RowEncoding::~RowEncoding() {
  if (data_.capacity() <= kSpareEncodingMax && data_.capacity() > spare_encoding.capacity())
    spare_encoding = std::move(data_);
}

RowEncoding& RowEncoding::null() {
  ++given_;
  data_ += 'N';
  return *this;
}

RowEncoding& RowEncoding::text(std::string_view value) {
  if (value.empty()) return null();
  ++given_;
  data_ += 'V';
  const std::size_t at = data_.size();
  put_length(data_, 0);
  append_pg_text(data_, value);
  const std::size_t n = data_.size() - at - 4;
  for (int i = 0; i < 4; ++i) data_[at + i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
  return *this;
}

RowEncoding& RowEncoding::integer(std::int64_t value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  ++given_;
  data_ += 'V';
  put_text(data_, std::string_view(digits, static_cast<std::size_t>(end - digits)));
  return *this;
}

RowEncoding& RowEncoding::integer(std::optional<std::int64_t> value) {
  return value ? integer(*value) : null();
}

Sha256 RowEncoding::sha() const {
  if (given_ != column_count(*table_))
    throw std::logic_error(std::string("audit chain: ") + table_->name + " row encoded with " + std::to_string(given_) +
                           " columns");
  return sha256(data_);
}

Sha256 row_sha(const ChainedTable& table, const Row& row) {
  RowEncoding e(table);
  const int n = column_count(table);  // an older encoding's columns: a prefix of the row's
  // Integers come back as their decimal text from either store: encoded as text alike.
  for (int i = 0; i < n; ++i) row.is_null(i) ? e.null() : e.text(row.column_text(i));
  return e.sha();
}

std::string row_digest(const ChainedTable& table, const Row& row) { return to_hex(row_sha(table, row)); }

std::string link_ts(const ChainedTable& table, const Row& row) {
  for (const char* column : {table.prune_column, table.open_column})
    if (const int i = column_index(table, column); !row.is_null(i)) return row.column_text(i);
  return "~";
}

namespace {

// The link's hash from the previous hash and the row's digest as bytes.
Sha256 link_sha(std::string_view previous, const Link& l, std::string_view digest) {
  thread_local std::string data;
  data = "netbox-audit-link-v1";
  data += '\0';
  data += previous;
  put_text(data, l.proxy_id);
  put_text(data, std::to_string(l.seq));
  put_text(data, l.table);
  put_text(data, std::to_string(l.row_id));
  put_text(data, l.ts);
  data += digest;
  return sha256(data);
}

std::string_view bytes(const Sha256& h) { return {reinterpret_cast<const char*>(h.data()), h.size()}; }

// A batch link's hash from the previous hash and its members as bytes.
Sha256 batch_sha(std::string_view previous, const std::string& proxy_id, std::int64_t seq, std::string_view members) {
  thread_local std::string data;
  data = "netbox-audit-batch-link-v2";
  data += '\0';
  data += previous;
  put_text(data, proxy_id);
  put_text(data, std::to_string(seq));
  data += members;
  return sha256(data);
}

std::uint64_t get_number(std::string_view& in, int size) {
  std::uint64_t n = 0;
  for (int i = 0; i < size; ++i) n = n << 8 | static_cast<unsigned char>(in[static_cast<std::size_t>(i)]);
  in.remove_prefix(static_cast<std::size_t>(size));
  return n;
}

}  // namespace

// Per member: table index (1 byte), id (8 bytes), ts length (1 byte) and ts, digest (32 bytes).
std::string encode_members(std::span<const Member* const> members) {
  std::string out;
  out.reserve(members.size() * (1 + 8 + 1 + 24 + 32));
  for (const Member* m : members) {
    out += static_cast<char>(m->table - kTables);
    for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((static_cast<std::uint64_t>(m->id) >> shift) & 0xff);
    const std::string_view ts = std::string_view(m->ts).substr(0, 255);  // a stored timestamp: 24 bytes
    out += static_cast<char>(ts.size());
    out += ts;
    out += bytes(m->digest);
  }
  return out;
}

std::optional<std::vector<Member>> decode_members(std::string_view in) {
  std::vector<Member> out;
  while (!in.empty()) {
    if (in.size() < 1 + 8 + 1) return std::nullopt;
    const auto table = static_cast<std::size_t>(get_number(in, 1));
    const auto id = static_cast<std::int64_t>(get_number(in, 8));
    const auto ts_size = static_cast<std::size_t>(get_number(in, 1));
    if (table >= std::size(kTables) || in.size() < ts_size + 32) return std::nullopt;
    Member m{&kTables[table], id, std::string(in.substr(0, ts_size)), {}};
    in.remove_prefix(ts_size);
    std::copy_n(in.begin(), 32, m.digest.begin());
    in.remove_prefix(32);
    out.push_back(std::move(m));
  }
  return out;
}

std::string batch_hash(std::string_view previous, const Link& l) {
  return to_hex(batch_sha(from_hex(previous), l.proxy_id, l.seq, l.member_bytes));
}

std::string link_hash(std::string_view previous, const Link& l) {
  return to_hex(link_sha(from_hex(previous), l, from_hex(l.digest)));
}

std::string batch_message(const Link& last) {
  std::string m = "netbox-audit-batch-v1";
  m += '\0';
  m += last.proxy_id;
  m += '\0';
  m += std::to_string(last.seq);
  m += '\0';
  m += last.hash;
  return m;
}

struct Signer::Key {
  Pkey pkey;
};

Signer::Signer(const std::filesystem::path& key_file, std::string_view flag)
    : key_(std::make_unique<Key>(Key{read_key(key_file, flag, true)})) {}
Signer::~Signer() = default;

std::string Signer::sign(std::string_view message) const {
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  unsigned char sig[64];
  std::size_t n = sizeof sig;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_->pkey.get()) != 1 ||
      EVP_DigestSign(ctx.get(), sig, &n, reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1)
    throw std::runtime_error("Ed25519 signing failed");
  return to_hex(std::span<const unsigned char>(sig, n));
}

struct SignatureCheck::Key {
  Pkey pkey;
};

SignatureCheck::SignatureCheck(const std::filesystem::path& key_file, std::string_view flag)
    : key_(std::make_unique<Key>(Key{read_key(key_file, flag, false)})) {}
SignatureCheck::~SignatureCheck() = default;

bool SignatureCheck::valid(std::string_view message, std::string_view signature_hex) const {
  const std::string sig = from_hex(signature_hex);
  if (sig.size() != 64) return false;
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key_->pkey.get()) == 1 &&
         EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                          reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
}

void seal(ChainStore& store, const std::string& proxy_id, const std::vector<Touched>& touched, const Signer* signer) {
  if (touched.empty()) return;
  // One member per row, at its first touch; its content is the row as the batch leaves it.
  // Sorted indices rather than a map: no allocation per row (a row is touched twice only
  // when completed in the batch that wrote it, and stable_sort keeps touches in order).
  std::vector<std::uint32_t> by_row(touched.size());
  for (std::uint32_t i = 0; i < by_row.size(); ++i) by_row[i] = i;
  std::stable_sort(by_row.begin(), by_row.end(), [&](std::uint32_t a, std::uint32_t b) {
    return std::tie(touched[a].table, touched[a].id) < std::tie(touched[b].table, touched[b].id);
  });
  std::vector<std::pair<std::uint32_t, std::uint32_t>> first_last;  // per row: first touch, last touch
  first_last.reserve(by_row.size());
  for (std::size_t i = 0; i < by_row.size(); ++i) {
    const Touched& t = touched[by_row[i]];
    if (i > 0 && touched[by_row[i - 1]].table == t.table && touched[by_row[i - 1]].id == t.id)
      first_last.back().second = by_row[i];
    else
      first_last.emplace_back(by_row[i], by_row[i]);
  }
  std::sort(first_last.begin(), first_last.end());
  std::vector<const Touched*> order;
  order.reserve(first_last.size());
  std::string_view newest;
  for (const auto& [first, last] : first_last) {
    order.push_back(&touched[last]);
    if (touched[last].ts > newest) newest = touched[last].ts;
  }
  const std::string members = encode_members(order);
  const ChainStore::Head head = store.lock_head(proxy_id);
  const std::int64_t seq = head.seq + 1;
  const Sha256 hash = batch_sha(from_hex(head.hash), proxy_id, seq, members);
  const std::string hash_hex = to_hex(hash);
  std::string signature;
  if (signer) {
    Link last{proxy_id, seq, {}, 0, {}, {}, hash_hex, {}, {}, {}};
    signature = from_hex(signer->sign(batch_message(last)));
  }
  store.append({proxy_id, seq, newest, members, bytes(hash), signature});
}

}  // namespace netbox::audit::detail
