//! The sentences a person reads for protocol outcomes. Every reason a
//! command can end with has words here, so nothing reaches the screen as
//! a bare code.

use aep_engine::client::hub::HubError;
use aep_engine::client::{Refusal, State};
use aep_engine::control::sender::RelayCode;
use aep_engine::protocol::kind::{is_vendor_command_type, EventKind};
use aep_engine::protocol::vocabulary::{CommandVerb, EventType, NackReason};
use aep_engine::store::Request;
use aep_engine::Event;
use serde_json::{Map, Value};

/// What a command is called on screen, by its type: a core verb by its
/// word, a vendor's `x.{vendor}.control.{verb}` as `verb (vendor)`, any
/// other type as sent.
pub fn verb(ty: &str) -> String {
    match (CommandVerb::parse(ty), EventKind::of(ty)) {
        (Some(v), _) => verb_word(v).to_owned(),
        (None, EventKind::Vendor(vendor_ty)) if is_vendor_command_type(vendor_ty) => {
            // `x` . vendor . `control` . verb
            let mut parts = vendor_ty.splitn(4, '.');
            let (vendor, verb) = (parts.nth(1).unwrap_or_default(), parts.nth(1).unwrap_or_default());
            format!("{verb} ({vendor})")
        }
        (None, _) => ty.to_owned(),
    }
}

/// A core command's word. Every verb has one: a verb the registry adds
/// does not compile here until it is given its word, and a misspelt one
/// never does.
///
/// ```
/// use aep_console::model::words::verb_word;
/// use aep_engine::protocol::vocabulary::CommandVerb;
/// assert_eq!(verb_word(CommandVerb::Pause), "Pause");
/// ```
///
/// ```compile_fail,E0599
/// use aep_console::model::words::verb_word;
/// use aep_engine::protocol::vocabulary::CommandVerb;
/// assert_eq!(verb_word(CommandVerb::Puase), "Pause");
/// ```
pub fn verb_word(verb: CommandVerb) -> &'static str {
    match verb {
        CommandVerb::AttentionRespond => "Answer",
        CommandVerb::Cancel => "Cancel",
        CommandVerb::Pause => "Pause",
        CommandVerb::Resume => "Resume",
    }
}

/// Headline and explanation of a `control.rejected`.
///
/// The console has words for every registered reason: a decision on the
/// reason that leaves one out, or names one the registry does not hold,
/// does not compile.
///
/// ```
/// use aep_console::model::words::rejected;
/// use aep_engine::protocol::vocabulary::NackReason;
/// assert_eq!(rejected(Some(NackReason::Busy)).0, "The agent is busy");
/// assert_eq!(rejected(None).0, "Rejected by the agent");
/// ```
///
/// ```compile_fail,E0599
/// use aep_console::model::words::rejected;
/// use aep_engine::protocol::vocabulary::NackReason;
/// let _ = rejected(Some(NackReason::Refuse));
/// ```
pub fn rejected(reason: Option<NackReason>) -> (&'static str, &'static str) {
    match reason {
        Some(NackReason::Refused) => (
            "Refused by the agent",
            "The agent decided not to do this. That is its own call, not an error in the console or the relay.",
        ),
        Some(NackReason::Unsupported) => ("Not supported by the agent", "The agent does not implement this command."),
        Some(NackReason::Unauthorized) => {
            ("Not allowed by the agent", "The agent does not take this command from this console.")
        }
        Some(NackReason::Busy) => {
            ("The agent is busy", "It could not take the command right now; trying again later may work.")
        }
        Some(NackReason::Invalid) => {
            ("The agent could not apply it", "The command was well formed but did not fit what the agent holds.")
        }
        None => ("Rejected by the agent", "The agent gave a reason this console does not know."),
    }
}

/// Headline and explanation of a relay `error` frame refusing a command
/// on the target's behalf: the agent never saw it.
pub fn relay_refused(code: &RelayCode, relay: &str) -> (String, String) {
    match code {
        RelayCode::NoRoute => (
            "Not delivered: the agent is not connected".into(),
            format!("Relay {relay} has no live connection from the agent that owns this session, so nobody received the command."),
        ),
        RelayCode::Ambiguous => (
            "Not delivered: two agents claim this session".into(),
            format!("More than one connection on relay {relay} claims this session, so the relay delivered the command to neither."),
        ),
        RelayCode::Unauthorized => (
            "Not delivered: commands are not allowed".into(),
            format!("Relay {relay} does not allow control with this token; the agent never saw the command."),
        ),
        RelayCode::Unsupported => (
            "Not delivered: the agent does not take this command".into(),
            format!("Relay {relay} checked the agent's declared commands and this one is not among them."),
        ),
        RelayCode::Other(other) => (
            format!("Not delivered: refused by the relay ({other})"),
            format!("Relay {relay} refused the command before it reached the agent."),
        ),
    }
}

/// Headline and explanation of an ack window that passed in silence.
pub fn timed_out(window_ms: u64) -> (String, String) {
    (
        "No acknowledgement".into(),
        format!(
            "The agent did not acknowledge within {} s. It may not have received the command. \
             Retry sends the very same command (same id), so the agent cannot act on it twice.",
            window_ms.div_ceil(1000)
        ),
    )
}

/// A connection state for a status chip: a short word and an optional
/// longer explanation.
pub fn state(state: &State) -> (String, Option<String>) {
    match state {
        State::Idle => ("idle".into(), None),
        State::Connecting | State::Handshaking => ("connecting".into(), None),
        State::Live => ("live".into(), None),
        State::Reconnecting { attempt, .. } => (format!("reconnecting (attempt {attempt})"), None),
        State::Refused { reason } => match reason {
            Refusal::Unauthorized { .. } => {
                ("refused: wrong token".into(), Some("The relay did not accept this token.".into()))
            }
            Refusal::VersionUnsupported { peer_versions } => (
                "refused: version unsupported".into(),
                Some(format!(
                    "The relay speaks protocol {}; this console speaks 0.1.",
                    if peer_versions.is_empty() {
                        "versions it did not name".to_owned()
                    } else {
                        peer_versions.join(", ")
                    }
                )),
            ),
            other => ("refused".into(), Some(other.to_string())),
        },
        State::Closed => ("closed".into(), None),
    }
}

/// Why the console did not send a command, in words.
pub fn not_sent(e: &HubError) -> String {
    match e {
        HubError::NotLive { relay, .. } => {
            format!("Not sent: relay {relay} is not connected. Nothing was queued; send again once it is live.")
        }
        HubError::Backpressure { relay } => {
            format!("Not sent: relay {relay} is not keeping up. Nothing was queued.")
        }
        HubError::NotOverControl(_) => "This request is answered in the agent's own interface, not here.".into(),
        HubError::NoRoute(_) => "Not sent: no relay carries this session.".into(),
        HubError::NotPermitted { relay } => {
            format!("Not sent: on relay {relay} this console may watch, not answer or command.")
        }
        HubError::UnknownRequest(_) => "This request is no longer held by the console.".into(),
        other => format!("Not sent: {other}."),
    }
}

/// `1 run`, `3 runs`, `0 events`: a count with its noun agreeing.
pub fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The sessions list's run summary: `1 run: 1 finished, 0 failed, 0 cancelled`.
pub fn runs_summary(total: usize, finished: usize, failed: usize, cancelled: usize) -> String {
    format!("{}: {finished} finished, {failed} failed, {cancelled} cancelled", count(total, "run", "runs"))
}

/// The document title: the waiting count first, so a tab strip or a task
/// switcher shows it.
pub fn page_title(waiting: usize) -> String {
    match waiting {
        0 => "AEP console".to_owned(),
        n => format!("({n}) AEP console"),
    }
}

/// The one rule naming the person behind a command or an answer: the
/// principal name the relay binds to it, marked `you (…)` when it is one
/// of the names this console is connected as (`me`).
pub fn person(name: &str, me: &[String]) -> String {
    if me.iter().any(|m| m == name) {
        format!("you ({name})")
    } else {
        name.to_owned()
    }
}

/// [`person`] at the start of a sentence.
pub fn person_first(name: &str, me: &[String]) -> String {
    if me.iter().any(|m| m == name) {
        format!("You ({name})")
    } else {
        name.to_owned()
    }
}

// ----- a session's timeline ---------------------------------------------------

fn text(data: Option<&Map<String, Value>>, k: &str) -> Option<String> {
    data?.get(k).and_then(Value::as_str).map(str::to_owned)
}

/// A payload member in a few words: strings as they are, containers by size.
pub fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(m) => format!("{{{} members}}", m.len()),
        Value::Array(a) => format!("[{} items]", a.len()),
        other => other.to_string(),
    }
}

/// A request named in words, for whatever answered it: `“Delete the
/// volume?” from deploy-bot` (the prompt cut at 120 characters).
pub fn asked(r: &Request) -> String {
    let prompt = r.prompt.as_deref().unwrap_or("a request without a prompt");
    let mut short: String = prompt.chars().take(120).collect();
    if short.len() < prompt.len() {
        short.push('\u{2026}');
    }
    format!("\u{201c}{short}\u{201d} from {}", r.agent)
}

/// A timeline row's words for an event of a known type, or `None` for the
/// generic form: the person it is by (a command's sender, an answer's
/// `by`), kept apart so the screen names them by [`person`], and the rest
/// of the sentence. `request` finds a request of the session by its id, so
/// an answer names what it answered.
pub fn event<'a>(e: &Event, request: impl Fn(&str) -> Option<&'a Request>) -> Option<(Option<String>, String)> {
    let d = e.data();
    let asked = |id: Option<&str>| {
        let r = request(id?)?;
        Some((format!(" to {}", asked(r)), r.options.as_slice()))
    };
    let by = |who: &str, words: String| Some((Some(who.to_owned()), words));
    let t = |k: &str| text(d, k);
    let tool = || d.and_then(|d| d.get("tool")).and_then(|t| t.get("name")).and_then(Value::as_str).map(str::to_owned);
    Some((
        None,
        match e.kind().core() {
            Some(EventType::SessionStarted) => match t("label") {
                Some(l) => format!("Session started: {l}"),
                None => "Session started".into(),
            },
            Some(EventType::SessionEnded) => match t("reason") {
                Some(r) => format!("Session ended: {r}"),
                None => "Session ended".into(),
            },
            Some(EventType::RunStarted) => match t("prompt") {
                Some(p) => format!("Run {} started: {p}", e.run().unwrap_or("?")),
                None => format!("Run {} started", e.run().unwrap_or("?")),
            },
            Some(EventType::RunFinished) => {
                format!(
                    "Run {} finished{}",
                    e.run().unwrap_or("?"),
                    t("summary").map(|s| format!(": {s}")).unwrap_or_default()
                )
            }
            Some(EventType::RunFailed) => {
                format!(
                    "Run {} failed{}",
                    e.run().unwrap_or("?"),
                    t("error").or(t("reason")).map(|s| format!(": {s}")).unwrap_or_default()
                )
            }
            Some(EventType::RunCancelled) => {
                format!(
                    "Run {} cancelled{}",
                    e.run().unwrap_or("?"),
                    t("reason").map(|s| format!(": {s}")).unwrap_or_default()
                )
            }
            Some(EventType::ToolRequested) => {
                let args = d
                    .and_then(|d| d.get("args_redacted").or(d.get("args")))
                    .map(|a| match a.get("input").and_then(Value::as_str) {
                        Some(s) => s.to_owned(),
                        None => scalar(a),
                    })
                    .map(|a| format!(" {a}"))
                    .unwrap_or_default();
                format!("Tool {}{args}", tool().unwrap_or_else(|| "?".into()))
            }
            Some(EventType::ToolCompleted) | Some(EventType::ToolFailed) | Some(EventType::ToolDenied) => {
                let status = t("status").or(t("by")).map(|s| format!(" ({s})")).unwrap_or_default();
                let verb = match e.kind().core() {
                    Some(EventType::ToolFailed) => "failed",
                    Some(EventType::ToolDenied) => "denied",
                    _ => "done",
                };
                format!("Tool {} {verb}{status}", tool().unwrap_or_else(|| "?".into()))
            }
            Some(EventType::ProgressStatus) => {
                let mut s = t("phase").unwrap_or_else(|| "progress".into());
                if let Some(p) = d.and_then(|d| d.get("percent")).and_then(Value::as_u64) {
                    s.push_str(&format!(" {p}%"));
                }
                if let Some(m) = t("message") {
                    s.push_str(&format!(": {m}"));
                }
                s
            }
            Some(EventType::AttentionRequested) => {
                let kind = t("kind").unwrap_or_else(|| "request".into());
                match t("prompt") {
                    Some(p) => format!("Asks ({kind}): {p}"),
                    None => format!("Asks ({kind})"),
                }
            }
            Some(EventType::AttentionAnswered) => {
                let (to, options) = asked(e.subject()).unwrap_or_default();
                let a = d.and_then(|d| d.get("answer"));
                let what = a
                    .and_then(|a| a.get("option").and_then(Value::as_str))
                    .map(|id| options.iter().find(|o| o.id == id).map_or(id, |o| o.label.as_str()).to_owned())
                    .or_else(|| {
                        a.and_then(|a| a.get("text")).and_then(Value::as_str).map(|s| format!("\u{201c}{s}\u{201d}"))
                    })
                    .or_else(|| a.and_then(|a| a.get("values")).map(|_| "form values".to_owned()))
                    .unwrap_or_else(|| "answer".into());
                let via = t("via").map(|v| format!(" via {v}")).unwrap_or_default();
                return match t("by") {
                    Some(who) => by(&who, format!("answered {what}{to}{via}")),
                    None => Some((None, format!("Answered: {what}{to}{via}"))),
                };
            }
            Some(EventType::AttentionResolved) => {
                format!("Resolved{}", t("resolution").map(|r| format!(" ({r})")).unwrap_or_default())
            }
            Some(EventType::AttentionTimeout) => "Request timed out".into(),
            Some(EventType::AttentionRouted) => format!("Routed by {}", e.agent()),
            Some(EventType::ControlAccepted) => "Accepted the command".into(),
            Some(EventType::ControlRejected) => {
                let reason = t("reason").unwrap_or_else(|| "no reason".into());
                match t("detail") {
                    Some(x) => format!("Rejected the command ({reason}): {x}"),
                    None => format!("Rejected the command ({reason})"),
                }
            }
            Some(EventType::ControlAttentionRespond) => {
                let (to, options) = asked(e.subject()).unwrap_or_default();
                return by(e.agent(), format!("answered {}{to}", super::command::describe(e, options)));
            }
            Some(EventType::ControlCancel) => {
                return by(e.agent(), format!("asked to cancel the {}", t("scope").unwrap_or_else(|| "run".into())))
            }
            Some(EventType::ControlPause) => return by(e.agent(), "asked to pause".into()),
            Some(EventType::ControlResume) => return by(e.agent(), "asked to resume".into()),
            _ => return None,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aep_engine::UnixMs;

    #[test]
    fn counts_agree_with_their_nouns() {
        assert_eq!(runs_summary(1, 1, 0, 0), "1 run: 1 finished, 0 failed, 0 cancelled");
        assert_eq!(runs_summary(2, 1, 1, 0), "2 runs: 1 finished, 1 failed, 0 cancelled");
        assert_eq!(count(0, "event", "events"), "0 events");
        assert_eq!(count(1, "event", "events"), "1 event");
    }

    #[test]
    fn the_title_leads_with_what_waits() {
        assert_eq!(page_title(0), "AEP console");
        assert_eq!(page_title(7), "(7) AEP console");
    }

    #[test]
    fn every_outcome_has_words() {
        assert_eq!(verb("x.demo.control.instruct"), "instruct (demo)");
        assert_eq!(verb("control.cancel"), "Cancel");
        assert!(rejected(Some(NackReason::Refused)).1.contains("not an error"));
        assert!(relay_refused(&RelayCode::parse("no-route"), "r").0.contains("not connected"));
        assert!(relay_refused(&RelayCode::parse("ambiguous"), "r").0.contains("two agents"));
        assert!(relay_refused(&RelayCode::parse("unauthorized"), "r").1.contains("token"));
        assert!(relay_refused(&RelayCode::parse("teapot"), "r").0.contains("teapot"));
        assert!(timed_out(10_000).1.contains("same id"));
        assert_eq!(state(&State::Reconnecting { attempt: 3, at: UnixMs(0) }).0, "reconnecting (attempt 3)");
        let r = State::Refused { reason: Refusal::Unauthorized { detail: None } };
        assert_eq!(state(&r).0, "refused: wrong token");
    }
}
