//! Connects Codex to the adapter through its `config.toml`: one command
//! hook per mapped hook event, each running the adapter's own binary
//! (`aep-codex hook`), added beside the user's hooks, once however often
//! it runs, and removed exactly. The file is edited in place (`toml_edit`):
//! the user's keys, comments and layout are kept, so after [`remove`] a
//! file comes back byte for byte. Trust Codex keeps for the adapter's
//! hooks (`[hooks.state."<key>"]`, see [`crate::trust`]) goes with them.

use std::io;
use std::path::{Path, PathBuf};

use aep_adapter_kit::mapping::snake_case;
use aep_adapter_kit::settings::write_whole;
use toml_edit::{value, ArrayOfTables, DocumentMut, Item, Table};

pub use aep_adapter_kit::settings::Outcome;

/// The hook events the adapter maps (see [`crate::mapping`]);
/// `PreCompact` maps to nothing and is not hooked.
pub const HOOKED: [&str; 10] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Stop",
    "SessionEnd",
    "PostCompact",
    "SubagentStart",
    "SubagentStop",
];

/// The hook held for a person's answer gets the long timeout.
const HELD: &str = "PermissionRequest";
/// Seconds an observing hook may take (the adapter answers at once).
const OBSERVE_TIMEOUT_S: i64 = 10;
/// Codex caps the `SessionEnd` hook at 3 seconds, and says so as an
/// `error` event on every run when asked for more.
const SESSION_END_TIMEOUT_S: i64 = 3;
/// What marks a hook command as the adapter's.
const SUBCOMMAND: &str = " hook --adapter ";

/// What to write.
#[derive(Clone, Debug)]
pub struct Hooks {
    /// The adapter's binary, which Codex runs as the hook command.
    pub program: PathBuf,
    /// The adapter's origin, `http://127.0.0.1:PORT`.
    pub origin: String,
    /// Seconds Codex waits for the held hook; the adapter's own timeout
    /// must be shorter.
    pub held_timeout_s: u64,
}

impl Hooks {
    /// The command line Codex runs (through a shell).
    pub fn command(&self) -> String {
        format!("{}{SUBCOMMAND}{}", shell_quoted(&self.program.to_string_lossy()), shell_quoted(&self.origin))
    }

    fn group(&self, event: &str) -> Table {
        let timeout = match event {
            HELD => i64::try_from(self.held_timeout_s).unwrap_or(i64::MAX),
            "SessionEnd" => SESSION_END_TIMEOUT_S,
            _ => OBSERVE_TIMEOUT_S,
        };
        let mut hook = Table::new();
        hook.insert("type", value("command"));
        hook.insert("command", value(self.command()));
        hook.insert("timeout", value(timeout));
        let mut hooks = ArrayOfTables::new();
        hooks.push(hook);
        let mut group = Table::new();
        group.insert("hooks", Item::ArrayOfTables(hooks));
        group
    }
}

/// Where Codex reads its configuration: `$CODEX_HOME/config.toml`, else
/// `~/.codex/config.toml`.
pub fn config_path(codex_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    match codex_home {
        Some(dir) => Some(dir.join("config.toml")),
        None => home.map(|h| h.join(".codex").join("config.toml")),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("{path} is not TOML: {source}")]
    NotToml { path: String, source: toml_edit::TomlError },
    #[error("{path}: `{key}` is not what Codex reads there ({expected})")]
    Unexpected { path: String, key: String, expected: &'static str },
}

/// Adds the adapter's hooks to the configuration at `path` (created if
/// absent).
pub fn install(path: &Path, hooks: &Hooks) -> Result<Outcome, ConfigError> {
    let mut doc = read(path)?.unwrap_or_default();
    let table = hooks_table(path, &mut doc, true)?.expect("made when missing");
    let mut changed = false;
    for event in HOOKED {
        let groups = match table.get_mut(event) {
            None => {
                table.insert(event, Item::ArrayOfTables(ArrayOfTables::new()));
                table.get_mut(event).and_then(Item::as_array_of_tables_mut).expect("just inserted")
            }
            Some(item) => {
                item.as_array_of_tables_mut().ok_or_else(|| unexpected(path, event, "[[hooks.<event>]] tables"))?
            }
        };
        if groups.iter().any(is_ours) {
            continue;
        }
        groups.push(hooks.group(event));
        changed = true;
    }
    if !changed {
        return Ok(Outcome::Unchanged);
    }
    write(path, &doc)?;
    Ok(Outcome::Changed)
}

/// Removes every hook [`install`] added, and the trust recorded for them,
/// and nothing else. A file left with nothing in it is deleted.
pub fn remove(path: &Path) -> Result<Outcome, ConfigError> {
    let Some(mut doc) = read(path)? else { return Ok(Outcome::Unchanged) };
    let keys = ours(path, &doc);
    if keys.is_empty() {
        return Ok(Outcome::Unchanged);
    }
    let table = hooks_table(path, &mut doc, false)?.expect("the adapter's hooks are in it");
    for event in HOOKED {
        let Some(groups) = table.get_mut(event).and_then(Item::as_array_of_tables_mut) else { continue };
        let before = groups.len();
        groups.retain(|g| !is_ours(g));
        if groups.len() != before && groups.is_empty() {
            table.remove(event);
        }
    }
    if let Some(state) = table.get_mut("state").and_then(Item::as_table_like_mut) {
        for (key, _) in &keys {
            state.remove(key);
        }
        if state.is_empty() {
            table.remove("state");
        }
    }
    if table.is_empty() {
        doc.remove("hooks");
    }
    if doc.as_table().is_empty() && doc.trailing().as_str().is_none_or(|t| t.trim().is_empty()) {
        std::fs::remove_file(path).map_err(|source| io_error(path, source))?;
    } else {
        write(path, &doc)?;
    }
    Ok(Outcome::Changed)
}

/// The trust key Codex gives each of the adapter's hooks in `doc` (its
/// file, event, group and place in the group), with the event's name.
pub fn ours(path: &Path, doc: &DocumentMut) -> Vec<(String, &'static str)> {
    let Some(table) = doc.get("hooks").and_then(Item::as_table_like) else { return Vec::new() };
    let mut keys = Vec::new();
    for event in HOOKED {
        let Some(groups) = table.get(event).and_then(Item::as_array_of_tables) else { continue };
        for (g, group) in groups.iter().enumerate() {
            if is_ours(group) {
                for h in 0..group.get("hooks").and_then(Item::as_array_of_tables).map_or(0, ArrayOfTables::len) {
                    keys.push((format!("{}:{}:{g}:{h}", path.display(), snake_case(event)), event));
                }
            }
        }
    }
    keys
}

/// Records that Codex may run the hooks with these keys as they are now
/// (`[hooks.state."<key>"] trusted_hash`).
pub fn record_trust(path: &Path, trusted: &[(String, String)]) -> Result<Outcome, ConfigError> {
    let mut doc = read(path)?.unwrap_or_default();
    let table = hooks_table(path, &mut doc, true)?.expect("made when missing");
    if table.get("state").is_none() {
        let mut state = Table::new();
        state.set_implicit(true);
        table.insert("state", Item::Table(state));
    }
    let state = table
        .get_mut("state")
        .and_then(Item::as_table_mut)
        .ok_or_else(|| unexpected(path, "hooks.state", "a table"))?;
    let mut changed = false;
    for (key, hash) in trusted {
        let current = state.get(key).and_then(|t| t.get("trusted_hash")).and_then(Item::as_str);
        if current == Some(hash.as_str()) {
            continue;
        }
        let mut entry = Table::new();
        entry.insert("trusted_hash", value(hash.as_str()));
        state.insert(key, Item::Table(entry));
        changed = true;
    }
    if !changed {
        return Ok(Outcome::Unchanged);
    }
    write(path, &doc)?;
    Ok(Outcome::Changed)
}

/// A group of the adapter's: every hook in it runs `aep-codex hook`.
fn is_ours(group: &Table) -> bool {
    let Some(hooks) = group.get("hooks").and_then(Item::as_array_of_tables) else { return false };
    !hooks.is_empty() && hooks.iter().all(|h| h.get("command").and_then(Item::as_str).is_some_and(is_our_command))
}

/// `'/path/to/aep-codex' hook --adapter http://...`.
pub fn is_our_command(command: &str) -> bool {
    command.split_once(SUBCOMMAND).is_some_and(|(program, _)| program.trim_matches('\'').ends_with("aep-codex"))
}

/// The `hooks` table, made (with no header of its own) when missing and
/// `make` says so.
fn hooks_table<'d>(path: &Path, doc: &'d mut DocumentMut, make: bool) -> Result<Option<&'d mut Table>, ConfigError> {
    if doc.get("hooks").is_none() {
        if !make {
            return Ok(None);
        }
        let mut table = Table::new();
        table.set_implicit(true);
        doc.insert("hooks", Item::Table(table));
    }
    doc.get_mut("hooks").and_then(Item::as_table_mut).map(Some).ok_or_else(|| unexpected(path, "hooks", "a table"))
}

fn read(path: &Path) -> Result<Option<DocumentMut>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(io_error(path, source)),
    };
    text.parse().map(Some).map_err(|source| ConfigError::NotToml { path: path.display().to_string(), source })
}

fn write(path: &Path, doc: &DocumentMut) -> Result<(), ConfigError> {
    write_whole(path, &doc.to_string()).map_err(|(at, source)| io_error(&at, source))
}

/// A word the shell reads as it is: quoted when it has anything the
/// shell would treat specially.
fn shell_quoted(word: &str) -> String {
    let plain = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "/._-:@%+=,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn unexpected(path: &Path, key: &str, expected: &'static str) -> ConfigError {
    ConfigError::Unexpected { path: path.display().to_string(), key: key.to_owned(), expected }
}

fn io_error(path: &Path, source: io::Error) -> ConfigError {
    ConfigError::Io { path: path.display().to_string(), source }
}
