//! End to end with an independent implementation: the Python SDK
//! (`agenteventprotocol-sdk`, `aep_sdk`) plays the agent in its own
//! process (`tests/py/agent.py`), the real relay routes in the token
//! posture, and this test is the console (the engine's `Connection` and
//! `ControlSender` on a WebSocket). Needs `<repo>/.venv` from
//! `bash scripts/setup`.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command as Process, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support;

use support::console::{Console, PATIENCE_MS};

use aep_driver_tokio::now;
use aep_engine::control::answer::Answer;
use aep_engine::control::sender::{Address, Command, CommandState};
use aep_engine::protocol::validate;
use aep_engine::store::validate::stream as stream_violations;
use aep_engine::Event;
use aep_relay::auth::Token;
use aep_relay::{serve, Config, Relay};
use serde_json::{json, Value};
use tokio::net::TcpListener;

const TOKEN: &str = "py-e2e-token";
const SESSION: &str = "py-session-1";

fn python() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the relay crate sits in the repository");
    let python = repo.join(".venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: the Python SDK peer is installed by `bash scripts/setup` (it creates .venv with agenteventprotocol-sdk==0.1.0.dev1)",
        python.display()
    );
    let sdk = Process::new(&python).args(["-c", "import aep_sdk"]).output().expect("python runs");
    assert!(
        sdk.status.success(),
        "{} cannot import aep_sdk ({}): run `bash scripts/setup`",
        python.display(),
        String::from_utf8_lossy(&sdk.stderr).trim()
    );
    python
}

/// The Python agent process; killed if the test ends early.
struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    stderr: Arc<Mutex<String>>,
}

impl Agent {
    fn spawn(relay: &Relay) -> Agent {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/agent.py");
        let mut child = Process::new(python())
            .arg(script)
            .args(["--url", &relay.base_url(), "--token", TOKEN, "--session", SESSION])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the Python agent starts");
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let parsed = serde_json::from_str(&line).unwrap_or_else(|_| json!({ "unreadable": line }));
                if tx.send(parsed).is_err() {
                    return;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    return;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let stdin = child.stdin.take();
        Agent { child, stdin, lines, stderr }
    }

    /// The next stdout line, waiting without blocking the runtime.
    async fn line(&mut self, what: &str) -> Value {
        let deadline = now() + PATIENCE_MS;
        loop {
            match self.lines.try_recv() {
                Ok(v) => return v,
                Err(mpsc::TryRecvError::Empty) if now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await
                }
                Err(_) => panic!("the Python agent printed no {what}; stderr:\n{}", self.stderr.lock().unwrap()),
            }
        }
    }

    /// Closes stdin (the agent ends its session) and waits for the exit.
    async fn finish(&mut self) -> Value {
        drop(self.stdin.take());
        let summary = self.line("summary").await;
        let deadline = now() + PATIENCE_MS;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "the Python agent failed ({status}); stderr:\n{}",
                    self.stderr.lock().unwrap()
                );
                return summary;
            }
            assert!(now() < deadline, "the Python agent did not exit");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[tokio::test]
async fn a_python_sdk_agent_answers_once_and_reacks_a_retry_byte_for_byte() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let relay = serve(Config { token: Token::new(TOKEN), ..Config::default() }, listener).await.unwrap();
    let mut console = Console::connect(&relay, TOKEN).await;
    let mut agent = Agent::spawn(&relay);

    let ready = agent.line("ready line").await;
    let request_id = ready["ready"].as_str().unwrap_or_else(|| panic!("unexpected first line {ready}")).to_owned();
    let request = console.event("the Python agent's request", |e| e.id() == request_id).await;
    assert_eq!((request.ty(), request.agent(), request.session()), ("attention.requested", "py-agent", Some(SESSION)));

    let roster_id = console.link.conn().request_roster().unwrap();
    let roster =
        console.until("roster", |c| c.rosters.iter().find(|(r, _)| *r == roster_id).map(|(_, e)| e.clone())).await;
    let entry = roster.iter().find(|e| e.session == SESSION).expect("the Python agent claims its session");
    assert_eq!(
        entry.control.as_ref().and_then(|c| c.accepts.clone()),
        Some(vec!["control.attention.respond".to_owned()])
    );

    let command_id = console
        .sender
        .send(
            &Address::session(SESSION),
            &Command::Respond { request: request_id.clone(), answer: Answer::option("allow") },
            Some(10_000),
            now(),
        )
        .unwrap();
    let command = Event::parse(&console.sender.poll_transmit().unwrap()).unwrap();
    console.link.conn().send_event(&command).unwrap();

    let ack = console
        .until("the ack", |c| match c.sender.get(&command_id).unwrap().state() {
            CommandState::Pending { .. } => None,
            CommandState::Accepted { ack } => Some(ack.clone()),
            other => panic!("the respond was not accepted: {other:?}"),
        })
        .await;
    assert_eq!(
        (ack.ty(), ack.cause(), ack.agent(), ack.session()),
        ("control.accepted", Some(command_id.as_str()), "py-agent", Some(SESSION))
    );
    let answered =
        console.event("attention.answered", |e| e.ty() == "attention.answered" && e.cause() == Some(&command_id)).await;
    let resolved =
        console.event("attention.resolved", |e| e.ty() == "attention.resolved" && e.cause() == Some(&command_id)).await;
    assert_eq!(answered.subject(), Some(request_id.as_str()));
    assert_eq!(resolved.subject(), Some(request_id.as_str()));
    assert_eq!(answered.data_field("answer"), Some(&json!({"option": "allow"})));
    assert_eq!(resolved.data_field("resolution"), Some(&json!("answered")));
    assert_eq!(console.sender.get(&command_id).unwrap().outcome().map(Event::id), Some(answered.id()));

    // The ack was "lost": the sender retries the same command, same bytes.
    let mark = console.seen.len();
    console.link.conn().send_event(&command).unwrap();
    let again = console.until("the re-sent ack", |c| c.seen[mark..].iter().find(|e| e.id() == ack.id()).cloned()).await;
    assert_eq!(again.raw(), ack.raw(), "the recorded ack, byte for byte");
    console.idle(1_000).await;
    assert!(console.seen[mark..].iter().filter(|e| e.id() == ack.id()).all(|e| e.raw() == ack.raw()));
    let answers = console
        .seen
        .iter()
        .filter(|e| e.ty() == "attention.answered" && e.subject() == Some(request_id.as_str()))
        .count();
    assert_eq!(answers, 1, "the retry was not executed again");

    let summary = agent.finish().await;
    assert_eq!(summary, json!({ "executed": [command_id], "duplicates": 1 }));
    console.event("session.ended", |e| e.ty() == "session.ended" && e.session() == Some(SESSION)).await;

    let python_events: Vec<&Event> = console.seen.iter().filter(|e| e.agent() == "py-agent").collect();
    for e in &python_events {
        assert!(validate::event(&e.to_value()).is_empty(), "{}", e.raw());
        assert!(e.check_payload().is_empty(), "{}: {:?}", e.raw(), e.check_payload());
    }
    let mut first_copies: Vec<Event> = Vec::new();
    for e in python_events {
        if !first_copies.iter().any(|f| f.id() == e.id()) {
            first_copies.push(e.clone());
        }
    }
    let stream = stream_violations(&first_copies);
    assert!(stream.is_empty(), "{stream:?}");
    relay.shutdown().await;
}
