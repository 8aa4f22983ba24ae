#include "host_sets.hpp"

namespace netbox::policy::detail {

const std::vector<HostSet>& host_sets() {
  static const std::vector<HostSet> sets = {
      {"@anthropic", "Anthropic's API (Claude Code, the SDKs) and Claude Code's sign-in",
       {"api.anthropic.com",  // the Messages API
        "statsig.anthropic.com",  // Claude Code's feature flags; it waits for them at start
        "console.anthropic.com", "claude.ai"}},  // the sign-in (`claude login`) and its OAuth tokens
      {"@openai", "OpenAI's API (Codex CLI, Aider, the SDKs) and the ChatGPT sign-in Codex uses",
       {"api.openai.com", "auth.openai.com", "chatgpt.com"}},
      {"@gemini", "Google's Gemini API (Gemini CLI) and its Google sign-in",
       {"generativelanguage.googleapis.com",  // the API-key endpoint
        "cloudcode-pa.googleapis.com",        // what a signed-in Gemini CLI calls
        "oauth2.googleapis.com", "accounts.google.com"}},
      {"@python", "The Python Package Index (pip, uv, poetry)", {"pypi.org", "files.pythonhosted.org"}},
      {"@npm", "The npm registry (npm, pnpm, yarn)", {"registry.npmjs.org", "registry.yarnpkg.com"}},
      {"@github", "GitHub over HTTPS: git clone/fetch/push, the API, releases and raw files",
       {"github.com", "api.github.com", "codeload.github.com", "objects.githubusercontent.com",
        "raw.githubusercontent.com", "release-assets.githubusercontent.com"}},
      {"@gitlab", "GitLab.com over HTTPS", {"gitlab.com", "registry.gitlab.com"}},
      {"@crates", "Rust's crates.io (cargo)", {"crates.io", "index.crates.io", "static.crates.io", "static.rust-lang.org"}},
      {"@go", "The Go module proxy and checksum database", {"proxy.golang.org", "sum.golang.org", "storage.googleapis.com"}},
  };
  return sets;
}

const HostSet* find_host_set(std::string_view name) {
  for (const auto& s : host_sets())
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace netbox::policy::detail
