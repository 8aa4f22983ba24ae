#include "otlp_sink.hpp"

#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <iostream>

namespace netbox::siem {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

OtlpSink::OtlpSink(asio::io_context& ioc, SinkSpec spec, const ExporterOptions& options)
    : Sink(spec.text), ioc_(ioc), spec_(std::move(spec)), options_(options),
      resource_{options.product.version, options.product.proxy_id}, resolver_(ioc), backoff_(ioc) {}

void OtlpSink::put(const nlohmann::json& record) {
  if (stopped_) return;
  if (pending_.size() >= options_.otlp_buffer) {
    ++dropped;
    return;
  }
  pending_.push_back(record);
  idle = false;
  if (!busy_) send_next();
}

void OtlpSink::send_next() {
  busy_ = false;
  if (stopped_ || pending_.empty()) {
    idle = true;
    return;
  }
  busy_ = true;
  idle = false;
  batch_.clear();
  const auto n = std::min(pending_.size(), options_.otlp_batch);
  std::move(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n), std::back_inserter(batch_));
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
  batch_size_ = n;
  request_ = {};
  request_.method(http::verb::post);
  request_.target(spec_.target);
  request_.version(11);
  request_.set(http::field::host, spec_.host.find(':') != std::string::npos ? "[" + spec_.host + "]" : spec_.host);
  request_.set(http::field::content_type, "application/json");
  request_.set(http::field::user_agent, "netbox");
  request_.keep_alive(false);
  request_.body() = otlp_logs_request(batch_, resource_);
  batch_.clear();  // the body holds them now
  request_.prepare_payload();
  attempts_ = 0;
  attempt();
}

void OtlpSink::attempt() {
  ++attempts_;
  stream_.emplace(ioc_);
  stream_->expires_after(options_.otlp_timeout);  // the resolve, connect, write and read together
  resolver_.async_resolve(spec_.host, std::to_string(spec_.port),
                          [this](const boost::system::error_code& ec, asio::ip::tcp::resolver::results_type r) {
                            on_resolved(ec, r);
                          });
}

void OtlpSink::on_resolved(const boost::system::error_code& ec, const asio::ip::tcp::resolver::results_type& results) {
  if (stopped_) return;
  if (ec) return failed("cannot resolve " + spec_.host + ": " + ec.message());
  stream_->async_connect(results, [this](const boost::system::error_code& e, const asio::ip::tcp::endpoint&) {
    on_connected(e);
  });
}

void OtlpSink::on_connected(const boost::system::error_code& ec) {
  if (stopped_) return;
  if (ec) return failed("cannot connect: " + ec.message());
  http::async_write(*stream_, request_, [this](const boost::system::error_code& e, std::size_t) { on_written(e); });
}

void OtlpSink::on_written(const boost::system::error_code& ec) {
  if (stopped_) return;
  if (ec) return failed("cannot send: " + ec.message());
  buffer_.emplace(kAnswerBufferLimit);
  answer_.emplace();
  answer_->header_limit(kAnswerHeadLimit);
  answer_->body_limit(kAnswerBodyLimit);
  http::async_read(*stream_, *buffer_, *answer_, [this](const boost::system::error_code& e, std::size_t) { on_read(e); });
}

void OtlpSink::on_read(const boost::system::error_code& ec) {
  if (stopped_) return;
  if (ec) return failed("no answer: " + ec.message());
  const auto& answer = answer_->get();
  if (http::to_status_class(answer.result()) != http::status_class::successful)
    return failed("answered " + std::to_string(answer.result_int()));
  end_attempt();
  exported += batch_size_;
  said_failing_ = false;
  send_next();
}

// The connection, the answer and its buffer go with the attempt (the body is not used).
void OtlpSink::end_attempt() {
  stream_.reset();
  answer_.reset();
  buffer_.reset();
}

void OtlpSink::failed(const std::string& why) {
  end_attempt();
  if (!said_failing_) {
    said_failing_ = true;
    std::cerr << "netbox: export " << label << ": " << why << "; retrying, records are dropped past the buffer\n";
  }
  if (attempts_ >= options_.otlp_attempts) {
    dropped += batch_size_;  // bounded: given up after the retries, counted
    return send_next();
  }
  auto delay = options_.otlp_backoff_first * (1u << std::min(attempts_ - 1, 10u));
  backoff_.expires_after(std::min<std::chrono::milliseconds>(delay, options_.otlp_backoff_max));
  backoff_.async_wait([this](const boost::system::error_code& e) {
    if (!e && !stopped_) attempt();
  });
}

void OtlpSink::stop() {
  stopped_ = true;
  resolver_.cancel();
  backoff_.cancel();
  if (stream_) stream_->close();  // the socket and its expiry timer
  if (busy_) dropped += batch_size_;
  dropped += pending_.size();
  pending_.clear();
  busy_ = false;
  idle = true;
}

}  // namespace netbox::siem
