// B5 against PostgreSQL: request rows per second one writer (one proxy's) commits to a local
// server when producers push as fast as they can (insert at decision time, complete at
// close), rows lost (the server's count against the rows produced), and the delay from
// enqueue to commit. The delay is read without touching the writer's batching: a sampler
// records every 2 ms how many rows were queued and how many committed; row k's delay is
// when the committed count reached k minus when the queued count did.
// With --export SINK (issue 26's "the same with the export on"), every completed row is also
// handed to a SIEM exporter (`--export`'s, export/) as the proxy hands it (export_row, when
// the row completes), and the exporter's exported and dropped counts are printed: the
// export never holds a producer, so a full queue is drops, not a slower writer.
// Usage: audit_pg_bench ROWS [PRODUCERS] [--export SINK]   (starts its own server, fsync on,
// and removes it)
#include "bench_record.hpp"
#include "netbox/audit/writer.hpp"
#include "netbox/export/exporter.hpp"
#include "support/postgres_server.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using Steady = std::chrono::steady_clock;

using netbox::bench::sample_record;

std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

struct Sample {
  Steady::time_point at;
  std::uint64_t queued;
  std::uint64_t committed;
};

// The time the series first reached `k` (linear in the samples; they are few thousand).
Steady::time_point reached(const std::vector<Sample>& s, std::uint64_t k, bool committed) {
  for (const auto& x : s)
    if ((committed ? x.committed : x.queued) >= k) return x.at;
  return s.back().at;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string export_sink;
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i] == "--export" && i + 1 < args.size()) {
      export_sink = args[i + 1];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
      break;
    }
  if (args.empty() || args.size() > 2) {
    std::fprintf(stderr, "usage: audit_pg_bench ROWS [PRODUCERS] [--export SINK]\n");
    return 2;
  }
  const std::uint64_t rows = std::strtoull(args[0].c_str(), nullptr, 10);
  const unsigned producers = args.size() > 1 ? static_cast<unsigned>(std::atoi(args[1].c_str())) : 2;
  if (rows == 0 || producers == 0) return 2;
  // Made before the clock starts, as the proxy makes it at start-up; destroyed (drained)
  // after the writer's flush, outside the measured time: the proxy's rate is what its
  // producers and writer do while exporting, not how long the last records take to leave.
  std::unique_ptr<netbox::siem::Exporter> exporter;
  if (!export_sink.empty())
    exporter = std::make_unique<netbox::siem::Exporter>(
        std::vector<netbox::siem::SinkSpec>{netbox::siem::parse_sink(export_sink)}, netbox::siem::ExporterOptions{});
  netbox::test::PostgresServer server(/*durable=*/true);
  const std::string url = server.create_database("bench");
  const std::string load_before = loadavg();

  netbox::audit::WriterOptions opts;
  opts.db_path = url;
  std::atomic<std::uint64_t> queued{0};
  std::atomic<bool> done{false};
  std::vector<Sample> samples;
  double seconds = 0;
  netbox::audit::WriterStats final_stats;
  {
    netbox::audit::Writer writer(opts);
    const auto t0 = Steady::now();
    std::thread sampler([&] {
      while (!done.load()) {
        samples.push_back({Steady::now(), queued.load(), writer.stats().rows_written});
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
    std::vector<std::thread> threads;
    for (unsigned p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        for (std::uint64_t i = p; i < rows; i += producers) {
          // A full queue is back pressure: wait for room as the proxy's doors do (when_room,
          // proxy/src/pipeline/audit_room.hpp), asleep: a producer spinning on has_room() took
          // a core's share from the writer and the server on this 2-core machine.
          while (!writer.has_room()) {
            std::promise<void> room;
            writer.when_room([&room] { room.set_value(); });
            room.get_future().wait();
          }
          // With the export on, the row the proxy still holds when it completes: built once
          // more here (the proxy has it in hand), so the export's cost measured is an upper bound.
          std::optional<netbox::audit::AuditRecord> done_row;
          if (exporter) done_row = sample_record(i);
          netbox::audit::RowHandle h = writer.insert(sample_record(i));
          if (h == netbox::audit::kNoRow) continue;  // never while the store works: counted as lost below
          queued.fetch_add(1);
          netbox::audit::Completion c;
          c.status = 200;
          c.bytes_down = 100;
          c.duration_ms = 1;
          writer.complete(h, c);
          if (done_row) {
            done_row->status = c.status;
            done_row->bytes_down = c.bytes_down;
            done_row->duration_ms = c.duration_ms;
            exporter->row(*done_row);
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    writer.flush();
    seconds = std::chrono::duration<double>(Steady::now() - t0).count();
    samples.push_back({Steady::now(), queued.load(), writer.stats().rows_written});
    done.store(true);
    sampler.join();
    final_stats = writer.stats();
  }
  // What the export did with the rows: written or dropped, once it has handled them all
  // (bounded wait; the seconds it took past the writer's end are printed, not counted).
  std::uint64_t exported = 0, export_dropped = 0;
  double export_tail_s = 0;
  if (exporter) {
    const auto t_end = Steady::now();
    for (int i = 0; i < 6000 && exported + export_dropped < rows; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      const auto st = exporter->stats();
      exported = st.empty() ? 0 : st[0].exported;
      export_dropped = st.empty() ? 0 : st[0].dropped;
    }
    export_tail_s = std::chrono::duration<double>(Steady::now() - t_end).count();
    exporter.reset();
  }
  const std::string load_after = loadavg();

  std::vector<double> delays;
  for (std::uint64_t k = 1; k <= rows; k += std::max<std::uint64_t>(1, rows / 2000))
    delays.push_back(std::chrono::duration<double, std::milli>(reached(samples, k, true) - reached(samples, k, false)).count());
  std::sort(delays.begin(), delays.end());
  const auto pct = [&](double p) { return delays[std::min(delays.size() - 1, static_cast<std::size_t>(p * static_cast<double>(delays.size())))]; };

  const std::uint64_t counted = std::stoull(server.query_column("bench", "SELECT count(*) FROM requests")[0]);
  const std::uint64_t completed =
      std::stoull(server.query_column("bench", "SELECT count(*) FROM requests WHERE status = 200")[0]);
  const std::uint64_t distinct = std::stoull(server.query_column("bench", "SELECT count(DISTINCT id) FROM requests")[0]);
  // On-disk size per row (heap, indexes, TOAST) of the request partitions and of the audit
  // chain's links: docs/fleet.md's arithmetic.
  const double request_bytes = std::stod(server.query_column(
      "bench", "SELECT COALESCE(sum(pg_total_relation_size(inhrelid)), 0) FROM pg_inherits "
               "WHERE inhparent = 'requests'::regclass")[0]);
  const double chain_bytes = std::stod(server.query_column(
      "bench", "SELECT pg_total_relation_size('audit_chain') + pg_total_relation_size('audit_chain_batches')")[0]);
  std::printf(
      "{\"rows\":%llu,\"counted\":%llu,\"completed\":%llu,\"distinct_ids\":%llu,\"lost\":%llu,\"seconds\":%.3f,"
      "\"rows_per_s\":%.1f,\"enqueue_to_commit_ms_p50\":%.1f,\"enqueue_to_commit_ms_p99\":%.1f,\"batches\":%llu,"
      "\"write_errors\":%llu,\"request_bytes_per_row\":%.0f,\"chain_bytes_per_row\":%.0f,"
      "\"export\":\"%s\",\"exported\":%llu,\"export_dropped\":%llu,\"export_tail_s\":%.3f,"
      "\"loadavg_before\":\"%s\",\"loadavg_after\":\"%s\"}\n",
      static_cast<unsigned long long>(rows), static_cast<unsigned long long>(counted),
      static_cast<unsigned long long>(completed), static_cast<unsigned long long>(distinct),
      static_cast<unsigned long long>(rows > counted ? rows - counted : 0), seconds,
      static_cast<double>(counted) / seconds, pct(0.5), pct(0.99), static_cast<unsigned long long>(final_stats.batches),
      static_cast<unsigned long long>(final_stats.write_errors), request_bytes / static_cast<double>(rows),
      chain_bytes / static_cast<double>(rows), export_sink.empty() ? "off" : export_sink.c_str(),
      static_cast<unsigned long long>(exported), static_cast<unsigned long long>(export_dropped), export_tail_s,
      load_before.c_str(), load_after.c_str());
  return counted == rows && completed == rows && distinct == rows ? 0 : 1;
}
