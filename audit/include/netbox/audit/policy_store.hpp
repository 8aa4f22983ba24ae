#pragma once
// One policy for many proxies (docs/fleet.md): the `policies` table of a PostgreSQL audit
// database holds every published version; a proxy started with `--policy postgresql://...`
// runs the latest and follows it with LISTEN netbox_policy (the table's trigger notifies on
// every change). The address follows the audit store's rules: no password in it
// (check_postgresql_address), which PGPASSFILE, a service file or PGPASSWORD supply.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace netbox::audit {

struct PublishedPolicy {
  std::int64_t version = 0;
  std::string body;       // the policy file's text, as published
  std::string published;  // when (UTC, the audit's timestamp format)
};

// The latest version. Throws std::runtime_error naming the address when it cannot be
// read, and DatabaseRejected when no policy was ever published there.
PublishedPolicy latest_policy(const std::string& address);

// Stores `body` (already checked by the caller) as the next version, creating the schema
// if needed; returns the version. `digest`: the policy's SHA-256, for people reading the
// table; `by`: who published it (user@host).
std::int64_t publish_policy(const std::string& address, const std::string& body, const std::string& digest,
                            const std::string& by);

// LISTENs for changes on a connection and a thread of its own. `changed` runs on that thread
// after each notification (at most once a second: notifications closer together are read
// as one change, since any role that may connect can NOTIFY), and after the connection was
// lost and made again (a change may have been missed meanwhile); it returns false when it could not read what changed (a
// query failing while the LISTEN connection stands), and then runs again every second
// until it could: a notification is not repeated, so one lost read would otherwise leave
// the proxy on the old version. `trouble` says why the connection is down (retried every
// second). Never throws once constructed.
class PolicyWatch {
 public:
  PolicyWatch(std::string address, std::function<bool()> changed, std::function<void(std::string)> trouble);
  ~PolicyWatch();  // stops and joins the thread
  PolicyWatch(const PolicyWatch&) = delete;
  PolicyWatch& operator=(const PolicyWatch&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace netbox::audit
