//! Plain JSON views of what the hub and the store hold, for drivers that
//! hand state to another language (the JavaScript API). Keys are camelCase;
//! absent facts are absent keys, never `null`. Agent-authored text is
//! carried as data, next to its provenance (agent, source, relay).
//!
//! The shapes are mirrored by the package's TypeScript declarations.

use aep_engine::client::hub::{Hub, RelayId};
use aep_engine::client::State;
use aep_engine::control::ack::Decision;
use aep_engine::control::sender::{CommandState, TrackedCommand};
use aep_engine::order;
use aep_engine::protocol::frame::{ControlCapability, RosterEntry};
use aep_engine::store::{
    AnswerVia, AttentionKind, Card, Channel, Closure, CommandChain, CommandStatus, OutcomeLink, Resolution, Run,
    RunEnding, RunStatus, Session, SessionKey, Store, StreamViolation,
};
use aep_engine::time::UnixMs;
use serde_json::{json, Map, Value};

/// Builds an object, leaving out `None`s.
struct Obj(Map<String, Value>);

impl Obj {
    fn new() -> Obj {
        Obj(Map::new())
    }
    /// `{ eventId, time }`: the event that showed a fact, and its time.
    fn stamped(event_id: &str, time: &str) -> Obj {
        Obj::new().set("eventId", event_id).set("time", time)
    }
    fn set(mut self, k: &str, v: impl Into<Value>) -> Obj {
        self.0.insert(k.to_owned(), v.into());
        self
    }
    fn opt<V: Into<Value>>(mut self, k: &str, v: Option<V>) -> Obj {
        if let Some(v) = v {
            self.0.insert(k.to_owned(), v.into());
        }
        self
    }
    fn done(self) -> Value {
        Value::Object(self.0)
    }
}

fn ms(t: UnixMs) -> Value {
    json!(t.0)
}

pub fn session_key(key: &SessionKey) -> Value {
    json!({ "source": &*key.source, "name": &*key.name })
}

fn position((epoch, seq): (u64, u64)) -> Value {
    json!({ "epoch": epoch, "seq": seq })
}

/// One attention card.
pub fn card(c: &Card) -> Value {
    let mut o = Obj::new()
        .set("id", c.id())
        .set("session", session_key(c.session()))
        .set("status", c.status().as_str())
        .set("needsAnswer", c.needs_answer())
        .set("severity", c.severity().as_str())
        .set("firstSeen", ms(c.first_seen()))
        .set("commands", c.commands().iter().map(|id| Value::from(&**id)).collect::<Vec<_>>())
        .opt("latencyMs", c.latency_ms());
    if let Some(r) = c.request() {
        let channels = r.respond_via.as_ref().map(|v| {
            v.iter()
                .map(|ch| match ch {
                    Channel::Control => "control".to_owned(),
                    Channel::Oob => "oob".to_owned(),
                    Channel::Unrecognized(s) => s.clone(),
                })
                .collect::<Vec<_>>()
        });
        o = o
            .opt("kind", r.kind.as_ref().map(AttentionKind::as_str))
            .opt("prompt", r.prompt.clone())
            .set("options", serde_json::to_value(&r.options).unwrap_or_default())
            .opt("fields", (!r.fields.is_empty()).then(|| serde_json::to_value(&r.fields).unwrap_or_default()))
            .opt("fieldsError", r.fields_error.as_ref().map(|e| e.to_string()))
            .opt("respondVia", channels)
            .set("acceptsControl", r.accepts_control())
            .opt("expiresAt", r.expires_at.map(ms))
            .set("capture", r.capture.as_str())
            .set("agent", r.agent.as_str())
            .set("source", r.source.as_str())
            .opt("run", r.run.clone())
            .opt("subject", r.subject.clone())
            .opt("relay", r.relay.as_deref())
            .set("time", r.time.as_str())
            .opt("requestedAt", r.at.map(ms))
            .set("receivedAt", ms(r.received_at));
    }
    if !c.routed().is_empty() {
        let hops: Vec<Value> = c
            .routed()
            .iter()
            .map(|h| {
                Obj::new()
                    .set("eventId", h.event_id.as_str())
                    .set("agent", h.agent.as_str())
                    .set("source", h.source.as_str())
                    .set("time", h.time.as_str())
                    .opt("relay", h.relay.as_deref())
                    .done()
            })
            .collect();
        o = o.set("routed", hops);
    }
    if let Some(a) = c.answer() {
        let via = a.via.as_ref().map(|v| match v {
            AnswerVia::Control => "control".to_owned(),
            AnswerVia::Oob => "oob".to_owned(),
            AnswerVia::Unrecognized(s) => s.clone(),
        });
        let answer = Obj::new()
            .set("eventId", a.event_id.as_str())
            .opt("option", a.option.clone())
            .opt("text", a.text.clone())
            .opt("values", a.values.clone().map(Value::Object))
            .opt("by", a.by.clone())
            .opt("via", via)
            .opt("cause", a.cause.clone())
            .set("time", a.time.as_str())
            .done();
        o = o.set("answer", answer);
    }
    if let Some(cl) = c.close() {
        let mut close = Obj::new();
        match &cl.how {
            Closure::Resolved { resolution, latency_ms } => {
                let resolution = resolution.as_ref().map(|r| match r {
                    Resolution::Answered => "answered".to_owned(),
                    Resolution::Auto => "auto".to_owned(),
                    Resolution::Dismissed => "dismissed".to_owned(),
                    Resolution::Unrecognized(s) => s.clone(),
                });
                close = close.set("how", "resolved").opt("resolution", resolution).opt("latencyMs", *latency_ms);
            }
            Closure::TimedOut { after_ms } => close = close.set("how", "timed-out").opt("afterMs", *after_ms),
        }
        let close = close
            .set("eventId", cl.event_id.as_str())
            .opt("cause", cl.cause.clone())
            .set("time", cl.time.as_str())
            .done();
        o = o.set("close", close);
    }
    o.done()
}

fn run(r: &Run) -> Value {
    let status = match r.status() {
        RunStatus::Open => "open",
        RunStatus::Ended(RunEnding::Finished) => "finished",
        RunStatus::Ended(RunEnding::Failed) => "failed",
        RunStatus::Ended(RunEnding::Cancelled) => "cancelled",
    };
    let end = r.end().map(|e| {
        Obj::stamped(&e.event_id, &e.time)
            .opt("cause", e.cause.clone())
            .opt("reason", e.reason.clone())
            .opt("by", e.by.clone())
            .done()
    });
    Obj::new()
        .set("name", r.name())
        .set("status", status)
        .set("events", r.events())
        .opt("startedEvent", r.started_event())
        .opt("startedTime", r.started_time())
        .opt("end", end)
        .done()
}

/// A command's audit chain as the stream shows it (whoever sent it).
pub fn chain(c: &CommandChain) -> Value {
    let status = match c.status() {
        CommandStatus::AwaitingAck => "awaiting-ack",
        CommandStatus::Accepted => "accepted",
        CommandStatus::Rejected => "rejected",
        CommandStatus::Completed => "completed",
    };
    let issued = c.issued().map(|i| {
        Obj::new()
            .set("type", i.ty.as_str())
            .set("senderAgent", i.sender_agent.as_str())
            .set("senderSource", i.sender_source.as_str())
            .opt("run", i.run.clone())
            .opt("subject", i.subject.clone())
            .opt("relay", i.relay.as_deref())
            .set("time", i.time.as_str())
            .done()
    });
    let ack = c.ack().map(|a| {
        let o = Obj::stamped(&a.event_id, &a.time);
        match &a.decision {
            Decision::Accepted => o.set("decision", "accepted"),
            Decision::Rejected { raw_reason, detail, .. } => {
                o.set("decision", "rejected").opt("reason", raw_reason.clone()).opt("detail", detail.clone())
            }
        }
        .done()
    });
    let outcome = c.outcome().map(|x| {
        Obj::new()
            .set("eventId", x.event_id.as_str())
            .set("type", x.ty.as_str())
            .set("link", if x.link == OutcomeLink::Command { "command" } else { "ack" })
            .set("time", x.time.as_str())
            .done()
    });
    Obj::new()
        .set("id", c.id())
        .set("status", status)
        .opt("type", c.ty())
        .opt("issued", issued)
        .opt("ack", ack)
        .opt("outcome", outcome)
        .opt("ackLatencyMs", c.ack_latency_ms())
        .opt("outcomeLatencyMs", c.outcome_latency_ms())
        .done()
}

/// One session with its runs, cards and command chains.
pub fn session(s: &Session) -> Value {
    let started = s.started().map(|st| {
        Obj::stamped(&st.event_id, &st.time).opt("label", st.label.clone()).opt("parent", st.parent.clone()).done()
    });
    let end = s.end().map(|e| Obj::stamped(&e.event_id, &e.time).opt("reason", e.reason.clone()).done());
    let mut cards: Vec<&Card> = s.cards().collect();
    order::sort_by(&mut cards, |a, b| (a.first_seen(), a.arrival()).cmp(&(b.first_seen(), b.arrival())));
    Obj::new()
        .set("key", session_key(s.key()))
        .set("source", s.source())
        .set("name", s.name())
        .set("agent", s.agent())
        .set("state", s.state().name())
        .opt("started", started)
        .opt("end", end)
        .opt("position", s.position().map(position))
        .set("pending", s.pending_count())
        .set("events", s.timeline().len())
        .set("runs", s.runs().map(run).collect::<Vec<_>>())
        .set("cards", cards.into_iter().map(card).collect::<Vec<_>>())
        .set("commands", s.commands().map(chain).collect::<Vec<_>>())
        .set("firstSeen", ms(s.first_seen()))
        .set("updatedAt", ms(s.updated_at()))
        .done()
}

/// A short summary of a session, for lists.
pub fn session_summary(s: &Session) -> Value {
    Obj::new()
        .set("key", session_key(s.key()))
        .set("source", s.source())
        .set("name", s.name())
        .set("agent", s.agent())
        .set("state", s.state().name())
        .opt("label", s.started().and_then(|st| st.label.clone()))
        .opt("position", s.position().map(position))
        .set("pending", s.pending_count())
        .set("events", s.timeline().len())
        .set("firstSeen", ms(s.first_seen()))
        .set("updatedAt", ms(s.updated_at()))
        .done()
}

/// A stream rule the fold found broken.
pub fn stream_violation(v: &StreamViolation) -> Value {
    Obj::new()
        .set("origin", "stream")
        .set("rule", v.rule.id())
        .set("reference", v.rule.reference())
        .set("detail", v.detail.as_str())
        .set("eventId", v.event_id.as_str())
        .opt("session", v.session.as_ref().map(session_key))
        .done()
}

/// A command of ours, as the sender follows it.
pub fn tracked(c: &TrackedCommand, relay: Option<&str>) -> Value {
    let e = c.command();
    let times = c.times();
    let mut o = Obj::new()
        .set("id", c.id())
        .set("type", e.ty())
        .opt("session", e.session())
        .opt("run", e.run())
        .opt("subject", e.subject())
        .opt("relay", relay)
        .set("state", c.state().name())
        .set("sends", c.sends())
        .set("windowMs", c.window_ms())
        .set("firstSent", ms(times.first_sent))
        .set("lastSent", ms(times.last_sent))
        .opt("settledAt", times.settled.map(ms))
        .opt("ackLatencyMs", c.ack_latency_ms())
        .opt("outcomeLatencyMs", c.outcome_latency_ms());
    match c.state() {
        CommandState::Pending { deadline } => o = o.set("deadline", ms(*deadline)),
        CommandState::Accepted { ack } => o = o.set("ackId", ack.id()),
        CommandState::Rejected { ack, raw_reason, detail, .. } => {
            o = o.set("ackId", ack.id()).opt("reason", raw_reason.clone()).opt("detail", detail.clone())
        }
        CommandState::RelayRefused { code, detail } => {
            o = o.set("relayCode", code.as_str()).opt("detail", detail.clone())
        }
        CommandState::TimedOut => o = o.set("reason", "timeout"),
    }
    if let Some(out) = c.outcome() {
        o = o.set("outcomeId", out.id()).set("outcomeType", out.ty());
    }
    o.done()
}

fn control(c: &ControlCapability) -> Value {
    Obj::new().opt("accepts", c.accepts.clone()).opt("ackWindowMs", c.ack_window_ms).done()
}

pub fn roster_entry(e: &RosterEntry, relay: &str) -> Value {
    Obj::new()
        .set("relay", relay)
        .set("session", e.session.as_str())
        .opt("agent", e.agent.clone())
        .opt("instance", e.instance.clone())
        .opt("control", e.control.as_ref().map(control))
        .opt("emits", e.emits.clone())
        .done()
}

/// One relay connection's status.
pub fn status(relay: &str, state: &State) -> Value {
    let o = Obj::new().set("relay", relay).set("state", state.name());
    match state {
        State::Reconnecting { attempt, at } => o.set("attempt", *attempt).set("retryAt", ms(*at)),
        State::Refused { reason } => o.set("reason", reason.to_string()),
        _ => o,
    }
    .done()
}

/// Cards waiting on a person, most severe, then soonest to expire, then oldest first.
pub fn inbox(store: &Store) -> Value {
    Value::Array(store.inbox().into_iter().map(card).collect())
}

/// Every session, most recently updated first, summarised.
pub fn sessions(store: &Store) -> Value {
    let mut all: Vec<&Session> = store.sessions().collect();
    order::sort_by(&mut all, |a, b| b.updated_at().cmp(&a.updated_at()).then_with(|| a.key().cmp(b.key())));
    Value::Array(all.into_iter().map(session_summary).collect())
}

/// What a fold of a whole stream amounts to.
pub fn projection(store: &Store) -> Value {
    let counts = store.counts();
    let mut all: Vec<&Session> = store.sessions().collect();
    order::sort_by(&mut all, |a, b| a.key().cmp(b.key()));
    json!({
        "sessions": all.into_iter().map(session_summary).collect::<Vec<_>>(),
        "inbox": inbox(store),
        "violations": store.violations().map(stream_violation).collect::<Vec<_>>(),
        "counts": {
            "sessions": counts.sessions, "events": counts.events, "runs": counts.runs, "cards": counts.cards,
            "pending": counts.pending, "commands": counts.commands, "agents": counts.agents,
            "unattached": counts.unattached, "violations": counts.violations,
        },
        // What the store's bounds dropped: all zero when the projection
        // covers everything folded.
        "evicted": store.evictions(),
    })
}

/// Every relay's latest roster.
pub fn rosters(hub: &Hub, relay: Option<RelayId>) -> Value {
    let ids: Vec<RelayId> = match relay {
        Some(r) => vec![r],
        None => (0..hub.relay_count()).collect(),
    };
    let mut out = Vec::new();
    for id in ids {
        let label = hub.label(id).unwrap_or_default();
        let mut entries: Vec<&RosterEntry> = hub.roster(id).collect();
        order::sort_by(&mut entries, |a, b| a.session.cmp(&b.session));
        out.extend(entries.into_iter().map(|e| roster_entry(e, label)));
    }
    Value::Array(out)
}
