#include "pipeline/approvals.hpp"

#include "netbox/policy/allow_addition.hpp"

#include "base/door_services.hpp"

#include <nlohmann/json.hpp>

namespace netbox::proxy {

namespace {

std::string authority_of(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// How long a grant lasts, as its event says.
std::string_view expiry_of(AskScope s) {
  switch (s) {
    case AskScope::once: return "the requests waiting on this question";
    case AskScope::launch: return "the end of this launch";
    case AskScope::policy: return "none (written into the policy file)";
  }
  return "";
}

std::string question_detail(const PendingAsk& q) {
  return nlohmann::json{{"id", q.id}, {"agent", q.agent}, {"host", q.host}, {"port", q.port}, {"door", q.door}}.dump();
}

}  // namespace

void ApprovalBook::enable(const std::string& agent, const std::string& profile, AskSettings settings,
                          AskListener listener) {
  std::lock_guard lock(mu_);
  auto& a = agents_[agent];
  a.settings = settings;
  a.listener = std::move(listener);
  a.profile = profile;
}

AskListener ApprovalBook::listener_locked(const std::string& agent) const {
  const auto a = agents_.find(agent);
  return a == agents_.end() ? AskListener{} : a->second.listener;
}

void ApprovalBook::reap_locked(std::vector<Ended>& ended) {
  const auto now = std::chrono::system_clock::now();
  for (auto it = questions_.begin(); it != questions_.end();) {
    if (!it->second.waiters.empty() || it->second.shown.expires > now) {
      ++it;
      continue;
    }
    ended.push_back({it->second.shown, listener_locked(it->second.shown.agent),
                     "its expiry passed after its clients had left"});
    it = questions_.erase(it);
  }
}

// Each a row (`ask_expired`), and its listener told (a prompt showing it stops asking).
void ApprovalBook::expired(const std::vector<Ended>& ended) {
  for (const auto& e : ended) {
    record("ask_expired", e.question, "nobody answered whether " + e.question.agent + " may reach " +
                                          authority_of(e.question.host, e.question.port) + ": " + e.why,
           question_detail(e.question));
    if (e.listener.settled) e.listener.settled(e.question.id, false, e.why);
  }
}

void ApprovalBook::forget(const std::string& agent) {
  std::vector<Resume> refused;
  {
    std::lock_guard lock(mu_);
    agents_.erase(agent);
    for (auto it = questions_.begin(); it != questions_.end();) {
      if (std::get<0>(it->first) != agent) {
        ++it;
        continue;
      }
      for (auto& [ticket, resume] : it->second.waiters) refused.push_back(std::move(resume));
      it = questions_.erase(it);
    }
  }
  for (auto& r : refused) r(AskOutcome{std::nullopt, "the launch ended before an answer"});
}

std::optional<AskSettings> ApprovalBook::settings(const std::string& agent) const {
  std::lock_guard lock(mu_);
  auto it = agents_.find(agent);
  if (it == agents_.end()) return std::nullopt;
  return it->second.settings;
}

std::optional<Grant> ApprovalBook::granted(const std::string& agent, const std::string& host,
                                           std::uint16_t port) const {
  std::lock_guard lock(mu_);
  auto a = agents_.find(agent);
  if (a == agents_.end()) return std::nullopt;
  auto g = a->second.grants.find({host, port});
  if (g == a->second.grants.end()) return std::nullopt;
  return g->second;
}

std::variant<ApprovalBook::Parked, std::string> ApprovalBook::park(const std::string& agent, const std::string& host,
                                                                  std::uint16_t port, std::string_view door,
                                                                  std::chrono::system_clock::time_point expires,
                                                                  Resume resume) {
  {
    std::vector<Ended> ended;  // an expired question of this host and port is asked anew
    {
      std::lock_guard lock(mu_);
      reap_locked(ended);
    }
    expired(ended);
  }
  std::optional<PendingAsk> announce;
  AskListener listener;
  Parked p;
  {
    std::lock_guard lock(mu_);
    auto a = agents_.find(agent);
    if (a == agents_.end()) return std::string("the agent is not asking");
    listener = a->second.listener;
    auto it = questions_.find({agent, host, port});
    if (it == questions_.end()) {
      std::size_t mine = 0;
      for (const auto& [key, q] : questions_) mine += std::get<0>(key) == agent;
      if (mine >= kMaxPendingPerAgent)
        return "not asked: " + std::to_string(mine) + " questions of this agent are waiting already (at most " +
               std::to_string(kMaxPendingPerAgent) + ")";
      Question q;
      q.shown = PendingAsk{next_id_++, agent, host, port, std::string(door), std::chrono::system_clock::now(),
                           expires, 0, !rt_.options.ask_policy_file.empty()};
      it = questions_.emplace(Key{agent, host, port}, std::move(q)).first;
      announce = it->second.shown;
    } else if (it->second.waiters.size() >= kMaxWaitersPerQuestion) {
      return "not asked: " + std::to_string(kMaxWaitersPerQuestion) + " requests wait on this question already";
    }
    p = {it->second.shown.id, next_id_++};
    it->second.waiters.emplace(p.ticket, std::move(resume));
    it->second.shown.waiters = it->second.waiters.size();
    if (expires > it->second.shown.expires) it->second.shown.expires = expires;
  }
  if (announce) {
    record("ask_pending", *announce, "asking whether " + announce->agent + " may reach " +
                                         authority_of(announce->host, announce->port), question_detail(*announce));
    if (listener.asked) listener.asked(*announce);
  }
  return p;
}

bool ApprovalBook::leave(const Parked& p, std::string_view why, Leaving how) {
  std::vector<Ended> ended;
  bool parked = false;
  {
    std::lock_guard lock(mu_);
    for (auto it = questions_.begin(); it != questions_.end(); ++it) {
      if (it->second.shown.id != p.question) continue;
      if (it->second.waiters.erase(p.ticket) == 0) return false;
      parked = true;
      it->second.shown.waiters = it->second.waiters.size();
      if (it->second.waiters.empty() && how == Leaving::timed_out) {
        ended.push_back({it->second.shown, listener_locked(it->second.shown.agent), std::string(why)});
        questions_.erase(it);
      }
      break;
    }
    reap_locked(ended);
  }
  expired(ended);
  // No such question: an answer (or the launch's end) took it out, waiters and all, and
  // this waiter's resume is on its way with that verdict.
  return parked;
}

std::map<ApprovalBook::Key, ApprovalBook::Question>::iterator ApprovalBook::find_locked(const AskTarget& t,
                                                                                        std::string& why) {
  auto found = questions_.end();
  for (auto it = questions_.begin(); it != questions_.end(); ++it) {
    const auto& s = it->second.shown;
    // By id, and the agent when named too (a launch's terminal answers its own agent's only).
    const bool match = t.id ? s.id == t.id && (t.agent.empty() || s.agent == t.agent)
                            : s.agent == t.agent && s.host == t.host && (!t.port || s.port == t.port);
    if (!match) continue;
    if (found != questions_.end()) {
      why = "agent " + t.agent + " waits on " + t.host + " on more than one port; name the port (HOST:PORT)";
      return questions_.end();
    }
    found = it;
  }
  if (found == questions_.end())
    why = t.id ? "no question " + std::to_string(t.id) + (t.agent.empty() ? "" : " of agent " + t.agent) +
                     " is waiting (answered, or no answer came in time)"
               : "agent " + t.agent + " is not waiting on " + (t.port ? authority_of(t.host, t.port) : t.host) +
                     " (answered, or no answer came in time); `netbox agent pending` lists what waits";
  return found;
}

std::string ApprovalBook::write_policy_locked(const Question& q) {
  const auto& file = rt_.options.ask_policy_file;
  if (file.empty()) return "scope policy is not offered: this launch's policy came from no file netbox may write";
  const auto a = agents_.find(q.shown.agent);
  try {
    policy::add_allow_entry(file, a == agents_.end() ? std::string() : a->second.profile,
                            authority_of(q.shown.host, q.shown.port));
  } catch (const std::exception& e) {
    return std::string("the policy file was not changed: ") + e.what();
  }
  return {};
}

std::string ApprovalBook::take_locked(const AskTarget& target, const AskAnswer& ans, Question& q, Grant& g) {
  std::string why;
  auto it = find_locked(target, why);
  if (it == questions_.end()) return why;
  if (ans.approve && ans.scope == AskScope::policy)
    if (auto no = write_policy_locked(it->second); !no.empty()) return no;
  q = std::move(it->second);
  questions_.erase(it);
  g = Grant{q.shown.id, q.shown.host, q.shown.port, ans.scope, ans.grantor};
  if (ans.approve && ans.scope != AskScope::once)
    if (auto a = agents_.find(q.shown.agent); a != agents_.end()) a->second.grants[{g.host, g.port}] = g;
  return {};
}

std::string ApprovalBook::answer(const AskTarget& target, const AskAnswer& ans) {
  Question q;
  Grant g;
  AskListener listener;
  std::vector<Ended> ended;
  std::string why;
  {
    std::lock_guard lock(mu_);
    reap_locked(ended);
    why = take_locked(target, ans, q, g);
    if (why.empty()) listener = listener_locked(q.shown.agent);
  }
  expired(ended);
  if (!why.empty()) return why;
  const std::string where = authority_of(q.shown.host, q.shown.port);
  nlohmann::json detail = {{"id", q.shown.id},     {"agent", q.shown.agent},     {"host", q.shown.host},
                           {"port", q.shown.port}, {"door", q.shown.door},       {"grantor", ans.grantor},
                           {"waiters", q.waiters.size()}};
  const std::string how = ans.approve ? "allowed (" + std::string(to_string(ans.scope)) + ") by " + ans.grantor
                                      : "denied by " + ans.grantor;
  if (ans.approve) {
    detail["scope"] = std::string(to_string(ans.scope));
    detail["expires"] = std::string(expiry_of(ans.scope));
    record("ask_granted", q.shown,
           q.shown.agent + " may reach " + where + " (" + std::string(to_string(ans.scope)) + ", grant:" +
               std::to_string(g.id) + ") granted by " + ans.grantor + "; expires: " + std::string(expiry_of(ans.scope)),
           detail.dump());
    if (ans.scope == AskScope::policy && rt_.options.policy_file == rt_.options.ask_policy_file) reload_policy_();
  } else {
    record("ask_denied", q.shown, q.shown.agent + " may not reach " + where + ": " + how, detail.dump());
  }
  if (listener.settled) listener.settled(q.shown.id, true, how);
  for (auto& [ticket, resume] : q.waiters)
    resume(ans.approve ? AskOutcome{g, {}} : AskOutcome{std::nullopt, "asked, and denied by " + ans.grantor});
  return {};
}

std::vector<PendingAsk> ApprovalBook::pending() {
  std::vector<Ended> ended;
  std::vector<PendingAsk> out;
  {
    std::lock_guard lock(mu_);
    reap_locked(ended);
    for (const auto& [key, q] : questions_) out.push_back(q.shown);
  }
  expired(ended);
  return out;
}

void ApprovalBook::record(const std::string& kind, const PendingAsk& q, const std::string& message,
                          const std::string& detail) {
  audit::Event e;
  e.ts = audit::Clock::now();
  e.kind = kind;
  e.agent = q.agent;
  e.may_fold = false;  // every question and answer a row of its own, with its grantor
  e.message = message;
  e.detail = detail;
  rt_.writer->event(std::move(e));
  rt_.log.write(LogLevel::info, kind, {{"agent", q.agent}, {"host", q.host}, {"port", q.port}, {"id", q.id},
                                       {"message", message}});
}

}  // namespace netbox::proxy
