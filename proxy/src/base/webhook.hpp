#pragma once
// The guardian's webhook (`guardian.webhook`, issue 25): every trigger and action, as a
// JSON object, POSTed to an http:// or https:// URL by the proxy itself, outside any
// agent's policy. An https:// one is verified: its certificate must chain to the system's
// roots or, when the policy names `guardian.webhook_ca`, to that file's CAs only, and name
// the URL's host (SNI sent, a host name or IP literal checked by OpenSSL)
// (it is netbox's own connection, never admitted as an agent's). At least once: a POST
// that fails (no connection, no answer within 5 s, a non-2xx status) is tried again after
// a backoff (0.2 s doubling to 10 s), 8 times in all, then given up and counted. It never
// blocks the proxy: post() only queues, under a small lock, into a bounded queue (1024
// events) past which events are dropped and counted; the sending is this object's own
// thread's. netbox_webhook_events_total{result} counts sent, failed attempts and drops.
#include "base/counters.hpp"
#include "base/log.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace netbox::proxy {

struct WebhookUrl {
  bool tls = false;  // https://
  std::string host;
  std::uint16_t port = 80;  // 443 for https:// without a port
  std::string target = "/";
};
// An http:// or https:// URL, or nullopt.
std::optional<WebhookUrl> parse_webhook_url(const std::string& url);

class Webhook {
 public:
  static constexpr std::size_t kQueue = 1024;
  static constexpr unsigned kAttempts = 8;

  // `ca`: for an https:// URL, the PEM file of the CAs to trust instead of the system's; empty: the system's.
  Webhook(WebhookUrl url, std::string written, std::string ca, Counters& counters, Logger& log);
  ~Webhook();
  Webhook(const Webhook&) = delete;
  Webhook& operator=(const Webhook&) = delete;

  // `urgent`: a freeze or kill, done or failed: sent before every report and queued in
  // room of its own, so that one agent's flood of reports (a full queue) never drops it.
  void post(std::string body, bool urgent = false);  // never waits
  static constexpr std::size_t kUrgentQueue = 256;

 private:
  void run();
  bool send(const std::string& body, std::string& why);

  WebhookUrl url_;
  std::string written_;
  std::string ca_;
  Counters& counters_;
  Logger& log_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::string> queue_;
  std::deque<std::string> urgent_;  // sent first, with room of their own (post's `urgent`)
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace netbox::proxy
