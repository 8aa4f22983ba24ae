// The launcher's pure parts: flag values, addresses, the agent's environment.
#include "netbox/launcher/agent_trust.hpp"
#include "netbox/launcher/environment.hpp"
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/rlimits.hpp"
#include "netbox/launcher/subnet_pool.hpp"
#include "netbox/policy/cidr.hpp"
#include "netbox/proxy/server.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace netbox::launcher {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ParseSize, AcceptsBinaryUnitsAndUnlimited) {
  EXPECT_EQ(parse_size("1024"), rlim_t{1024});
  EXPECT_EQ(parse_size("64k"), rlim_t{64} * 1024);
  EXPECT_EQ(parse_size("512M"), rlim_t{512} * 1024 * 1024);
  EXPECT_EQ(parse_size("4G"), rlim_t{4} * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_size("2GiB"), rlim_t{2} * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_size("1gb"), rlim_t{1} * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_size("unlimited"), RLIM_INFINITY);
}

TEST(ParseSize, RefusesGarbage) {
  for (const char* bad : {"", "G", "4X", "-1", "1.5G", "4 G", "99999999999999999999T"})
    EXPECT_FALSE(parse_size(bad).has_value()) << bad;
}

TEST(AgentRlimits, DefaultsAlwaysIncludeCoreZero) {
  auto limits = agent_rlimits({});
  ASSERT_FALSE(limits.empty());
  EXPECT_EQ(limits.front().resource, RLIMIT_CORE);
  EXPECT_EQ(limits.front().value, rlim_t{0});
}

TEST(AgentRlimits, BadFlagIsAUsageErrorNamingTheFlag) {
  RlimitFlags flags;
  flags.nproc = "many";
  try {
    agent_rlimits(flags);
    FAIL() << "expected a LaunchError";
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    EXPECT_THAT(e.what(), HasSubstr("--rlimit-nproc 'many'"));
  }
}

// Issue 22 item 3: RLIMIT_NPROC counts every process of the agent's user on the machine;
// with a pids cgroup bounding the launch it is lifted, unless given.
TEST(AgentRlimits, NprocGivesWayToAPidsCgroupUnlessGiven) {
  auto nproc = [](const std::vector<RlimitSetting>& limits) {
    for (const auto& l : limits)
      if (l.resource == RLIMIT_NPROC) return l.value;
    return rlim_t{0};
  };
  EXPECT_EQ(nproc(agent_rlimits({}, false)), rlim_t{1024});
  EXPECT_EQ(nproc(agent_rlimits({}, true)), RLIM_INFINITY);
  RlimitFlags flags;
  flags.nproc = "200";
  EXPECT_EQ(nproc(agent_rlimits(flags, true)), rlim_t{200});
}

TEST(Ipv4Network, ParsesAndRefusesHostBits) {
  auto n = parse_ipv4_network("10.213.0.0/16");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->prefix, 16);
  EXPECT_EQ(ipv4_to_string(n->address), "10.213.0.0");
  EXPECT_FALSE(parse_ipv4_network("10.213.0.1/16"));
  EXPECT_FALSE(parse_ipv4_network("10.213.0.0"));
  EXPECT_FALSE(parse_ipv4_network("10.213.0.0/33"));
  EXPECT_FALSE(parse_ipv4_network("example/16"));
}

// Agents sharing a running proxy: neighbouring /30s get disjoint /22s of the synthetic
// range, inside it; the proxy refuses an overlap, so two leases 128 /30s apart collide.
TEST(SyntheticPoolFor, NeighbouringLeasesGetDisjointPoolsInsideTheRange) {
  const Ipv4Network range = *parse_ipv4_network("198.18.0.0/15");
  Lease a, b, far;
  a.network = parse_ipv4_network("10.213.0.0/30")->address;
  b.network = parse_ipv4_network("10.213.0.4/30")->address;
  far.network = a.network + 128 * 4;
  const auto pa = synthetic_pool_for(a, range), pb = synthetic_pool_for(b, range);
  EXPECT_EQ(ipv4_to_string(pa.address) + "/" + std::to_string(pa.prefix), "198.18.0.0/22");
  EXPECT_EQ(ipv4_to_string(pb.address) + "/" + std::to_string(pb.prefix), "198.18.4.0/22");
  EXPECT_EQ(synthetic_pool_for(far, range).address, pa.address);
  Lease last;
  last.network = parse_ipv4_network("10.213.1.252/30")->address;
  EXPECT_EQ(ipv4_to_string(synthetic_pool_for(last, range).address), "198.19.252.0");  // the range's last /22
}

TEST(SyntheticPool6, IsTheLeasesSlashThirtyInsideTheBenchmarkingRange) {
  Lease a, b;
  a.network = parse_ipv4_network("10.213.5.4/30")->address;
  b.network = parse_ipv4_network("10.213.5.8/30")->address;
  EXPECT_EQ(synthetic_pool6_for(a), "2001:2:0:2b5:4141::/80");
  EXPECT_NE(synthetic_pool6_for(a), synthetic_pool6_for(b));
  // /30s 2^16 apart (a proxy shared by launches with different --subnet) differ too.
  Lease far;
  far.network = parse_ipv4_network("10.214.5.4/30")->address;
  EXPECT_EQ(synthetic_pool6_for(far), "2001:2:0:2b5:8141::/80");
  EXPECT_TRUE(policy::Cidr::parse("2001:2::/48")->contains(policy::Cidr::parse(synthetic_pool6_for(b))->base));
  const auto range = *policy::Cidr::parse(kIpv6LinkRange);
  EXPECT_EQ(range.to_string(), proxy::ProxyOptions::default_ipv6_link_range().to_string())
      << "every proxy protects the launcher's IPv6 link range";
}

TEST(LeaseName, FitsInterfaceNamesAndIsUniquePerNetwork) {
  EXPECT_EQ(lease_name_for(0x0ad50004), "nbx0ad50004");
  EXPECT_LT(lease_name_for(0xffffffff).size(), 16u);
  EXPECT_NE(lease_name_for(0x0ad50004), lease_name_for(0x0ad50008));
}

TEST(AgentEnvironment, KeepsOnlyWhatAgentsNeedAndSetsTheProxy) {
  AgentEnvInput in;
  in.launcher_env = {{"PATH", "/usr/bin"},       {"LANG", "C.UTF-8"},    {"LC_ALL", "C"},
                     {"AWS_SECRET_ACCESS_KEY", "x"}, {"GITHUB_TOKEN", "y"}, {"SSH_AUTH_SOCK", "/run/ssh"},
                     {"KEEP_ME", "kept"},         {"HOME", "/root"}};
  in.keep = {"KEEP_ME", "NOT_SET_ANYWHERE"};
  in.set = {"EXTRA=1", "HTTP_PROXY=http://override:1"};
  in.proxy_url = "http://10.213.0.1:3128";
  in.user = "nobody";
  in.home = "/nonexistent";
  auto env = agent_environment(in);
  EXPECT_THAT(env, Contains("PATH=/usr/bin"));
  EXPECT_THAT(env, Contains("LANG=C.UTF-8"));
  EXPECT_THAT(env, Contains("LC_ALL=C"));
  EXPECT_THAT(env, Contains("HOME=/nonexistent"));
  EXPECT_THAT(env, Contains("USER=nobody"));
  EXPECT_THAT(env, Contains("KEEP_ME=kept"));
  EXPECT_THAT(env, Contains("EXTRA=1"));
  EXPECT_THAT(env, Contains("HTTP_PROXY=http://override:1"));  // --env wins, on purpose
  EXPECT_THAT(env, Contains("https_proxy=http://10.213.0.1:3128"));
  EXPECT_THAT(env, Contains("NO_PROXY=localhost,127.0.0.1"));
  EXPECT_THAT(env, Contains("NODE_USE_ENV_PROXY=1"));
  // The JVM reads no variable: its own options name the proxy explicitly.
  EXPECT_THAT(env, Contains("JAVA_TOOL_OPTIONS=-Dhttp.proxyHost=10.213.0.1 -Dhttp.proxyPort=3128 "
                            "-Dhttps.proxyHost=10.213.0.1 -Dhttps.proxyPort=3128 "
                            "-Dhttp.nonProxyHosts=localhost|127.0.0.1"));
  for (const auto& e : env) {
    EXPECT_THAT(e, Not(HasSubstr("AWS_"))) << e;
    EXPECT_THAT(e, Not(HasSubstr("TOKEN"))) << e;
    EXPECT_THAT(e, Not(HasSubstr("SSH_AUTH_SOCK"))) << e;
    EXPECT_THAT(e, Not(HasSubstr("NOT_SET_ANYWHERE"))) << e;
  }
}

TEST(AgentEnvironment, AllProxyNamesTheSocks5hListenerWhenThereIsOne) {
  AgentEnvInput in;
  in.proxy_url = "http://10.213.0.1:3128";
  in.socks_url = "socks5h://10.213.0.1:1080";
  auto env = agent_environment(in);
  EXPECT_THAT(env, Contains("ALL_PROXY=socks5h://10.213.0.1:1080"));
  EXPECT_THAT(env, Contains("all_proxy=socks5h://10.213.0.1:1080"));
  EXPECT_THAT(env, Contains("HTTPS_PROXY=http://10.213.0.1:3128")) << "clients that speak HTTP keep CONNECT";
  in.socks_url.clear();  // a proxy without a SOCKS5 listener
  EXPECT_THAT(agent_environment(in), Contains("ALL_PROXY=http://10.213.0.1:3128"));
}

TEST(AgentEnvironment, KeptJavaOptionsStayAndTheProxyOnesComeAfterThem) {
  AgentEnvInput in;
  in.launcher_env = {{"JAVA_TOOL_OPTIONS", "-Xmx1g"}};
  in.keep = {"JAVA_TOOL_OPTIONS"};
  in.proxy_url = "http://10.213.0.1:3128";
  auto env = agent_environment(in);
  EXPECT_THAT(env, Contains(HasSubstr("JAVA_TOOL_OPTIONS=-Xmx1g -Dhttp.proxyHost=10.213.0.1 ")));
  EXPECT_EQ(java_proxy_options("socks5h://10.213.0.1:1080"), "");
}

TEST(AgentEnvironment, ACredentialsPlaceholderWinsOverKeepEnvAndEnv) {
  AgentEnvInput in;
  in.launcher_env = {{"OPENAI_API_KEY", "sk-real"}};
  in.keep = {"OPENAI_API_KEY"};
  in.set = {"OPENAI_API_KEY=sk-also-real"};
  in.placeholders = {{"OPENAI_API_KEY", "nbx-openai-0123"}};
  auto env = agent_environment(in);
  EXPECT_THAT(env, Contains("OPENAI_API_KEY=nbx-openai-0123"));
  for (const auto& e : env) EXPECT_THAT(e, Not(HasSubstr("real"))) << e;
}

TEST(AgentEnvironment, AnInspectingLaunchNamesItsTrustForEveryTlsClientAndNoOtherDoes) {
  AgentEnvInput in;
  in.proxy_url = "http://10.213.0.1:3128";
  auto env = agent_environment(in);
  for (const auto& e : env) {
    EXPECT_THAT(e, Not(HasSubstr("CA_BUNDLE"))) << e;
    EXPECT_THAT(e, Not(HasSubstr("javax.net.ssl"))) << e;
  }
  in.trusts_netbox_ca = true;
  env = agent_environment(in);
  for (const char* key : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT"})
    EXPECT_THAT(env, Contains(std::string(key) + "=/etc/ssl/certs/ca-certificates.crt"));
  EXPECT_THAT(env, Contains("NODE_EXTRA_CA_CERTS=/run/netbox-trust/netbox-ca.pem"));
  EXPECT_THAT(env, Contains(HasSubstr(" -Djavax.net.ssl.trustStore=/run/netbox-trust/cacerts.p12 "
                                      "-Djavax.net.ssl.trustStoreType=PKCS12")));
}

TEST(AgentTrust, AHostWithoutItsTrustStoreIsRefusedNamingTheFile) {
  try {
    agent_trust_files("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n", "/nonexistent/ca-certificates.crt");
    FAIL() << "no error";
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.exit_code(), kExitLauncherFailure);
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/ca-certificates.crt cannot be read"));
  }
}

TEST(AgentEnvironment, FlagsThatAreNotKeyValueAreUsageErrors) {
  EXPECT_THROW(validate_env_flags({"NOEQUALS"}, {}), LaunchError);
  EXPECT_THROW(validate_env_flags({"=value"}, {}), LaunchError);
  EXPECT_THROW(validate_env_flags({}, {"A=B"}), LaunchError);
  EXPECT_NO_THROW(validate_env_flags({"A=", "B=c=d"}, {"KEY"}));
}

}  // namespace
}  // namespace netbox::launcher
