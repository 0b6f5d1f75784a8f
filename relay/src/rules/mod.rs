//! Standing rules: an operator answers a request once and the relay
//! answers the next matching ones on their behalf, for a while.
//!
//! The relay keeps them because it sees every agent, checks who may
//! control and writes the audit. Each rule is a [`Rule`] (its match,
//! expiry and refusals are pure, in [`rule`]); this module keeps the book
//! of rules (in `rules.json` in `--data-dir`, so they survive a restart),
//! watches every newly stored `attention.requested`, and sends a matching
//! one's answer as an ordinary `control.attention.respond` under the
//! author's name through the switchboard's own routing: the agent acks it
//! and reports its outcome as for any person's answer, and the audit
//! records it with the rule ([`RULE_ATTRIBUTE`]).
//!
//! A rule never answers a request graded destructive, one of severity
//! `error` or worse, or one that does not offer its option; it answers
//! each request once.

pub mod http;
pub mod rule;
mod store;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use aep_engine::protocol::frame::Role;
use aep_engine::protocol::ids::{encode, ulid, Draft, Identity};
use aep_engine::protocol::vocabulary::{CommandVerb, EventType};
use aep_engine::{Capture, Event, UnixMs};
use serde_json::json;
use tokio::sync::{mpsc, watch};

use crate::auth::{Access, Keyring, Principal};
use crate::config::{Config, ConfigError};
use crate::refusal::refuse;
pub use crate::refusal::Refusal;
use crate::switchboard::{Peer, Switchboard};
use crate::sync::lock;
pub use rule::{Lifetime, Matching, Request, Rule, Skip, State};

/// The extension attribute (AEP-0001 §5.4) naming the rule that sent a
/// command: the audit, the console and the agent can tell it from a
/// person's answer.
pub const RULE_ATTRIBUTE: &str = "relayrule";
/// When that rule was made, ms since the epoch.
pub const RULE_MADE_ATTRIBUTE: &str = "relayrulemade";

/// Open requests remembered for rules made from them; the oldest go first.
const OPEN: usize = 4_096;
/// Requests remembered as answered by a rule, so none is answered twice.
const ANSWERED: usize = 16_384;
/// Answers waiting to be sent; beyond it a request waits for a person.
const QUEUE: usize = 1_024;

/// A request a rule is to answer.
#[derive(Clone, Debug)]
pub struct Due {
    pub rule: Rule,
    pub request: Request,
}

/// A bounded table that forgets its oldest entries.
struct Bounded<V> {
    values: HashMap<String, V>,
    order: VecDeque<String>,
    most: usize,
}

impl<V> Bounded<V> {
    fn new(most: usize) -> Self {
        Bounded { values: HashMap::new(), order: VecDeque::new(), most }
    }

    /// Inserts unless present; says whether it was new.
    fn insert(&mut self, key: &str, value: V) -> bool {
        if self.values.contains_key(key) {
            return false;
        }
        if self.values.len() >= self.most {
            if let Some(oldest) = self.order.pop_front() {
                self.values.remove(&oldest);
            }
        }
        self.order.push_back(key.to_owned());
        self.values.insert(key.to_owned(), value);
        true
    }

    fn remove(&mut self, key: &str) {
        if self.values.remove(key).is_some() {
            self.order.retain(|k| k != key);
        }
    }
}

/// What the relay holds of rules and requests.
struct Book {
    rules: Vec<Rule>,
    open: Bounded<Request>,
    answered: Bounded<()>,
}

/// A new rule as asked for, before the relay fills it in and checks it.
#[derive(Debug, Default)]
pub struct Proposal {
    /// The open request it is made from: fills what is not given, and is
    /// answered by the new rule.
    pub request: Option<String>,
    pub agent: Option<String>,
    /// `Some(None)`: any session.
    pub session: Option<Option<String>>,
    /// `Some(None)`: requests that name no tool.
    pub tool: Option<Option<String>>,
    pub matching: Option<Matching>,
    pub pattern: Option<String>,
    pub option: String,
    pub lifetime: Lifetime,
}

/// A change to a rule: what is given is changed.
#[derive(Debug, Default)]
pub struct Edit {
    pub matching: Option<Matching>,
    pub pattern: Option<String>,
    pub option: Option<String>,
    /// Holds for this long from now.
    pub lifetime: Option<Lifetime>,
}

pub struct Rules {
    dir: Option<PathBuf>,
    book: Mutex<Book>,
    keyring: Option<Arc<Keyring>>,
    due: mpsc::Sender<Due>,
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl Rules {
    /// Loads the rules kept in the data directory, starts the task that
    /// sends their answers, and has the switchboard show it every newly
    /// stored event.
    pub fn start(
        config: &Config,
        switchboard: &Arc<Switchboard>,
        keyring: Option<Arc<Keyring>>,
    ) -> Result<Arc<Rules>, ConfigError> {
        let dir = config.data_dir.clone();
        let rules = match &dir {
            Some(dir) => store::load(dir).map_err(ConfigError)?,
            None => Vec::new(),
        };
        let (due, queue) = mpsc::channel(QUEUE);
        let this = Arc::new(Rules {
            dir,
            book: Mutex::new(Book { rules, open: Bounded::new(OPEN), answered: Bounded::new(ANSWERED) }),
            keyring,
            due,
        });
        let watcher = this.clone();
        switchboard.observe_stored(Box::new(move |event| watcher.saw(event)));
        let stop = switchboard.shutdown_signal();
        tokio::spawn(answer_in_turn(this.clone(), Arc::downgrade(switchboard), queue, stop));
        Ok(this)
    }

    /// Called by the switchboard with each newly stored event, under its
    /// locks: only bookkeeping and a non-blocking hand-over.
    fn saw(&self, event: &Event) {
        match event.kind().core() {
            Some(EventType::AttentionRequested) => {
                let Some(request) = Request::from_event(event) else { return };
                let mut book = lock(&self.book);
                book.open.insert(&request.id, request.clone());
                let Some(rule) = rule::answering(&book.rules, &request, now_ms()).cloned() else { return };
                if book.answered.insert(&request.id, ()) {
                    drop(book);
                    self.hand_over(Due { rule, request });
                }
            }
            Some(EventType::AttentionAnswered | EventType::AttentionResolved | EventType::AttentionTimeout) => {
                if let Some(subject) = event.subject() {
                    lock(&self.book).open.remove(subject);
                }
            }
            _ => {}
        }
    }

    fn hand_over(&self, due: Due) {
        if let Err(e) = self.due.try_send(due) {
            tracing::warn!(
                "a standing rule's answer was not sent (the queue is full); the request waits for a person: {e}"
            );
        }
    }

    /// Every rule kept (ended ones too, until they are pruned), newest first.
    pub fn list(&self) -> Vec<Rule> {
        let mut rules = lock(&self.book).rules.clone();
        rules.sort_by_key(|r| std::cmp::Reverse(r.made_at));
        rules
    }

    /// The open request `id` as a rule sees it, for a rule made from it.
    pub fn request(&self, id: &str) -> Option<Request> {
        lock(&self.book).open.values.get(id).cloned()
    }

    /// Makes a rule on `author`'s behalf. When it is made from an open
    /// request that it matches, that request is answered by it too; the
    /// second value says what became of that request (`answered`, or why
    /// not), when it was made from one.
    pub fn make(&self, author: &Principal, proposal: Proposal) -> Result<(Rule, Option<String>), Refusal> {
        let now = now_ms();
        let mut book = lock(&self.book);
        let from = match &proposal.request {
            None => None,
            Some(id) => Some(book.open.values.get(id).cloned().ok_or_else(|| {
                refuse(409, "request-settled", format!("the request `{id}` is not open on this relay"))
            })?),
        };
        let given = |what: Option<String>, from_request: Option<String>, name: &str| {
            what.or(from_request).ok_or_else(|| refuse(400, "invalid-rule", format!("a rule needs `{name}`")))
        };
        let agent = given(proposal.agent, from.as_ref().map(|r| r.agent.clone()), "agent")?;
        let session = proposal.session.unwrap_or_else(|| from.as_ref().map(|r| r.session.clone()));
        let tool = proposal.tool.unwrap_or_else(|| from.as_ref().and_then(|r| r.tool.clone()));
        let matching = proposal.matching.unwrap_or(Matching::Exact);
        let pattern = given(proposal.pattern, from.as_ref().map(|r| r.input.clone()), "pattern")?;
        check_pattern(matching, &pattern)?;
        if proposal.option.is_empty() {
            return Err(refuse(400, "invalid-rule", "a rule needs the `option` it answers with"));
        }
        if let Some(request) = &from {
            if !request.options.contains(&proposal.option) {
                return Err(refuse(
                    400,
                    "option-not-offered",
                    format!("`{}` is not an option of the request", proposal.option),
                ));
            }
        }
        let rule = Rule {
            id: format!("r-{}", ulid(UnixMs(now), rand::random()).to_lowercase()),
            author: author.name.to_string(),
            made_at: now,
            agent,
            session,
            tool,
            matching,
            pattern,
            option: proposal.option,
            expires_at: proposal.lifetime.expires_at(now),
            revoked: None,
            edited: None,
            answered: 0,
        };
        book.rules.push(rule.clone());
        self.save(&mut book, now)?;
        let Some(request) = from else { return Ok((rule, None)) };
        let said = match rule.decide(&request, now) {
            Err(skip) => Some(format!("not answered: {}", skip.words())),
            Ok(()) if !book.answered.insert(&request.id, ()) => Some("already answered by a rule".to_owned()),
            Ok(()) => {
                drop(book);
                self.hand_over(Due { rule: rule.clone(), request });
                Some("answered".to_owned())
            }
        };
        Ok((rule, said))
    }

    /// Changes rule `id` on `by`'s behalf; a revoked rule stays revoked.
    pub fn edit(&self, by: &Principal, id: &str, edit: Edit) -> Result<Rule, Refusal> {
        let now = now_ms();
        let mut book = lock(&self.book);
        let rule = book.rules.iter_mut().find(|r| r.id == id).ok_or_else(|| unknown(id))?;
        if rule.revoked.is_some() {
            return Err(refuse(409, "rule-revoked", format!("the rule `{id}` was revoked; make a new one")));
        }
        let matching = edit.matching.unwrap_or(rule.matching);
        let pattern = edit.pattern.unwrap_or_else(|| rule.pattern.clone());
        check_pattern(matching, &pattern)?;
        if edit.option.as_deref() == Some("") {
            return Err(refuse(400, "invalid-rule", "a rule needs the `option` it answers with"));
        }
        rule.matching = matching;
        rule.pattern = pattern;
        if let Some(option) = edit.option {
            rule.option = option;
        }
        if let Some(lifetime) = edit.lifetime {
            rule.expires_at = lifetime.expires_at(now);
        }
        rule.edited = Some(rule::Ended { by: by.name.to_string(), at: now });
        let rule = rule.clone();
        self.save(&mut book, now)?;
        Ok(rule)
    }

    /// Revokes rule `id` at once, on `by`'s behalf.
    pub fn revoke(&self, by: &Principal, id: &str) -> Result<Rule, Refusal> {
        let now = now_ms();
        let mut book = lock(&self.book);
        let rule = book.rules.iter_mut().find(|r| r.id == id).ok_or_else(|| unknown(id))?;
        if rule.revoked.is_none() {
            rule.revoked = Some(rule::Ended { by: by.name.to_string(), at: now });
        }
        let rule = rule.clone();
        self.save(&mut book, now)?;
        Ok(rule)
    }

    /// Rule `id` now, if it is still kept.
    fn current(&self, id: &str) -> Option<Rule> {
        lock(&self.book).rules.iter().find(|r| r.id == id).cloned()
    }

    fn count_answer(&self, id: &str) {
        let mut book = lock(&self.book);
        if let Some(rule) = book.rules.iter_mut().find(|r| r.id == id) {
            rule.answered += 1;
        }
        if let Err(e) = self.save(&mut book, now_ms()) {
            tracing::warn!("standing rules: {}", e.detail);
        }
    }

    /// Prunes long-ended rules and writes the book to the data directory.
    fn save(&self, book: &mut Book, now: u64) -> Result<(), Refusal> {
        store::prune(&mut book.rules, now);
        let Some(dir) = &self.dir else { return Ok(()) };
        store::save(dir, &book.rules).map_err(|e| refuse(503, "unsaved", format!("the rules could not be kept: {e}")))
    }

    /// The principal `name` now, when it may still answer requests.
    fn operator(&self, name: &str) -> Option<Arc<Principal>> {
        self.keyring.as_ref()?.named(name).filter(|p| p.roles.operator)
    }
}

fn unknown(id: &str) -> Refusal {
    refuse(404, "not-found", format!("no rule `{id}` on this relay"))
}

/// An empty prefix would answer everything the agent asks.
fn check_pattern(matching: Matching, pattern: &str) -> Result<(), Refusal> {
    if matching == Matching::Prefix && pattern.trim().is_empty() {
        return Err(refuse(400, "invalid-rule", "a prefix must not be empty: it would match every request"));
    }
    Ok(())
}

/// The command a rule sends for `request`: an ordinary answer under its
/// author's name, naming the rule.
pub fn command(rule: &Rule, request: &Request, now: UnixMs) -> Result<Event, String> {
    let source = format!("aep://relay/agent/{}/rule/{}", encode(&rule.author), encode(&rule.id));
    let who = Identity::new(source, rule.author.clone());
    Draft::new(CommandVerb::AttentionRespond.as_str())
        .session(&request.session)
        .subject(&request.id)
        .capture(Capture::Metadata)
        .extension(RULE_ATTRIBUTE, rule.id.clone())
        .extension(RULE_MADE_ATTRIBUTE, rule.made_at)
        .data(json!({"answer": {"option": rule.option}}))
        .build(&who, ulid(now, rand::random()), now)
        .map_err(|e| e.to_string())
}

/// Sends each due answer through the switchboard's routing, as the
/// author's own connection would: the same gates, ack and outcome path.
/// Ends with the relay: it holds the switchboard only while answering, so
/// a relay shut down lets go of its data directory.
async fn answer_in_turn(
    rules: Arc<Rules>,
    switchboard: Weak<Switchboard>,
    mut queue: mpsc::Receiver<Due>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let due = tokio::select! {
            due = queue.recv() => due,
            _ = stop.wait_for(|down| *down) => None,
        };
        let Some(Due { rule, request }) = due else { return };
        let Some(switchboard) = switchboard.upgrade() else { return };
        // Revoked (or expired) since it was found: the request waits.
        let Some(rule) = rules.current(&rule.id).filter(|r| r.state(now_ms()) == State::Active) else { continue };
        let Some(author) = rules.operator(&rule.author) else {
            tracing::warn!("standing rule {}: `{}` may no longer answer requests; not answered", rule.id, rule.author);
            continue;
        };
        let command = match command(&rule, &request, UnixMs(now_ms())) {
            Ok(command) => command,
            Err(e) => {
                tracing::error!("standing rule {}: the answer could not be built: {e}", rule.id);
                continue;
            }
        };
        let peer = Peer {
            role: Some(Role::Consumer),
            agent: Some(rule.author.clone()),
            instance: None,
            control: None,
            emits: None,
        };
        let (conn, _) = switchboard.attach_socket(Access::authenticated(author), peer, String::new());
        let routed = switchboard.route_for_rule(conn, command);
        switchboard.detach(conn);
        match routed {
            Ok(_) => rules.count_answer(&rule.id),
            Err(refusal) => tracing::warn!(
                "standing rule {}: the answer to {} was refused: {} {}",
                rule.id,
                request.id,
                refusal.code,
                refusal.detail.unwrap_or_default()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rules_answer_is_an_ordinary_respond_naming_the_rule_and_its_author() {
        let rule = Rule {
            id: "r-1".into(),
            author: "alice".into(),
            made_at: 1_700_000_000_000,
            agent: "builder".into(),
            session: None,
            tool: Some("Bash".into()),
            matching: Matching::Exact,
            pattern: "npm test".into(),
            option: "allow".into(),
            expires_at: None,
            revoked: None,
            edited: None,
            answered: 0,
        };
        let request = Request {
            id: "req-1".into(),
            agent: "builder".into(),
            session: "s1".into(),
            tool: Some("Bash".into()),
            input: "npm test".into(),
            options: vec!["allow".into()],
            destructive: false,
            severity: aep_engine::Severity::Info,
            by_control: true,
        };
        let c = command(&rule, &request, UnixMs(1_700_000_001_000)).unwrap();
        assert_eq!(
            (c.ty(), c.agent(), c.session(), c.subject()),
            ("control.attention.respond", "alice", Some("s1"), Some("req-1"))
        );
        assert_eq!(c.extensions().get(RULE_ATTRIBUTE).and_then(|v| v.as_str()), Some("r-1"));
        assert_eq!(c.extensions().get(RULE_MADE_ATTRIBUTE).and_then(|v| v.as_u64()), Some(1_700_000_000_000));
        assert_eq!(c.data_field("answer"), Some(&json!({"option": "allow"})));
    }

    #[test]
    fn a_bounded_table_forgets_its_oldest_and_inserts_once() {
        let mut t = Bounded::new(2);
        assert!(t.insert("a", ()));
        assert!(!t.insert("a", ()), "once");
        t.insert("b", ());
        t.insert("c", ());
        assert!(!t.values.contains_key("a") && t.values.contains_key("c"));
    }
}
