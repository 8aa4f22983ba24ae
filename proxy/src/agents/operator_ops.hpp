#pragma once
// The operator ops of a control socket (docs/proxy.md "Operator ops"): what `netbox agent`
// asks a proxy, dispatched by name through one table (operator_ops.cpp), so that another
// op (the approval ops pending, approve, deny) is one entry there and a handler of its own.
// Only a peer with the socket owner's uid, or root, reaches them (SO_PEERCRED).
#include "netbox/proxy/control_protocol.hpp"

#include <sys/types.h>

#include <functional>
#include <string_view>

namespace netbox::proxy {

struct ProxyRuntime;

// One operator request: who asked, and where its answer goes (called once, on any thread).
struct OperatorCall {
  control::Operator request;
  uid_t uid = 0;
  std::function<void(control::Reply)> answer;
};
using OperatorHandler = void (*)(ProxyRuntime&, OperatorCall);

// The handler of `op`; null: not an operator op this proxy has.
OperatorHandler operator_handler(std::string_view op);

// Whether a peer of uid `peer` may use the operator ops on a socket made by uid `owner`.
inline bool may_operate(uid_t peer, uid_t owner) { return peer == 0 || peer == owner; }

// The handlers of `netbox agent list | kill | freeze | resume` (agent_operator_ops.cpp).
void operator_list(ProxyRuntime& rt, OperatorCall call);
void operator_act(ProxyRuntime& rt, OperatorCall call);

}  // namespace netbox::proxy
