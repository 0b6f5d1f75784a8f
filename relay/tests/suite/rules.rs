//! Standing rules, with the real binary: a rule an operator makes over
//! the relay's API answers the next matching requests on its author's
//! behalf, through the ordinary command path (the agent acks it and
//! reports its outcome), and the audit names the rule and its author. It
//! stops when revoked or expired, never answers a destructive or severe
//! request, answers each request once, survives a restart on the same
//! `--data-dir`, and a viewer cannot make one.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_engine::protocol::ids::{Draft, Identity};
use aep_engine::{Event, Severity};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use support::*;

const ALICE: &str = "alice-rules-token-012345";
const CAROL: &str = "carol-rules-token-012345";
const BUILDER: &str = "builder-rules-token-0123";

/// How long a request is watched for an answer that must not come.
const QUIET: Duration = Duration::from_millis(1_200);

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aep-rules-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An operator, a viewer and an agent.
fn start(dir: &Path) -> RelayProcess {
    let hash = |token: &str| Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect::<String>();
    let lines = [("alice", "operator,viewer", ALICE), ("carol", "viewer", CAROL), ("builder", "agent", BUILDER)]
        .map(|(name, roles, token)| format!("{name} {roles} {}\n", hash(token)))
        .concat();
    let creds = dir.join("credentials");
    std::fs::write(&creds, lines).unwrap();
    let data = dir.join("data");
    RelayProcess::start(&["--data-dir", data.to_str().unwrap(), "--credentials", creds.to_str().unwrap()])
}

/// An agent on a socket (which claims its session and takes commands: an
/// ack, then `attention.answered` and `attention.resolved`, each
/// `cause`-linked) asking its requests over HTTP.
struct Agent {
    session: String,
    me: Identity,
    seq: Arc<Mutex<u64>>,
    commands: Arc<Mutex<Vec<Event>>>,
    base: String,
    task: tokio::task::JoinHandle<()>,
}

impl Agent {
    async fn start(relay: &RelayProcess) -> Agent {
        let session = session_name("builder");
        let me = Identity::new(format!("aep://test/agent/builder/session/{session}"), "builder");
        let seq = Arc::new(Mutex::new(0u64));
        let emit = {
            let (me, session, seq) = (me.clone(), session.clone(), seq.clone());
            move |draft: Draft| {
                let mut n = seq.lock().unwrap();
                let e = draft.session(&session).seq(*n).build(&me, fresh_id(), now()).unwrap();
                *n += 1;
                e
            }
        };
        let mut ws = Ws::connect(&format!("ws://{}/socket?access_token={BUILDER}", relay.addr)).await.unwrap();
        ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": "emitter",
            "identity": {"agent": "builder", "instance": "t"},
            "capabilities": {"control": {"accepts": ["control.attention.respond"], "ack_window_ms": 10000}}}))
            .await;
        assert_eq!(ws.recv_json().await["type"], "hello");
        for e in [
            emit(Draft::new("session.started").data(json!({"label": "rules"}))),
            emit(Draft::new("run.started").run("r1").data(json!({"trigger": "user"}))),
        ] {
            ws.send_text(e.raw()).await;
        }
        let commands = Arc::new(Mutex::new(Vec::new()));
        let seen = commands.clone();
        let task = tokio::spawn(async move {
            loop {
                let Some(Incoming::Text(text)) = ws.recv(Duration::from_secs(3600)).await else { return };
                let v: Value = serde_json::from_str(&text).unwrap();
                if v["type"] == "ping" {
                    ws.send(&json!({"type": "pong", "t": v["t"]})).await;
                    continue;
                }
                let Ok(command) = Event::parse(&text) else { continue };
                if !command.is_command() {
                    continue;
                }
                seen.lock().unwrap().push(command.clone());
                let subject = command.subject().unwrap_or_default().to_owned();
                let answer = command.data_field("answer").cloned().unwrap_or_default();
                for e in [
                    emit(Draft::new("control.accepted").cause(command.id()).data(json!({}))),
                    emit(
                        Draft::new("attention.answered")
                            .subject(&subject)
                            .cause(command.id())
                            .data(json!({"answer": answer})),
                    ),
                    emit(
                        Draft::new("attention.resolved")
                            .subject(&subject)
                            .cause(command.id())
                            .data(json!({"how": "answered"})),
                    ),
                ] {
                    ws.send_text(e.raw()).await;
                }
            }
        });
        tokio::time::sleep(Duration::from_millis(150)).await;
        Agent { session, me, seq, commands, base: relay.base(), task }
    }

    /// An `attention.requested` for a Bash `command`, as the Claude Code
    /// adapter raises one.
    fn request(&self, command: &str, severity: Severity, destructive: bool) -> Event {
        let mut seq = self.seq.lock().unwrap();
        let mut data = json!({"kind": "permission", "prompt": format!("Bash: {command}"), "respond_via": ["control"],
            "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}],
            "context": {"tool": "Bash", "tool_input": {"command": command}}});
        if destructive {
            data["destructive"] = true.into();
        }
        let e = Draft::new("attention.requested")
            .session(&self.session)
            .run("r1")
            .seq(*seq)
            .severity(severity)
            .data(data)
            .build(&self.me, fresh_id(), now())
            .unwrap();
        *seq += 1;
        e
    }

    /// Sends `request` over HTTP.
    async fn post(&self, request: &Event) {
        let url = format!("{}/events", self.base);
        let status = post_ndjson(&reqwest::Client::new(), &url, Some(BUILDER), ndjson([request])).send().await.unwrap();
        assert_eq!(status.status(), 202);
    }

    async fn ask(&self, command: &str) -> Event {
        let request = self.request(command, Severity::Info, false);
        self.post(&request).await;
        request
    }

    fn answers_to(&self, request: &Event) -> Vec<Event> {
        self.commands.lock().unwrap().iter().filter(|c| c.subject() == Some(request.id())).cloned().collect()
    }

    /// The one command that answered `request`, once it came.
    async fn answered(&self, request: &Event) -> Event {
        let deadline = tokio::time::Instant::now() + PROMPT;
        loop {
            if let Some(command) = self.answers_to(request).pop() {
                return command;
            }
            assert!(tokio::time::Instant::now() < deadline, "nothing answered `{}`", request.id());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `request` is still waiting for a person after a while.
    async fn waits(&self, request: &Event) {
        tokio::time::sleep(QUIET).await;
        assert!(self.answers_to(request).is_empty(), "no rule may answer `{}`", request.raw());
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn http() -> reqwest::Client {
    reqwest::Client::new()
}

async fn rules_call(
    relay: &RelayProcess,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = http().request(method, format!("{}{path}", relay.base())).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn make(relay: &RelayProcess, token: &str, body: Value) -> (u16, Value) {
    rules_call(relay, token, reqwest::Method::POST, "/rules", Some(body)).await
}

async fn listed(relay: &RelayProcess) -> Vec<Value> {
    let (status, body) = rules_call(relay, CAROL, reqwest::Method::GET, "/rules", None).await;
    assert_eq!(status, 200, "{body}");
    body["rules"].as_array().unwrap().clone()
}

/// The audit's rows for `session` once `check` holds of them.
async fn audit_rows(relay: &RelayProcess, session: &str, check: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + PROMPT;
    loop {
        let url = format!("{}/audit?format=json&session={session}", relay.base());
        let rows: Vec<Value> = http().get(url).bearer_auth(CAROL).send().await.unwrap().json().await.unwrap();
        if check(&rows) {
            return rows;
        }
        assert!(tokio::time::Instant::now() < deadline, "the audit never showed it: {rows:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn npm_test_rule(lifetime: &str) -> Value {
    json!({"agent": "builder", "tool": "Bash", "match": "exact", "pattern": "npm test", "option": "allow", "for": lifetime})
}

#[tokio::test]
async fn a_rule_answers_the_next_matching_requests_until_revoked_and_survives_a_restart() {
    let dir = scratch("answers");
    let relay = start(&dir);
    let agent = Agent::start(&relay).await;

    // A viewer's attempt is refused by the relay, and nothing is made.
    let (status, body) = make(&relay, CAROL, npm_test_rule("1h")).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"], "unauthorized");
    let said = body["detail"].as_str().unwrap();
    assert!(said.contains("carol") && said.contains("only an operator"), "a clear refusal: {said}");
    assert!(listed(&relay).await.is_empty());
    let (status, _) = rules_call(&relay, CAROL, reqwest::Method::DELETE, "/rules/r-anything", None).await;
    assert_eq!(status, 403, "nor may a viewer revoke one");

    let (status, body) = make(&relay, ALICE, npm_test_rule("1h")).await;
    assert_eq!(status, 201, "{body}");
    let rule = body["rule"]["id"].as_str().unwrap().to_owned();
    assert_eq!((body["rule"]["author"].as_str(), body["rule"]["state"].as_str()), (Some("alice"), Some("active")));

    // The next three matching requests are answered with no operator command.
    let mut asked = Vec::new();
    for _ in 0..3 {
        let request = agent.ask("npm test").await;
        let command = agent.answered(&request).await;
        assert_eq!((command.ty(), command.agent()), ("control.attention.respond", "alice"), "on its author's behalf");
        assert_eq!(command.data_field("answer"), Some(&json!({"option": "allow"})));
        assert_eq!(command.extensions().get("relayrule").and_then(Value::as_str), Some(rule.as_str()));
        asked.push((request, command));
    }
    // Each was acked and its outcome reported; the audit names the rule and its author.
    let rows = audit_rows(&relay, &agent.session, |rows| {
        rows.len() == 3 && rows.iter().all(|r| r["outcome"] == "attention.resolved")
    })
    .await;
    for row in &rows {
        assert_eq!((row["who"].as_str(), row["ack"].as_str()), (Some("alice"), Some("accepted")), "{row}");
        assert_eq!(row["rule"]["id"].as_str(), Some(rule.as_str()), "{row}");
        assert_eq!(row["rule"]["author"], "alice");
        assert!(row["rule"]["made_at"].as_u64().is_some_and(|t| t > 0));
        assert!(asked.iter().any(|(_, c)| row["command"] == c.id()));
    }
    let jsonl = http()
        .get(format!("{}/audit?session={}", relay.base(), agent.session))
        .bearer_auth(CAROL)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(jsonl.contains(asked[0].1.raw()), "the command's own bytes, naming the rule, are in the trail");
    assert_eq!(listed(&relay).await[0]["answered"], 3);

    // The same request delivered again is not answered again.
    agent.post(&asked[0].0).await;
    tokio::time::sleep(QUIET).await;
    assert_eq!(agent.answers_to(&asked[0].0).len(), 1, "answered once");

    // Never a destructive request, nor one of severity error, nor one
    // that does not offer the rule's option, nor another command.
    agent
        .waits(&{
            let r = agent.request("npm test", Severity::Info, true);
            agent.post(&r).await;
            r
        })
        .await;
    agent
        .waits(&{
            let r = agent.request("npm test", Severity::Error, false);
            agent.post(&r).await;
            r
        })
        .await;
    agent.waits(&agent.ask("npm test -- --watch").await).await;

    // The rule survives a restart on the same data directory.
    drop(agent);
    drop(relay);
    let relay = start(&dir);
    let kept = listed(&relay).await;
    assert_eq!(kept.len(), 1);
    assert_eq!((kept[0]["id"].as_str(), kept[0]["state"].as_str()), (Some(rule.as_str()), Some("active")));
    let agent = Agent::start(&relay).await;
    let after_restart = agent.ask("npm test").await;
    assert_eq!(
        agent.answered(&after_restart).await.extensions().get("relayrule").and_then(Value::as_str),
        Some(rule.as_str())
    );

    // Revoked, the next one waits for a person.
    let (status, body) = rules_call(&relay, ALICE, reqwest::Method::DELETE, &format!("/rules/{rule}"), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["rule"]["state"], "revoked");
    agent.waits(&agent.ask("npm test").await).await;
    drop(relay);
    let relay = start(&dir);
    assert_eq!(listed(&relay).await[0]["state"], "revoked", "revoked stays revoked");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn an_expired_rule_answers_no_more() {
    let dir = scratch("expiry");
    let relay = start(&dir);
    let agent = Agent::start(&relay).await;
    let (status, body) = make(&relay, ALICE, npm_test_rule("2s")).await;
    assert_eq!(status, 201, "{body}");
    let first = agent.ask("npm test").await;
    agent.answered(&first).await;
    tokio::time::sleep(Duration::from_millis(2_200)).await;
    assert_eq!(listed(&relay).await[0]["state"], "expired");
    agent.waits(&agent.ask("npm test").await).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_rule_made_from_a_request_answers_it_and_the_next_ones_and_bad_rules_are_refused() {
    let dir = scratch("from-request");
    let relay = start(&dir);
    let agent = Agent::start(&relay).await;
    let first = agent.ask("cargo build --release").await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    // The relay says how a rule would see the request.
    let (status, seen) =
        rules_call(&relay, CAROL, reqwest::Method::GET, &format!("/rules/request?id={}", first.id()), None).await;
    assert_eq!(status, 200, "{seen}");
    assert_eq!((seen["tool"].as_str(), seen["input"].as_str()), (Some("Bash"), Some("cargo build --release")));
    assert_eq!(seen["refused"], Value::Null);

    // Bad rules are refused with a reason, and nothing is made.
    for (body, why) in [
        (json!({"request": first.id(), "option": "maybe", "for": "1h"}), "option"),
        (json!({"request": first.id(), "option": "allow", "for": "forever"}), "for"),
        (json!({"request": first.id(), "option": "allow", "match": "prefix", "pattern": " ", "for": "1h"}), "prefix"),
        (json!({"agent": "builder", "option": "allow", "for": "1h"}), "pattern"),
        (json!({"request": "no-such-request", "option": "allow", "for": "1h"}), "not open"),
        (json!({"request": first.id(), "option": "allow", "for": "1h", "when": "always"}), "when"),
    ] {
        let (status, said) = make(&relay, ALICE, body.clone()).await;
        assert!((400..500).contains(&status), "{body} → {status} {said}");
        assert!(said["detail"].as_str().unwrap_or_default().contains(why), "{body}: {said}");
    }
    assert!(listed(&relay).await.is_empty());

    // From the request, a prefix for this session: it answers that request and the next ones.
    let (status, body) = make(
        &relay,
        ALICE,
        json!({"request": first.id(), "match": "prefix", "pattern": "cargo build", "option": "allow", "for": "10m"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["request"], "answered");
    assert_eq!(body["rule"]["session"], agent.session.as_str());
    agent.answered(&first).await;
    agent.answered(&agent.ask("cargo build -p relay").await).await;

    // Edited to deny, it answers deny from then on.
    let id = body["rule"]["id"].as_str().unwrap();
    let (status, edited) = rules_call(
        &relay,
        ALICE,
        reqwest::Method::PATCH,
        &format!("/rules/{id}"),
        Some(json!({"option": "deny", "for": "1h"})),
    )
    .await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!(edited["rule"]["edited"]["by"], "alice");
    let denied = agent.answered(&agent.ask("cargo build").await).await;
    assert_eq!(denied.data_field("answer"), Some(&json!({"option": "deny"})));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_command_from_a_connection_may_not_name_a_rule() {
    let dir = scratch("forged");
    let relay = start(&dir);
    let agent = Agent::start(&relay).await;
    let request = agent.ask("npm test").await;
    let mut ws = Ws::connect(&format!("ws://{}/socket?access_token={ALICE}", relay.addr)).await.unwrap();
    ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": "consumer", "identity": {"agent": "alice"}})).await;
    assert_eq!(ws.recv_json().await["type"], "hello");
    let forged = Draft::new("control.attention.respond")
        .session(&agent.session)
        .subject(request.id())
        .extension("relayrule", "r-made-up")
        .data(json!({"answer": {"option": "allow"}}))
        .build(&Identity::new("aep://console/agent/alice", "alice"), fresh_id(), now())
        .unwrap();
    ws.send_text(forged.raw()).await;
    let refusal = ws.recv_json().await;
    assert_eq!((refusal["code"].as_str(), refusal["cause"].as_str()), (Some("unauthorized"), Some(forged.id())));
    agent.waits(&request).await;
    let _ = std::fs::remove_dir_all(&dir);
}
