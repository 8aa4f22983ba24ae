#pragma once
// A real PostgreSQL server for tests, from Debian's postgresql package: initdb into a fresh
// directory, listening on 127.0.0.1 only (a free port), with a password-authenticated
// superuser whose password is in a PGPASSFILE the test process exports (so a netbox it
// starts finds it there, never on a command line). Run as the `postgres` user when the
// test runs as root (the server refuses root). Stopped and removed at scope exit, always.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace netbox::test {

class PostgresServer {
 public:
  // fsync off unless `durable` (tests measure the proxy's durability, not the disk's).
  explicit PostgresServer(bool durable = false);
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  void stop();   // pg_ctl stop -m fast: clients are disconnected
  void start();  // again, on the same port

  unsigned short port() const { return port_; }
  const std::string& user() const { return user_; }
  const std::string& password() const { return password_; }
  // postgresql://USER@127.0.0.1:PORT/DB (no password: libpq reads PGPASSFILE).
  std::string url(const std::string& database) const;
  // A fresh database; returns its url().
  std::string create_database(const std::string& name);
  // Rows of a query as text ("" for NULL); throws with the server's message.
  std::vector<std::vector<std::string>> query(const std::string& database, const std::string& sql) const;
  std::vector<std::string> query_column(const std::string& database, const std::string& sql) const;
  // The server's own log so far.
  std::string log() const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  void as_owner(std::vector<std::string> argv) const;

  std::filesystem::path dir_;
  std::filesystem::path bin_;
  std::string previous_passfile_;  // PGPASSFILE before this server's, restored at its end
  bool had_passfile_ = false;
  std::string user_ = "netbox_test";
  std::string password_;
  unsigned short port_ = 0;
  bool durable_;
  bool running_ = false;
};

}  // namespace netbox::test
