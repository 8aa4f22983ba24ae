#pragma once
// Back pressure from the audit writer, one piece for every door: a session about to read
// input that makes rows (a request, a captured connection, a DNS query) asks first. While
// the writer's queue is full, it reads nothing more from its client and goes on once the
// writer has room: a flood slows its sender down to what the disk takes, and no row is
// lost or refused for it. A failing store says there is room; insert() then refuses at its
// bound, and the door answers as it does for any row the store does not take.
#include "netbox/audit/writer.hpp"

#include <boost/asio/post.hpp>

#include <utility>

namespace netbox::proxy {

// True: there is room, go on now. False: `resume` is posted to `ex` once there is (it
// should call the same step again, which asks again).
template <class Executor, class Resume>
bool audit_room_or_wait(audit::Writer& writer, const Executor& ex, Resume resume) {
  if (writer.has_room()) return true;
  writer.when_room([ex, resume = std::move(resume)] { boost::asio::post(ex, resume); });
  return false;
}

}  // namespace netbox::proxy
