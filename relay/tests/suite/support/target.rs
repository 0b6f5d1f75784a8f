//! A control-capable test target: an `emitter` socket that declares
//! `control.accepts`, claims a session by emitting into it, and answers
//! each command with one ack built with the engine's draft builder,
//! re-sending the recorded ack bytes on a retransmit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aep_engine::protocol::ids::{Draft, Identity};
use aep_engine::{Event, Severity};
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use super::{fresh_id, now, Incoming, TestRelay, Ws};

pub const TARGET_AGENT: &str = "aep-test-target";

pub struct TestTarget {
    /// Every text frame the target received, exactly as received.
    pub received: Arc<Mutex<Vec<String>>>,
    pub session: String,
    pub run: String,
    /// The id of an open attention request the target will accept answers to.
    pub attention: String,
    task: JoinHandle<()>,
}

impl TestTarget {
    /// Connects, says hello declaring `accepts`, and claims `session` with
    /// `session.started` and `run.started`.
    pub async fn start(t: &TestRelay, session: &str, accepts: &[&str]) -> TestTarget {
        TestTarget::start_as(t, None, TARGET_AGENT, session, accepts, 0).await
    }

    /// As [`TestTarget::start`], connecting with `token` (the posture's
    /// when `None`) and emitting as `agent` in `epoch` (a new one after a
    /// reconnect).
    pub async fn start_as(
        t: &TestRelay,
        token: Option<&str>,
        agent: &str,
        session: &str,
        accepts: &[&str],
        epoch: u64,
    ) -> TestTarget {
        let (ws, _) =
            t.ws_hello_with(token, "emitter", TestTarget::identity(agent), TestTarget::capabilities(accepts)).await;
        TestTarget::start_on(ws, agent, session, accepts, epoch).await
    }

    /// The `identity` a target's hello declares.
    pub fn identity(agent: &str) -> Value {
        json!({"agent": agent, "instance": "test"})
    }

    /// The `capabilities` a target's hello declares.
    pub fn capabilities(accepts: &[&str]) -> Value {
        json!({"emits": ["session", "run", "attention", "control"], "control": {"accepts": accepts, "ack_window_ms": 10000}})
    }

    /// As [`TestTarget::start_as`], on a socket whose hello (with
    /// [`TestTarget::identity`] and [`TestTarget::capabilities`]) was
    /// answered, to any relay.
    pub async fn start_on(mut ws: Ws, agent: &str, session: &str, accepts: &[&str], epoch: u64) -> TestTarget {
        let me = Identity::new(format!("aep://test/agent/{agent}/session/{session}"), agent);
        let run = format!("run-{}", fresh_id());
        let attention = fresh_id();
        let mut seq = 0;
        let mut emit = |draft: Draft| {
            let e = draft.session(session).epoch(epoch).seq(seq).build(&me, fresh_id(), now()).unwrap();
            seq += 1;
            e
        };
        let opening = [
            emit(Draft::new("session.started")),
            emit(Draft::new("run.started").run(&run).data(json!({"trigger": "user"}))),
        ];
        for e in &opening {
            ws.send_text(e.raw()).await;
        }
        let received = Arc::new(Mutex::new(Vec::new()));
        let brain = Brain {
            me,
            session: session.to_owned(),
            run: run.clone(),
            attention: attention.clone(),
            seq,
            epoch,
            acks: HashMap::new(),
        };
        let task = tokio::spawn(serve(ws, brain, received.clone(), accepts.iter().map(|s| s.to_string()).collect()));
        TestTarget { received, session: session.to_owned(), run, attention, task }
    }

    /// Whether any received frame mentions `id`.
    pub fn saw(&self, id: &str) -> bool {
        self.received.lock().unwrap().iter().any(|f| f.contains(id))
    }

    pub fn frames(&self) -> Vec<String> {
        self.received.lock().unwrap().clone()
    }

    /// Disconnects the target.
    pub async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

struct Brain {
    me: Identity,
    session: String,
    run: String,
    attention: String,
    seq: u64,
    epoch: u64,
    /// Recorded ack bytes by command (source, id).
    acks: HashMap<(String, String), String>,
}

impl Brain {
    fn emit(&mut self, draft: Draft) -> Event {
        let e =
            draft.session(&self.session).epoch(self.epoch).seq(self.seq).build(&self.me, fresh_id(), now()).unwrap();
        self.seq += 1;
        e
    }

    /// What to send for one command: the recorded ack on a retransmit,
    /// otherwise one decision (and the outcome of an accepted cancel).
    fn answer(&mut self, command: &Event, accepts: &[String]) -> Vec<String> {
        let key = (command.source().to_owned(), command.id().to_owned());
        if let Some(recorded) = self.acks.get(&key) {
            return vec![recorded.clone()];
        }
        let accepted = Draft::new("control.accepted").cause(command.id()).data(json!({}));
        let rejected =
            |reason: &str| Draft::new("control.rejected").cause(command.id()).data(json!({"reason": reason}));
        let mut out = Vec::new();
        let ack = if !accepts.iter().any(|a| a == command.ty()) {
            self.emit(rejected("unsupported"))
        } else if (command.ty() == "control.attention.respond" && command.subject() != Some(self.attention.as_str()))
            || (command.ty() == "control.cancel" && command.run() != Some(self.run.as_str()))
        {
            // Declared, but nothing to act on: the honest answer.
            self.emit(rejected("invalid"))
        } else {
            self.emit(accepted)
        };
        self.acks.insert(key, ack.raw().to_owned());
        out.push(ack.raw().to_owned());
        if command.ty() == "control.cancel"
            && aep_engine::control::ack::parse(&ack)
                .is_some_and(|a| a.decision == aep_engine::control::ack::Decision::Accepted)
        {
            let run = self.run.clone();
            let cancelled = self.emit(
                Draft::new("run.cancelled")
                    .run(run)
                    .cause(command.id())
                    .severity(Severity::Notice)
                    .data(json!({"by": "control"})),
            );
            out.push(cancelled.raw().to_owned());
        }
        out
    }
}

async fn serve(mut ws: Ws, mut brain: Brain, received: Arc<Mutex<Vec<String>>>, accepts: Vec<String>) {
    loop {
        let Some(incoming) = ws.recv(std::time::Duration::from_secs(3600)).await else { continue };
        let text = match incoming {
            Incoming::Text(t) => t,
            Incoming::Binary => continue,
            Incoming::Closed(_) => return,
        };
        received.lock().unwrap().push(text.clone());
        let v: Value = serde_json::from_str(&text).unwrap();
        if v["type"] == "ping" {
            ws.send(&json!({"type": "pong", "t": v["t"]})).await;
            continue;
        }
        if v.get("aep").is_none() {
            continue;
        }
        let Ok(command) = Event::parse(&text) else { continue };
        if !command.is_command() {
            continue;
        }
        for out in brain.answer(&command, &accepts) {
            ws.send_text(&out).await;
        }
    }
}
