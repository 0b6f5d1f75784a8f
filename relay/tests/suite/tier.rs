//! A relay tier: two or three relay processes (`--nats`) against one real
//! `nats-server -js` on a free loopback port with its own store, all on
//! real sockets. Clients talk to different members and see one relay.
//!
//! Built only with `--features tier-tests`; `scripts/test` runs it in
//! a network namespace where only loopback exists. Fails (never skips)
//! when `nats-server` is not installed.

use crate::support;

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aep_engine::protocol::ids::Draft;
use aep_engine::Event;
use serde_json::{json, Value};
use support::target::{TestTarget, TARGET_AGENT};
use support::*;

/// How long a claim made on one member may take to be seen on another.
const CLAIM_SPREAD: Duration = Duration::from_secs(5);

/// A `nats-server` with JetStream, on loopback only; stopped when dropped.
struct Nats {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

fn nats_server() -> PathBuf {
    let path = std::env::var("PATH").unwrap_or_default();
    let dirs = path.split(':').map(PathBuf::from).chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from));
    for dir in dirs {
        let candidate = dir.join("nats-server");
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!("nats-server is not installed: the tier tests need it (scripts/setup installs Debian's nats-server)");
}

impl Nats {
    fn start() -> Nats {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = std::env::temp_dir().join(format!("aep-tier-nats-{}", fresh_id()));
        let mut nats = Nats { child: None, port, dir };
        nats.launch();
        nats
    }

    /// Starts the server (again: same port, same store).
    fn launch(&mut self) {
        let child = Command::new(nats_server())
            .args(["-js", "-a", "127.0.0.1", "-p", &self.port.to_string(), "-sd", self.dir.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "nats-server did not listen on {}", self.port);
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One relay process of the tier, control on (token [`TOKEN`]).
struct Member {
    process: RelayProcess,
    http: reqwest::Client,
}

impl Member {
    fn start(nats: &Nats, name: &str) -> Member {
        let process = RelayProcess::start(&["--nats", &nats.url(), "--member", name, "--token", TOKEN]);
        Member { process, http: reqwest::Client::builder().no_proxy().build().unwrap() }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.process.base())
    }

    async fn post(&self, events: &[Event]) -> reqwest::Result<reqwest::Response> {
        let mut body = ndjson(events);
        if body.is_empty() {
            body.push('\n');
        }
        post_ndjson(&self.http, &self.url("/events"), Some(TOKEN), body).send().await
    }

    async fn sse(&self, query: &str, last_event_id: Option<&str>) -> Sse {
        let mut request = self.http.get(self.url(&format!("/stream?{query}"))).bearer_auth(TOKEN);
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        Sse::from_response(response)
    }

    /// A live stream of session `s`, attached.
    async fn watch(&self, s: &str) -> Sse {
        let sse = self.sse(&format!("filter={}", enc(&json!({ "session": s }))), None).await;
        tokio::time::sleep(Duration::from_millis(150)).await;
        sse
    }

    /// Session `s` replayed from `from` (a query value) to the end.
    async fn replay(&self, s: &str, from: &str) -> Vec<String> {
        let query = format!("live=0&filter={}&from={from}", enc(&json!({ "session": s })));
        let body = self.sse(&query, None).await.body_until_end(PROMPT).await;
        body.split("\n\n").map(parse_message).filter(|m| !m.data.is_empty()).map(|m| m.data[0].clone()).collect()
    }

    async fn hello(&self, role: &str, identity: Value, capabilities: Value) -> Ws {
        let mut ws = Ws::connect(&format!("ws://{}/socket?access_token={TOKEN}", self.process.addr)).await.unwrap();
        ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": role, "identity": identity, "capabilities": capabilities}))
            .await;
        let reply = ws.recv_json().await;
        assert_eq!(reply["type"], "hello", "{reply}");
        ws
    }

    async fn consumer(&self) -> Ws {
        self.hello("consumer", json!({"agent": AGENT, "instance": "test"}), json!({})).await
    }

    async fn target(&self, session: &str, accepts: &[&str], epoch: u64) -> TestTarget {
        let ws = self.hello("emitter", TestTarget::identity(TARGET_AGENT), TestTarget::capabilities(accepts)).await;
        TestTarget::start_on(ws, TARGET_AGENT, session, accepts, epoch).await
    }

    /// Waits until this member's roster lists `count` claims of `s`.
    async fn sees_claims(&self, s: &str, count: usize) {
        let mut consumer = self.consumer().await;
        let deadline = Instant::now() + CLAIM_SPREAD;
        loop {
            consumer.send(&json!({"type": "roster", "id": "r"})).await;
            let roster = consumer.recv_json().await;
            let entries: Vec<&Value> =
                roster["entries"].as_array().unwrap().iter().filter(|e| e["session"] == s).collect();
            if entries.len() == count {
                return;
            }
            assert!(Instant::now() < deadline, "{count} claim(s) of {s} never seen: {roster}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn enc(v: &Value) -> String {
    serde_urlencoded::to_string([("x", v.to_string())]).unwrap()[2..].to_owned()
}

fn ids(raw: &[String]) -> Vec<String> {
    raw.iter()
        .map(|r| serde_json::from_str::<Value>(r).unwrap()["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn acks_for(messages: &[SseMessage], id: &str) -> Vec<String> {
    messages
        .iter()
        .filter(|m| {
            let v = m.json();
            (v["type"] == "control.accepted" || v["type"] == "control.rejected") && v["cause"] == id
        })
        .map(|m| m.data[0].clone())
        .collect()
}

/// Reads data messages until `count` arrived (or nothing more comes).
async fn read(sse: &mut Sse, count: usize, into: &mut Vec<SseMessage>) {
    while into.len() < count {
        match sse.next_data(PROMPT).await {
            Some(m) => into.push(m),
            None => return,
        }
    }
}

#[tokio::test]
async fn events_accepted_by_one_member_reach_subscribers_of_another_once_in_order() {
    let nats = Nats::start();
    let a = Member::start(&nats, "a");
    let b = Member::start(&nats, "b");
    let s = session_name("tier-history");
    let mut live = b.watch(&s).await;
    let events: Vec<Event> = (0..300).map(|seq| event("progress.status", &s, 0, seq)).collect();
    for batch in events.chunks(50) {
        let answer = a.post(batch).await.unwrap();
        assert_eq!(answer.status(), 202);
        let body: Value = answer.json().await.unwrap();
        assert_eq!((body["stored"].as_u64(), body["duplicates"].as_u64()), (Some(50), Some(0)), "{body}");
    }
    let mut got = Vec::new();
    read(&mut live, events.len(), &mut got).await;
    let got: Vec<String> = got.iter().map(|m| m.data[0].clone()).collect();
    assert_eq!(got, events.iter().map(|e| e.raw().to_owned()).collect::<Vec<_>>(), "in order, byte for byte, once");
    assert!(live.next_data(Duration::from_millis(300)).await.is_none(), "nothing twice");

    // Resume from a position on the other member.
    let after = enc(&json!([{ "session": s, "epoch": 0, "seq": 149 }]));
    assert_eq!(ids(&b.replay(&s, &after).await), ids(&got[150..]));

    // The same events through the other member: one history, deduplicated.
    let answer = b.post(&events[..50]).await.unwrap();
    assert_eq!(answer.status(), 202);
    let body: Value = answer.json().await.unwrap();
    assert_eq!((body["stored"].as_u64(), body["duplicates"].as_u64()), (Some(0), Some(50)), "{body}");

    // A member that joins later holds the same history.
    let c = Member::start(&nats, "c");
    assert_eq!(c.replay(&s, "all").await, got);
}

#[tokio::test]
async fn a_command_sent_to_one_member_reaches_its_target_on_another_with_its_ack_and_outcome() {
    let nats = Nats::start();
    let a = Member::start(&nats, "a");
    let b = Member::start(&nats, "b");
    let s = session_name("tier-control");
    let target = a.target(&s, &["control.pause", "control.cancel"], 0).await;
    b.sees_claims(&s, 1).await;
    let mut sse = b.watch(&s).await;
    let mut sender = b.consumer().await;

    let pause = command("control.pause", &s, json!({}));
    sender.send_text(pause.raw()).await;
    assert!(sender.recv_json_within(Duration::from_millis(500)).await.is_none(), "routed, no refusal");
    assert!(target.saw(pause.id()), "the target on the other member has it");
    let cancel = Draft::new("control.cancel")
        .session(&s)
        .run(target.run.clone())
        .data(json!({"scope": "run", "reason": "tier"}))
        .build(&support::sender(), fresh_id(), now())
        .unwrap();
    sender.send_text(cancel.raw()).await;
    let messages = sse.collect_data(Duration::from_millis(1500)).await;
    assert_eq!(acks_for(&messages, pause.id()).len(), 1, "{messages:?}");
    let cancel_acks = acks_for(&messages, cancel.id());
    assert_eq!(cancel_acks.len(), 1);
    assert_eq!(Event::parse(&cancel_acks[0]).unwrap().ty(), "control.accepted");
    let outcome = messages
        .iter()
        .map(SseMessage::json)
        .filter(|v| v["type"] == "run.cancelled" && v["cause"] == cancel.id())
        .count();
    assert_eq!(outcome, 1, "{messages:?}");
    let seen: Vec<String> = messages.iter().map(|m| m.json()["id"].as_str().unwrap().to_owned()).collect();
    assert!(seen.contains(&pause.id().to_owned()), "subscribers see the forwarded command");

    // Kept in history, on both members, command before its ack.
    for member in [&a, &b] {
        let history = ids(&member.replay(&s, "all").await);
        let at = |id: &str| history.iter().position(|h| h == id).unwrap_or_else(|| panic!("{id} not in {history:?}"));
        let ack = Event::parse(&acks_for(&messages, pause.id())[0]).unwrap();
        assert!(at(pause.id()) < at(ack.id()));
    }
    target.stop().await;
}

#[tokio::test]
async fn targets_on_two_members_claiming_one_session_are_ambiguous_from_either() {
    let nats = Nats::start();
    let a = Member::start(&nats, "a");
    let b = Member::start(&nats, "b");
    let s = session_name("tier-ambiguous");
    let first = a.target(&s, &["control.pause"], 0).await;
    let second = b.target(&s, &["control.pause"], 1).await;
    a.sees_claims(&s, 2).await;
    b.sees_claims(&s, 2).await;
    for member in [&a, &b] {
        let mut sender = member.consumer().await;
        let cmd = command("control.pause", &s, json!({}));
        sender.send_text(cmd.raw()).await;
        let refusal = sender.recv_json().await;
        assert_eq!((refusal["code"].as_str(), refusal["cause"].as_str()), (Some("ambiguous"), Some(cmd.id())));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!first.saw(cmd.id()) && !second.saw(cmd.id()), "never guess, never broadcast");
    }
    // One leaves: its claim goes at once, tier-wide.
    second.stop().await;
    a.sees_claims(&s, 1).await;
    let mut sender = b.consumer().await;
    let cmd = command("control.pause", &s, json!({}));
    sender.send_text(cmd.raw()).await;
    assert!(sender.recv_json_within(Duration::from_millis(500)).await.is_none(), "routed, no refusal");
    assert!(first.saw(cmd.id()));
    first.stop().await;
}

/// The standard's control checks (relay conformance §3.16) with the target
/// on one member and the checker's sender and stream on another.
#[tokio::test]
async fn the_control_checks_pass_when_the_target_is_on_another_member() {
    let nats = Nats::start();
    let a = Member::start(&nats, "a");
    let b = Member::start(&nats, "b");
    let s = session_name("live-control");
    let target = a.target(&s, &["control.attention.respond", "control.cancel"], 0).await;
    b.sees_claims(&s, 1).await;
    let mut sender = b.consumer().await;

    // control-ack
    let mut sse = b.watch(&s).await;
    let ask = Draft::new("control.attention.respond")
        .session(&s)
        .subject(fresh_id())
        .capture(aep_engine::Capture::Metadata)
        .data(json!({"answer": {"option": "live-check-probe"}}))
        .build(&support::sender(), fresh_id(), now())
        .unwrap();
    sender.send_text(ask.raw()).await;
    let messages = sse.collect_data(Duration::from_millis(1500)).await;
    let acks = acks_for(&messages, ask.id());
    assert_eq!(acks.len(), 1, "{messages:?}");
    let ack: Value = serde_json::from_str(&acks[0]).unwrap();
    assert!(ack["type"] == "control.accepted" || ack["data"]["reason"] != "unsupported", "{ack}");

    // control-nack-unsupported: refused on the target's behalf, across members.
    let mut sse = b.watch(&s).await;
    let pause = command("control.pause", &s, json!({}));
    sender.send_text(pause.raw()).await;
    let refusal = sender.recv_json().await;
    assert_eq!((refusal["code"].as_str(), refusal["cause"].as_str()), (Some("unsupported"), Some(pause.id())));
    let messages = sse.collect_data(Duration::from_millis(800)).await;
    assert!(acks_for(&messages, pause.id()).is_empty());
    assert!(!target.saw(pause.id()));

    // control-dedupe: the same command twice, 120 ms apart.
    let mut sse = b.watch(&s).await;
    let answer = Draft::new("control.attention.respond")
        .session(&s)
        .subject(target.attention.clone())
        .data(json!({"answer": {"option": "allow"}}))
        .build(&support::sender(), fresh_id(), now())
        .unwrap();
    sender.send_text(answer.raw()).await;
    tokio::time::sleep(Duration::from_millis(120)).await;
    sender.send_text(answer.raw()).await;
    let messages = sse.collect_data(Duration::from_millis(1500)).await;
    let acks = acks_for(&messages, answer.id());
    assert!(!acks.is_empty(), "{messages:?}");
    assert!(acks.iter().all(|a| *a == acks[0]), "exactly one distinct ack: {acks:?}");

    // control-cancel: exactly one ack delivery, accepted, and one outcome.
    let mut sse = b.watch(&s).await;
    let cancel = Draft::new("control.cancel")
        .session(&s)
        .run(target.run.clone())
        .capture(aep_engine::Capture::Redacted)
        .data(json!({"scope": "run", "reason": "live-check"}))
        .build(&support::sender(), fresh_id(), now())
        .unwrap();
    sender.send_text(cancel.raw()).await;
    let messages = sse.collect_data(Duration::from_millis(1500)).await;
    let acks = acks_for(&messages, cancel.id());
    assert_eq!(acks.len(), 1, "{messages:?}");
    assert_eq!(Event::parse(&acks[0]).unwrap().ty(), "control.accepted");
    let cancelled = messages
        .iter()
        .map(SseMessage::json)
        .filter(|v| v["type"] == "run.cancelled" && v["run"] == target.run.as_str() && v["cause"] == cancel.id())
        .count();
    assert_eq!(cancelled, 1, "{messages:?}");

    // control-behalf-refusal: no claimant anywhere in the tier.
    let lone = session_name("live-behalf");
    let seeded = [event("session.started", &lone, 0, 0), event("run.started", &lone, 0, 1)];
    assert_eq!(a.post(&seeded).await.unwrap().status(), 202);
    let orphan = command("control.pause", &lone, json!({"reason": "live-check"}));
    sender.send_text(orphan.raw()).await;
    let refusal = sender.recv_json().await;
    assert_eq!((refusal["code"].as_str(), refusal["cause"].as_str()), (Some("no-route"), Some(orphan.id())));
    let after = enc(&json!([{ "session": lone, "epoch": 0, "seq": 0 }]));
    assert_eq!(
        ids(&b.replay(&lone, &after).await),
        vec![seeded[1].id().to_owned()],
        "refused commands are not history"
    );
    target.stop().await;
}

#[tokio::test]
async fn a_member_killed_mid_flow_loses_nothing_and_its_clients_resume_on_another() {
    let nats = Nats::start();
    let a = Member::start(&nats, "a");
    let b = Member::start(&nats, "b");
    let s = session_name("tier-kill");
    let events: Vec<Event> = (0..400).map(|seq| event("progress.status", &s, 0, seq)).collect();
    let mut sse = a.watch(&s).await;

    // The emitter posts batches of 10 to A; when A stops answering it sends
    // the batch it was on, and the rest, to B.
    let (killed_tx, killed) = tokio::sync::oneshot::channel::<()>();
    let (a_url, b_url) = (a.url("/events"), b.url("/events"));
    let to_send = events.clone();
    let emitter = tokio::spawn(async move {
        let http = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(10)).build().unwrap();
        let mut killed_tx = Some(killed_tx);
        let mut url = a_url;
        let mut accepted = Vec::new();
        for (n, batch) in to_send.chunks(10).enumerate() {
            if n == 15 {
                let _ = killed_tx.take().unwrap().send(());
            }
            let body = ndjson(batch);
            loop {
                let sent = post_ndjson(&http, &url, Some(TOKEN), body.clone()).send().await;
                match sent {
                    Ok(r) if r.status() == 202 => break,
                    _ if url != b_url => url = b_url.clone(),
                    other => panic!("B refused a batch: {:?}", other.map(|r| r.status())),
                }
            }
            accepted.extend(batch.iter().map(|e| e.id().to_owned()));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        accepted
    });
    killed.await.unwrap();
    a.process.kill9();

    // The subscriber reads what A sent before it died, then resumes on B.
    let mut got = Vec::new();
    read(&mut sse, events.len(), &mut got).await;
    let last = got.last().and_then(|m| m.id.clone()).expect("A delivered some events before it died");
    assert!(got.len() < events.len(), "A died mid-flow");
    let mut resumed = b.sse(&format!("filter={}", enc(&json!({ "session": s }))), Some(&last)).await;
    read(&mut resumed, events.len(), &mut got).await;
    assert!(resumed.next_data(Duration::from_millis(300)).await.is_none(), "nothing twice");
    let accepted = emitter.await.unwrap();
    let got: Vec<String> = got.iter().map(|m| m.json()["id"].as_str().unwrap().to_owned()).collect();
    let all: Vec<String> = events.iter().map(|e| e.id().to_owned()).collect();
    assert_eq!(accepted, all, "every batch was accepted by A or B");
    let seqs: Vec<Option<usize>> = got.iter().map(|id| all.iter().position(|a| a == id)).collect();
    assert_eq!(got, all, "no gap, no duplicate, in order: received seqs {seqs:?} (resumed after {last})");
    assert_eq!(ids(&b.replay(&s, "all").await), all, "nothing accepted was lost");
}

#[tokio::test]
async fn a_member_that_loses_nats_refuses_writes_and_recovers_when_it_returns() {
    let mut nats = Nats::start();
    let a = Member::start(&nats, "a");
    let s = session_name("tier-outage");
    let before = event("progress.status", &s, 0, 0);
    assert_eq!(a.post(std::slice::from_ref(&before)).await.unwrap().status(), 202);

    nats.stop();
    let during = event("progress.status", &s, 0, 1);
    let started = Instant::now();
    let answer = a.post(std::slice::from_ref(&during)).await.unwrap();
    assert_eq!(answer.status(), 503, "a write the member cannot store is refused");
    assert!(started.elapsed() < Duration::from_secs(5), "promptly");
    let body: Value = answer.json().await.unwrap();
    assert!(body["detail"].as_str().is_some_and(|d| !d.is_empty()), "{body}");
    let health = reqwest::get(a.url("/healthz")).await.unwrap();
    assert_eq!(health.status(), 200, "reads still answer");

    nats.launch();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = a.post(std::slice::from_ref(&during)).await.unwrap();
        if answer.status() == 202 {
            break;
        }
        assert_eq!(answer.status(), 503);
        assert!(Instant::now() < deadline, "writes recover once NATS is back");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let want = vec![before.id().to_owned(), during.id().to_owned()];
    let deadline = Instant::now() + Duration::from_secs(20);
    while ids(&a.replay(&s, "all").await) != want {
        assert!(Instant::now() < deadline, "the member admits the stream again");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let b = Member::start(&nats, "b");
    assert_eq!(ids(&b.replay(&s, "all").await), want, "the history survived the outage");
}
