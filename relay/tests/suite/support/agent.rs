//! An agent on a real relay's socket, as one built on an SDK behaves: it
//! emits into its own session at its own positions, answers every
//! `control.attention.respond` with `control.accepted`, then
//! `attention.answered` and `attention.resolved` (each `cause`-linked),
//! may redeliver anything it sent byte for byte (AEP-0001 §7.4), and comes
//! back on a new connection, to a restarted relay, where it left off.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_engine::protocol::ids::{Draft, Identity};
use aep_engine::Event;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{fresh_id, now, post_ndjson, Incoming, Ws, PROMPT};

/// What the agent and its connection task share.
#[derive(Clone)]
struct Emitter {
    me: Identity,
    session: String,
    /// The next `seq`: it carries over a reconnect.
    seq: Arc<Mutex<u64>>,
    /// Everything emitted, in order.
    sent: Arc<Mutex<Vec<Event>>>,
    /// Every command received.
    commands: Arc<Mutex<Vec<Event>>>,
}

impl Emitter {
    fn build(&self, draft: Draft) -> Event {
        let mut seq = self.seq.lock().unwrap();
        let event = draft.session(&self.session).seq(*seq).build(&self.me, fresh_id(), now()).unwrap();
        *seq += 1;
        self.sent.lock().unwrap().push(event.clone());
        event
    }

    /// The ack and the outcomes of one command.
    fn answer(&self, command: &Event) -> Vec<Event> {
        let mut out = vec![self.build(Draft::new("control.accepted").cause(command.id()).data(json!({})))];
        if command.ty() == "control.attention.respond" {
            let subject = command.subject().unwrap_or_default().to_owned();
            let answer = command.data_field("answer").cloned().unwrap_or_default();
            out.push(self.build(
                Draft::new("attention.answered").subject(&subject).cause(command.id()).data(json!({"answer": answer})),
            ));
            out.push(
                self.build(
                    Draft::new("attention.resolved")
                        .subject(&subject)
                        .cause(command.id())
                        .data(json!({"outcome": "answered"})),
                ),
            );
        }
        out
    }
}

pub struct Agent {
    pub name: String,
    pub session: String,
    emitter: Emitter,
    outbound: mpsc::UnboundedSender<String>,
    task: JoinHandle<()>,
}

impl Agent {
    /// Connects to the relay at `addr` (`host:port`) with `token` as the
    /// agent `name`, emitting into `session`.
    pub async fn connect(addr: &str, token: &str, name: &str, session: &str) -> Agent {
        let emitter = Emitter {
            me: Identity::new(format!("aep://test/agent/{name}/session/{session}"), name),
            session: session.to_owned(),
            seq: Arc::default(),
            sent: Arc::default(),
            commands: Arc::default(),
        };
        Agent::attach(addr, token, name, emitter).await
    }

    async fn attach(addr: &str, token: &str, name: &str, emitter: Emitter) -> Agent {
        let mut ws = Ws::connect(&format!("ws://{addr}/socket?access_token={token}")).await.unwrap();
        ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": "emitter",
            "identity": {"agent": name, "instance": "test"},
            "capabilities": {"emits": ["session", "attention", "control", "progress"],
                "control": {"accepts": ["control.attention.respond"], "ack_window_ms": 10000}}}))
            .await;
        let reply = ws.recv_json().await;
        assert_eq!(reply["type"], "hello", "{reply}");
        let (outbound, queue) = mpsc::unbounded_channel();
        let task = tokio::spawn(serve(ws, emitter.clone(), queue));
        Agent { name: name.to_owned(), session: emitter.session.clone(), emitter, outbound, task }
    }

    /// Emits `draft` at the session's next position.
    pub fn emit(&self, draft: Draft) -> Event {
        let event = self.emitter.build(draft);
        self.redeliver(&event);
        event
    }

    /// Sends `event` again, byte for byte.
    pub fn redeliver(&self, event: &Event) {
        self.outbound.send(event.raw().to_owned()).expect("the agent is connected");
    }

    /// Emits `draft` over HTTP to the relay at `base`: answered `202` once
    /// durable, and with it everything this agent sent before.
    pub async fn emit_durably(&self, base: &str, token: &str, draft: Draft) -> Event {
        let event = self.emitter.build(draft);
        let body = format!("{}\n", event.raw());
        let response = post_ndjson(&reqwest::Client::new(), &format!("{base}/events"), Some(token), body);
        assert_eq!(response.send().await.unwrap().status(), 202);
        event
    }

    /// Everything emitted so far, in order.
    pub fn sent(&self) -> Vec<Event> {
        self.emitter.sent.lock().unwrap().clone()
    }

    /// Every command received so far.
    pub fn commands(&self) -> Vec<Event> {
        self.emitter.commands.lock().unwrap().clone()
    }

    /// Waits until it has emitted an event of type `ty` naming `subject`.
    pub async fn until_emitted(&self, ty: &str, subject: &str) -> Event {
        let deadline = tokio::time::Instant::now() + PROMPT;
        loop {
            if let Some(e) = self.sent().into_iter().find(|e| e.ty() == ty && e.subject() == Some(subject)) {
                return e;
            }
            assert!(tokio::time::Instant::now() < deadline, "the agent never emitted {ty} for {subject}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The same agent on a new connection to the relay at `addr`: same
    /// session, positions carried on.
    pub async fn reconnect(mut self, addr: &str, token: &str) -> Agent {
        self.task.abort();
        let _ = (&mut self.task).await;
        let (name, emitter) = (self.name.clone(), self.emitter.clone());
        Agent::attach(addr, token, &name, emitter).await
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The connection: sends what the agent emits, answers commands and pings.
async fn serve(mut ws: Ws, emitter: Emitter, mut queue: mpsc::UnboundedReceiver<String>) {
    loop {
        let text = tokio::select! {
            out = queue.recv() => {
                let Some(out) = out else { return };
                ws.send_text(&out).await;
                continue;
            }
            incoming = ws.recv(Duration::from_secs(3600)) => match incoming {
                Some(Incoming::Text(text)) => text,
                Some(Incoming::Binary) | None => continue,
                Some(Incoming::Closed(_)) => return,
            },
        };
        let v: Value = serde_json::from_str(&text).unwrap();
        if v["type"] == "ping" && v.get("aep").is_none() {
            ws.send(&json!({"type": "pong", "t": v["t"]})).await;
            continue;
        }
        let Ok(command) = Event::parse(&text) else { continue };
        if !command.is_command() {
            continue;
        }
        emitter.commands.lock().unwrap().push(command.clone());
        for event in emitter.answer(&command) {
            ws.send_text(event.raw()).await;
        }
    }
}
