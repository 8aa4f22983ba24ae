// `netbox ca init` and `netbox ca show`: the CA that TLS inspection mints leaf
// certificates from (see netbox/tls/certificate_authority.hpp for what is checked).
#include "commands.hpp"
#include "flag_table.hpp"

#include "netbox/tls/certificate_authority.hpp"

#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

namespace netbox::cli {
namespace {

struct CaArgs {
  std::string dir = tls::kDefaultCaDir;
  bool pem = false;
  std::string format = "text";
};

void describe(const tls::CertificateAuthority& ca, const std::string& dir) {
  std::cout << "  subject:            " << ca.subject() << "\n"
            << "  sha256 fingerprint: " << ca.fingerprint_sha256() << "\n"
            << "  valid until:        " << ca.not_after() << "\n"
            << "  certificate:        " << dir << "/ca.crt (what agents trust; the key never leaves " << dir << ")\n";
}

// Runs one CA action: a CA mistake (a file that exists, a key others can read, a
// mismatched pair) names the file and exits 2; anything else exits 1.
template <class Action>
void run(const CLI::App& sub, int& rc, Action&& action) {
  try {
    action();
    rc = 0;
  } catch (const tls::CaError& e) {
    std::cerr << command_path(sub) << ": " << e.what() << "\n";
    rc = kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << command_path(sub) << ": " << e.what() << "\n";
    rc = 1;
  }
}

}  // namespace

void add_ca_command(CLI::App& app, int& rc) {
  auto* ca = app.add_subcommand("ca", "The CA that TLS inspection mints its certificates from");
  ca->require_subcommand(1);

  auto* init = ca->add_subcommand("init", "Create the CA (EC P-256 key, mode 0600; certificate valid ten years)");
  auto init_cmd = std::make_shared<Bound<CaArgs>>(*init);
  init_cmd->flags.option("--dir", init_cmd->args.dir, "Folder for ca.key and ca.crt (created 0700)")
      ->capture_default_str();
  init->callback([&rc, init, init_cmd] {
    run(*init, rc, [&] {
      auto made = tls::CertificateAuthority::create(init_cmd->args.dir);
      std::cout << "created the netbox CA in " << init_cmd->args.dir << "\n";
      describe(made, init_cmd->args.dir);
    });
  });

  auto* show = ca->add_subcommand("show", "Print the CA's certificate and fingerprint (after checking the CA loads)");
  auto show_cmd = std::make_shared<Bound<CaArgs>>(*show);
  show_cmd->flags.option("--dir", show_cmd->args.dir, "Folder of ca.key and ca.crt")->capture_default_str();
  show_cmd->flags.flag("--pem", show_cmd->args.pem, "Print only the certificate in PEM (for a trust bundle)");
  show_cmd->flags.option("--format", show_cmd->args.format, "Output: text or json (the same fields, and the PEM)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  show->callback([&rc, show, show_cmd] {
    run(*show, rc, [&] {
      auto loaded = tls::CertificateAuthority::load(show_cmd->args.dir);
      if (show_cmd->args.format == "json" && !show_cmd->args.pem) {
        const nlohmann::ordered_json j = {{"dir", show_cmd->args.dir},
                                          {"subject", loaded.subject()},
                                          {"sha256_fingerprint", loaded.fingerprint_sha256()},
                                          {"valid_until", loaded.not_after()},
                                          {"certificate", show_cmd->args.dir + "/ca.crt"},
                                          {"pem", loaded.certificate_pem()}};
        std::cout << j.dump() << "\n";
        return;
      }
      if (!show_cmd->args.pem) {
        std::cout << "netbox CA in " << show_cmd->args.dir << "\n";
        describe(loaded, show_cmd->args.dir);
      }
      std::cout << loaded.certificate_pem();
    });
  });
}

}  // namespace netbox::cli
