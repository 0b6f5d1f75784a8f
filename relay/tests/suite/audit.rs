//! The audit trail, with the real binary: commands, their acks, outcomes
//! and the requests they answer survive the replay buffer and a restart;
//! the query filters by principal, agent, time and outcome; the CSV names
//! who, what was asked, the answer and the result; an export verifies
//! offline only untouched; retention drops what is older than its bound.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_engine::protocol::ids::{Draft, Identity};
use aep_engine::Event;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use support::*;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";
const CAROL: &str = "carol-token-0123456789";
const BUILDER: &str = "builder-token-01234567";
const DEPLOYER: &str = "deployer-token-0123456";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aep-audit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Two operators, a viewer and two agents.
fn credentials(dir: &Path) -> PathBuf {
    let hash = |token: &str| Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect::<String>();
    let lines = [
        ("alice", "operator", ALICE),
        ("bob", "operator", BOB),
        ("carol", "viewer", CAROL),
        ("builder", "agent", BUILDER),
        ("deployer", "agent", DEPLOYER),
    ]
    .map(|(name, roles, token)| format!("{name} {roles} {}\n", hash(token)))
    .concat();
    let file = dir.join("credentials");
    std::fs::write(&file, lines).unwrap();
    file
}

fn start(dir: &Path, extra: &[&str]) -> RelayProcess {
    let data = dir.join("data");
    let creds = credentials(dir);
    let mut args = vec!["--data-dir", data.to_str().unwrap(), "--credentials", creds.to_str().unwrap()];
    args.extend_from_slice(extra);
    RelayProcess::start(&args)
}

async fn socket(relay: &RelayProcess, token: &str, role: &str, agent: &str) -> Ws {
    let mut ws = Ws::connect(&format!("ws://{}/socket?access_token={token}", relay.addr)).await.unwrap();
    let accepts = ["control.attention.respond", "control.cancel", "control.pause"];
    ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": role, "identity": {"agent": agent, "instance": "t"},
        "capabilities": {"control": {"accepts": accepts, "ack_window_ms": 10000}}}))
        .await;
    let reply = ws.recv_json().await;
    assert_eq!(reply["type"], "hello", "{reply}");
    ws
}

/// An agent that asks one question in its own session and answers every
/// command: accepted, then the outcome (`attention.answered` and
/// `attention.resolved`, `run.cancelled`, or `progress.status` paused),
/// each `cause`-linked; or, when it refuses answers, `control.rejected`
/// and then withdraws the request (`attention.resolved` dismissed).
struct Agent {
    session: String,
    request: Event,
    me: Identity,
    seq: Arc<Mutex<u64>>,
    task: tokio::task::JoinHandle<()>,
}

impl Agent {
    async fn start(relay: &RelayProcess, name: &str, token: &str, label: &str, prompt: &str) -> Agent {
        Agent::launch(relay, name, token, (&session_name(name), label), prompt, None).await
    }

    /// An agent in `session` (its id and label) that refuses answers with `refuses`, if given.
    async fn launch(
        relay: &RelayProcess,
        name: &str,
        token: &str,
        (session, label): (&str, &str),
        prompt: &str,
        refuses: Option<&'static str>,
    ) -> Agent {
        let session = session.to_owned();
        let me = Identity::new(format!("aep://test/agent/{name}"), name);
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
        let mut ws = socket(relay, token, "emitter", name).await;
        let started = emit(Draft::new("session.started").data(json!({"label": label})));
        let run = emit(Draft::new("run.started").run("r1").data(json!({"trigger": "user"})));
        let request = emit(Draft::new("attention.requested").run("r1").data(json!({
            "kind": "approval", "prompt": prompt,
            "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]})));
        for e in [&started, &run, &request] {
            ws.send_text(e.raw()).await;
        }
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
                let subject = command.subject().unwrap_or_default().to_owned();
                if let (Some(detail), "control.attention.respond") = (refuses, command.ty()) {
                    let rejected = emit(
                        Draft::new("control.rejected")
                            .cause(command.id())
                            .data(json!({"reason": "refused", "detail": detail})),
                    );
                    let withdrawn = emit(
                        Draft::new("attention.resolved")
                            .subject(&subject)
                            .cause(command.id())
                            .data(json!({"resolution": "dismissed"})),
                    );
                    for e in [rejected, withdrawn] {
                        ws.send_text(e.raw()).await;
                    }
                    continue;
                }
                let mut out = vec![emit(Draft::new("control.accepted").cause(command.id()).data(json!({})))];
                if command.ty() == "control.pause" {
                    out.push(emit(
                        Draft::new("progress.status").run("r1").cause(command.id()).data(json!({"phase": "paused"})),
                    ));
                } else if command.ty() == "control.cancel" {
                    out.push(emit(
                        Draft::new("run.cancelled").run("r1").cause(command.id()).data(json!({"by": "control"})),
                    ));
                } else {
                    let answer = command.data_field("answer").cloned().unwrap_or_default();
                    out.push(emit(
                        Draft::new("attention.answered")
                            .subject(&subject)
                            .cause(command.id())
                            .data(json!({"answer": answer})),
                    ));
                    out.push(emit(
                        Draft::new("attention.resolved")
                            .subject(&subject)
                            .cause(command.id())
                            .data(json!({"how": "answered"})),
                    ));
                }
                for e in out {
                    ws.send_text(e.raw()).await;
                }
            }
        });
        Agent { session, request, me, seq, task }
    }

    /// `n` ordinary events in its session, over HTTP.
    async fn chatter(&self, relay: &RelayProcess, token: &str, n: usize) {
        let http = reqwest::Client::new();
        for chunk in 0..n.div_ceil(1000) {
            let body: String = (0..1000.min(n - chunk * 1000))
                .map(|_| {
                    let mut seq = self.seq.lock().unwrap();
                    let e = Draft::new("progress.status")
                        .session(&self.session)
                        .seq(*seq)
                        .data(json!({"message": "working"}))
                        .build(&self.me, fresh_id(), now())
                        .unwrap();
                    *seq += 1;
                    format!("{}\n", e.raw())
                })
                .collect();
            let url = format!("{}/events", relay.base());
            let status = post_ndjson(&http, &url, Some(token), body).send().await.unwrap().status();
            assert_eq!(status, 202);
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An operator's console socket.
struct Operator {
    ws: Ws,
    me: Identity,
}

impl Operator {
    async fn connect(relay: &RelayProcess, name: &str, token: &str) -> Operator {
        let ws = socket(relay, token, "consumer", name).await;
        Operator { ws, me: Identity::new(format!("aep://console/agent/{name}"), name) }
    }

    async fn send(&mut self, command: Event) -> Event {
        self.ws.send_text(command.raw()).await;
        command
    }

    async fn answer(&mut self, agent: &Agent, option: &str) -> Event {
        let command = Draft::new("control.attention.respond")
            .session(&agent.session)
            .subject(agent.request.id())
            .data(json!({"answer": {"option": option}}))
            .build(&self.me, fresh_id(), now())
            .unwrap();
        self.send(command).await
    }

    /// An answer of the caller's making, under a command id of its choosing.
    async fn answer_as(&mut self, agent: &Agent, id: &str, answer: Value) -> Event {
        let command = Draft::new("control.attention.respond")
            .session(&agent.session)
            .subject(agent.request.id())
            .data(json!({ "answer": answer }))
            .build(&self.me, id.to_owned(), now())
            .unwrap();
        self.send(command).await
    }

    async fn pause(&mut self, session: &str) -> Event {
        let command = Draft::new("control.pause")
            .session(session)
            .run("r1")
            .data(json!({}))
            .build(&self.me, fresh_id(), now())
            .unwrap();
        self.send(command).await
    }

    async fn cancel(&mut self, session: &str) -> Event {
        let command = Draft::new("control.cancel")
            .session(session)
            .run("r1")
            .data(json!({}))
            .build(&self.me, fresh_id(), now())
            .unwrap();
        self.send(command).await
    }
}

async fn audit(relay: &RelayProcess, token: &str, query: &str) -> (reqwest::StatusCode, String) {
    let response =
        reqwest::Client::new().get(format!("{}/audit?{query}", relay.base())).bearer_auth(token).send().await.unwrap();
    (response.status(), response.text().await.unwrap())
}

/// The events (with their kind) of a JSONL answer, whole records only.
fn records(jsonl: &str) -> Vec<(String, String, Value)> {
    jsonl
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("event").is_some())
        .map(|v| {
            (v["kind"].as_str().unwrap().to_owned(), v["command"].as_str().unwrap().to_owned(), v["event"].clone())
        })
        .collect()
}

/// Command ids in a JSONL answer, in order of first appearance.
fn commands(jsonl: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for (kind, command, _) in records(jsonl) {
        if kind == "command" && !ids.contains(&command) {
            ids.push(command);
        }
    }
    ids
}

/// Polls the audit until `check` holds (the trail is written off the hot path).
async fn until(relay: &RelayProcess, query: &str, check: impl Fn(&str) -> bool) -> String {
    let deadline = tokio::time::Instant::now() + PROMPT;
    loop {
        let (status, body) = audit(relay, CAROL, query).await;
        assert_eq!(status, 200, "{body}");
        if check(&body) {
            return body;
        }
        assert!(tokio::time::Instant::now() < deadline, "the audit never showed it: {query}\n{body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn verify(file: &Path) -> (bool, String) {
    verify_with(file, &[])
}

/// `aep-relay audit verify FILE ARGS…`: whether it exited 0, and what it said.
fn verify_with(file: &Path, args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_aep-relay"))
        .args(["audit", "verify", file.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), said)
}

/// A record line without its event: its link line, as an export writes
/// the records it did not select.
fn strip_event(line: &str) -> String {
    let at = line.find(",\"event\":").expect("a whole record");
    format!("{}}}", &line[..at])
}

/// The CSV's cells, header first.
fn cells(csv: &str) -> Vec<Vec<String>> {
    let mut reader = ::csv::ReaderBuilder::new().has_headers(false).from_reader(csv.as_bytes());
    reader.records().map(|r| r.unwrap().iter().map(str::to_owned).collect()).collect()
}

#[tokio::test]
async fn a_command_its_ack_and_outcome_outlive_the_replay_buffer_and_a_restart() {
    let dir = scratch("restart");
    let relay = start(&dir, &["--buffer", "50"]);
    assert!(relay.boot.contains("audit trail"), "the bound is stated at start: {}", relay.boot);
    let agent = Agent::start(&relay, "builder", BUILDER, "build box", "Run `rm -rf build/`?").await;
    let mut alice = Operator::connect(&relay, "alice", ALICE).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let command = alice.answer(&agent, "allow").await;
    let session = format!("session={}", agent.session);
    until(&relay, &session, |b| b.contains("attention.resolved")).await;
    agent.chatter(&relay, BUILDER, 10_000).await;
    drop(relay);

    let relay = start(&dir, &["--buffer", "50"]);
    let (_, body) = audit(&relay, CAROL, &session).await;
    let kept = records(&body);
    let kinds: Vec<(&str, &str)> =
        kept.iter().map(|(k, _, e)| (k.as_str(), e["type"].as_str().unwrap_or_default())).collect();
    assert_eq!(
        kinds,
        [
            ("command", "control.attention.respond"),
            ("request", "attention.requested"),
            ("ack", "control.accepted"),
            ("outcome", "attention.answered"),
            ("outcome", "attention.resolved"),
        ],
        "{body}"
    );
    assert!(body.contains(command.raw()), "the command's own bytes");
    assert!(body.contains(agent.request.raw()), "the request's own bytes");
    assert!(kept.iter().all(|(_, id, _)| *id == command.id()));
    assert_eq!(kept[2].2["cause"], command.id());

    // The CSV names the person, the prompt, the answer and the outcome.
    let (status, csv) = audit(&relay, CAROL, &format!("{session}&format=csv")).await;
    assert_eq!(status, 200);
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 2, "{csv}");
    assert_eq!(
        cells(&csv)[0],
        [
            "time",
            "who",
            "agent",
            "session",
            "label",
            "verb",
            "command",
            "prompt",
            "answer",
            "ack",
            "outcome",
            "latency_ms",
            "result"
        ]
    );
    for field in ["alice", "builder", "build box", "Run `rm -rf build/`?", "allow", "accepted", "attention.resolved"] {
        assert!(rows[1].contains(field), "`{field}` in {}", rows[1]);
    }

    // The same row as an object, for the console.
    let (_, json) = audit(&relay, CAROL, &format!("{session}&format=json")).await;
    let rows: Value = serde_json::from_str(&json).unwrap();
    let row = &rows[0];
    assert_eq!(rows.as_array().unwrap().len(), 1);
    assert_eq!((row["who"].as_str(), row["answer"].as_str()), (Some("alice"), Some("allow")));
    assert_eq!(
        (row["prompt"].as_str(), row["result"].as_str()),
        (Some("Run `rm -rf build/`?"), Some("the agent acted on the answer"))
    );
    assert_eq!(row["command"], command.id());

    // An export verifies untouched; one record removed or edited does not.
    let export = dir.join("export.jsonl");
    std::fs::write(&export, &body).unwrap();
    let (ok, said) = verify(&export);
    assert!(ok, "{said}");
    let lines: Vec<&str> = body.lines().collect();
    let mut removed = lines.clone();
    removed.remove(2);
    std::fs::write(&export, removed.join("\n")).unwrap();
    let (ok, said) = verify(&export);
    assert!(!ok && said.contains("missing"), "{said}");
    std::fs::write(&export, body.replacen("\"option\":\"allow\"", "\"option\":\"deny\"", 1)).unwrap();
    let (ok, said) = verify(&export);
    assert!(!ok && said.contains("edited"), "{said}");
    std::fs::write(&export, body.replacen("\"principal\":\"alice\"", "\"principal\":\"bob\"", 1)).unwrap();
    assert!(!verify(&export).0, "the person is covered by the chain too");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn filters_return_exactly_the_matching_commands() {
    let dir = scratch("filters");
    let relay = start(&dir, &[]);
    let builder = Agent::start(&relay, "builder", BUILDER, "build box", "Delete the cache?").await;
    let deployer = Agent::start(&relay, "deployer", DEPLOYER, "prod", "Deploy to production?").await;
    let mut alice = Operator::connect(&relay, "alice", ALICE).await;
    let mut bob = Operator::connect(&relay, "bob", BOB).await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Each after the one before is recorded: two sockets have no order.
    let a1 = alice.answer(&builder, "allow").await;
    until(&relay, "", |b| b.contains(a1.id())).await;
    let b1 = bob.cancel(&builder.session).await;
    until(&relay, "", |b| b.contains("run.cancelled") && b.contains("attention.resolved")).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let since = now().0;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let a2 = alice.answer(&deployer, "deny").await;
    until(&relay, "", |b| b.contains(a2.id())).await;
    let b2 = bob.cancel("no-such-session").await;
    let refusal = bob.ws.recv_json().await;
    assert_eq!(refusal["code"], "no-route");
    let all = until(&relay, "", |b| commands(b).len() == 4 && b.matches("attention.resolved").count() >= 2).await;

    let ids = |cs: &[&Event]| cs.iter().map(|c| c.id().to_owned()).collect::<Vec<_>>();
    assert_eq!(commands(&all), ids(&[&b2, &a2, &b1, &a1]), "newest first");
    let query = |q: String| {
        let relay = &relay;
        async move {
            let (status, body) = audit(relay, ALICE, &q).await;
            assert_eq!(status, 200, "{body}");
            commands(&body)
        }
    };
    assert_eq!(query("principal=alice".into()).await, ids(&[&a2, &a1]));
    assert_eq!(query("principal=bob".into()).await, ids(&[&b2, &b1]));
    assert_eq!(query("agent=builder".into()).await, ids(&[&b1, &a1]));
    assert_eq!(query("agent=deployer".into()).await, ids(&[&a2]));
    assert_eq!(query(format!("from={since}")).await, ids(&[&b2, &a2]));
    assert_eq!(query(format!("to={since}")).await, ids(&[&b1, &a1]));
    assert_eq!(query("outcome=refused".into()).await, ids(&[&b2]));
    assert_eq!(query("outcome=run.cancelled".into()).await, ids(&[&b1]));
    assert_eq!(query("outcome=attention.resolved".into()).await, ids(&[&a2, &a1]));
    assert_eq!(query("verb=control.cancel&principal=bob".into()).await, ids(&[&b2, &b1]));
    let from = aep_engine::UnixMs(since).to_rfc3339();
    assert_eq!(query(format!("principal=alice&from={from}")).await, ids(&[&a2]));

    // Paged: one at a time, newest first, the cursor in a header.
    let response =
        reqwest::Client::new().get(format!("{}/audit?limit=3", relay.base())).bearer_auth(ALICE).send().await.unwrap();
    let next = response.headers()["aep-audit-next"].to_str().unwrap().to_owned();
    assert_eq!(commands(&response.text().await.unwrap()), ids(&[&b2, &a2, &b1]));
    assert_eq!(query(format!("limit=3&before={next}")).await, ids(&[&a1]));

    // The refusal is recorded with its cause, and the whole answer verifies.
    assert!(all.contains(r#""kind":"refused""#) && all.contains(r#""code":"no-route""#), "{all}");
    let export = dir.join("all.jsonl");
    std::fs::write(&export, &all).unwrap();
    assert!(verify(&export).0);
    let (_, alices) = audit(&relay, ALICE, "principal=alice").await;
    std::fs::write(&export, &alices).unwrap();
    let (ok, said) = verify(&export);
    assert!(ok, "a filtered export carries the links of what it leaves out: {said}");

    // Operators and viewers read it; an agent, or no token, does not.
    assert_eq!(audit(&relay, BUILDER, "").await.0, 403);
    assert_eq!(reqwest::get(format!("{}/audit", relay.base())).await.unwrap().status(), 401);
    assert_eq!(audit(&relay, CAROL, "from=yesterday").await.0, 400);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn retention_drops_what_is_older_than_its_bound_and_nothing_newer() {
    let dir = scratch("retention");
    let relay = start(&dir, &["--audit-retention", "2s"]);
    assert!(relay.boot.contains("audit trail (commands, acks, outcomes) kept 2s"), "{}", relay.boot);
    let agent = Agent::start(&relay, "builder", BUILDER, "build box", "Delete the cache?").await;
    let mut alice = Operator::connect(&relay, "alice", ALICE).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let old = alice.answer(&agent, "allow").await;
    until(&relay, "", |b| b.contains("attention.resolved")).await;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let new = alice.cancel(&agent.session).await;
    let body = until(&relay, "", |b| b.contains("run.cancelled")).await;
    assert_eq!(commands(&body), [new.id().to_owned()], "{body}");
    assert!(!body.contains(old.id()), "nothing of the older command is left: {body}");
    let kinds: Vec<String> = records(&body).into_iter().map(|(k, _, _)| k).collect();
    assert_eq!(kinds, ["command", "ack", "outcome"], "the newer command keeps all of it");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn commands_from_no_credential_are_not_kept() {
    let dir = scratch("anonymous");
    let data = dir.join("data");
    let relay = RelayProcess::start(&["--data-dir", data.to_str().unwrap()]);
    let mut ws = Ws::connect(&format!("ws://{}/socket", relay.addr)).await.unwrap();
    ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": "consumer"})).await;
    assert_eq!(ws.recv_json().await["type"], "hello");
    for _ in 0..3 {
        let cmd = command("control.cancel", "anywhere", json!({}));
        ws.send_text(cmd.raw()).await;
        assert_eq!(ws.recv_json().await["code"], "unauthorized");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let body = reqwest::get(format!("{}/audit", relay.base())).await.unwrap().text().await.unwrap();
    let lines: Vec<Value> = body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 1, "nothing but the signed head; anyone could fill the trail otherwise: {body}");
    assert_eq!((&lines[0]["head"]["records"], &lines[0]["commands"]), (&json!(0), &json!([])), "{body}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every cell a sender chose (session id, label, command id, answer …) is
/// kept as text in the CSV, and every cell is quoted.
#[tokio::test]
async fn the_csv_runs_no_formula_a_sender_wrote() {
    let dir = scratch("csv-injection");
    let relay = start(&dir, &[]);
    let session = "@SUM(1+1)";
    let agent = Agent::launch(&relay, "builder", BUILDER, (session, "=HYPERLINK(\"http://x\")"), "+ask", None).await;
    let mut alice = Operator::connect(&relay, "alice", ALICE).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let id = "-2+3+cmd|' /C calc'!A0";
    alice.answer_as(&agent, id, json!({"text": "=1+1", "option": "@allow"})).await;
    until(&relay, "", |b| b.contains("attention.resolved")).await;

    let (status, csv) = audit(&relay, CAROL, "format=csv").await;
    assert_eq!(status, 200);
    let rows = cells(&csv);
    assert_eq!(rows.len(), 2, "{csv}");
    let row = &rows[1];
    for cell in row {
        assert!(!cell.starts_with(['=', '+', '-', '@', '\t', '\r']), "`{cell}` would run as a formula: {csv}");
    }
    assert_eq!((row[3].as_str(), row[6].as_str()), ("'@SUM(1+1)", "'-2+3+cmd|' /C calc'!A0"), "{csv}");
    assert_eq!(row[4], "'=HYPERLINK(\"http://x\")");
    assert_eq!((row[7].as_str(), row[8].as_str()), ("'+ask", "'@allow: =1+1"));
    assert!(csv.lines().all(|l| l.starts_with('"') && l.ends_with('"')), "every cell quoted: {csv}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A record a selected command needs, without its event, breaks the
/// export; hash-only records of commands outside the filter do not, and
/// verify says how many there are and why.
#[tokio::test]
async fn a_selected_command_missing_an_event_does_not_verify() {
    let dir = scratch("stripped");
    let relay = start(&dir, &[]);
    let builder = Agent::start(&relay, "builder", BUILDER, "build box", "Delete the cache?").await;
    let mut alice = Operator::connect(&relay, "alice", ALICE).await;
    let mut bob = Operator::connect(&relay, "bob", BOB).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let answered = alice.answer(&builder, "allow").await;
    until(&relay, "", |b| b.contains("attention.resolved")).await;
    bob.cancel(&builder.session).await;
    until(&relay, "", |b| b.contains("run.cancelled")).await;
    let cancelled = alice.cancel(&builder.session).await;
    until(&relay, "", |b| b.matches("run.cancelled").count() >= 2).await;

    let (_, body) = audit(&relay, CAROL, "principal=alice").await;
    let export = dir.join("alice.jsonl");

    // The request line, minus its event.
    let lines: Vec<String> = body.lines().map(str::to_owned).collect();
    let request = lines.iter().position(|l| l.contains(r#""kind":"request""#)).unwrap();
    let mut stripped = lines.clone();
    stripped[request] = strip_event(&lines[request]);
    std::fs::write(&export, stripped.join("\n")).unwrap();
    let (ok, said) = verify(&export);
    assert!(!ok, "{said}");
    assert!(said.contains("request") && said.contains(answered.id()) && said.contains("no event"), "{said}");

    // Every record of a selected command, minus its event.
    let mut hidden = lines.clone();
    for line in hidden.iter_mut().filter(|l| l.contains(&format!(r#""command":"{}""#, cancelled.id()))) {
        *line = strip_event(line);
    }
    std::fs::write(&export, hidden.join("\n")).unwrap();
    let (ok, said) = verify(&export);
    assert!(!ok && said.contains(cancelled.id()), "{said}");

    // Untouched, it verifies, and says which lines are hash-only and why.
    std::fs::write(&export, &body).unwrap();
    let (ok, said) = verify(&export);
    assert!(ok, "{said}");
    assert!(said.contains("3 hash-only") && said.contains("1 other command"), "bob's cancel is hash-only: {said}");
    assert!(said.contains("principal=alice"), "and why: {said}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An export ends with the chain's head as of its newest record, signed
/// with the relay's key (kept in --data-dir across a restart): cutting its
/// end, dropping the head, or re-signing with another key is found.
#[tokio::test]
async fn the_end_of_an_export_is_signed_with_the_relays_key() {
    let dir = scratch("signed-head");
    let relay = start(&dir, &[]);
    let builder = Agent::start(&relay, "builder", BUILDER, "build box", "Delete the cache?").await;
    let mut alice = Operator::connect(&relay, "alice", ALICE).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    alice.answer(&builder, "allow").await;
    until(&relay, "", |b| b.contains("attention.resolved")).await;
    let newest = alice.cancel(&builder.session).await;
    let body = until(&relay, "", |b| b.contains("run.cancelled")).await;
    let key = |relay: &RelayProcess| {
        let url = format!("{}/audit/key", relay.base());
        async move {
            let response = reqwest::Client::new().get(url).bearer_auth(CAROL).send().await.unwrap();
            assert_eq!(response.status(), 200);
            response.json::<Value>().await.unwrap()["key"].as_str().unwrap().to_owned()
        }
    };
    let trusted = key(&relay).await;
    let export = dir.join("export.jsonl");
    std::fs::write(&export, &body).unwrap();
    let (ok, said) = verify_with(&export, &["--key", &trusted]);
    assert!(ok && said.contains("the trusted key"), "{said}");
    let (ok, said) = verify(&export);
    assert!(ok && said.contains("not checked against a trusted key"), "{said}");

    // The signed chain head, served.
    let response =
        reqwest::Client::new().get(format!("{}/audit/head", relay.base())).bearer_auth(CAROL).send().await.unwrap();
    let head: Value = response.json().await.unwrap();
    assert_eq!(head["key"], trusted.as_str());
    let records: Vec<Value> = body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let last = records.iter().filter_map(|r| r["seq"].as_u64()).max().unwrap();
    assert_eq!(head["head"]["records"], last + 1, "{head}");

    // The newest records cut, the head kept.
    let cut: Vec<&str> = body
        .lines()
        .filter(|l| !l.contains(&format!(r#""command":"{}""#, newest.id())) || l.contains("\"head\""))
        .collect();
    std::fs::write(&export, cut.join("\n")).unwrap();
    let (ok, said) = verify(&export);
    assert!(!ok && said.contains("cut from its end"), "{said}");
    // …and the head dropped too.
    let headless: Vec<&str> = cut.iter().copied().filter(|l| !l.contains("\"signature\"")).collect();
    std::fs::write(&export, headless.join("\n")).unwrap();
    let (ok, said) = verify(&export);
    assert!(!ok && said.contains("no signed head"), "{said}");
    // …and a head made for the cut file with another key: intact to itself,
    // not to the auditor who keeps the relay's key.
    let kept: Vec<Value> = headless.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let end = kept.iter().max_by_key(|r| r["seq"].as_u64().unwrap()).unwrap();
    let hash: [u8; 32] = (0..32)
        .map(|i| u8::from_str_radix(&end["hash"].as_str().unwrap()[2 * i..2 * i + 2], 16).unwrap())
        .collect::<Vec<_>>()
        .try_into()
        .unwrap();
    let forged = aep_relay::audit::head::Signer::from_seed([42; 32]).sign(
        aep_relay::audit::head::ChainEnd { records: end["seq"].as_u64().unwrap() + 1, hash },
        aep_relay::audit::head::Selection {
            filter: "limit=100".into(),
            commands: kept
                .iter()
                .filter(|r| r["kind"] == "command" && r.get("event").is_some())
                .map(|r| r["command"].as_str().unwrap().to_owned())
                .collect(),
        },
    );
    let mut forged_file = headless.join("\n");
    forged_file.push('\n');
    forged_file.push_str(&serde_json::to_string(&forged).unwrap());
    std::fs::write(&export, forged_file).unwrap();
    assert!(verify(&export).0, "a head anybody can make checks against its own key");
    let (ok, said) = verify_with(&export, &["--key", &trusted]);
    assert!(!ok && said.contains("not the trusted key"), "{said}");

    // The key outlives a restart.
    drop(relay);
    let relay = start(&dir, &[]);
    assert_eq!(key(&relay).await, trusted);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The CSV and the console's rows say what the agent did, in words: a
/// refused answer reads as refused although the request was then closed,
/// a pause as paused, a form's answer as its fields.
#[tokio::test]
async fn rows_say_in_words_what_the_agent_did() {
    let dir = scratch("words");
    let relay = start(&dir, &[]);
    let refuses = "production access needs two approvers";
    let guardian = Agent::launch(
        &relay,
        "deployer",
        DEPLOYER,
        (&session_name("deployer"), "prod access"),
        "Bash: rm -rf build/",
        Some(refuses),
    )
    .await;
    let builder = Agent::start(&relay, "builder", BUILDER, "build box", "Which environment?").await;
    let mut alice = Operator::connect(&relay, "alice", ALICE).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let refused = alice.answer(&guardian, "approve").await;
    until(&relay, "", |b| b.contains("dismissed")).await;
    let form = alice.answer_as(&builder, &fresh_id(), json!({"values": {"env": "prod", "count": 3}})).await;
    until(&relay, "", |b| {
        b.contains("attention.resolved") && b.contains(form.id()) && b.matches("attention.resolved").count() >= 2
    })
    .await;
    let paused = alice.pause(&builder.session).await;
    until(&relay, "", |b| b.contains("\"phase\":\"paused\"")).await;

    let (_, json) = audit(&relay, CAROL, "format=json").await;
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    let row = |id: &str| rows.iter().find(|r| r["command"] == id).unwrap_or_else(|| panic!("{id} in {json}")).clone();
    let words = |id: &str| row(id)["result"].as_str().unwrap().to_owned();
    let said = words(refused.id());
    assert!(said.starts_with("the agent refused: production access needs two approvers"), "{said}");
    assert_eq!(row(refused.id())["prompt"], "Bash: rm -rf build/");
    assert_eq!(words(paused.id()), "the agent paused");
    assert_eq!(words(form.id()), "the agent acted on the answer");
    assert_eq!(row(form.id())["answer"], "count: 3, env: prod");

    // The CSV's `result` column says the same words.
    let (_, csv) = audit(&relay, CAROL, "format=csv").await;
    let table = cells(&csv);
    let result = table[0].iter().position(|c| c == "result").unwrap();
    let command = table[0].iter().position(|c| c == "command").unwrap();
    for r in &table[1..] {
        assert_eq!(r[result], words(&r[command]), "{csv}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fenced block after `<!-- example: NAME -->` in relay/AUDIT.md.
fn documented(name: &str) -> String {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("AUDIT.md")).unwrap();
    let marker = format!("<!-- example: {name} -->");
    let after = &doc[doc.find(&marker).unwrap_or_else(|| panic!("{marker} in AUDIT.md")) + marker.len()..];
    let open = after.find("```").unwrap();
    let body = &after[open..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("```").unwrap()].trim_end().to_owned()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

/// The worked example of relay/AUDIT.md, read from the page: each hash is
/// what the documented byte layout gives, the relay writes exactly those
/// lines and that head, and `aep-relay audit verify --key` finds it intact.
#[test]
fn the_documented_example_is_what_the_relay_writes_and_verifies() {
    use aep_relay::audit::{chain, head};
    let export = documented("export");
    let facts: std::collections::HashMap<String, String> = documented("hashes")
        .lines()
        .map(|l| l.split_once(": ").map(|(k, v)| (k.to_owned(), v.to_owned())).unwrap())
        .collect();
    let lines: Vec<&str> = export.lines().collect();
    assert_eq!(lines.len(), 3, "two records and the signed head");
    let mut prev = [0u8; 32];
    for (seq, line) in lines[..2].iter().enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        let raw = &line[line.find(",\"event\":").unwrap() + ",\"event\":".len()..line.len() - 1];
        // The documented layout, computed here on its own.
        let body = Sha256::digest(raw.as_bytes());
        let mut hashed = prev.to_vec();
        hashed.extend_from_slice(&v["seq"].as_u64().unwrap().to_be_bytes());
        hashed.extend_from_slice(&v["at"].as_u64().unwrap().to_be_bytes());
        for field in ["kind", "command", "principal"] {
            hashed.extend_from_slice(v[field].as_str().unwrap().as_bytes());
            hashed.push(0);
        }
        hashed.extend_from_slice(&body);
        let hash: [u8; 32] = Sha256::digest(&hashed).into();
        assert_eq!(unhex(&facts[&format!("record {seq} body")]), body.to_vec());
        assert_eq!(unhex(&facts[&format!("record {seq} hashed")]), hashed);
        assert_eq!(unhex(&facts[&format!("record {seq} hash")]), hash.to_vec());
        assert_eq!(
            (v["body"].as_str(), v["hash"].as_str()),
            (Some(chain::hex(&body).as_str()), Some(chain::hex(&hash).as_str()))
        );
        assert_eq!(unhex(v["prev"].as_str().unwrap()), prev.to_vec());
        // The relay's own sealing writes the same line.
        let h = chain::Head {
            seq: v["seq"].as_u64().unwrap(),
            at: v["at"].as_u64().unwrap(),
            kind: v["kind"].as_str().unwrap(),
            command: v["command"].as_str().unwrap(),
            principal: v["principal"].as_str().unwrap(),
        };
        assert_eq!(chain::whole(&chain::seal(&prev, &h, raw).link, raw), *line);
        prev = hash;
    }

    // The head: the documented message, signed by the example's key.
    let signed: Value = serde_json::from_str(lines[2]).unwrap();
    let mut selection = Sha256::new();
    selection.update(signed["filter"].as_str().unwrap().as_bytes());
    selection.update([0]);
    for id in signed["commands"].as_array().unwrap() {
        selection.update(id.as_str().unwrap().as_bytes());
        selection.update([0]);
    }
    let selection = selection.finalize();
    let mut message = b"aep-audit-head\0".to_vec();
    message.extend_from_slice(&signed["head"]["records"].as_u64().unwrap().to_be_bytes());
    message.extend_from_slice(&unhex(signed["head"]["hash"].as_str().unwrap()));
    message.extend_from_slice(&selection);
    assert_eq!(unhex(&facts["selection"]), selection.to_vec());
    assert_eq!(unhex(&facts["signed message"]), message);
    assert_eq!(signed["head"]["hash"].as_str(), Some(chain::hex(&prev).as_str()));
    let key = ed25519_compact::PublicKey::from_slice(&unhex(&facts["key"])).unwrap();
    let signature = ed25519_compact::Signature::from_slice(&unhex(signed["signature"].as_str().unwrap())).unwrap();
    key.verify(&message, &signature).expect("the documented signature");
    let relay = head::Signer::from_seed([1; 32]).sign(
        head::ChainEnd { records: 2, hash: prev },
        head::Selection { filter: "limit=100".into(), commands: vec!["cmd-1".into()] },
    );
    assert_eq!(serde_json::to_string(&relay).unwrap(), lines[2], "the relay signs the same head");

    let dir = scratch("documented");
    let file = dir.join("example.jsonl");
    std::fs::write(&file, format!("{export}\n")).unwrap();
    let (ok, said) = verify_with(&file, &["--key", &facts["key"]]);
    assert!(ok && said.contains("2 records"), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A request asked before a restart and answered after it: the relay
/// restarts on the same data directory, the agent reconnects, an operator
/// answers; the audit keeps the request's own bytes and its prompt, as
/// the session's history (the replay buffer on disk) still holds them.
#[tokio::test]
async fn a_request_asked_before_a_restart_keeps_its_prompt_when_answered_after() {
    let dir = scratch("asked-before");
    let relay = start(&dir, &[]);
    let s = session_name("builder");
    let agent = support::agent::Agent::connect(&relay.addr, BUILDER, "builder", &s).await;
    agent.emit(Draft::new("session.started").data(json!({"label": "release box"})));
    let request = agent.emit(Draft::new("attention.requested").data(json!({
        "kind": "approval", "prompt": "Ship release 4.2?",
        "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]})));
    agent.emit_durably(&relay.base(), BUILDER, Draft::new("progress.status").data(json!({"message": "waiting"}))).await;
    relay.kill9();

    let relay = start(&dir, &[]);
    let agent = agent.reconnect(&relay.addr, BUILDER).await;
    let back = agent.emit(Draft::new("progress.status").data(json!({"message": "back"})));
    // The session is routable again once the relay holds what the
    // reconnected agent said (it claims the session as it is kept).
    let session = format!("session={s}");
    let deadline = tokio::time::Instant::now() + PROMPT;
    let replay = format!("{}/stream?live=0&from=all", relay.base());
    while !reqwest::Client::new()
        .get(&replay)
        .bearer_auth(CAROL)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .contains(back.id())
    {
        assert!(tokio::time::Instant::now() < deadline, "the reconnected agent's event was never kept");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut alice = Operator::connect(&relay, "alice", ALICE).await;
    let command = Draft::new("control.attention.respond")
        .session(&s)
        .subject(request.id())
        .data(json!({"answer": {"option": "allow"}}))
        .build(&alice.me, fresh_id(), now())
        .unwrap();
    let command = alice.send(command).await;

    let body = until(&relay, &session, |b| b.contains("attention.resolved")).await;
    let kept = records(&body);
    let kinds: Vec<(&str, &str)> =
        kept.iter().map(|(k, _, e)| (k.as_str(), e["type"].as_str().unwrap_or_default())).collect();
    assert_eq!(
        kinds,
        [
            ("command", "control.attention.respond"),
            ("request", "attention.requested"),
            ("ack", "control.accepted"),
            ("outcome", "attention.answered"),
            ("outcome", "attention.resolved"),
        ],
        "{body}"
    );
    assert!(body.contains(request.raw()), "the request's own bytes");
    assert!(kept.iter().all(|(_, id, _)| *id == command.id()));
    let (_, json) = audit(&relay, CAROL, &format!("{session}&format=json")).await;
    let rows: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{json}");
    assert_eq!((rows[0]["prompt"].as_str(), rows[0]["answer"].as_str()), (Some("Ship release 4.2?"), Some("allow")));
    assert_eq!(rows[0]["label"].as_str(), Some("release box"), "{json}");
    let _ = std::fs::remove_dir_all(&dir);
}
