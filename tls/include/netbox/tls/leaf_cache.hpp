#pragma once
// Minted leaves by host, least recently used first out, so a proxy inspecting many hosts
// holds a bounded number of certificates. Shared by the proxy's io threads: a lookup
// takes a mutex for a map access only; minting happens outside it, and two threads
// minting the same host at once both succeed (one result is kept).
#include "netbox/tls/leaf_certificate.hpp"

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace netbox::tls {

class LeafCache {
 public:
  LeafCache(const CertificateAuthority& ca, std::size_t capacity);
  // The leaf for `host`, minted now if absent or if it expires within a day (a leaf
  // handed out must outlive any connection that uses it).
  std::shared_ptr<const Leaf> get(const std::string& host);
  std::size_t size() const;
  std::size_t minted() const;  // leaves minted since construction, for metrics and tests

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const Leaf>>;
  LeafMinter minter_;
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  std::size_t minted_ = 0;
};

}  // namespace netbox::tls
