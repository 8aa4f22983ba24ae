#pragma once
// `otlp-http://HOST:PORT`: records POSTed in batches as OTLP/HTTP JSON logs. A batch that
// fails (no connection, a non-2xx answer, no answer within the timeout) is retried with
// backoff a bounded number of times, then dropped and counted; records arriving while the
// receiver is slow or down wait in a bounded buffer, past which they are dropped and
// counted. Everything runs on the export thread's io_context: a slow or hostile receiver
// costs that thread's memory (bounded), never the proxy's. The receiver's answer is read
// within fixed bounds (kAnswerHeadLimit, kAnswerBodyLimit, kAnswerBufferLimit): one past
// them fails the POST.
#include "otlp_json.hpp"
#include "sink.hpp"

#include "netbox/export/exporter.hpp"
#include "netbox/export/sink_spec.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <deque>
#include <memory>
#include <optional>

namespace netbox::siem {

class OtlpSink final : public Sink {
 public:
  // An OTLP answer is a status and at most a short ExportLogsServiceResponse. Beast's body
  // limit does not count chunk extensions ("1;x=aaaa..." grew a proxy to 6 GB), so the
  // read buffer itself is bounded too: every byte of the answer passes through it.
  static constexpr std::size_t kAnswerHeadLimit = 16 * 1024;
  static constexpr std::size_t kAnswerBodyLimit = 64 * 1024;
  static constexpr std::size_t kAnswerBufferLimit = 64 * 1024;

  OtlpSink(boost::asio::io_context& ioc, SinkSpec spec, const ExporterOptions& options);
  void put(const nlohmann::json& record) override;
  void stop() override;

 private:
  void send_next();
  void attempt();
  void on_resolved(const boost::system::error_code& ec, const boost::asio::ip::tcp::resolver::results_type& results);
  void on_connected(const boost::system::error_code& ec);
  void on_written(const boost::system::error_code& ec);
  void on_read(const boost::system::error_code& ec);
  void failed(const std::string& why);
  void end_attempt();

  boost::asio::io_context& ioc_;
  SinkSpec spec_;
  const ExporterOptions& options_;
  OtlpResource resource_;
  boost::asio::ip::tcp::resolver resolver_;
  std::optional<boost::beast::tcp_stream> stream_;
  boost::asio::steady_timer backoff_;
  std::deque<nlohmann::json> pending_;
  std::deque<nlohmann::json> batch_;
  std::size_t batch_size_ = 0;
  boost::beast::http::request<boost::beast::http::string_body> request_;
  // Made for each attempt and released after it: no capacity is kept between retries.
  std::optional<boost::beast::http::response_parser<boost::beast::http::string_body>> answer_;
  std::optional<boost::beast::flat_buffer> buffer_;
  unsigned attempts_ = 0;
  bool busy_ = false;
  bool stopped_ = false;
  bool said_failing_ = false;  // said once on stderr until a batch goes through
};

}  // namespace netbox::siem
