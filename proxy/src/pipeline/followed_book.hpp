#pragma once
// A book file the proxy follows while it runs (the client-token book, the certificate
// book): read at start (a book that does not load stops the proxy), then read again when
// the file changes, looked at no more than once a second, by the connection that needs it.
// A book that can no longer be read is an empty one (every credential refused, loudly),
// never the last good one, so a revocation cannot be lost to a bad write. Each read bumps
// the book's generation, so what a connection took from one book can be checked again
// cheaply: while the generation is the same and no look is due, nothing has changed.
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace netbox::proxy {

template <class Book>
class FollowedBook {
 public:
  using Load = std::function<Book(const std::filesystem::path&)>;
  // `on_reload(ok, text)` after each later read: ok with `describe(book)`, or the error.
  using OnReload = std::function<void(bool ok, const std::string& text)>;
  using Describe = std::function<std::string(const Book&)>;

  FollowedBook(std::filesystem::path path, Load load, Describe describe, OnReload on_reload)
      : path_(std::move(path)), load_(std::move(load)), describe_(std::move(describe)), on_reload_(std::move(on_reload)) {
    ::stat(path_.c_str(), &seen_);
    book_ = std::make_shared<const Book>(load_(path_));
    checked_ = std::chrono::steady_clock::now().time_since_epoch().count();
  }

  struct Snapshot {
    std::shared_ptr<const Book> book;
    std::uint64_t generation = 0;
  };
  // The book as it is now (read again first if a look is due and the file changed).
  Snapshot snapshot() {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (!due(now)) return {book_, generation_.load()};
    checked_ = now.time_since_epoch().count();
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0 && same_file(st, seen_)) return {book_, generation_.load()};
    seen_ = st;
    try {
      book_ = std::make_shared<const Book>(load_(path_));
      if (on_reload_) on_reload_(true, describe_(*book_));
    } catch (const std::exception& e) {
      book_ = std::make_shared<const Book>();
      if (on_reload_) on_reload_(false, e.what());
    }
    return {book_, generation_.fetch_add(1) + 1};
  }
  std::shared_ptr<const Book> current() { return snapshot().book; }

  // Lock-free: whether a second has passed since the file was last looked at, and the
  // generation of the book as last read.
  bool due(std::chrono::steady_clock::time_point now) const {
    return now.time_since_epoch().count() - checked_.load(std::memory_order_relaxed) >=
           std::chrono::steady_clock::duration(std::chrono::seconds(1)).count();
  }
  std::uint64_t generation() const { return generation_.load(); }

 private:
  static bool same_file(const struct stat& a, const struct stat& b) {
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
           a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
  }

  const std::filesystem::path path_;
  Load load_;
  Describe describe_;
  OnReload on_reload_;
  std::mutex mu_;
  std::shared_ptr<const Book> book_;
  struct stat seen_ {};
  std::atomic<std::uint64_t> generation_{0};                // bumped each time book_ is replaced
  std::atomic<std::chrono::steady_clock::rep> checked_{0};  // steady ticks: read without the lock
};

}  // namespace netbox::proxy
