//! The hook command Codex runs for each hook: the adapter's own binary
//! (`aep-codex hook`), one small process that forwards the hook's JSON
//! from stdin to the running adapter over loopback and prints the
//! adapter's answer on stdout. When the adapter cannot be reached, or has
//! no decision, it prints nothing: Codex carries on as without the hook.

use std::io::Read;

use serde_json::Value;

use crate::HOOK_PATH;

/// The adapter's answer to one hook, as Codex reads it on stdout; `None`
/// for no decision (nothing printed).
pub fn forward(adapter: &str, input: &[u8]) -> Result<Option<String>, String> {
    let url = format!("{}{HOOK_PATH}", adapter.trim_end_matches('/'));
    let mut response = ureq::post(&url)
        .header("content-type", "application/json")
        .config()
        .http_status_as_error(false)
        .build()
        .send(input)
        .map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    let body = response.body_mut().read_to_string().map_err(|e| format!("{url}: {e}"))?;
    if !status.is_success() {
        return Err(format!("{url}: {status}: {body}"));
    }
    let answer: Value = serde_json::from_str(&body).map_err(|e| format!("{url}: the answer is not JSON: {e}"))?;
    Ok(match answer {
        Value::Object(ref members) if members.is_empty() => None,
        other => Some(other.to_string()),
    })
}

/// Runs the hook command: stdin to the adapter, its answer to stdout.
/// Never fails the hook: whatever goes wrong is said on stderr, and Codex
/// decides as it would without the adapter.
pub fn run(adapter: &str) {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("aep-codex hook: stdin: {e}");
        return;
    }
    match forward(adapter, &input) {
        Ok(Some(answer)) => println!("{answer}"),
        Ok(None) => {}
        Err(e) => eprintln!("aep-codex hook: {e}"),
    }
}
