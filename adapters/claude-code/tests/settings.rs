//! `install` and `uninstall` on real files: merged beside hooks already
//! there, idempotent, and removal gives the file back byte for byte.

use aep_claude_code::settings::{install, remove, Hooks, Outcome, HOOKED};
use serde_json::Value;

fn hooks() -> Hooks {
    Hooks { origin: "http://127.0.0.1:8789".into(), held_timeout_s: 300 }
}

/// A project's settings as Claude Code writes them, with a hook of the
/// user's own on an event the adapter also hooks.
const EXISTING: &str = r#"{
  "permissions": {
    "allow": [
      "Bash(npm run lint)"
    ],
    "deny": []
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "./scripts/check-command.sh"
          }
        ]
      }
    ],
    "SessionStart": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "echo started"
          }
        ]
      }
    ]
  },
  "model": "sonnet"
}
"#;

fn ours(settings: &Value, event: &str) -> usize {
    settings["hooks"][event]
        .as_array()
        .map(|groups| {
            groups.iter().filter(|g| g["hooks"][0]["url"] == "http://127.0.0.1:8789/aep-claude-code/hook").count()
        })
        .unwrap_or(0)
}

#[test]
fn install_merges_with_existing_hooks_and_removal_restores_the_file_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, EXISTING).unwrap();

    assert_eq!(install(&path, &hooks()).unwrap(), Outcome::Changed);
    let installed = std::fs::read_to_string(&path).unwrap();
    let settings: Value = serde_json::from_str(&installed).unwrap();
    for event in HOOKED {
        assert_eq!(ours(&settings, event), 1, "{event} has the adapter's hook once");
    }
    assert_eq!(settings["hooks"]["PermissionRequest"][0]["hooks"][0]["timeout"], 300);
    // The user's own hooks and settings stay, in their order.
    assert_eq!(settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"], "./scripts/check-command.sh");
    assert_eq!(settings["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
    assert_eq!(settings["hooks"]["SessionStart"][0]["hooks"][0]["command"], "echo started");
    assert_eq!(settings["model"], "sonnet");
    assert!(installed.starts_with("{\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(npm run lint)\"\n"));
    assert!(
        installed.find("\"permissions\"") < installed.find("\"hooks\"")
            && installed.find("\"hooks\"") < installed.find("\"model\"")
    );

    // Again: nothing changes, not a byte.
    assert_eq!(install(&path, &hooks()).unwrap(), Outcome::Unchanged);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), installed);

    assert_eq!(remove(&path).unwrap(), Outcome::Changed);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), EXISTING);
    assert_eq!(remove(&path).unwrap(), Outcome::Unchanged);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), EXISTING);
}

#[test]
fn a_settings_file_install_created_goes_with_uninstall() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".claude/settings.json");
    assert_eq!(install(&path, &hooks()).unwrap(), Outcome::Changed);
    let settings: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(ours(&settings, "PermissionRequest"), 1);
    assert_eq!(remove(&path).unwrap(), Outcome::Changed);
    assert!(!path.exists());
}

#[test]
fn a_settings_file_that_is_not_json_is_left_alone_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    std::fs::write(&path, "{ not json").unwrap();
    let err = install(&path, &hooks()).unwrap_err().to_string();
    assert!(err.contains("is not a JSON object"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ not json");
}
