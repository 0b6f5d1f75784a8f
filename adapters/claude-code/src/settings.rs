//! Connects Claude Code to the adapter through `.claude/settings.json`:
//! one `http` hook per mapped hook event, merged beside the hooks already
//! there, added once however often it runs, and removed exactly. Every
//! member the adapter does not touch is kept as written (its bytes), so a
//! settings file in Claude Code's own layout (two-space JSON) comes back
//! byte for byte after [`remove`].

use std::io;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::server::HOOK_PATH;

/// The hook events the adapter maps (see [`crate::mapping`]).
/// `SessionStart` is not among them: Claude Code calls it on command
/// hooks only, and the adapter opens a session at its first hook.
pub const HOOKED: [&str; 16] = [
    "UserPromptSubmit",
    "Stop",
    "StopFailure",
    "SessionEnd",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "PermissionDenied",
    "Elicitation",
    "Notification",
    "SubagentStart",
    "SubagentStop",
    "PostCompact",
    "TaskCreated",
    "TaskCompleted",
];

/// The hooks held for a person's answer get the long timeout.
const HELD: [&str; 2] = ["PermissionRequest", "Elicitation"];
/// Seconds an observing hook may take (the adapter answers at once).
const OBSERVE_TIMEOUT_S: u64 = 10;

/// What to write.
#[derive(Clone, Debug)]
pub struct Hooks {
    /// The adapter's origin, `http://127.0.0.1:PORT`.
    pub origin: String,
    /// Seconds Claude Code waits for a held hook; the adapter's own
    /// timeout must be shorter.
    pub held_timeout_s: u64,
}

impl Hooks {
    pub fn url(&self) -> String {
        format!("{}{HOOK_PATH}", self.origin.trim_end_matches('/'))
    }

    fn group(&self, event: &str) -> Value {
        let timeout = if HELD.contains(&event) { self.held_timeout_s } else { OBSERVE_TIMEOUT_S };
        json!({ "hooks": [{ "type": "http", "url": self.url(), "timeout": timeout }] })
    }
}

/// Where the settings live: a project's, or the user's.
pub fn settings_path(project: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    match project {
        Some(p) => Some(p.join(".claude").join("settings.json")),
        None => home.map(|h| h.join(".claude").join("settings.json")),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("{path} is not a JSON object: {source}")]
    NotJson { path: String, source: serde_json::Error },
    #[error("{path}: `hooks` is not an object of arrays: {source}")]
    BadHooks { path: String, source: serde_json::Error },
}

pub use aep_adapter_kit::settings::Outcome;

type Members = IndexMap<String, Box<RawValue>>;
type HookTable = IndexMap<String, Vec<Box<RawValue>>>;

/// Adds the adapter's hooks to the settings at `path` (created if absent).
pub fn install(path: &Path, hooks: &Hooks) -> Result<Outcome, SettingsError> {
    let (members, newline) = read(path)?.unwrap_or_default();
    let mut table = hook_table(path, &members)?;
    let mut changed = false;
    for event in HOOKED {
        let groups = table.entry(event.to_owned()).or_default();
        if groups.iter().any(|g| is_ours(g)) {
            continue;
        }
        groups.push(raw(&hooks.group(event)));
        changed = true;
    }
    if !changed {
        return Ok(Outcome::Unchanged);
    }
    let newline = newline || !path.exists();
    write(path, &members, Some(&table), newline)?;
    Ok(Outcome::Changed)
}

/// Removes every hook [`install`] added, and nothing else. A file left
/// with nothing in it is deleted.
pub fn remove(path: &Path) -> Result<Outcome, SettingsError> {
    let Some((mut members, newline)) = read(path)? else { return Ok(Outcome::Unchanged) };
    let mut table = hook_table(path, &members)?;
    let mut changed = false;
    table.retain(|_, groups| {
        let before = groups.len();
        groups.retain(|g| !is_ours(g));
        let touched = groups.len() != before;
        changed |= touched;
        !(touched && groups.is_empty())
    });
    if !changed {
        return Ok(Outcome::Unchanged);
    }
    if table.is_empty() {
        members.shift_remove("hooks");
    }
    if members.is_empty() {
        std::fs::remove_file(path).map_err(|source| io_error(path, source))?;
    } else {
        write(path, &members, Some(&table).filter(|t| !t.is_empty()), newline)?;
    }
    Ok(Outcome::Changed)
}

/// A group of the adapter's: every hook in it posts to the adapter's path.
fn is_ours(group: &RawValue) -> bool {
    let Ok(group) = serde_json::from_str::<Value>(group.get()) else { return false };
    let Some(hooks) = group.get("hooks").and_then(Value::as_array) else { return false };
    !hooks.is_empty()
        && hooks.iter().all(|h| {
            h.get("type").and_then(Value::as_str) == Some("http")
                && h.get("url").and_then(Value::as_str).is_some_and(|u| u.ends_with(HOOK_PATH))
        })
}

/// The file's members in their order, each as written, and whether it
/// ended with a newline; `None` when there is no file.
fn read(path: &Path) -> Result<Option<(Members, bool)>, SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(io_error(path, source)),
    };
    if text.trim().is_empty() {
        return Ok(Some((Members::new(), true)));
    }
    let members = serde_json::from_str(&text).map_err(|source| SettingsError::NotJson { path: shown(path), source })?;
    Ok(Some((members, text.ends_with('\n'))))
}

fn hook_table(path: &Path, members: &Members) -> Result<HookTable, SettingsError> {
    match members.get("hooks") {
        None => Ok(HookTable::new()),
        Some(raw) => {
            serde_json::from_str(raw.get()).map_err(|source| SettingsError::BadHooks { path: shown(path), source })
        }
    }
}

/// A member as it is written back: as read, or the hook table rebuilt.
#[derive(Serialize)]
#[serde(untagged)]
enum Member<'a> {
    AsRead(&'a RawValue),
    Hooks(&'a HookTable),
}

/// Writes `members` in their order, `hooks` (kept in place, or last when
/// new) as `table`, in one pass: what was read keeps its bytes.
fn write(path: &Path, members: &Members, table: Option<&HookTable>, newline: bool) -> Result<(), SettingsError> {
    let mut out: IndexMap<&str, Member> = members.iter().map(|(k, v)| (k.as_str(), Member::AsRead(v))).collect();
    if let Some(table) = table {
        out.insert("hooks", Member::Hooks(table));
    }
    let mut text = pretty(&out, 0);
    if newline {
        text.push('\n');
    }
    aep_adapter_kit::settings::write_whole(path, &text).map_err(|(at, source)| io_error(&at, source))
}

/// Two-space JSON, as Claude Code writes it, for a value that sits
/// `depth` levels in: its inner lines are indented to match, so it
/// reads the same whether printed alone or inside its parent.
fn pretty(value: &impl Serialize, depth: usize) -> String {
    let mut out = Vec::new();
    let mut ser =
        serde_json::Serializer::with_formatter(&mut out, serde_json::ser::PrettyFormatter::with_indent(b"  "));
    value.serialize(&mut ser).expect("JSON values serialize");
    let text = String::from_utf8(out).expect("serde_json writes UTF-8");
    let pad = "  ".repeat(depth);
    text.replace('\n', &format!("\n{pad}"))
}

/// A hook group as it sits in the file: `hooks` → event → group.
fn raw(value: &Value) -> Box<RawValue> {
    RawValue::from_string(pretty(value, 3)).expect("serde_json writes JSON")
}

fn io_error(path: &Path, source: io::Error) -> SettingsError {
    SettingsError::Io { path: shown(path), source }
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}
