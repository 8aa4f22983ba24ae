#include "presets.hpp"

namespace netbox::cli {

const std::vector<Preset>& presets() {
  // Comments say why each key is there (the text is read as JSON with comments).
  static const std::vector<Preset> all = {
      {"claude", "claude", R"({
  "launch": {
    // Its native installer puts the launcher in ~/.local/bin and the versions in
    // ~/.local/share/claude; npm's global install is in /usr (visible anyway).
    "ro": ["~/.local/bin", "~/.local/share/claude"],
    // Its settings, sign-in and history.
    "rw": ["~/.claude", "~/.claude.json"],
    "env": ["PATH=~/.local/bin:/usr/local/bin:/usr/bin:/bin",
            // Updating itself would write ~/.local/share/claude, which is read-only.
            "DISABLE_AUTOUPDATER=1"],
    // The API key (unless it signs in) and a gateway's address, where Claude Code reads them.
    "keep-env": ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"]
  },
  // With a netbox CA (--ca-dir, or `netbox ca init`'s default folder) and the key set,
  // the key stays with the launcher: the agent holds a placeholder, the proxy inspects
  // the API host and puts the key in.
  "credential": {"name": "anthropic", "env": ["ANTHROPIC_API_KEY"], "hosts": ["api.anthropic.com"],
                 "header": "x-api-key", "format": "{secret}"},
  "policy": {"version": 1, "include": ["@anthropic", "@npm", "@python", "@github"]}
})"},
      {"codex", "codex", R"({
  "launch": {
    "ro": ["~/.local/bin"],
    // CODEX_HOME: config.toml, the ChatGPT sign-in (auth.json), sessions.
    "rw": ["~/.codex"],
    "env": ["PATH=~/.local/bin:/usr/local/bin:/usr/bin:/bin"],
    // Codex reads CODEX_API_KEY (codex exec) and OPENAI_API_KEY; its base URL comes from
    // config.toml (openai_base_url), not from OPENAI_BASE_URL.
    "keep-env": ["CODEX_API_KEY", "OPENAI_API_KEY"]
  },
  // Codex runs each command in its own bubblewrap sandbox, which needs new namespaces:
  // netbox's seccomp profile refuses them, so every command would fail. netbox is the
  // sandbox here (filesystem view, network, seccomp), so Codex's own is turned off.
  "args": ["-c", "sandbox_mode=\"danger-full-access\""],
  "credential": {"name": "openai", "env": ["CODEX_API_KEY", "OPENAI_API_KEY"], "hosts": ["api.openai.com"],
                 "header": "Authorization", "format": "Bearer {secret}"},
  "policy": {"version": 1, "include": ["@openai", "@npm", "@python", "@github"]}
})"},
      {"aider", "aider", R"({
  "launch": {
    // pipx and uv tool put aider in ~/.local/bin and its virtualenv in ~/.local/share.
    "ro": ["~/.local/bin", "~/.local/share/pipx", "~/.local/share/uv"],
    // Its settings (.aider.conf.yml) and the model metadata cache.
    "rw": ["~/.aider", "~/.aider.conf.yml"],
    "env": ["PATH=~/.local/bin:/usr/local/bin:/usr/bin:/bin",
            // Its version check would fail at pypi.org's JSON API, which is allowed, but
            // is noise in the audit.
            "AIDER_CHECK_UPDATE=false"],
    "keep-env": ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENAI_API_BASE", "AIDER_MODEL"]
  },
  "policy": {"version": 1, "include": ["@openai", "@anthropic", "@gemini", "@python", "@github"]}
})"},
      {"gemini", "gemini", R"({
  "launch": {
    "ro": ["~/.local/bin"],
    // Its settings, the Google sign-in (oauth_creds.json) and history.
    "rw": ["~/.gemini"],
    "env": ["PATH=~/.local/bin:/usr/local/bin:/usr/bin:/bin"],
    // The API key (unless it signs in with Google) where Gemini CLI reads it.
    "keep-env": ["GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT"]
  },
  "credential": {"name": "gemini", "env": ["GEMINI_API_KEY", "GOOGLE_API_KEY"],
                 "hosts": ["generativelanguage.googleapis.com"], "header": "x-goog-api-key", "format": "{secret}"},
  "policy": {"version": 1, "include": ["@gemini", "@npm", "@python", "@github"]}
})"},
  };
  return all;
}

const Preset* find_preset(std::string_view name) {
  for (const auto& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace netbox::cli
