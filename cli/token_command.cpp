// `netbox token create | list | revoke`: the client tokens a shared proxy reads with
// --client-tokens (docs/fleet.md "Client identity"). A token is printed once, at create;
// the book keeps its digest. Writers hold a lock beside the book, so two operators' commands
// never lose each other's tokens.
#include "commands.hpp"
#include "flag_table.hpp"
#include "usage.hpp"

#include "netbox/policy/load.hpp"
#include "netbox/proxy/agent_name.hpp"
#include "netbox/tokens/token_book.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>

namespace netbox::cli {
namespace {

constexpr const char* kDefaultBook = "/etc/netbox/client-tokens.json";

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string utc(std::int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The book's writers' lock (BOOK.lock, kept): held while a command reads and rewrites it.
class BookLock {
 public:
  explicit BookLock(const std::string& book) {
    const std::string path = book + ".lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd_ < 0) throw std::runtime_error(path + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX) != 0) throw std::runtime_error(path + ": " + std::strerror(errno));
  }
  ~BookLock() { ::close(fd_); }
  BookLock(const BookLock&) = delete;
  BookLock& operator=(const BookLock&) = delete;

 private:
  int fd_ = -1;
};

// How a token command ends: a usage mistake (2), a book that cannot be used (2, naming the
// file and key), a policy that does not load (2), anything else (1).
template <class Body>
int token_reporting(const CLI::App& cmd, Body body) {
  try {
    return body();
  } catch (const UsageError& e) {
    return usage_error(cmd, e.what());
  } catch (const policy::PolicyError& e) {
    std::cerr << command_path(cmd) << ": " << e.what() << "\n";
    return kExitUsage;
  } catch (const tokens::TokenBookError& e) {
    std::cerr << command_path(cmd) << ": " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << command_path(cmd) << ": " << e.what() << "\n";
    return 1;
  }
}

struct CreateArgs {
  std::string book = kDefaultBook;
  std::string agent;
  std::string profile;
  std::optional<std::chrono::milliseconds> ttl;
  std::string policy;
};

int run_create(const CLI::App& cmd, const CreateArgs& a) {
  return token_reporting(cmd, [&] {
    if (auto why = proxy::agent_name_problem(a.agent); !why.empty()) throw UsageError("--agent: " + why);
    if (!a.ttl || a.ttl->count() < 1000) throw UsageError("--ttl: give how long the token is valid, 1s or more (8h, 30d)");
    if (!a.policy.empty()) {
      const auto p = policy::load_policy_file(a.policy);
      if (!a.profile.empty() && !p.agents.contains(a.profile))
        throw UsageError("--profile '" + a.profile + "': " + a.policy + " has no agents." + a.profile);
    }
    BookLock lock(a.book);
    auto book = tokens::load_token_book(a.book, true);
    auto issued = tokens::issue_token(a.agent, a.profile, std::chrono::duration_cast<std::chrono::seconds>(*a.ttl),
                                      now_seconds());
    book.add(issued.entry);
    tokens::save_token_book(a.book, book);
    std::cerr << "token " << tokens::kTokenPrefix << issued.entry.id << " for agent " << a.agent
              << (a.profile.empty() ? "" : " (profile " + a.profile + ")") << ", valid until "
              << utc(issued.entry.expires) << "; shown once, keep it secret\n";
    std::cout << issued.token << "\n";
    return 0;
  });
}

struct ListArgs {
  std::string book = kDefaultBook;
  std::string format = "text";
};

int run_list(const CLI::App& cmd, const ListArgs& a) {
  return token_reporting(cmd, [&] {
    if (a.format != "text" && a.format != "json") throw UsageError("--format '" + a.format + "' is not one of text, json");
    const auto book = tokens::load_token_book(a.book, true);
    const auto now = now_seconds();
    const auto state = [now](const tokens::TokenEntry& e) {
      return e.revoked ? "revoked" : now >= e.expires ? "expired" : "valid";
    };
    if (a.format == "json") {
      auto out = nlohmann::json::array();
      for (const auto& e : book.entries())
        out.push_back({{"id", std::string(tokens::kTokenPrefix) + e.id}, {"agent", e.agent}, {"profile", e.profile},
                       {"created", utc(e.created)}, {"expires", utc(e.expires)}, {"state", state(e)}});
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    for (const auto& e : book.entries())
      std::cout << tokens::kTokenPrefix << e.id << "  " << e.agent << "  " << (e.profile.empty() ? "-" : e.profile)
                << "  until " << utc(e.expires) << "  " << state(e) << "\n";
    if (book.entries().empty()) std::cout << "no client tokens in " << a.book << "\n";
    return 0;
  });
}

struct RevokeArgs {
  std::string book = kDefaultBook;
  std::string id;
};

int run_revoke(const CLI::App& cmd, RevokeArgs a) {
  return token_reporting(cmd, [&] {
    if (a.id.starts_with(tokens::kTokenPrefix)) a.id.erase(0, tokens::kTokenPrefix.size());
    // A whole token pasted here names its id; its secret is not needed and not echoed.
    if (const auto cut = a.id.find('_'); cut != std::string::npos) a.id.resize(cut);
    BookLock lock(a.book);
    auto book = tokens::load_token_book(a.book);
    if (!book.revoke(a.id)) throw UsageError("ID '" + std::string(tokens::kTokenPrefix) + a.id + "': no such token in " + a.book);
    tokens::save_token_book(a.book, book);
    std::cout << "revoked " << tokens::kTokenPrefix << a.id << "\n";
    return 0;
  });
}

template <class Args>
struct Command {
  explicit Command(CLI::App& app) : flags(app) {}
  Args args;
  FlagTable flags;
};

}  // namespace

void add_token_command(CLI::App& app, int& rc) {
  auto* token = app.add_subcommand("token", "Client tokens for a shared proxy: create, list, revoke");
  token->require_subcommand(1);
  const std::string book_help = std::string("The token book (default ") + kDefaultBook + ")";

  auto* create = token->add_subcommand("create", "Issue a token for a client netbox did not launch; prints it once");
  auto c = std::make_shared<Command<CreateArgs>>(*create);
  c->flags.option("--client-tokens", c->args.book, book_help);
  c->flags.option("--agent", c->args.agent, "The agent name the client's rows carry")->required();
  c->flags.option("--profile", c->args.profile, "The policy's agents.PROFILE the client gets (default: the top level)");
  c->flags.duration("--ttl", c->args.ttl, "How long the token is valid: 8h, 30d, ...")->required();
  c->flags.option("--policy", c->args.policy, "Check that --profile is one of this policy's agents");
  create->callback([&rc, c, create] { rc = run_create(*create, c->args); });

  auto* list = token->add_subcommand("list", "The book's tokens (ids, agents, profiles, expiry; never a secret)");
  auto l = std::make_shared<Command<ListArgs>>(*list);
  l->flags.option("--client-tokens", l->args.book, book_help);
  l->flags.option("--format", l->args.format, "Output: text or json");
  list->callback([&rc, l, list] { rc = run_list(*list, l->args); });

  auto* revoke = token->add_subcommand("revoke", "Revoke a token: a proxy following the book refuses it from then on");
  auto r = std::make_shared<Command<RevokeArgs>>(*revoke);
  r->flags.option("--client-tokens", r->args.book, book_help);
  revoke->add_option("ID", r->args.id, "The token's id (nbt1_…, as `token list` shows it)")->required();
  revoke->callback([&rc, r, revoke] { rc = run_revoke(*revoke, r->args); });
}

}  // namespace netbox::cli
