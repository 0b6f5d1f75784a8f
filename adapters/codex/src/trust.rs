//! Codex runs a hook only once it is trusted: its current hash recorded
//! in `config.toml` (`[hooks.state."<key>"] trusted_hash`). Codex itself
//! says each hook's key and current hash (`codex app-server`, JSON-RPC on
//! stdio: `initialize`, then `hooks/list`); [`adapter_hooks`] asks it, and
//! keeps the adapter's hooks in the given file only, so `install --trust`
//! records trust for exactly those and names each one it trusts.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::config::is_our_command;

/// How long Codex may take to answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// One of the adapter's hooks as Codex sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    pub key: String,
    pub command: String,
    pub current_hash: String,
    pub trusted: bool,
}

/// The adapter's hooks in `config` (Codex's `config.toml`), as the Codex
/// at `codex` lists them, with their current hash.
pub fn adapter_hooks(codex: &Path, config: &Path) -> Result<Vec<Listed>, String> {
    let home = config.parent().ok_or_else(|| format!("{} has no directory", config.display()))?;
    let mut child = Command::new(codex)
        // Only asked for its hooks: no usage reports on the way.
        .args(["-c", "analytics.enabled=false", "app-server"])
        .env("CODEX_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", codex.display()))?;
    let requests = [
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "clientInfo": { "name": "aep-codex", "version": env!("CARGO_PKG_VERSION") } } }),
        json!({ "jsonrpc": "2.0", "method": "initialized" }),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {} }),
    ];
    let mut stdin = child.stdin.take().expect("piped");
    for r in requests {
        writeln!(stdin, "{r}").map_err(|e| format!("codex app-server: {e}"))?;
    }
    let stdout = child.stdout.take().expect("piped");
    let (lines, answers) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let answer = loop {
        match answers.recv_timeout(ANSWER_WITHIN) {
            Ok(line) => {
                let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
                if message.get("id") == Some(&json!(2)) {
                    break Ok(message);
                }
            }
            Err(_) => {
                break Err(format!("codex app-server did not list its hooks within {} s", ANSWER_WITHIN.as_secs()))
            }
        }
    };
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let answer = answer?;
    if let Some(error) = answer.get("error") {
        return Err(format!("codex app-server: hooks/list: {error}"));
    }
    Ok(listed(&answer["result"], config))
}

/// The adapter's hooks from `config` among a `hooks/list` result.
pub fn listed(result: &Value, config: &Path) -> Vec<Listed> {
    let config = config.display().to_string();
    let mut out: Vec<Listed> = Vec::new();
    let groups = result.get("data").and_then(Value::as_array).into_iter().flatten();
    for hook in groups.flat_map(|g| g.get("hooks").and_then(Value::as_array).into_iter().flatten()) {
        let text = |name: &str| hook.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
        let (key, command) = (text("key"), text("command"));
        if text("sourcePath") != config || !is_our_command(&command) || out.iter().any(|l| l.key == key) {
            continue;
        }
        out.push(Listed { trusted: text("trustStatus") == "trusted", current_hash: text("currentHash"), key, command });
    }
    out
}
