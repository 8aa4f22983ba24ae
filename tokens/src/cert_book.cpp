#include "netbox/tokens/cert_book.hpp"

#include "book_file.hpp"

namespace netbox::tokens {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using book_file::fail;
using book_file::text_of;

CertEntry entry_of(const json& e, const fs::path& path, const std::string& at) {
  if (!e.is_object()) fail(path, at + ": expected an object");
  CertEntry c;
  c.cn = text_of(e, path, at, "cn", false);
  c.uri = text_of(e, path, at, "uri", false);
  c.agent = text_of(e, path, at, "agent", true);
  c.profile = text_of(e, path, at, "profile", false);
  if (c.cn.empty() == c.uri.empty()) fail(path, at + ": expected exactly one of \"cn\" and \"uri\", not empty");
  if (c.agent.empty()) fail(path, at + ".agent: empty");
  for (const auto& [key, value] : e.items())
    if (key != "cn" && key != "uri" && key != "agent" && key != "profile")
      fail(path, at + "." + key + ": unknown key (cn, uri, agent, profile)");
  return c;
}

}  // namespace

std::string CertSubject::text() const {
  if (!uris.empty()) return uris.front();
  return "CN=" + cn;
}

const CertEntry* CertBook::find(const CertSubject& subject) const {
  for (const auto& e : entries_)
    for (const auto& u : subject.uris)
      if (!e.uri.empty() && e.uri == u) return &e;
  if (subject.cn.empty()) return nullptr;
  for (const auto& e : entries_)
    if (!e.cn.empty() && e.cn == subject.cn) return &e;
  return nullptr;
}

CertBook load_cert_book(const fs::path& path) {
  const auto j = book_file::read_book_file(path, false, "whoever may write it can make up a client's identity");
  auto entries = book_file::entries_of<CertEntry>(*j, path, "certificates", entry_of);
  return CertBook(std::move(entries));
}

}  // namespace netbox::tokens
