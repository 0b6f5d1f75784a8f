//! Taps a person needs with and without standing rules. Run in release:
//!
//! ```sh
//! cargo run --release -p aep-relay --example bench_rules
//! ```
//!
//! A coding agent asks 40 permission requests in one session, one at a
//! time (it waits for each answer), for 8 distinct Bash commands in a
//! shuffled order. A person answers whatever is still waiting after a
//! moment: without rules each request is a tap on Allow; with rules the
//! person instead taps "Always: Allow" (a rule made from the request over
//! the relay's API, which answers that request too), and the relay answers
//! the repeats. Each request goes through the real relay (its routing, the
//! agent's ack and outcome). Prints the taps, the taps per request and
//! which requests took a tap; fails if rules need more than 10 taps.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aep_engine::protocol::ids::{Draft, Identity};
use aep_engine::Event;
use aep_relay::auth::Token;
use aep_relay::{serve, Config};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

mod common;
use common::{id, now, socket, TOKEN};

const REQUESTS: usize = 40;
const COMMANDS: [&str; 8] = [
    "npm test",
    "npm run lint",
    "git status",
    "git diff --stat",
    "cargo build",
    "cargo test -p api",
    "ls -la src",
    "cat package.json",
];
/// How long a request may wait before the person, watching, taps.
const PATIENCE: Duration = Duration::from_millis(400);
/// The most taps the session may take once rules are used.
const MOST_TAPS: usize = 10;

/// Each command five times, in an order shuffled by a fixed seed.
fn session_of_requests() -> Vec<&'static str> {
    let mut order: Vec<&str> = (0..REQUESTS).map(|n| COMMANDS[n % COMMANDS.len()]).collect();
    let mut state: u64 = 0x5eed;
    for i in (1..order.len()).rev() {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        order.swap(i, (state >> 33) as usize % (i + 1));
    }
    order
}

/// A coding agent on its own socket: asks when told, acks every answer and
/// reports its outcome; says which request each answer was for.
struct Agent {
    session: String,
    me: Identity,
    seq: Arc<AtomicU64>,
    out: mpsc::UnboundedSender<String>,
    answered: mpsc::UnboundedReceiver<(String, Option<String>)>,
}

impl Agent {
    async fn start(addr: std::net::SocketAddr, session: &str) -> Agent {
        let me = Identity::new(format!("aep://bench/agent/coder/session/{session}"), "coder");
        let ws = socket(
            addr,
            json!({"type": "hello", "versions": ["0.1"], "role": "emitter", "identity": {"agent": "coder"},
                   "capabilities": {"control": {"accepts": ["control.attention.respond"], "ack_window_ms": 10000}}}),
        )
        .await;
        let (mut sink, mut stream) = ws.split();
        let (out, mut outgoing) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(text) = outgoing.recv().await {
                if sink.send(Message::text(text)).await.is_err() {
                    return;
                }
            }
        });
        let seq = Arc::new(AtomicU64::new(0));
        let (tell, answered) = mpsc::unbounded_channel();
        let agent = Agent { session: session.to_owned(), me: me.clone(), seq: seq.clone(), out: out.clone(), answered };
        agent.emit(Draft::new("session.started").data(json!({"label": "bench"})));
        agent.emit(Draft::new("run.started").run("r1").data(json!({"trigger": "user"})));
        let emitter = agent.emitter();
        tokio::spawn(async move {
            while let Some(Ok(message)) = stream.next().await {
                let Message::Text(text) = message else { continue };
                let Ok(command) = Event::parse(&text) else { continue };
                if !command.is_command() {
                    continue;
                }
                let subject = command.subject().unwrap_or_default().to_owned();
                let answer = command.data_field("answer").cloned().unwrap_or_default();
                emitter(Draft::new("control.accepted").cause(command.id()).data(json!({})));
                emitter(
                    Draft::new("attention.answered")
                        .subject(&subject)
                        .cause(command.id())
                        .data(json!({"answer": answer})),
                );
                emitter(
                    Draft::new("attention.resolved")
                        .subject(&subject)
                        .cause(command.id())
                        .data(json!({"how": "answered"})),
                );
                let rule = command.extensions().get("relayrule").and_then(Value::as_str).map(str::to_owned);
                let _ = tell.send((subject, rule));
            }
        });
        agent
    }

    fn emitter(&self) -> impl Fn(Draft) -> Event + Send + 'static {
        let (me, session, seq, out) = (self.me.clone(), self.session.clone(), self.seq.clone(), self.out.clone());
        move |draft: Draft| {
            let n = seq.fetch_add(1, Ordering::SeqCst);
            let e = draft.session(&session).seq(n).build(&me, id(u128::from(n) + 1), now()).unwrap();
            let _ = out.send(e.raw().to_owned());
            e
        }
    }

    fn emit(&self, draft: Draft) -> Event {
        self.emitter()(draft)
    }

    fn ask(&self, command: &str) -> Event {
        self.emit(Draft::new("attention.requested").run("r1").data(json!({
            "kind": "permission", "prompt": format!("Bash: {command}"), "respond_via": ["control"],
            "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}],
            "context": {"tool": "Bash", "tool_input": {"command": command}}})))
    }

    /// The answer to `request` within `within`: whether a rule gave it.
    async fn answer_to(&mut self, request: &Event, within: Duration) -> Option<Option<String>> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.answered.recv()).await {
                Ok(Some((subject, rule))) if subject == request.id() => return Some(rule),
                Ok(Some(_)) => continue,
                _ => return None,
            }
        }
    }
}

/// How the person answers what waits for them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Person {
    /// Taps Allow on the card.
    Answers,
    /// Taps "Always: Allow": a rule made from the card.
    MakesRules,
}

/// One session of requests: the taps it took, and `T`/`.` per request
/// (a tap, or answered by a rule).
async fn run(relay: &aep_relay::Relay, person: Person) -> (usize, String) {
    let addr = relay.local_addr();
    let session = format!("bench-rules-{}", id(rand_seed()).to_lowercase());
    let mut agent = Agent::start(addr, &session).await;
    let mut console = socket(addr, json!({"type": "hello", "versions": ["0.1"], "role": "consumer"})).await;
    let http = reqwest::Client::new();
    let me = Identity::new("aep://bench/agent/operator", "operator");
    let (mut taps, mut trail) = (0, String::new());
    for (n, command) in session_of_requests().into_iter().enumerate() {
        let request = agent.ask(command);
        if agent.answer_to(&request, PATIENCE).await.is_some() {
            trail.push('.');
            continue;
        }
        taps += 1;
        trail.push('T');
        match person {
            Person::Answers => {
                let answer = Draft::new("control.attention.respond")
                    .session(&session)
                    .subject(request.id())
                    .data(json!({"answer": {"option": "allow"}}))
                    .build(&me, id(1_000_000 + n as u128), now())
                    .unwrap();
                console.send(Message::text(answer.raw().to_owned())).await.unwrap();
            }
            Person::MakesRules => {
                let made = http
                    .post(format!("{}/rules", relay.base_url()))
                    .bearer_auth(TOKEN)
                    .json(&json!({"request": request.id(), "option": "allow", "for": "1h"}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(made.status(), 201, "{}", made.text().await.unwrap_or_default());
            }
        }
        assert!(agent.answer_to(&request, Duration::from_secs(5)).await.is_some(), "request {n} was never answered");
    }
    (taps, trail)
}

fn rand_seed() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

#[tokio::main]
async fn main() {
    let dir = std::env::temp_dir().join(format!("aep-bench-rules-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let config = Config { token: Token::new(TOKEN), data_dir: Some(dir.clone()), ..Config::default() };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let relay = serve(config, listener).await.unwrap();
    let distinct = COMMANDS.len();
    println!(
        "{REQUESTS} permission requests in one session, {distinct} distinct commands, each answered before the next"
    );
    let started = Instant::now();
    let mut with_rules = 0;
    for (person, words) in [(Person::Answers, "without rules"), (Person::MakesRules, "with rules   ")] {
        let (taps, trail) = run(&relay, person).await;
        println!(
            "{words}: {taps:>2} taps for {REQUESTS} requests = {:.2} taps per request  [{trail}]  (T: a tap, .: answered by a rule)",
            taps as f64 / REQUESTS as f64
        );
        if person == Person::MakesRules {
            with_rules = taps;
        }
    }
    println!("took {:.1} s", started.elapsed().as_secs_f64());
    relay.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    assert!(with_rules <= MOST_TAPS, "rules needed {with_rules} taps, more than {MOST_TAPS}");
}
