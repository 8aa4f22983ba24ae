#include "postgres_server.hpp"

#include "support/background_process.hpp"
#include "support/process.hpp"

#include <libpq-fe.h>
#include <pwd.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>

namespace netbox::test {
namespace {

std::filesystem::path postgres_bin() {
  std::filesystem::path best;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec))
    if (std::filesystem::exists(e.path() / "bin" / "initdb") && e.path() > best) best = e.path();
  if (best.empty())
    throw std::runtime_error("no PostgreSQL server under /usr/lib/postgresql: install Debian's postgresql package "
                             "(scripts/install-deps.sh)");
  return best / "bin";
}

std::string random_hex(std::size_t n) {
  std::random_device rd;
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += "0123456789abcdef"[rd() % 16];
  return out;
}

}  // namespace

PostgresServer::PostgresServer(bool durable) : bin_(postgres_bin()), durable_(durable) {
  char tmpl[] = "/tmp/netbox-pg-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  password_ = "pgpw-" + random_hex(24);
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam("postgres");
    if (!pw) throw std::runtime_error("running as root and there is no postgres user to run the server as");
    if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) throw std::runtime_error("chown of the data folder failed");
  }
  {
    std::ofstream(dir_ / "pwfile") << password_ << "\n";
  }
  ::chmod((dir_ / "pwfile").c_str(), 0644);  // read by initdb as the owner, removed at once
  as_owner({(bin_ / "initdb").string(), "-D", (dir_ / "data").string(), "-U", user_, "--pwfile",
            (dir_ / "pwfile").string(), "--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "-N", "-E", "UTF8",
            "--locale=C.UTF-8"});
  std::filesystem::remove(dir_ / "pwfile");
  // The client side: a passfile only this test process reads, exported for the netbox it runs.
  const auto passfile = dir_ / "pgpass";
  {
    std::ofstream(passfile) << "*:*:*:" << user_ << ":" << password_ << "\n";
  }
  ::chmod(passfile.c_str(), 0600);
  if (const char* before = std::getenv("PGPASSFILE")) {
    had_passfile_ = true;
    previous_passfile_ = before;
  }
  ::setenv("PGPASSFILE", passfile.c_str(), 1);
  port_ = free_port();
  start();
}

PostgresServer::~PostgresServer() {
  try {
    if (running_)
      as_owner({(bin_ / "pg_ctl").string(), "-D", (dir_ / "data").string(), "stop", "-m", "immediate", "-w"});
  } catch (...) {
  }
  // A server that outlives this one (a suite's shared one) finds its own passfile again.
  if (had_passfile_) ::setenv("PGPASSFILE", previous_passfile_.c_str(), 1);
  else ::unsetenv("PGPASSFILE");
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void PostgresServer::as_owner(std::vector<std::string> argv) const {
  if (::geteuid() == 0) argv.insert(argv.begin(), {"runuser", "-u", "postgres", "--"});
  const auto r = run(argv, std::chrono::seconds(120));
  if (r.exit_code != 0)
    throw std::runtime_error(argv[argv[0] == "runuser" ? 4 : 0] + " failed: " + r.out + r.err + "\n" + log());
}

void PostgresServer::start() {
  std::string opts = "-c listen_addresses=127.0.0.1 -p " + std::to_string(port_) + " -c unix_socket_directories=" +
                     dir_.string() + " -c max_connections=50";
  if (!durable_) opts += " -c fsync=off";
  as_owner({(bin_ / "pg_ctl").string(), "-D", (dir_ / "data").string(), "-l", (dir_ / "server.log").string(), "-o",
            opts, "-w", "-t", "60", "start"});
  running_ = true;
}

void PostgresServer::stop() {
  as_owner({(bin_ / "pg_ctl").string(), "-D", (dir_ / "data").string(), "stop", "-m", "fast", "-w"});
  running_ = false;
}

std::string PostgresServer::url(const std::string& database) const {
  return "postgresql://" + user_ + "@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

std::string PostgresServer::create_database(const std::string& name) {
  query("postgres", "CREATE DATABASE " + name);
  return url(name);
}

std::vector<std::vector<std::string>> PostgresServer::query(const std::string& database, const std::string& sql) const {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(url(database).c_str()), PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK)
    throw std::runtime_error(std::string("cannot connect to the test server: ") + PQerrorMessage(conn.get()));
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn.get(), sql.c_str()), PQclear);
  const auto status = PQresultStatus(r.get());
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
    throw std::runtime_error(sql + ": " + PQresultErrorMessage(r.get()));
  std::vector<std::vector<std::string>> rows;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    auto& row = rows.emplace_back();
    for (int c = 0; c < PQnfields(r.get()); ++c)
      row.emplace_back(PQgetvalue(r.get(), i, c), static_cast<std::size_t>(PQgetlength(r.get(), i, c)));
  }
  return rows;
}

std::vector<std::string> PostgresServer::query_column(const std::string& database, const std::string& sql) const {
  std::vector<std::string> out;
  for (auto& row : query(database, sql)) out.push_back(row.empty() ? "" : row[0]);
  return out;
}

std::string PostgresServer::log() const {
  std::ifstream in(dir_ / "server.log");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace netbox::test
