#pragma once
// One attached agent known by its sockets (AgentAttachment::sockets): an owned object.
// Its constructor attaches (adopts the sockets, makes its DNS view and capture listeners,
// registers its identity, publishes its view, starts accepting, opens its agents row); a
// step that throws leaves the ones before it to their members' destructors, in reverse,
// so a refused attachment leaves nothing behind. Its destructor detaches likewise.
#include "netbox/proxy/agent_attachment.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <memory>
#include <vector>

namespace netbox::proxy {

struct ProxyRuntime;
class DnsView;
class TransparentListener;

class AgentSlot {
 public:
  // Throws std::invalid_argument (a refusal, naming what) or std::runtime_error.
  AgentSlot(ProxyRuntime& core, const AgentAttachment& attachment);
  ~AgentSlot();
  AgentSlot(const AgentSlot&) = delete;
  AgentSlot& operator=(const AgentSlot&) = delete;

  const AttachedAgent& attached() const { return attached_; }
  // How the agent ended, for its agents row (closed by the destructor).
  void end(const AgentEnd& end) { end_ = end; }

  // Each owns one step of the attachment and undoes it when destroyed; none is copied
  // (a copy, or a temporary assigned, would undo the step twice).
  struct Step {
    Step() = default;
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;
  };
  struct Fds : Step {  // adopted descriptors no owner took yet
    std::vector<int> fds;
    ~Fds();
    int take(std::size_t i);
  };
  struct Services : Step {  // its DNS view and capture listeners: stopped
    std::shared_ptr<DnsView> view;
    std::vector<std::shared_ptr<TransparentListener>> captures;
    ~Services();
  };
  struct Registration : Step {  // its identity in the registry: removed
    ProxyRuntime* core = nullptr;
    boost::asio::ip::address key;
    ~Registration();
  };
  struct Published : Step {  // its view and IPv4 capture listener under its key: withdrawn
    ProxyRuntime* core = nullptr;
    boost::asio::ip::address key;
    ~Published();
  };
  struct Acceptors : Step {  // its HTTP and SOCKS5 listeners: closed on their io threads
    std::vector<std::shared_ptr<boost::asio::ip::tcp::acceptor>> list;
    ~Acceptors();
  };
  struct Attributed : Step {  // its lookups' source (Attribution): removed
    ProxyRuntime* core = nullptr;
    std::uint64_t netns = 0;
    ~Attributed();
  };
  struct Row : Step {  // its agents row: ended with end_
    ProxyRuntime* core = nullptr;
    const AttachedAgent* agent = nullptr;
    const AgentEnd* end = nullptr;
    ~Row();
  };

 private:
  void open_row(const AgentLaunch& launch);

  ProxyRuntime& core_;
  AttachedAgent attached_;
  AgentEnd end_;
  // Destroyed in reverse, which is the order of detaching: no listener accepts any more,
  // the view is withdrawn and stopped (its last summary row still the agent's), then its
  // identity goes, then its row ends. Each is armed only once its step is done.
  Fds fds_;
  Row row_;
  Registration registration_;
  Attributed attributed_;
  Services services_;
  Published published_;
  Acceptors acceptors_;
};

}  // namespace netbox::proxy
