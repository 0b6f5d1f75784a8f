//! `install` and `uninstall` on real files: merged beside the user's own
//! keys, comments and hooks, idempotent, trust recorded only for the
//! adapter's hooks, and removal gives the file back byte for byte.

use std::path::{Path, PathBuf};

use aep_codex::config::{install, ours, record_trust, remove, Hooks, Outcome, HOOKED};
use toml_edit::DocumentMut;

fn hooks() -> Hooks {
    Hooks {
        program: PathBuf::from("/opt/aep/bin/aep-codex"),
        origin: "http://127.0.0.1:8790".into(),
        held_timeout_s: 300,
    }
}

/// A user's configuration, with comments, a provider, and a hook of
/// their own (trusted) on an event the adapter also hooks.
const EXISTING: &str = r#"# my Codex setup
model = "gpt-5.2-codex"  # the default
approval_policy = "on-request"

[model_providers.local]
name = "local"
base_url = "http://127.0.0.1:11434/v1"

# lint before any shell command
[[hooks.PreToolUse]]
matcher = "Bash"

[[hooks.PreToolUse.hooks]]
type = "command"
command = "./scripts/check-command.sh"

[hooks.state."/home/me/.codex/config.toml:pre_tool_use:0:0"]
trusted_hash = "sha256:0000"

[tui]
notifications = true
"#;

fn doc(path: &Path) -> DocumentMut {
    std::fs::read_to_string(path).unwrap().parse().unwrap()
}

fn adapter_groups(d: &DocumentMut, event: &str) -> usize {
    d["hooks"][event]
        .as_array_of_tables()
        .map(|groups| groups.iter().filter(|g| g["hooks"][0]["command"].as_str() == Some(&hooks().command())).count())
        .unwrap_or(0)
}

#[test]
fn install_merges_with_the_users_config_and_removal_restores_it_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, EXISTING).unwrap();

    assert_eq!(install(&path, &hooks()).unwrap(), Outcome::Changed);
    let installed = std::fs::read_to_string(&path).unwrap();
    let d = doc(&path);
    for event in HOOKED {
        assert_eq!(adapter_groups(&d, event), 1, "{event} has the adapter's hook once");
    }
    assert_eq!(d["hooks"]["PermissionRequest"][0]["hooks"][0]["timeout"].as_integer(), Some(300));
    assert_eq!(d["hooks"]["PreToolUse"][1]["hooks"][0]["timeout"].as_integer(), Some(10));
    // Codex caps `SessionEnd` at 3 s and reports more as an error on every run.
    assert_eq!(d["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"].as_integer(), Some(3));
    assert_eq!(
        d["hooks"]["PermissionRequest"][0]["hooks"][0]["command"].as_str(),
        Some("/opt/aep/bin/aep-codex hook --adapter http://127.0.0.1:8790")
    );
    // The user's own hook, keys and comments stay as written.
    assert_eq!(d["hooks"]["PreToolUse"][0]["hooks"][0]["command"].as_str(), Some("./scripts/check-command.sh"));
    assert_eq!(d["model"].as_str(), Some("gpt-5.2-codex"));
    assert!(installed.starts_with("# my Codex setup\nmodel = \"gpt-5.2-codex\"  # the default\n"), "{installed}");
    assert!(
        installed.contains("# lint before any shell command\n[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n"),
        "{installed}"
    );

    // Again: nothing changes, not a byte.
    assert_eq!(install(&path, &hooks()).unwrap(), Outcome::Unchanged);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), installed);

    // Trust for the adapter's hooks, by the keys Codex gives them.
    let keys = ours(&path, &d);
    assert_eq!(keys.len(), HOOKED.len());
    let pre = keys.iter().find(|(_, e)| *e == "PreToolUse").unwrap();
    assert_eq!(pre.0, format!("{}:pre_tool_use:1:0", path.display()), "after the user's own group");
    let trusted: Vec<(String, String)> = keys.iter().map(|(k, _)| (k.clone(), format!("sha256:{k}"))).collect();
    assert_eq!(record_trust(&path, &trusted).unwrap(), Outcome::Changed);
    assert_eq!(record_trust(&path, &trusted).unwrap(), Outcome::Unchanged);
    let d = doc(&path);
    assert_eq!(
        d["hooks"]["state"][pre.0.as_str()]["trusted_hash"].as_str(),
        Some(format!("sha256:{}", pre.0).as_str())
    );
    assert_eq!(
        d["hooks"]["state"]["/home/me/.codex/config.toml:pre_tool_use:0:0"]["trusted_hash"].as_str(),
        Some("sha256:0000")
    );

    assert_eq!(remove(&path).unwrap(), Outcome::Changed);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), EXISTING);
    assert_eq!(remove(&path).unwrap(), Outcome::Unchanged);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), EXISTING);
}

#[test]
fn a_config_install_created_goes_with_uninstall() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".codex/config.toml");
    assert_eq!(install(&path, &hooks()).unwrap(), Outcome::Changed);
    assert_eq!(adapter_groups(&doc(&path), "PermissionRequest"), 1);
    let trusted: Vec<(String, String)> =
        ours(&path, &doc(&path)).into_iter().map(|(k, _)| (k, "sha256:1".into())).collect();
    record_trust(&path, &trusted).unwrap();
    assert_eq!(remove(&path).unwrap(), Outcome::Changed);
    assert!(!path.exists());
}

#[test]
fn a_config_that_is_not_toml_is_left_alone_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "model = [unclosed").unwrap();
    let err = install(&path, &hooks()).unwrap_err().to_string();
    assert!(err.contains("is not TOML"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "model = [unclosed");
}
