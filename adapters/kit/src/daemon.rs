//! The adapter's one long-lived agent: an engine [`Agent`] on one
//! WebSocket to the relay (hello, acks, dedupe and reconnects are the
//! engine's), fed by the agent's hooks in the order they arrive. A
//! request is held here until a person answers it over the relay or the
//! adapter's own timeout passes.

use std::collections::HashMap;
use std::time::Duration;

use aep_driver_tokio::{now, Link, Step};
use aep_engine::client::agent::{Agent, AgentChange, AgentConfig};
use aep_engine::client::{Backoff, Config as ConnectionConfig, State};
use aep_engine::control::answer::{Answer, OpenRequest};
use aep_engine::control::target::{Action, Received};
use aep_engine::protocol::capture::{emit_at_ceiling, CaptureCeiling, RedactOptions, Redactor};
use aep_engine::protocol::event::{Capture, Event};
use aep_engine::protocol::ids::{source_uri, Draft, Identity};
use aep_engine::protocol::vocabulary::types;
use aep_engine::UnixMs;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use crate::calls::OpenCalls;
use crate::decision::Decision;
use crate::mapping::{Emission, Mapping, Plan};

/// The command an adapter takes (the control matrix's rows for hook
/// adapters).
pub const ACCEPTS: &str = types::CONTROL_ATTENTION_RESPOND;
/// The declared ack window.
pub const ACK_WINDOW_MS: u64 = 10_000;
/// Reconnects soon after a relay comes back.
const BACKOFF: Backoff = Backoff { initial_ms: 250, max_ms: 5_000 };

#[derive(Clone, Debug)]
pub struct Options {
    /// The relay's WebSocket URL (`ws://host:port/socket`, token included
    /// where one is needed).
    pub socket_url: String,
    /// How long a request waits for a person before the agent is told to
    /// decide for itself (shorter than the hook's own timeout).
    pub attention_timeout: Duration,
    /// The capture ceiling of what the adapter emits (AEP-0003 §9.1).
    pub ceiling: CaptureCeiling,
    /// What the redaction pipeline takes out of `redacted` text.
    pub redaction: RedactOptions,
    /// Names the adapter's `source`.
    pub host: String,
}

/// One hook, and where its answer goes.
pub struct HookCall<I> {
    pub input: I,
    pub reply: oneshot::Sender<Value>,
}

/// What the adapter reports about itself (for `/healthz`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub live: bool,
    pub held: usize,
}

struct Held<K> {
    reply: oneshot::Sender<Value>,
    kind: K,
    session: String,
    run: Option<String>,
    raised: UnixMs,
    deadline: UnixMs,
    /// The request's subject and the tool it asks about, to close the
    /// call when a person refuses it.
    about: (Option<String>, Option<String>),
}

/// Runs the agent, with `mapper` reading the hooks, until `calls` closes.
pub async fn run<M: Mapping>(
    options: Options,
    mapper: M,
    mut calls: mpsc::UnboundedReceiver<HookCall<M::Input>>,
    status: tokio::sync::watch::Sender<Status>,
) {
    let start = now();
    let identity = Identity::new(source_uri(&options.host, M::AGENT, None), M::AGENT);
    let mut connection = ConnectionConfig::consumer();
    connection.backoff = BACKOFF;
    connection.emits = Some(
        ["session", "run", "tool", "progress", "attention", "delegation", "agent", "control", "x"]
            .map(String::from)
            .to_vec(),
    );
    let config = AgentConfig {
        identity,
        accepts: vec![ACCEPTS.to_owned()],
        ack_window_ms: Some(ACK_WINDOW_MS),
        ceiling: highest(&options.ceiling),
        epoch: start.0,
        seed: rand::random(),
        connection,
    };
    let mut agent = match Agent::new(config) {
        Ok(a) => a,
        Err(e) => {
            tracing::error!("the adapter's agent could not be set up: {e}");
            return;
        }
    };
    let (ceiling, redactor) = (options.ceiling.clone(), Redactor::new(options.redaction.clone()));
    agent.set_gate(Some(Box::new(move |event| M::gate(emit_at_ceiling(event, &ceiling, &redactor)))));
    let mut link = Link::new(agent, options.socket_url.clone());
    let mut daemon =
        Daemon { mapper, held: HashMap::new(), calls: OpenCalls::default(), timeout: options.attention_timeout };
    link.conn().connect(now());
    loop {
        let wake = daemon.held.values().map(|h| h.deadline).min();
        let step = link.next_or(wake, &mut calls).await;
        let at = now();
        match step {
            Step::Inbox(Some(call)) => daemon.on_hook(link.conn(), call, at),
            Step::Inbox(None) => break,
            Step::Wake => daemon.expire(link.conn(), at),
            Step::Notice(change) => daemon.on_change(link.conn(), change, at),
        }
        status.send_if_modified(|s| {
            let now = Status { live: link.is_live(), held: daemon.held.len() };
            let changed = *s != now;
            *s = now;
            changed
        });
    }
    link.close().await;
}

struct Daemon<M: Mapping> {
    mapper: M,
    held: HashMap<String, Held<M::Ask>>,
    calls: OpenCalls,
    timeout: Duration,
}

impl<M: Mapping> Daemon<M> {
    fn on_hook(&mut self, agent: &mut Agent, call: HookCall<M::Input>, at: UnixMs) {
        match self.mapper.plan(&call.input) {
            Plan::Observe(emissions) => {
                self.emit_all(agent, emissions, at);
                let _ = call.reply.send(json!({}));
            }
            Plan::Ask { before, session, request, kind } => {
                self.emit_all(agent, before, at);
                let run = self.mapper.run_of(&session).map(str::to_owned);
                let refusing = M::refusing(&kind);
                match agent.ask(prepare(request), &session, refusing, at) {
                    Ok(event) => {
                        let deadline = UnixMs(at.0 + u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX));
                        let tool = event.data_field("context").and_then(|c| c.get("tool")).and_then(Value::as_str);
                        let about = (event.subject().map(str::to_owned), tool.map(str::to_owned));
                        let held = Held { reply: call.reply, kind, session, run, raised: at, deadline, about };
                        self.held.insert(event.id().to_owned(), held);
                    }
                    Err(e) => {
                        tracing::warn!("a {} request was not raised: {e}", M::hook_name(&call.input));
                        let _ = call.reply.send(json!({}));
                    }
                }
            }
            Plan::Unreadable(why) => {
                tracing::warn!("hook not mapped: {why}");
                let _ = call.reply.send(json!({}));
            }
        }
    }

    fn on_change(&mut self, agent: &mut Agent, change: AgentChange, at: UnixMs) {
        match change {
            AgentChange::Command {
                command,
                received: Received::Fresh { action: Action::Respond { request, applied }, .. },
            } => self.answered(agent, &command, &request, &applied.answer, at),
            AgentChange::State(State::Live) => self.reclaim(agent, at),
            AgentChange::State(State::Refused { reason }) => tracing::error!("the relay refused the adapter: {reason}"),
            AgentChange::State(s) => tracing::debug!("relay connection: {s:?}"),
            AgentChange::Disconnected { reason } => tracing::info!("relay connection lost: {reason}"),
            AgentChange::Unreadable { command, error } => tracing::warn!("command {} not taken: {error}", command.id()),
            AgentChange::Error(e) => tracing::warn!("relay error: {} {}", e.code, e.detail.as_deref().unwrap_or("")),
            AgentChange::Violation(v) => tracing::warn!("{v}"),
            AgentChange::Command { .. } => {}
        }
    }

    /// An accepted answer: recorded on the stream, then handed to the
    /// waiting hook.
    fn answered(&mut self, agent: &mut Agent, command: &Event, request: &OpenRequest, answer: &Answer, at: UnixMs) {
        let (target, seqs) = agent.target();
        match target.answer_outcomes(command, request, answer, at, seqs) {
            Ok(events) => {
                for event in &events {
                    if let Err(e) = agent.send(event) {
                        tracing::warn!("outcome {} not queued: {e}", event.ty());
                    }
                }
            }
            Err(e) => tracing::warn!("the outcome of {} could not be built: {e}", command.id()),
        }
        let Some(held) = self.held.remove(&request.id) else { return };
        if M::refuses(&held.kind, answer) {
            let (subject, tool) = &held.about;
            if let Some(denied) = self.calls.refused(&held.session, subject.as_deref(), tool.as_deref(), command) {
                self.emit_all(agent, vec![Emission { session: Some(held.session.clone()), draft: denied }], at);
            }
        }
        let _ = held.reply.send(M::answered(&held.kind, answer, command.agent()));
    }

    /// A relay routes a session's commands to the connection that last
    /// emitted in it, and a new connection has emitted nothing yet: each
    /// session still waiting on a person says so again, so its answer can
    /// reach the adapter after a reconnect or a relay restart.
    fn reclaim(&mut self, agent: &mut Agent, at: UnixMs) {
        let mut waiting: Vec<(&str, Option<&str>)> =
            self.held.values().map(|h| (h.session.as_str(), h.run.as_deref())).collect();
        waiting.sort_unstable();
        waiting.dedup_by_key(|(session, _)| *session);
        for (session, run) in waiting {
            let draft = Draft::new(types::PROGRESS_STATUS)
                .maybe_run(run)
                .data(json!({ "phase": "waiting", "message": "waiting for a person's answer" }));
            if let Err(e) = agent.emit(prepare(draft), Some(session), None, at) {
                tracing::warn!("session {session} not reclaimed: {e}");
            }
        }
    }

    /// Emits each in order; a turn or session that ends first closes the
    /// tool calls still open in it (see [`crate::calls`]).
    fn emit_all(&mut self, agent: &mut Agent, emissions: Vec<Emission>, at: UnixMs) {
        for Emission { session, draft } in emissions {
            let closing = session.as_deref().map(|s| self.calls.before(s, draft.ty())).unwrap_or_default();
            for draft in closing.into_iter().chain([draft]) {
                let ty = draft.ty().to_owned();
                match agent.emit(prepare(draft), session.as_deref(), None, at) {
                    Ok(event) => self.calls.emitted(&event),
                    Err(e) => tracing::warn!("{ty} not emitted: {e}"),
                }
            }
        }
    }

    /// Requests past the adapter's timeout: `attention.timeout` on the
    /// stream, and the agent decides for itself.
    fn expire(&mut self, agent: &mut Agent, at: UnixMs) {
        let due: Vec<String> = self.held.iter().filter(|(_, h)| h.deadline <= at).map(|(id, _)| id.clone()).collect();
        for id in due {
            let Some(held) = self.held.remove(&id) else { continue };
            agent.target().0.close_request(&id);
            let draft = Draft::new(types::ATTENTION_TIMEOUT)
                .subject(id.clone())
                .maybe_run(held.run.clone())
                .data(json!({ "after_ms": at.since(held.raised) }));
            if let Err(e) = agent.emit(draft, Some(&held.session), None, at) {
                tracing::warn!("attention.timeout for {id} not emitted: {e}");
            }
            let _ = held.reply.send(Decision::Undecided.to_hook_output());
        }
    }
}

/// Everything the mapping builds carries the hook's content as it is
/// (`full`); the capture pipeline takes it down from there.
fn prepare(draft: Draft) -> Draft {
    draft.capture(Capture::Full)
}

/// The highest level any type may reach: the agent's own ceiling, which
/// also holds its acks and outcomes.
fn highest(ceiling: &CaptureCeiling) -> Capture {
    ceiling.overrides.iter().map(|(_, level)| *level).fold(ceiling.default, Capture::max)
}
