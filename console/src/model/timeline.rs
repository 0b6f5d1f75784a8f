//! A session's events, each with a one-line summary. Known types get a
//! sentence; anything else is shown generically (type, capture and the
//! payload's top-level members), never dropped. Shown newest first, a tool
//! call folded with its result into one row, and filtered by category.
//! Everything here is data for text nodes.

use aep_engine::protocol::kind::EventKind;
use aep_engine::protocol::vocabulary::EventType;
use aep_engine::store::{Entry, Session};
use aep_engine::{Severity, UnixMs};
use serde_json::{Map, Value};

/// Most entries a session view renders (the newest ones).
pub const MAX_ITEMS: usize = 300;
/// Longest summary kept, in characters.
const MAX_SUMMARY: usize = 280;

/// What an event is about, from its type's family: what the timeline
/// filters by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    Session,
    Run,
    Tool,
    Attention,
    Control,
    Progress,
    /// Vendor types and anything else.
    Other,
}

impl Category {
    pub const ALL: [Category; 7] = [
        Category::Attention,
        Category::Tool,
        Category::Control,
        Category::Run,
        Category::Session,
        Category::Progress,
        Category::Other,
    ];

    pub fn of(ty: &str) -> Category {
        match ty.split('.').next().unwrap_or_default() {
            "session" => Category::Session,
            "run" => Category::Run,
            "tool" => Category::Tool,
            "attention" => Category::Attention,
            "control" => Category::Control,
            "progress" => Category::Progress,
            _ => Category::Other,
        }
    }

    /// A short stable token for the filter's value, styling and tests.
    pub fn token(self) -> &'static str {
        match self {
            Category::Session => "session",
            Category::Run => "run",
            Category::Tool => "tool",
            Category::Attention => "attention",
            Category::Control => "control",
            Category::Progress => "progress",
            Category::Other => "other",
        }
    }

    pub fn from_token(t: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.token() == t)
    }

    /// The filter's words for it.
    pub fn words(self) -> &'static str {
        match self {
            Category::Session => "Session start and end",
            Category::Run => "Runs",
            Category::Tool => "Tool calls",
            Category::Attention => "Requests and answers",
            Category::Control => "Commands and acks",
            Category::Progress => "Progress",
            Category::Other => "Other (vendor) events",
        }
    }
}

/// Which events the timeline shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Filter {
    #[default]
    All,
    Only(Category),
}

impl Filter {
    pub fn from_token(t: &str) -> Filter {
        Category::from_token(t).map_or(Filter::All, Filter::Only)
    }

    fn admits(self, c: Category) -> bool {
        match self {
            Filter::All => true,
            Filter::Only(x) => x == c,
        }
    }
}

/// One line of the timeline.
#[derive(Clone, Debug, PartialEq)]
pub enum Row {
    Event(Item),
    /// A tool call and its result (`tool.completed`, `tool.failed` or
    /// `tool.denied`), matched by `tool.call_id`: one row, folded.
    ToolCall {
        call: Item,
        result: Option<Item>,
    },
}

impl Row {
    /// The newest event's id: the row's identity in a list.
    pub fn id(&self) -> &str {
        match self {
            Row::Event(i) => &i.id,
            Row::ToolCall { call, result } => &result.as_ref().unwrap_or(call).id,
        }
    }
}

/// The rows to show, newest first: a call and its result share the row
/// where the result is; `filter` keeps one category.
pub fn rows(items: &[Item], filter: Filter) -> Vec<Row> {
    use std::collections::HashMap;
    let is_call = |i: &Item| i.core() == Some(EventType::ToolRequested);
    let is_result =
        |i: &Item| matches!(i.core(), Some(EventType::ToolCompleted | EventType::ToolFailed | EventType::ToolDenied));
    // Each result's call (the latest call with its id before it), by
    // position: lists rather than maps of positions, which would each link
    // a hash table of their own.
    let mut open: HashMap<&str, usize> = HashMap::new();
    let mut call_of: Vec<Option<usize>> = vec![None; items.len()];
    let mut paired = vec![false; items.len()];
    for (n, i) in items.iter().enumerate() {
        let Some(call) = i.call.as_deref() else { continue };
        if is_call(i) {
            open.insert(call, n);
        } else if is_result(i) {
            if let Some(c) = open.remove(call) {
                call_of[n] = Some(c);
                paired[c] = true;
            }
        }
    }
    let mut out: Vec<Row> = Vec::new();
    // Progress saying just what the row above it said is folded into it
    // (`said`: that row's own words, before the count).
    let mut repeats = 0;
    let mut said = String::new();
    for (n, i) in items.iter().enumerate().rev() {
        if paired[n] || !filter.admits(i.category) {
            continue;
        }
        if let Some(Row::Event(last)) = out.last_mut() {
            if i.core() == Some(EventType::ProgressStatus) && last.ty == i.ty && said == i.summary {
                repeats += 1;
                last.summary = format!("{said} (and {repeats} more the same)");
                continue;
            }
        }
        repeats = 0;
        said.clone_from(&i.summary);
        out.push(match call_of[n] {
            Some(c) => Row::ToolCall { call: items[c].clone(), result: Some(i.clone()) },
            None => Row::Event(i.clone()),
        });
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub id: String,
    pub ty: String,
    /// `epoch:seq`, or none for another party's event (a command).
    pub position: Option<(u64, u64)>,
    pub at: Option<UnixMs>,
    pub agent: String,
    pub relay: Option<String>,
    /// The cause: its id, and when it is in this timeline, its words
    /// (`#6 attention.requested`), for a link.
    pub cause: Option<(String, Option<String>)>,
    /// Who the row is by (a command's sender, an answer's `by`), named on
    /// screen by [`super::words::person`] before `summary`.
    pub by: Option<String>,
    pub summary: String,
    /// Summarised generically (a type this console has no words for).
    pub generic: bool,
    pub command: bool,
    pub severity: Severity,
    pub category: Category,
    /// `tool.call_id`, which ties a tool call to its result.
    pub call: Option<String>,
}

impl Item {
    /// The registered type the row is of, if it is one.
    pub fn core(&self) -> Option<EventType> {
        EventKind::of(&self.ty).core()
    }
}

fn cut(mut s: String) -> String {
    if s.chars().count() > MAX_SUMMARY {
        s = s.chars().take(MAX_SUMMARY - 1).collect();
        s.push('\u{2026}');
    }
    s
}

/// `key: value · key: value` over the top-level payload members.
fn generic(data: Option<&Map<String, Value>>) -> String {
    match data {
        None => String::new(),
        Some(m) if m.is_empty() => String::new(),
        Some(m) => m
            .iter()
            .take(6)
            .map(|(k, v)| format!("{k}: {}", super::words::scalar(v)))
            .collect::<Vec<_>>()
            .join(" \u{b7} "),
    }
}

fn item(entry: &Entry, shown: &std::collections::HashMap<&str, &Entry>, s: &Session) -> Item {
    let parsed = entry.event().ok();
    let call = parsed.as_ref().and_then(|e| e.data()?.get("tool")?.get("call_id")?.as_str().map(str::to_owned));
    let mut by = None;
    let (summary, generic_form, agent, severity) = match &parsed {
        Some(e) => match super::words::event(e, |id| s.card(id).and_then(|c| c.request())) {
            Some((who, words)) => {
                by = who;
                (words, false, e.agent().to_owned(), e.severity())
            }
            None => {
                let g = generic(e.data());
                let capture = e.capture().as_str();
                let s = if g.is_empty() { format!("({capture})") } else { format!("{g} ({capture})") };
                (s, true, e.agent().to_owned(), e.severity())
            }
        },
        None => ("(unreadable)".to_owned(), true, String::new(), Severity::default()),
    };
    Item {
        id: entry.id().to_owned(),
        ty: entry.ty().to_owned(),
        position: entry.position(),
        at: entry.at(),
        agent,
        relay: entry.relay.as_deref().map(str::to_owned),
        cause: entry.cause().map(|c| (c.to_owned(), shown.get(c).map(|e| cause_words(e)))),
        by,
        summary: cut(summary),
        generic: generic_form,
        command: entry.is_command(),
        severity,
        category: Category::of(entry.ty()),
        call,
    }
}

/// The newest `limit` events of a session, oldest first (a page is
/// [`MAX_ITEMS`]; "show earlier" asks for another), with how many older
/// ones are kept but not shown, and how many this device no longer keeps.
pub fn items(s: &Session, limit: usize) -> (Vec<Item>, usize, usize) {
    let lane = s.timeline();
    let skip = lane.len().saturating_sub(limit);
    let shown: std::collections::HashMap<&str, &Entry> = lane.iter().skip(skip).map(|e| (e.id(), e)).collect();
    (lane.iter().skip(skip).map(|e| item(e, &shown, s)).collect(), skip, lane.dropped() as usize)
}

/// How a row names the shown event that caused it: `#7 tool.requested`.
fn cause_words(cause: &Entry) -> String {
    format!("{} {}", position_words(cause.position()), cause.ty())
}

/// `#7`, `#2:7` (epoch 2), or a dash for an event without a position.
pub fn position_words(p: Option<(u64, u64)>) -> String {
    match p {
        Some((0, seq)) => format!("#{seq}"),
        Some((epoch, seq)) => format!("#{epoch}:{seq}"),
        None => "\u{2014}".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_read_short() {
        assert_eq!(position_words(Some((0, 7))), "#7");
        assert_eq!(position_words(Some((2, 7))), "#2:7");
        assert_eq!(position_words(None), "\u{2014}");
    }
}
