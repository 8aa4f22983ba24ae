// B5: how many request rows per second the audit store commits when producers push as fast
// as they can, the way the proxy does (insert at decision time, complete at close).
// A full queue is back-pressure, not loss: the producer yields and retries, and the retries
// are counted. Afterwards the row count must equal the rows produced, and integrity_check ok.
// Usage: audit_writer_bench DB ROWS [PRODUCERS]
#include "bench_record.hpp"
#include "netbox/audit/writer.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

using netbox::bench::sample_record;

std::string query_text(sqlite3* db, const char* sql) {
  sqlite3_stmt* st = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(st, 0);
    out = t ? reinterpret_cast<const char*>(t) : "";
  }
  sqlite3_finalize(st);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: audit_writer_bench DB ROWS [PRODUCERS]\n");
    return 2;
  }
  const std::string db_path = argv[1];
  const std::uint64_t rows = std::strtoull(argv[2], nullptr, 10);
  const unsigned producers = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 2;
  if (rows == 0 || producers == 0) {
    std::fprintf(stderr, "audit_writer_bench: ROWS and PRODUCERS must be positive\n");
    return 2;
  }

  netbox::audit::WriterOptions opts;
  opts.db_path = db_path;
  std::atomic<std::uint64_t> retries{0};
  std::atomic<bool> done{false};
  std::size_t max_depth = 0;
  double seconds = 0;
  netbox::audit::WriterStats final_stats;
  {
    netbox::audit::Writer writer(opts);
    auto t0 = std::chrono::steady_clock::now();
    std::thread sampler([&] {
      while (!done.load()) {
        max_depth = std::max(max_depth, writer.stats().queue_depth);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
    std::vector<std::thread> threads;
    for (unsigned p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
        for (std::uint64_t i = p; i < rows; i += producers) {
          netbox::audit::RowHandle h = netbox::audit::kNoRow;
          while ((h = writer.insert(sample_record(i))) == netbox::audit::kNoRow) {
            retries.fetch_add(1, std::memory_order_relaxed);
            if (std::chrono::steady_clock::now() > deadline) return;
            std::this_thread::yield();
          }
          netbox::audit::Completion c;
          c.status = 200;
          c.bytes_down = 100;
          c.duration_ms = 1;
          while (!writer.complete(h, c)) {
            retries.fetch_add(1, std::memory_order_relaxed);
            if (std::chrono::steady_clock::now() > deadline) return;
            std::this_thread::yield();
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    writer.flush();
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    done.store(true);
    sampler.join();
    final_stats = writer.stats();
  }

  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::fprintf(stderr, "audit_writer_bench: cannot open %s\n", db_path.c_str());
    return 1;
  }
  const std::uint64_t counted = std::strtoull(query_text(db, "SELECT count(*) FROM requests").c_str(), nullptr, 10);
  const std::uint64_t completed =
      std::strtoull(query_text(db, "SELECT count(*) FROM requests WHERE status = 200").c_str(), nullptr, 10);
  const std::string integrity = query_text(db, "PRAGMA integrity_check");
  sqlite3_close(db);

  std::printf(
      "{\"rows\":%llu,\"counted\":%llu,\"completed\":%llu,\"seconds\":%.6f,\"rows_per_s\":%.1f,"
      "\"max_queue_depth\":%zu,\"queue_capacity\":%zu,\"full_retries\":%llu,\"batches\":%llu,"
      "\"write_errors\":%llu,\"integrity\":\"%s\"}\n",
      static_cast<unsigned long long>(rows), static_cast<unsigned long long>(counted),
      static_cast<unsigned long long>(completed), seconds, static_cast<double>(rows) / seconds, max_depth,
      opts.queue_capacity, static_cast<unsigned long long>(retries.load()),
      static_cast<unsigned long long>(final_stats.batches), static_cast<unsigned long long>(final_stats.write_errors),
      integrity.c_str());
  return counted == rows && completed == rows && integrity == "ok" ? 0 : 1;
}
