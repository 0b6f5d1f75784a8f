//! What a mapping makes of one hook, and what an adapter implements to
//! run on the kit: its hooks' input, the plan for each, and the answer a
//! held hook gets.

use std::collections::HashMap;

use aep_engine::control::answer::Answer;
use aep_engine::protocol::event::Event;
use aep_engine::protocol::ids::Draft;
use aep_engine::protocol::vocabulary::types;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// One event to emit, in `session` (none for an agent-scoped event).
#[derive(Clone, Debug)]
pub struct Emission {
    pub session: Option<String>,
    pub draft: Draft,
}

impl Emission {
    pub fn in_session(session: &str, draft: Draft) -> Emission {
        Emission { session: Some(session.to_owned()), draft }
    }
}

/// What to do with one hook; `K` says what a held request returns.
#[derive(Clone, Debug)]
pub enum Plan<K> {
    /// Emit these and answer the hook at once.
    Observe(Vec<Emission>),
    /// Emit `before`, then raise `request` and hold the hook until it is
    /// answered or times out.
    Ask { before: Vec<Emission>, session: String, request: Draft, kind: K },
    /// Not a hook the adapter can read.
    Unreadable(String),
}

/// An agent's hooks as AEP events: what an adapter brings to the kit.
pub trait Mapping: 'static {
    /// One hook's JSON, as the agent sends it.
    type Input: DeserializeOwned + Send + 'static;
    /// The kinds of held request, each answered in its own shape (with
    /// what its answer needs that the answer does not carry).
    type Ask: Clone + std::fmt::Debug + Send + 'static;
    /// The agent name and vendor prefix the adapter emits under.
    const AGENT: &'static str;

    /// The hook's name, for the adapter's log.
    fn hook_name(input: &Self::Input) -> &str;
    fn plan(&mut self, input: &Self::Input) -> Plan<Self::Ask>;
    /// The run open in `session`, if any.
    fn run_of(&self, session: &str) -> Option<&str>;
    /// The option unmatched typed text applies (AEP-0008), if any.
    fn refusing(kind: &Self::Ask) -> Option<&'static str>;
    /// The hook's answer once a person's `answer` is applied; `by` names
    /// who answered.
    fn answered(kind: &Self::Ask, answer: &Answer, by: &str) -> Value;
    /// Whether `answer` refuses the tool call a request of `kind` asked
    /// about (the kit then closes the call with `tool.denied`).
    fn refuses(kind: &Self::Ask, answer: &Answer) -> bool;
    /// A last look at each event as it leaves, after the capture ceiling.
    fn gate(event: Event) -> Event {
        event
    }
}

/// Sessions remembered at once; the least recently heard goes first.
pub const MAX_SESSIONS: usize = 1024;

/// A mapping's memory of each session it has heard, bounded: the least
/// recently heard is forgotten first.
#[derive(Debug)]
pub struct Sessions<T> {
    sessions: HashMap<String, (u64, T)>,
    clock: u64,
}

impl<T> Default for Sessions<T> {
    fn default() -> Self {
        Sessions { sessions: HashMap::new(), clock: 0 }
    }
}

impl<T: Default> Sessions<T> {
    pub fn contains(&self, session: &str) -> bool {
        self.sessions.contains_key(session)
    }

    /// Starts remembering `session` afresh, forgetting the least recently
    /// heard one when full.
    pub fn remember(&mut self, session: &str) {
        if self.sessions.len() >= MAX_SESSIONS && !self.contains(session) {
            if let Some(oldest) = self.sessions.iter().min_by_key(|(_, (heard, _))| *heard).map(|(k, _)| k.clone()) {
                self.sessions.remove(&oldest);
            }
        }
        self.clock += 1;
        self.sessions.insert(session.to_owned(), (self.clock, T::default()));
    }

    /// `session` was just heard from.
    pub fn touch(&mut self, session: &str) {
        self.clock += 1;
        if let Some((heard, _)) = self.sessions.get_mut(session) {
            *heard = self.clock;
        }
    }

    pub fn get(&self, session: &str) -> Option<&T> {
        self.sessions.get(session).map(|(_, t)| t)
    }

    pub fn get_mut(&mut self, session: &str) -> Option<&mut T> {
        self.sessions.get_mut(session).map(|(_, t)| t)
    }

    /// The session's memory, remembered afresh if it was not.
    pub fn entry(&mut self, session: &str) -> &mut T {
        if !self.contains(session) {
            self.remember(session);
        }
        &mut self.sessions.get_mut(session).expect("just remembered").1
    }

    pub fn remove(&mut self, session: &str) -> Option<T> {
        self.sessions.remove(session).map(|(_, t)| t)
    }
}

/// `PreToolUse` → `pre_tool_use` (the vendor-extension fallback's tail).
pub fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            out.push('_');
        }
    }
    out
}

/// `text` cut at `max` characters, marked where it was cut.
pub fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// A turn begun by a person's prompt: the run `id`.
pub fn run_started(id: String, prompt: Option<&str>) -> Draft {
    let mut data = serde_json::json!({ "trigger": "user" });
    if let Some(p) = prompt {
        data["prompt"] = p.into();
    }
    Draft::new(types::RUN_STARTED).run(id).data(data)
}

/// A session that ended as it should, after `runs` turns.
pub fn session_ended(runs: u64) -> Draft {
    Draft::new(types::SESSION_ENDED).data(serde_json::json!({ "reason": "normal", "runs": runs }))
}

/// A tool as events name it: its name, and its call's id where known.
pub fn tool(name: Option<&str>, call_id: Option<&str>) -> Value {
    let mut tool = serde_json::json!({ "name": name.unwrap_or("unknown") });
    if let Some(id) = call_id {
        tool["call_id"] = id.into();
    }
    tool
}

/// The session's working directory, and its folder's name as the label a
/// person knows it by (a session id is a UUID), into `session.started`.
pub fn add_project(data: &mut Value, cwd: Option<&str>) {
    let Some(cwd) = cwd else { return };
    data["cwd"] = cwd.into();
    if let Some(name) = std::path::Path::new(cwd).file_name().and_then(|n| n.to_str()) {
        data["label"] = name.into();
    }
}

/// A tool's input as an object: a bare value goes under `value`.
pub fn as_object(v: &Value) -> Value {
    match v {
        Value::Object(_) => v.clone(),
        other => serde_json::json!({ "value": other }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_cases_hook_names() {
        assert_eq!(snake_case("ConfigChange"), "config_change");
        assert_eq!(snake_case("CwdChanged"), "cwd_changed");
    }

    #[test]
    fn the_least_recently_heard_session_is_forgotten_first() {
        let mut s: Sessions<u8> = Sessions::default();
        for i in 0..MAX_SESSIONS {
            s.remember(&format!("s{i}"));
        }
        s.touch("s0");
        s.remember("new");
        assert!(s.contains("s0") && s.contains("new") && !s.contains("s1"));
    }
}
