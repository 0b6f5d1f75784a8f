//! An attention card as the console shows it: the request (agent text
//! kept as data, next to where it came from), how it can be answered, and
//! what has happened to it since.

use aep_engine::client::hub::{Hub, Reach};
use aep_engine::protocol::attention::{AttentionKind, Channel, OptionMeaning};
use aep_engine::protocol::form::{Choice, FieldSpec};
use aep_engine::protocol::vocabulary::{CommandVerb, NackReason};
use aep_engine::store::{self, Card, CardRef, CardStatus, Closure, Resolution, ToolEnd, ToolOutcome};
use aep_engine::{Capture, Severity, UnixMs};
use serde_json::Value;

use super::clock;
use super::command::{self, CommandView};
use super::detail::Detail;

/// How the console offers an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answering {
    /// One button per option, plus a text reply.
    Options,
    /// A text reply only.
    Text,
    /// A form of typed fields.
    Form,
    /// The request declared `respond_via` without `control`: the answer is
    /// given in the agent's own interface (the named channels).
    Elsewhere(Vec<String>),
    /// The request itself was never seen (only later hops were), so there
    /// is nothing to answer against.
    Unknown,
    /// Several live connections claim the session: the relay refuses any
    /// answer as `ambiguous`, so none is offered.
    Ambiguous { claims: usize },
    /// The relay said this console's credential may watch, not answer (a
    /// viewer): the request is shown read-only.
    ReadOnly,
    /// No live relay's roster lists the session: its agent is not
    /// connected, so no answer can reach it now (`hub::Reach::Unlisted`).
    Unreachable,
}

impl Answering {
    /// A short stable token for styling and tests.
    pub fn token(&self) -> &'static str {
        match self {
            Answering::Options => "options",
            Answering::Text => "text",
            Answering::Form => "form",
            Answering::Elsewhere(_) => "elsewhere",
            Answering::Unknown => "unknown",
            Answering::Ambiguous { .. } => "ambiguous",
            Answering::ReadOnly => "read-only",
            Answering::Unreachable => "unreachable",
        }
    }
}

/// One offered choice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionView {
    pub id: String,
    pub label: String,
    /// The label is only the id (degraded capture, or the agent sent no
    /// words): shown for what it is.
    pub label_is_id: bool,
    /// Grants what was asked (allow, approve, yes...): never the default.
    pub permissive: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AnswerView {
    /// `Allow`, `"CHG-1234"`, `form: 4 values`.
    pub summary: String,
    /// The option applied, by its label (its id when it has none).
    pub label: String,
    /// Words given with the option (a refusal's reason, AEP-0008).
    pub reason: Option<String>,
    /// The option applied, by its id.
    pub option: Option<String>,
    pub by: Option<String>,
    /// `control`, `oob`, ...
    pub via: Option<String>,
    pub at: Option<UnixMs>,
    pub event_id: String,
    /// The form values, for a history view.
    pub values: Vec<(String, String)>,
}

/// How a request closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Closed {
    Resolved,
    TimedOut,
    /// The session ended while it was open.
    Abandoned,
}

impl Closed {
    /// A short stable token for styling and tests.
    pub fn token(self) -> &'static str {
        match self {
            Closed::Resolved => "resolved",
            Closed::TimedOut => "timed-out",
            Closed::Abandoned => "abandoned",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CloseView {
    pub how: Closed,
    /// `Resolved: answered`, `Timed out after 45 s`.
    pub words: String,
    pub at: Option<UnixMs>,
    pub event_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CardView {
    pub key: CardRef,
    pub id: String,
    /// `permission`, `input`, ..., or the agent's unknown kind as sent.
    pub kind: String,
    pub severity: Severity,
    pub status: CardStatus,
    /// Agent-authored: render as text, never as markup.
    pub prompt: Option<String>,
    /// The capture level left only synthesized or structural text (the
    /// prompt is not the agent's own words).
    pub synthesized: bool,
    pub capture: Capture,
    pub options: Vec<OptionView>,
    pub choices: Vec<Choice>,
    pub fields: Vec<FieldSpec>,
    pub fields_error: Option<String>,
    pub answering: Answering,
    pub expires_at: Option<UnixMs>,
    /// The agent marked it destructive.
    pub destructive: bool,
    /// Why, in the adapter's words.
    pub destructive_because: Option<String>,
    /// What it is about beyond the prompt (command, changes, the agent's
    /// explanation): empty when the agent sends none.
    pub detail: Detail,
    /// Why the agent's details could not be read, when they could not.
    pub detail_error: Option<String>,
    pub agent: String,
    pub source: String,
    pub session: String,
    pub session_label: Option<String>,
    /// The session's working directory, when its agent said (agent-authored).
    pub cwd: Option<String>,
    pub run: Option<String>,
    /// The request's own `subject` (typically the tool).
    pub subject: Option<String>,
    pub relay: Option<String>,
    pub raised_at: UnixMs,
    pub answer: Option<AnswerView>,
    pub close: Option<CloseView>,
    /// How the agent resolved it, when it did.
    pub resolution: Option<Resolution>,
    /// How the tool it asked about ended, once it did.
    pub tool: Option<ToolOutcome>,
    pub commands: Vec<CommandView>,
    /// This console's answers the agent refused while another answer was
    /// the one applied (what each asked, in words): a card that reads
    /// "Answered" must not hide that a later answer did not count.
    pub overruled: Vec<String>,
}

impl CardView {
    pub fn is_permission(&self) -> bool {
        AttentionKind::parse(&self.kind) == AttentionKind::Permission
    }

    /// A request for free text (an `input`), which may name a default.
    pub fn is_input(&self) -> bool {
        AttentionKind::parse(&self.kind) == AttentionKind::Input
    }

    /// Choosing `o` takes a second, deliberate step.
    pub fn needs_confirm(&self, o: &OptionView) -> bool {
        super::hold::needs_confirm(self.severity, self.destructive, o.permissive)
    }

    /// One of this console's commands for the card is still in flight, or
    /// the agent refused one as its own decision (not as a malformed
    /// answer): it decides what happens next, and the card takes no other
    /// answer meanwhile.
    pub fn in_flight(&self) -> bool {
        self.commands.iter().any(|c| {
            c.mine
                && (c.phase.in_flight()
                    || matches!(&c.phase, command::Phase::Rejected { reason, .. } if refusal_holds(*reason)))
        })
    }

    /// When it left the inbox, for ordering the history.
    pub fn settled_at(&self) -> UnixMs {
        self.close.as_ref().and_then(|c| c.at).or(self.answer.as_ref().and_then(|a| a.at)).unwrap_or(self.raised_at)
    }

    /// Which project asks, in the words a person knows it by: the
    /// session's label, else the last folder of its working directory.
    pub fn project(&self) -> Option<String> {
        self.session_label.clone().or_else(|| {
            let cwd = self.cwd.as_deref()?.trim_end_matches(['/', '\\']);
            cwd.rsplit(['/', '\\']).next().filter(|s| !s.is_empty()).map(str::to_owned)
        })
    }

    /// `permission · warning`.
    pub fn kind_words(&self) -> String {
        match self.kind.as_str() {
            "" => "request".to_owned(),
            k => k.to_owned(),
        }
    }

    /// What was decided, in a word or two: `Allowed`, `Denied`, the
    /// option's own label (a review's “Request changes” is not a denial), or
    /// the answer given.
    fn decision(&self, a: &AnswerView) -> (Decision, String) {
        match a.option.as_deref() {
            Some(o) if is_permissive(o) => (Decision::Allowed, "Allowed".to_owned()),
            Some(o) if is_refusing(o) => (Decision::Denied, "Denied".to_owned()),
            Some(_) => (Decision::Chose, format!("\u{201c}{}\u{201d}", a.label)),
            None if !a.values.is_empty() || a.summary.starts_with("form") => {
                (Decision::Chose, "Answered the form".to_owned())
            }
            None => (Decision::Chose, format!("Answered {}", a.summary)),
        }
    }

    /// What happened, in plain words: whether the thing will happen and
    /// why, and how it reads at a glance ([`Tone`]): only what went ahead
    /// as asked reads as success.
    pub fn verdict(&self) -> (String, Tone) {
        let refused = self.commands.iter().any(|c| c.mine && matches!(c.phase, command::Phase::Rejected { .. }));
        if let Some(a) = &self.answer {
            let (decision, _) = self.decision(a);
            return match (decision, &self.tool) {
                (Decision::Allowed, Some(t)) => {
                    let tool = t.tool.clone().unwrap_or_else(|| "the tool".to_owned());
                    match t.end {
                        ToolEnd::Completed => (format!("{tool} ran and completed"), Tone::Allowed),
                        ToolEnd::Failed => match &t.error {
                            Some(e) => (format!("{tool} ran and failed: {e}"), Tone::Trouble),
                            None => (format!("{tool} ran and failed"), Tone::Trouble),
                        },
                        ToolEnd::Denied => (format!("{tool} was then blocked by a policy"), Tone::Trouble),
                    }
                }
                (Decision::Allowed, None) => ("it goes ahead".to_owned(), Tone::Allowed),
                (Decision::Denied, _) => ("it will not happen".to_owned(), Tone::Denied),
                (Decision::Chose, _) => ("the agent goes on with this answer".to_owned(), Tone::Answered),
            };
        }
        let words = match (self.close.as_ref().map(|c| c.how), &self.resolution) {
            _ if refused => "Refused by the agent \u{2014} it will not happen",
            (Some(Closed::TimedOut), _) => "Timed out \u{2014} the agent went on without an answer",
            (Some(Closed::Abandoned), _) => "Not done \u{2014} the session ended before an answer",
            (_, Some(Resolution::Auto)) => "Settled by the agent on its own",
            (_, Some(Resolution::Dismissed)) => "Withdrawn by the agent \u{2014} it will not happen",
            _ => "Closed",
        };
        (words.to_owned(), Tone::Trouble)
    }

    /// A form (AEP-0006) takes only its `values`: the engine refuses any
    /// other answer to it (an option or typed words would leave its fields
    /// unanswered), so there is no decline to offer, and the card says so.
    pub fn form_only(&self, now: UnixMs, zone: &impl super::clock::Zone) -> Option<String> {
        if self.answering != Answering::Form {
            return None;
        }
        let until = match self.expires_at {
            Some(t) => format!(" until it expires at {}", super::clock::wall(t, now, zone)),
            None => String::new(),
        };
        Some(format!(
            "A form can only be answered by filling it in. To decline, leave it waiting{until}: the agent decides."
        ))
    }

    /// The outcome in one line: the decision, who made it, and what came
    /// of it (`Allowed by you (ops-alice) — Bash ran and completed`); the
    /// person named by [`words::person`] against `me`.
    pub fn outcome_words(&self, me: &[String]) -> String {
        let mut parts = Vec::new();
        if let (Some(a), false) = (&self.answer, self.overruled.is_empty()) {
            let refused = self.overruled.iter().map(|w| format!("\u{201c}{w}\u{201d}")).collect::<Vec<_>>().join(", ");
            let (one, verb) = if self.overruled.len() == 1 { ("answer", "was") } else { ("answers", "were") };
            parts.push(format!(
                "Your later {one} {refused} {verb} refused: the agent applied \u{201c}{}\u{201d}",
                a.summary
            ));
        }
        let (consequence, _) = self.verdict();
        match &self.answer {
            Some(a) => {
                let (_, mut decided) = self.decision(a);
                if let Some(by) = &a.by {
                    decided.push_str(&format!(" by {}", super::words::person(by, me)));
                }
                if a.via.as_deref().is_some_and(|v| Channel::parse(v) != Channel::Control) {
                    decided.push_str(" in the agent's own interface");
                }
                if let Some(reason) = &a.reason {
                    decided.push_str(&format!(": \u{201c}{reason}\u{201d}"));
                }
                parts.push(format!("{decided} \u{2014} {consequence}"));
            }
            None => parts.push(consequence),
        }
        parts.join(" \u{b7} ")
    }
}

/// What a person decided, for the words and the colour of a settled card.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    /// A permissive option (allow, approve, …).
    Allowed,
    /// A refusing option (deny, reject, …).
    Denied,
    /// Another option, typed words or a form.
    Chose,
}

/// How a settled card reads at a glance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tone {
    /// It goes ahead (or went ahead and completed): the colour of success.
    Allowed,
    /// A person said no: it will not happen.
    Denied,
    /// Some other answer: the agent goes on with it.
    Answered,
    /// Timed out, withdrawn, refused, or the tool failed.
    Trouble,
}

impl Tone {
    /// A short stable token for styling and tests.
    pub fn token(self) -> &'static str {
        match self {
            Tone::Allowed => "allowed",
            Tone::Denied => "denied",
            Tone::Answered => "answered",
            Tone::Trouble => "trouble",
        }
    }
}

/// Answers of this console's refused by the agent, other than the one
/// that produced the applied answer.
fn overruled(applied: Option<&store::CardAnswer>, commands: &[CommandView]) -> Vec<String> {
    let Some(applied) = applied else { return Vec::new() };
    commands
        .iter()
        .filter(|c| c.mine && CommandVerb::parse(&c.ty) == Some(CommandVerb::AttentionRespond))
        .filter(|c| applied.cause.as_deref() != Some(c.id.as_str()))
        .filter(|c| matches!(c.phase, command::Phase::Rejected { .. }))
        .map(|c| c.what.clone())
        .collect()
}

/// Whether the agent's refusal of one of this console's answers, for
/// `reason`, leaves the card to the agent: its own decision (refused,
/// busy, not taken from here, not implemented, or a reason this console
/// does not know) does, and the card takes no other answer meanwhile; an
/// answer that did not fit (`invalid`) does not, and may be given again.
///
/// ```
/// use aep_console::model::card::refusal_holds;
/// use aep_engine::protocol::vocabulary::NackReason;
/// assert!(refusal_holds(Some(NackReason::Busy)));
/// assert!(!refusal_holds(Some(NackReason::Invalid)));
/// ```
///
/// The rule names every reason, so a reason the registry adds, or a rule
/// that forgets one, does not compile:
///
/// ```compile_fail,E0004
/// use aep_engine::protocol::vocabulary::NackReason;
/// fn refusal_holds(reason: Option<NackReason>) -> bool {
///     match reason {
///         Some(NackReason::Invalid) => false,
///         Some(NackReason::Refused | NackReason::Unsupported | NackReason::Unauthorized) | None => true,
///     }
/// }
/// ```
pub fn refusal_holds(reason: Option<NackReason>) -> bool {
    match reason {
        Some(NackReason::Invalid) => false,
        Some(NackReason::Refused | NackReason::Busy | NackReason::Unsupported | NackReason::Unauthorized) | None => {
            true
        }
    }
}

pub(crate) fn is_permissive(id: &str) -> bool {
    OptionMeaning::of(id) == OptionMeaning::Grants
}

/// Refuses what was asked (deny, reject, no...): only these read as "Denied".
fn is_refusing(id: &str) -> bool {
    OptionMeaning::of(id) == OptionMeaning::Refuses
}

fn value_words(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "yes".into(),
        Value::Bool(false) => "no".into(),
        Value::Array(items) => items.iter().map(value_words).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// A select's choice ids as the labels the person picked from; anything
/// else (numbers, booleans, an `other` answer's free text) as it is.
fn labelled(field: Option<&FieldSpec>, v: &Value) -> Value {
    let Some(f) = field.filter(|f| !f.choices.is_empty()) else { return v.clone() };
    let label = |id: &str| f.choices.iter().find(|c| c.id == id).map_or_else(|| id.to_owned(), |c| c.label.clone());
    match v {
        Value::String(id) => Value::String(label(id)),
        Value::Array(items) => Value::Array(
            items.iter().map(|i| i.as_str().map_or_else(|| i.clone(), |id| Value::String(label(id)))).collect(),
        ),
        other => other.clone(),
    }
}

fn answer_view(a: &store::CardAnswer, options: &[Choice], fields: &[FieldSpec]) -> AnswerView {
    let label = |id: &str| options.iter().find(|o| o.id == id).map_or_else(|| id.to_owned(), |o| o.label.clone());
    let summary = match (&a.option, &a.text, &a.values) {
        (Some(o), Some(t), _) => format!("{} \u{2014} \u{201c}{t}\u{201d}", label(o)),
        (Some(o), None, _) => label(o),
        (None, Some(t), _) => format!("\u{201c}{t}\u{201d}"),
        (None, None, Some(v)) => format!("form with {} value{}", v.len(), if v.len() == 1 { "" } else { "s" }),
        (None, None, None) => "(no answer content at this capture level)".into(),
    };
    let values = a
        .values
        .as_ref()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let field = fields.iter().find(|f| &f.id == k);
                    let name = field.map_or_else(|| k.clone(), |f| f.label.clone());
                    (name, value_words(&labelled(field, v)))
                })
                .collect()
        })
        .unwrap_or_default();
    AnswerView {
        label: a.option.as_deref().map(label).unwrap_or_default(),
        reason: a.option.as_ref().and(a.text.clone()),
        summary,
        option: a.option.clone(),
        by: a.by.clone(),
        via: a.via.as_ref().map(|v| v.as_str().to_owned()),
        at: a.at,
        event_id: a.event_id.clone(),
        values,
    }
}

fn close_view(c: &Card) -> Option<CloseView> {
    if let Some(cl) = c.close() {
        let (token, words) = match &cl.how {
            Closure::Resolved { resolution, latency_ms } => {
                let how = match resolution {
                    Some(Resolution::Answered) => "answered".to_owned(),
                    Some(Resolution::Auto) => "automatically".to_owned(),
                    Some(Resolution::Dismissed) => "dismissed".to_owned(),
                    Some(Resolution::Unrecognized(s)) => s.clone(),
                    None => "closed".to_owned(),
                };
                let after = latency_ms.or_else(|| c.latency_ms()).map(|ms| format!(" after {}", clock::latency(ms)));
                (Closed::Resolved, format!("Resolved ({how}){}", after.unwrap_or_default()))
            }
            Closure::TimedOut { after_ms } => {
                let after = after_ms.or_else(|| c.latency_ms()).map(|ms| format!(" after {}", clock::latency(ms)));
                (Closed::TimedOut, format!("Timed out{}", after.unwrap_or_default()))
            }
        };
        return Some(CloseView { how: token, words, at: cl.at, event_id: Some(cl.event_id.clone()) });
    }
    (c.status() == CardStatus::Abandoned).then(|| CloseView {
        how: Closed::Abandoned,
        words: "Abandoned: the session ended while the request was open".to_owned(),
        at: None,
        event_id: None,
    })
}

/// The card's view, with its commands (ours as our sender follows them,
/// others' from the stream).
pub fn view(hub: &Hub, c: &Card) -> CardView {
    let session = hub.store().session_by_key(c.session());
    let r = c.request();
    let choices: Vec<Choice> = r.map(|r| r.options.clone()).unwrap_or_default();
    let fields: Vec<FieldSpec> = r.map(|r| r.fields.clone()).unwrap_or_default();
    let kind = r.and_then(|r| r.kind.as_ref()).map(|k| k.as_str().to_owned()).unwrap_or_default();
    let claims = session.map_or(0, |s| super::session::verbs(hub, s).claims);
    let answering = match r {
        None => Answering::Unknown,
        Some(r) if r.accepts_control() && hub.may_answer(c.id()) == Some(false) => Answering::ReadOnly,
        Some(r) if r.accepts_control() && hub.reach(&c.session().name) == Reach::Unlisted => Answering::Unreachable,
        Some(r) if claims > 1 && r.accepts_control() => Answering::Ambiguous { claims },
        Some(r) if !r.accepts_control() => {
            Answering::Elsewhere(r.respond_via.iter().flatten().map(|ch| ch.as_str().to_owned()).collect())
        }
        Some(r) if !r.fields.is_empty() => Answering::Form,
        Some(r) if !r.options.is_empty() => Answering::Options,
        Some(_) => Answering::Text,
    };
    let options = choices
        .iter()
        .map(|o| OptionView {
            id: o.id.clone(),
            label: o.label.clone(),
            label_is_id: o.label.trim().is_empty() || o.label == o.id,
            permissive: is_permissive(&o.id),
        })
        .collect();
    let commands: Vec<CommandView> =
        c.commands().iter().filter_map(|id| command::view(hub, id, session, &choices)).collect();
    let overruled = overruled(c.answer(), &commands);
    let cwd = session.and_then(|s| s.started()).and_then(|s| s.cwd.clone());
    CardView {
        overruled,
        key: c.key().clone(),
        id: c.id().to_owned(),
        kind,
        severity: c.severity(),
        status: c.status(),
        prompt: r.and_then(|r| r.prompt.clone()),
        synthesized: r.is_some_and(|r| matches!(r.capture, Capture::Metadata | Capture::None)),
        capture: r.map_or(Capture::Metadata, |r| r.capture),
        options,
        fields_error: r.and_then(|r| r.fields_error.as_ref()).map(|e| e.to_string()),
        answer: c.answer().map(|a| answer_view(a, &choices, &fields)),
        choices,
        fields,
        answering,
        expires_at: r.and_then(|r| r.expires_at),
        destructive: r.is_some_and(|r| r.destructive),
        destructive_because: r.and_then(|r| r.destructive_because.clone()),
        detail: r.and_then(|r| r.context.as_ref()).map(|c| Detail::of(c, cwd.as_deref())).unwrap_or_default(),
        detail_error: r.and_then(|r| r.context_error.clone()),
        agent: r.map_or_else(|| session.map(|s| s.agent().to_owned()).unwrap_or_default(), |r| r.agent.clone()),
        source: c.session().source.to_string(),
        session: c.session().name.to_string(),
        session_label: session.and_then(|s| s.started()).and_then(|s| s.label.clone()),
        cwd,
        run: r.and_then(|r| r.run.clone()),
        subject: r.and_then(|r| r.subject.clone()),
        relay: r.and_then(|r| r.relay.as_deref().map(str::to_owned)),
        raised_at: r.map_or(c.first_seen(), |r| r.at.unwrap_or(r.received_at)),
        close: close_view(c),
        tool: c.tool().cloned(),
        resolution: c.close().and_then(|cl| match &cl.how {
            Closure::Resolved { resolution, .. } => resolution.clone(),
            Closure::TimedOut { .. } => None,
        }),
        commands,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissive_options_are_recognised() {
        assert!(is_permissive("allow"));
        assert!(is_permissive("Approve"));
        assert!(is_permissive("allow_once"));
        assert!(!is_permissive("deny"));
        assert!(!is_permissive("allowlist-check"));
        assert!(!is_permissive("reject"));
    }
}
