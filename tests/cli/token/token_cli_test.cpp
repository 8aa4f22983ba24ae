// `netbox token create | list | revoke` as an operator runs them (issue 26 item 5): the
// token is printed once and the book holds only its digest; list shows ids, never a
// secret; revoke marks it; mistakes exit 2 naming the flag; a book anyone may write is
// refused, since whoever writes it can mint an identity.
#include "support/process.hpp"
#include "support/temp_dir.hpp"

#include "netbox/tokens/token_book.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace netbox::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TokenCli, CreateShowsTheTokenOnceListAndRevokeNameItsIdOnly) {
  TempDir dir;
  const auto book = (dir.path() / "client-tokens.json").string();
  auto created = run_netbox({"token", "create", "--client-tokens", book, "--agent", "ci-runner", "--ttl", "8h"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const std::string token = created.out.substr(0, created.out.find('\n'));
  const auto parts = tokens::parse_token(token);
  ASSERT_TRUE(parts) << created.out;
  EXPECT_THAT(created.err, HasSubstr("nbt1_" + parts->id + " for agent ci-runner"));
  EXPECT_THAT(created.err, Not(HasSubstr(parts->secret)));
  struct stat st {};
  ASSERT_EQ(::stat(book.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_THAT(slurp(book), Not(HasSubstr(parts->secret))) << "the book keeps the digest only";
  EXPECT_TRUE(tokens::load_token_book(book).verify(token, std::time(nullptr)).grant);

  auto listed = run_netbox({"token", "list", "--client-tokens", book, "--format", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("\"id\": \"nbt1_" + parts->id + "\""));
  EXPECT_THAT(listed.out, HasSubstr("\"state\": \"valid\""));
  EXPECT_THAT(listed.out, Not(HasSubstr(parts->secret)));

  // A whole token pasted into revoke names its id; the secret is not echoed.
  auto revoked = run_netbox({"token", "revoke", "--client-tokens", book, token});
  ASSERT_EQ(revoked.exit_code, 0) << revoked.err;
  EXPECT_THAT(revoked.out, HasSubstr("revoked nbt1_" + parts->id));
  EXPECT_THAT(revoked.out + revoked.err, Not(HasSubstr(parts->secret)));
  EXPECT_FALSE(tokens::load_token_book(book).verify(token, std::time(nullptr)).grant);
  EXPECT_THAT(run_netbox({"token", "list", "--client-tokens", book}).out, HasSubstr("revoked"));
}

TEST(TokenCli, MistakesExitTwoNamingTheFlagAndAnOpenBookIsRefused) {
  TempDir dir;
  const auto book = (dir.path() / "client-tokens.json").string();
  const auto bad = [&](std::vector<std::string> args, const std::string& named) {
    args.insert(args.begin(), {"token"});
    auto r = run_netbox(args);
    EXPECT_EQ(r.exit_code, 2) << named << r.err;
    EXPECT_THAT(r.err, HasSubstr(named));
  };
  bad({"create", "--client-tokens", book, "--agent", "anonymous", "--ttl", "1h"}, "--agent");
  bad({"create", "--client-tokens", book, "--agent", "ci", "--ttl", "0"}, "--ttl");
  bad({"create", "--client-tokens", book, "--agent", "ci", "--ttl", "5x"}, "--ttl");
  bad({"create", "--client-tokens", book, "--agent", "ci"}, "--ttl");
  bad({"revoke", "--client-tokens", book, "nbt1_000000000000"}, book);
  const auto policy = dir.write("policy.json", R"({"version": 1, "allow": ["a.test"]})");
  bad({"create", "--client-tokens", book, "--agent", "ci", "--ttl", "1h", "--profile", "builders", "--policy",
       policy.string()},
      "--profile 'builders'");

  // A book another local user may write is theirs to mint identities with.
  ASSERT_EQ(run_netbox({"token", "create", "--client-tokens", book, "--agent", "ci", "--ttl", "1h"}).exit_code, 0);
  const auto open_dir = dir.path() / "open";
  std::filesystem::create_directories(open_dir);
  ::chmod(open_dir.c_str(), 0755);
  const auto open_book = (open_dir / "book.json").string();
  std::filesystem::copy_file(book, open_book);
  ::chmod(open_book.c_str(), 0666);
  auto r = run_netbox({"token", "list", "--client-tokens", open_book});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(open_book));
  EXPECT_THAT(r.err, HasSubstr("0666"));
}

}  // namespace
}  // namespace netbox::test
