#include "netbox/export/exporter.hpp"

#include "jsonl_sink.hpp"
#include "otlp_sink.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <thread>

namespace netbox::siem {

namespace asio = boost::asio;

struct Exporter::Impl {
  ExporterOptions options;
  asio::io_context ioc{1};
  std::vector<std::unique_ptr<Sink>> sinks;
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  std::atomic<std::size_t> queued{0};
  // Set by the destructor once its wait is over: what is still queued is counted dropped
  // unread, so shutdown never waits for a queue of records to be mapped and written.
  std::atomic<bool> stopping{false};
  std::string finding_prefix;     // random per process, so finding uids differ across proxies and restarts
  std::uint64_t findings = 0;     // export thread only
  std::thread thread;

  std::string next_finding_uid() { return finding_prefix + "-" + std::to_string(++findings); }

  // On the caller's thread: take a slot in the queue, or count the record dropped.
  bool admit() {
    if (queued.fetch_add(1) < options.queue_capacity) return true;
    queued.fetch_sub(1);
    for (auto& s : sinks) ++s->dropped;
    return false;
  }

  // On the export thread: `make` builds the records (the OCSF mapping), here rather than
  // on the proxy's threads. A record that cannot be built is counted dropped.
  template <typename Make>
  void deliver(Make make) {
    if (stopping.load()) {
      for (auto& s : sinks) ++s->dropped;
      queued.fetch_sub(1);
      return;
    }
    try {
      for (const auto& r : make())
        if (!r.empty())
          for (auto& s : sinks) s->put(r);
    } catch (const std::exception&) {
      for (auto& s : sinks) ++s->dropped;
    }
    if (queued.fetch_sub(1) == 1)
      for (auto& s : sinks) s->flush();
  }

  bool idle() const {
    if (queued.load() != 0) return false;
    for (const auto& s : sinks)
      if (!s->idle) return false;
    return true;
  }
};

Exporter::Exporter(std::vector<SinkSpec> sinks, ExporterOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  std::random_device rd;
  char prefix[17];
  std::snprintf(prefix, sizeof prefix, "%08x%08x", rd(), rd());
  impl_->finding_prefix = prefix;
  for (auto& spec : sinks) {
    if (spec.kind == SinkSpec::Kind::ocsf_jsonl) {
      try {
        impl_->sinks.push_back(std::make_unique<JsonlSink>(spec.text, spec.path));
      } catch (const std::exception& e) {
        throw std::runtime_error("'" + spec.text + "': cannot open " + e.what());
      }
    } else {
      impl_->sinks.push_back(std::make_unique<OtlpSink>(impl_->ioc, std::move(spec), impl_->options));
    }
  }
  impl_->thread = std::thread([this] { impl_->ioc.run(); });
}

Exporter::~Exporter() {
  const auto deadline = std::chrono::steady_clock::now() + impl_->options.shutdown_wait;
  while (!impl_->idle() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // The stop below runs behind every record still queued; each of those now only counts
  // itself dropped, so the join waits for one record at most.
  impl_->stopping = true;
  asio::post(impl_->ioc, [impl = impl_.get()] {
    for (auto& s : impl->sinks) {
      s->flush();
      s->stop();
    }
  });
  impl_->work.reset();
  // Stopped sinks leave only cancelled operations, which complete at once.
  impl_->thread.join();
}

void Exporter::row(const audit::AuditRecord& row) {
  if (!impl_->admit()) return;
  asio::post(impl_->ioc, [impl = impl_.get(), r = row] {
    impl->deliver([&] { return ocsf_records(r, impl->options.product, impl->next_finding_uid()); });
  });
}

void Exporter::event(const audit::Event& event) {
  if (event.agent.empty()) return;  // netbox's own events are not exported
  if (!impl_->admit()) return;
  asio::post(impl_->ioc, [impl = impl_.get(), e = event] {
    impl->deliver([&] { return std::vector<nlohmann::json>{ocsf_event(e, impl->options.product, impl->next_finding_uid())}; });
  });
}

void Exporter::reopen() {
  asio::post(impl_->ioc, [impl = impl_.get()] {
    for (auto& s : impl->sinks) s->reopen();
  });
}

std::vector<SinkStats> Exporter::stats() const {
  std::vector<SinkStats> out;
  for (const auto& s : impl_->sinks) out.push_back({s->label, s->exported.load(), s->dropped.load()});
  return out;
}

}  // namespace netbox::siem
