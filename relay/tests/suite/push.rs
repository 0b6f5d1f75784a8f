//! Web Push from the relay, against a fake push service on loopback (HTTPS,
//! trusted through `--push-ca`) that checks what a real one would: the
//! VAPID JWT and the `aes128gcm` body are verified and decrypted by
//! Mozilla's Python implementations (`py-vapid`, `http-ece`, installed in
//! `.venv` by `bash scripts/setup`), never by the relay's own code.
//! Agents are real WebSocket peers; answers go through `POST /push/answer`.

use crate::support;
use crate::support::push_service;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use aep_engine::protocol::ids::Draft;
use aep_engine::{Event, Severity};
use aep_relay::auth::{token_hash, Principal, Roles, Token};
use aep_relay::Config;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use push_service::{Device, PushService, Received};
use serde_json::{json, Value};
use support::target::TestTarget;
use support::*;

const ALICE: &str = "alice-push-token";
const VERA: &str = "vera-push-token";
const BOB: &str = "bob-push-token";

// ---------------------------------------------------------------- the independent checker

fn python() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let python = repo.join(".venv/bin/python");
    let ok = Process::new(&python).args(["-c", "import http_ece, py_vapid"]).output().is_ok_and(|o| o.status.success());
    assert!(ok, "{} cannot import http_ece and py_vapid: run `bash scripts/setup`", python.display());
    python
}

/// Checks pushes as a push service and the browser would, with Mozilla's
/// implementations: the checker's verdict on each.
fn check(pushes: &[Received], device: &Device, relay_key: &str, audience: &str) -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/push_peer.py");
    let mut child = Process::new(python())
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for push in pushes {
        let line = json!({
            "authorization": push.headers.get("authorization").cloned().unwrap_or_default(),
            "expected_key": relay_key,
            "audience": audience,
            "body": URL_SAFE_NO_PAD.encode(&push.body),
            "private_key": URL_SAFE_NO_PAD.encode(device.secret.to_bytes()),
            "auth": URL_SAFE_NO_PAD.encode(device.auth),
        });
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let out: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    assert!(child.wait().unwrap().success());
    assert_eq!(out.len(), pushes.len());
    out
}

/// The decrypted payload of each push, once the checker accepted it.
fn verify(pushes: &[Received], device: &Device, relay_key: &str, audience: &str) -> Vec<Value> {
    check(pushes, device, relay_key, audience)
        .into_iter()
        .map(|v| {
            assert_eq!(v["ok"], true, "the independent checker refused a push: {v}");
            assert!(v["claims"]["sub"].as_str().unwrap().starts_with("mailto:"));
            v["payload"].clone()
        })
        .collect()
}

// ---------------------------------------------------------------- the relay

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aep-push-{name}-{}", fresh_id().to_lowercase()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A relay with the owner token, `alice` (operator) and `vera` (viewer),
/// trusting the push service.
async fn relay(service: &PushService, tweak: impl FnOnce(&mut Config)) -> TestRelay {
    let ca = service.ca_file.clone();
    TestRelay::start_with(Posture::Token, move |c| {
        let operator = Roles { agent: false, operator: true, viewer: true };
        let viewer = Roles { viewer: true, ..Roles::default() };
        c.principals.push((Token::new(ALICE).unwrap(), Principal::named("alice", operator)));
        c.principals.push((Token::new(VERA).unwrap(), Principal::named("vera", viewer)));
        c.push.extra_roots = vec![ca];
        c.push.retry_base = Duration::from_millis(100);
        tweak(c);
    })
    .await
}

/// A relay the checks reach: in this process, or the binary.
trait Endpoint {
    fn at(&self, path: &str) -> String;
}

impl Endpoint for TestRelay {
    fn at(&self, path: &str) -> String {
        self.url(path)
    }
}

impl Endpoint for RelayProcess {
    fn at(&self, path: &str) -> String {
        format!("{}{path}", self.base())
    }
}

fn http() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn subscribe(t: &impl Endpoint, token: &str, device: &Device) -> reqwest::Response {
    http().post(t.at("/push/subscriptions")).bearer_auth(token).json(&device.subscription()).send().await.unwrap()
}

/// `token`'s principal's devices, as `GET /push/subscriptions` lists them.
async fn listed(t: &TestRelay, token: &str) -> Value {
    t.http.get(t.url("/push/subscriptions")).bearer_auth(token).send().await.unwrap().json().await.unwrap()
}

async fn relay_key(t: &impl Endpoint) -> String {
    let v: Value = http().get(t.at("/push/key")).bearer_auth(ALICE).send().await.unwrap().json().await.unwrap();
    v["publicKey"].as_str().unwrap().to_owned()
}

/// An attention request answerable through control, `id` given.
fn request_event(session: &str, id: &str, seq: u64, severity: Severity, expires_in: Duration) -> Event {
    asking(severity, expires_in).session(session).seq(seq).build(&emitter(session), id.to_owned(), now()).unwrap()
}

/// An attention request answerable through control, to be emitted.
fn asking(severity: Severity, expires_in: Duration) -> Draft {
    let expires = aep_engine::UnixMs(now().0 + expires_in.as_millis() as u64).to_rfc3339();
    Draft::new("attention.requested").severity(severity).data(json!({
        "kind": "permission",
        "prompt": "Allow `rm -rf build/`?",
        "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}],
        "respond_via": ["control"],
        "expires_at": expires,
    }))
}

fn settled(session: &str, request: &str, seq: u64) -> Event {
    Draft::new("attention.resolved")
        .session(session)
        .seq(seq)
        .subject(request)
        .data(json!({"outcome": "answered"}))
        .build(&emitter(session), fresh_id(), now())
        .unwrap()
}

async fn answer(t: &impl Endpoint, body: Value) -> (u16, Value) {
    let r = http().post(t.at("/push/answer")).json(&body).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// Commands the target received.
fn commands(target: &TestTarget) -> Vec<Value> {
    target
        .frames()
        .iter()
        .filter_map(|f| serde_json::from_str::<Value>(f).ok())
        .filter(|v| v["type"] == "control.attention.respond")
        .collect()
}

// ---------------------------------------------------------------- the checks

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_buzzes_each_operator_device_and_is_answered_from_the_notification() {
    let service = PushService::start().await;
    let t = relay(&service, |_| {}).await;
    let key = relay_key(&t).await;
    assert_eq!(URL_SAFE_NO_PAD.decode(&key).unwrap().len(), 65, "an uncompressed P-256 point");

    let (owner, alice, vera) = (service.device("owner"), service.device("alice"), service.device("vera"));
    let r = t.post("/push/subscriptions").json(&owner.subscription()).send().await.unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(subscribe(&t, ALICE, &alice).await.status(), 201);
    let r = subscribe(&t, VERA, &vera).await;
    assert_eq!(r.status(), 201, "a viewer may register");
    assert_eq!(r.json::<Value>().await.unwrap()["requests"], false, "and is told it gets no requests");
    let mine = listed(&t, ALICE).await;
    assert_eq!(mine["subscriptions"], json!([{"endpoint": alice.endpoint}]), "each lists its own");

    let s = session_name("push");
    let target = TestTarget::start(&t, &s, &["control.attention.respond"]).await;
    let request = request_event(&s, &target.attention, 50, Severity::Critical, Duration::from_secs(300));
    assert_eq!(t.post_one(&request).await.status(), 202);

    let to_owner = service.wait_for(&owner, 1, PROMPT).await;
    let to_alice = service.wait_for(&alice, 1, PROMPT).await;
    assert_eq!((to_owner.len(), to_alice.len()), (1, 1));
    for push in [&to_owner[0], &to_alice[0]] {
        let ttl: u64 = push.headers["ttl"].parse().unwrap();
        assert!((250..=300).contains(&ttl), "TTL from the request's expiry: {ttl}");
        assert_eq!(push.headers["urgency"], "high", "a critical request");
        assert_eq!(push.headers["content-encoding"], "aes128gcm");
        assert_eq!(push.headers["topic"].len(), 32);
        assert!(push.body.len() <= 4096);
    }
    assert_eq!(to_owner[0].headers["topic"], to_alice[0].headers["topic"]);
    let payload = verify(&to_alice, &alice, &key, &service.origin()).remove(0);
    assert_eq!(payload["kind"], "request");
    assert_eq!(payload["request"], target.attention.as_str());
    assert_eq!(payload["session"], s.as_str());
    assert_eq!(payload["prompt"], "Allow `rm -rf build/`?");
    assert_eq!(
        payload["options"],
        json!([
            {"id": "allow", "label": "Allow", "meaning": "grants"},
            {"id": "deny", "label": "Deny", "meaning": "refuses"}
        ])
    );
    assert!(payload["url"].as_str().unwrap().contains(&target.attention));
    let text = payload.to_string();
    assert!(!text.contains(TOKEN) && !text.contains(ALICE), "never a token");
    verify(&to_owner, &owner, &key, &service.origin());
    // The checker is not lenient: another device's keys, another
    // audience or another relay's key are each refused.
    assert_eq!(check(&to_owner, &alice, &key, &service.origin())[0]["ok"], false);
    assert_eq!(check(&to_owner, &owner, &key, "https://localhost:1")[0]["ok"], false);
    assert_eq!(check(&to_owner, &owner, &alice.public_key(), &service.origin())[0]["ok"], false);

    // The viewer's device got nothing.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(service.to(&vera).is_empty(), "a viewer cannot answer: no push");

    // Alice answers from the notification, with no bearer token.
    let capability = payload["capability"].as_str().unwrap().to_owned();
    let (status, ack) = answer(&t, json!({"capability": capability, "option": "allow"})).await;
    assert_eq!((status, ack["ack"].as_str()), (200, Some("accepted")), "{ack}");
    let sent = commands(&target);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["agent"], "alice", "under the principal's name");
    assert_eq!(sent[0]["subject"], target.attention.as_str());
    assert_eq!(sent[0]["data"]["answer"]["option"], "allow");
    assert_eq!(sent[0]["id"], ack["command"]);

    // The capability answers once.
    let (status, refusal) = answer(&t, json!({"capability": capability, "option": "allow"})).await;
    assert_eq!((status, refusal["error"].as_str()), (409, Some("capability-used")));
    assert_eq!(commands(&target).len(), 1, "a replay sends nothing");

    // Settled: a close push under the same topic takes the notification away.
    assert_eq!(t.post_one(&settled(&s, &target.attention, 51)).await.status(), 202);
    let to_alice = service.wait_for(&alice, 2, PROMPT).await;
    assert_eq!(to_alice.len(), 2);
    assert_eq!(to_alice[1].headers["topic"], to_alice[0].headers["topic"]);
    let closed = verify(&to_alice[1..], &alice, &key, &service.origin()).remove(0);
    assert_eq!(closed, json!({"kind": "closed", "request": target.attention, "session": s}));
    assert_eq!(service.wait_for(&owner, 2, PROMPT).await.len(), 2);

    // Removing a device stops its pushes.
    let gone = json!({"endpoint": alice.endpoint});
    let r = t.http.delete(t.url("/push/subscriptions")).bearer_auth(ALICE).json(&gone).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["subscriptions"], json!([]));
    target.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_subscriptions_are_refused_with_a_reason() {
    let service = PushService::start().await;
    let t = relay(&service, |_| {}).await;
    let good = service.device("x").subscription();
    let mut cases = Vec::new();
    let mut http = good.clone();
    http["endpoint"] = json!("http://localhost/push/x");
    cases.push((http, "https"));
    let mut short_key = good.clone();
    short_key["keys"]["p256dh"] = json!(URL_SAFE_NO_PAD.encode([4u8; 33]));
    cases.push((short_key, "p256dh"));
    let mut short_auth = good.clone();
    short_auth["keys"]["auth"] = json!(URL_SAFE_NO_PAD.encode([1u8; 8]));
    cases.push((short_auth, "auth"));
    cases.push((json!({"endpoint": "https://localhost/x"}), "keys"));
    for (body, names) in cases {
        let r = t.post("/push/subscriptions").json(&body).send().await.unwrap();
        assert_eq!(r.status(), 400);
        let v: Value = r.json().await.unwrap();
        assert!(v["detail"].as_str().unwrap().contains(names), "{v}");
    }
    let listed: Value = t.get("/push/subscriptions").send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["subscriptions"], json!([]), "nothing kept");
    let r = t.http.get(t.url("/push/key")).send().await.unwrap();
    assert_eq!(r.status(), 401, "the key is for principals");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capability_abuse_is_refused_and_sends_nothing() {
    let service = PushService::start().await;
    let dir = scratch("abuse");
    let credentials = dir.join("credentials");
    let line = |name: &str, token: &str| format!("{name} operator,viewer {}\n", token_hash(token));
    std::fs::write(&credentials, line("bob", BOB)).unwrap();
    let file = credentials.clone();
    let t = relay(&service, move |c| {
        c.credentials_file = Some(file);
        c.push.capability_ttl = Duration::from_secs(6);
        c.push.burst = 10;
    })
    .await;
    let (alice, bob) = (service.device("alice"), service.device("bob"));
    assert_eq!(subscribe(&t, ALICE, &alice).await.status(), 201);
    assert_eq!(subscribe(&t, BOB, &bob).await.status(), 201);

    let s = session_name("abuse");
    let target = TestTarget::start(&t, &s, &["control.attention.respond"]).await;
    let (a, b, c) = (target.attention.clone(), fresh_id(), fresh_id());
    let requests: Vec<Event> = [&a, &b, &c]
        .iter()
        .enumerate()
        .map(|(i, id)| request_event(&s, id, 50 + i as u64, Severity::Warning, Duration::from_secs(600)))
        .collect();
    assert_eq!(t.post_events(&requests).await.status(), 202);
    let key = relay_key(&t).await;
    let to_alice = verify(&service.wait_for(&alice, 3, PROMPT).await, &alice, &key, &service.origin());
    let to_bob = verify(&service.wait_for(&bob, 3, PROMPT).await, &bob, &key, &service.origin());
    assert_eq!((to_alice.len(), to_bob.len()), (3, 3));
    let cap = |pushes: &[Value], id: &str| {
        let p = pushes.iter().find(|p| p["request"] == id).unwrap();
        assert_eq!(p["severity"], "warning");
        p["capability"].as_str().unwrap().to_owned()
    };
    let (alice_a, alice_b, alice_c) = (cap(&to_alice, &a), cap(&to_alice, &b), cap(&to_alice, &c));
    let bob_a = cap(&to_bob, &a);

    // Tampered: one character of the signed grant changed.
    let mut forged = alice_a.clone().into_bytes();
    forged[5] = if forged[5] == b'A' { b'B' } else { b'A' };
    let (status, v) = answer(&t, json!({"capability": String::from_utf8(forged).unwrap(), "option": "allow"})).await;
    assert_eq!((status, v["error"].as_str()), (403, Some("capability-invalid")), "{v}");

    // Another request's capability, presented for this one.
    let (status, v) = answer(&t, json!({"capability": alice_b, "option": "allow", "request": a})).await;
    assert_eq!((status, v["error"].as_str()), (403, Some("capability-foreign")), "{v}");

    // An option the request did not offer.
    let (status, v) = answer(&t, json!({"capability": alice_a, "option": "sudo"})).await;
    assert_eq!((status, v["error"].as_str()), (400, Some("option-not-offered")), "{v}");

    // A settled request.
    assert_eq!(t.post_one(&settled(&s, &b, 60)).await.status(), 202);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, v) = answer(&t, json!({"capability": alice_b, "option": "allow"})).await;
    assert_eq!((status, v["error"].as_str()), (409, Some("request-settled")), "{v}");

    // A revoked principal: bob leaves the credentials file.
    std::fs::write(&credentials, "# nobody\n").unwrap();
    let deadline = Instant::now() + PROMPT;
    while t.http.get(t.url("/push/subscriptions")).bearer_auth(BOB).send().await.unwrap().status() != 401 {
        assert!(Instant::now() < deadline, "the credentials file was not reloaded");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, v) = answer(&t, json!({"capability": bob_a, "option": "allow"})).await;
    assert_eq!(status, 403);
    assert_eq!(v["error"], "principal-revoked", "{v}");
    // ... and its devices get no more pushes.
    let d = fresh_id();
    assert_eq!(t.post_one(&request_event(&s, &d, 61, Severity::Info, Duration::from_secs(600))).await.status(), 202);
    let to_alice = service.wait_for(&alice, 5, PROMPT).await;
    assert_eq!(to_alice.len(), 5, "alice still gets the new request (after three and the close of b)");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let bob_after = service.to(&bob);
    assert!(bob_after.len() <= 4, "at most the close of b reached bob before revocation");
    let bob_saw = verify(&bob_after, &bob, &key, &service.origin());
    assert!(bob_saw.iter().all(|p| p["request"] != d.as_str()), "revoked: no push");

    // Expired: the capability outlived its time.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let (status, v) = answer(&t, json!({"capability": alice_c, "option": "allow"})).await;
    assert_eq!((status, v["error"].as_str()), (403, Some("capability-expired")), "{v}");

    assert!(commands(&target).is_empty(), "no refused capability sent a command: {:?}", commands(&target));
    target.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_agent_cannot_take_or_refuses_says_so() {
    let service = PushService::start().await;
    let t = relay(&service, |_| {}).await;
    let alice = service.device("alice");
    assert_eq!(subscribe(&t, ALICE, &alice).await.status(), 201);
    let s = session_name("unrouted");
    let request = request_event(&s, &fresh_id(), 100, Severity::Info, Duration::from_secs(600));
    assert_eq!(t.post_one(&request).await.status(), 202);
    let pushes = service.wait_for(&alice, 1, PROMPT).await;
    let payload = verify(&pushes, &alice, &relay_key(&t).await, &service.origin()).remove(0);
    let body = json!({"capability": payload["capability"], "option": "deny"});
    // No agent claims the session: nothing sent, the capability kept.
    for _ in 0..2 {
        let (status, v) = answer(&t, body.clone()).await;
        assert_eq!((status, v["error"].as_str()), (503, Some("not-routed")), "{v}");
        assert!(v["detail"].as_str().unwrap().contains("no-route"), "{v}");
    }
    // An agent that does not know this request refuses it, with its reason.
    let target = TestTarget::start(&t, &s, &["control.attention.respond"]).await;
    let deadline = Instant::now() + PROMPT;
    let (status, v) = loop {
        let (status, v) = answer(&t, body.clone()).await;
        if status != 503 || Instant::now() > deadline {
            break (status, v);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!((status, v["ack"].as_str(), v["reason"].as_str()), (200, Some("rejected"), Some("invalid")), "{v}");
    assert_eq!(commands(&target).len(), 1);
    let (status, v) = answer(&t, body).await;
    assert_eq!((status, v["error"].as_str()), (409, Some("capability-used")), "{v}");
    target.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gone_subscription_is_removed_and_a_throttled_push_is_retried() {
    let service = PushService::start().await;
    let t = relay(&service, |_| {}).await;
    let (gone, busy) = (service.device("gone"), service.device("busy"));
    service.answer(&gone, &[(410, None)]);
    service.answer(&busy, &[(429, Some(1)), (503, None)]);
    assert_eq!(t.post("/push/subscriptions").json(&gone.subscription()).send().await.unwrap().status(), 201);
    assert_eq!(t.post("/push/subscriptions").json(&busy.subscription()).send().await.unwrap().status(), 201);

    let s = session_name("retry");
    let first = request_event(&s, &fresh_id(), 0, Severity::Info, Duration::from_secs(600));
    assert_eq!(t.post_one(&first).await.status(), 202);
    let attempts = service.wait_for(&busy, 3, PROMPT).await;
    assert_eq!(attempts.len(), 3, "429, then 503, then delivered");
    assert!(attempts[1].at.duration_since(attempts[0].at) >= Duration::from_millis(950), "Retry-After: 1 honoured");
    assert_eq!(attempts[0].body.len(), attempts[2].body.len());
    assert_eq!(attempts[0].headers["urgency"], "normal");

    assert_eq!(service.wait_for(&gone, 1, PROMPT).await.len(), 1);
    let deadline = Instant::now() + PROMPT;
    loop {
        let listed = listed(&t, TOKEN).await;
        let endpoints: Vec<&str> =
            listed["subscriptions"].as_array().unwrap().iter().map(|d| d["endpoint"].as_str().unwrap()).collect();
        if endpoints == [busy.endpoint.as_str()] {
            break;
        }
        assert!(Instant::now() < deadline, "410 removes the subscription: {endpoints:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The removed device gets nothing more.
    let second = request_event(&s, &fresh_id(), 1, Severity::Info, Duration::from_secs(600));
    assert_eq!(t.post_one(&second).await.status(), 202);
    assert_eq!(service.wait_for(&busy, 4, PROMPT).await.len(), 4);
    assert_eq!(service.to(&gone).len(), 1);

    // An operator reads what the push task did on /healthz (counted once the
    // service's answer is back, a moment after the service saw the push).
    let counted =
        |h: &Value| (h["push"]["sent"].as_u64(), h["push"]["retried"].as_u64(), h["push"]["removed"].as_u64());
    let deadline = Instant::now() + PROMPT;
    let health = loop {
        let health: Value = t.get("/healthz").send().await.unwrap().json().await.unwrap();
        if counted(&health).0 >= Some(2) || Instant::now() >= deadline {
            break health;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(counted(&health), (Some(2), Some(2), Some(1)), "{health}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_requests_collapses_into_a_summary() {
    let service = PushService::start().await;
    let t = relay(&service, |c| c.push.burst_window = Duration::from_secs(1)).await;
    let (one, two) = (service.device("one"), service.device("two"));
    assert_eq!(t.post("/push/subscriptions").json(&one.subscription()).send().await.unwrap().status(), 201);
    assert_eq!(subscribe(&t, ALICE, &two).await.status(), 201);
    let s = session_name("burst");
    let burst: Vec<Event> =
        (0..50).map(|i| request_event(&s, &fresh_id(), i, Severity::Info, Duration::from_secs(600))).collect();
    assert_eq!(t.post_events(&burst).await.status(), 202);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let key = relay_key(&t).await;
    for device in [&one, &two] {
        let got = service.to(device);
        assert!((2..=5).contains(&got.len()), "a handful of pushes, not 50: {}", got.len());
        let payloads = verify(&got, device, &key, &service.origin());
        let kinds: Vec<&str> = payloads.iter().map(|p| p["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["request", "request", "request", "summary"]);
        assert_eq!(payloads[3]["waiting"], 50);
        assert_eq!(payloads[3]["prompt"], "50 requests are waiting");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_and_devices_outlive_a_restart() {
    let service = PushService::start().await;
    let dir = scratch("data");
    let data = dir.clone();
    let t = relay(&service, move |c| c.data_dir = Some(data)).await;
    let key = relay_key(&t).await;
    let device = service.device("kept");
    assert_eq!(subscribe(&t, ALICE, &device).await.status(), 201);
    t.relay.shutdown().await;
    use std::os::unix::fs::PermissionsExt;
    for file in ["vapid.pem", "push-secret", "push-subscriptions.json"] {
        let mode = std::fs::metadata(dir.join(file)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{file} is private");
    }
    let data = dir.clone();
    let t = relay(&service, move |c| c.data_dir = Some(data)).await;
    assert_eq!(relay_key(&t).await, key);
    assert_eq!(listed(&t, ALICE).await["subscriptions"], json!([{"endpoint": device.endpoint}]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_says_where_its_vapid_key_comes_from() {
    let key = rcgen::KeyPair::generate().unwrap();
    let file = scratch("vapid").join("vapid.pem");
    std::fs::write(&file, key.serialize_pem()).unwrap();
    let relay = RelayProcess::start(&["--token", TOKEN, "--vapid-key", file.to_str().unwrap()]);
    assert!(relay.boot.contains(&format!("Web Push on: VAPID key from {}", file.display())), "{}", relay.boot);
    let got: Value = reqwest::Client::new()
        .get(format!("{}/push/key", relay.base()))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got["publicKey"], URL_SAFE_NO_PAD.encode(key.public_key_raw()), "the key given is the key used");

    let fresh = RelayProcess::start(&["--token", TOKEN]);
    assert!(fresh.boot.contains("VAPID key made for this run only"), "{}", fresh.boot);
    let open = RelayProcess::start(&[]);
    assert!(open.boot.contains("Web Push off"), "{}", open.boot);

    let refused = Process::new(env!("CARGO_BIN_EXE_aep-relay"))
        .args(["--listen", "127.0.0.1:0", "--token", TOKEN, "--push-contact", "relay-admin"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--push-contact"), "a clear error");
}

// ---------------------------------------------------------------- the binary: repeats and restarts

const BUILDER: &str = "builder-push-token";

/// The relay binary keeping its history in `dir`, trusting `service`:
/// `alice` answers, `builder` is an agent.
fn binary(service: &PushService, dir: &Path) -> RelayProcess {
    let credentials = dir.join("credentials");
    let line = |name: &str, roles: &str, token: &str| format!("{name} {roles} {}\n", token_hash(token));
    std::fs::write(&credentials, line("alice", "operator,viewer", ALICE) + &line("builder", "agent", BUILDER)).unwrap();
    let data = dir.join("data");
    let relay = RelayProcess::start(&[
        "--data-dir",
        data.to_str().unwrap(),
        "--credentials",
        credentials.to_str().unwrap(),
        "--push-ca",
        service.ca_file.to_str().unwrap(),
    ]);
    assert!(relay.boot.contains("Web Push on"), "{}", relay.boot);
    relay
}

/// The capability a device's push for `request` carries.
fn capability_for(payloads: &[Value], request: &Event) -> String {
    let push = payloads.iter().find(|p| p["kind"] == "request" && p["request"] == request.id()).expect("its push");
    push["capability"].as_str().unwrap().to_owned()
}

/// What each push a device received was: `request`, `closed`, `summary`.
fn kinds(payloads: &[Value]) -> Vec<String> {
    payloads.iter().map(|p| p["kind"].as_str().unwrap().to_owned()).collect()
}

/// The audit's records for `session`: (kind, event id), in chain order.
async fn trail(relay: &RelayProcess, session: &str) -> Vec<(String, String)> {
    let url = relay.at(&format!("/audit?session={session}"));
    let body = http().get(url).bearer_auth(ALICE).send().await.unwrap().text().await.unwrap();
    body.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("event").is_some())
        .map(|v| (v["kind"].as_str().unwrap().to_owned(), v["event"]["id"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// An agent's request is answered from a notification and settled; then
/// the agent redelivers everything it sent, byte for byte (AEP-0001 §7.4
/// allows it). Consumers get the redelivery (every hop must pass it on),
/// but nothing else changes: no device buzzes, the request stays settled
/// for every notification, and the audit records nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivered_request_after_its_answer_changes_nothing() {
    let service = PushService::start().await;
    let dir = scratch("redelivered");
    let relay = binary(&service, &dir);
    let (phone, laptop) = (service.device("phone"), service.device("laptop"));
    for device in [&phone, &laptop] {
        assert_eq!(subscribe(&relay, ALICE, device).await.status(), 201);
    }
    let key = relay_key(&relay).await;
    let s = session_name("redelivered");
    let agent = support::agent::Agent::connect(&relay.addr, BUILDER, "builder", &s).await;
    agent.emit(Draft::new("session.started"));
    let request = agent.emit(asking(Severity::Warning, Duration::from_secs(600)));
    let on_phone = verify(&service.wait_for(&phone, 1, PROMPT).await, &phone, &key, &service.origin());
    let on_laptop = verify(&service.wait_for(&laptop, 1, PROMPT).await, &laptop, &key, &service.origin());

    let body = json!({"capability": capability_for(&on_phone, &request), "option": "allow"});
    let (status, ack) = answer(&relay, body).await;
    assert_eq!((status, ack["ack"].as_str()), (200, Some("accepted")), "{ack}");
    agent.until_emitted("attention.resolved", request.id()).await;
    for device in [&phone, &laptop] {
        assert_eq!(service.wait_for(device, 2, PROMPT).await.len(), 2, "the request, then its close");
    }
    let deadline = Instant::now() + PROMPT;
    let before = loop {
        let before = trail(&relay, &s).await;
        if before.len() >= 5 {
            break before;
        }
        assert!(Instant::now() < deadline, "the audit never recorded the answer: {before:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let kept: Vec<&str> = before.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(kept, ["command", "request", "ack", "outcome", "outcome"]);

    let mut watcher = Ws::connect(&format!("ws://{}/socket?access_token={ALICE}", relay.addr)).await.unwrap();
    watcher.send(&json!({"type": "hello", "versions": ["0.1"], "role": "consumer"})).await;
    assert_eq!(watcher.recv_json().await["type"], "hello");
    let subscribed = watcher.subscribe(json!({"type": "subscribe", "id": "w", "filter": {"session": s}})).await;
    assert_eq!(subscribed["type"], "subscribed", "{subscribed}");

    let sent = agent.sent();
    for event in &sent {
        agent.redeliver(event);
    }
    let seen = watcher.collect(Duration::from_millis(1500)).await;
    let redelivered: Vec<&str> =
        seen.iter().filter(|v| v.get("aep").is_some()).filter_map(|v| v["id"].as_str()).collect();
    let ids: Vec<&str> = sent.iter().map(|e| e.id()).collect();
    assert_eq!(redelivered, ids, "live fan-out passes a redelivery on, as received");

    for device in [&phone, &laptop] {
        let pushes = verify(&service.to(device), device, &key, &service.origin());
        assert_eq!(kinds(&pushes), ["request", "closed"], "a redelivery buzzes nobody");
    }
    let body = json!({"capability": capability_for(&on_laptop, &request), "option": "deny"});
    let (status, refusal) = answer(&relay, body).await;
    assert_eq!((status, refusal["error"].as_str()), (409, Some("request-settled")), "{refusal}");
    assert_eq!(agent.commands().len(), 1, "one answer reached the agent");
    assert_eq!(trail(&relay, &s).await, before, "the audit records nothing more");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Notifications sent before a restart answer exactly while their request
/// is open: the relay restarts on the same data directory; the request
/// settled before it stays settled, the open one is answered from the
/// phone once its agent is back, and is settled for the laptop after. A
/// restart pushes nothing again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_from_before_a_restart_answers_while_its_request_is_open() {
    let service = PushService::start().await;
    let dir = scratch("restarted");
    let relay = binary(&service, &dir);
    let (phone, laptop) = (service.device("phone"), service.device("laptop"));
    for device in [&phone, &laptop] {
        assert_eq!(subscribe(&relay, ALICE, device).await.status(), 201);
    }
    let key = relay_key(&relay).await;
    let s = session_name("restarted");
    let agent = support::agent::Agent::connect(&relay.addr, BUILDER, "builder", &s).await;
    agent.emit(Draft::new("session.started"));
    let open = agent.emit(asking(Severity::Warning, Duration::from_secs(600)));
    let withdrawn = agent.emit(asking(Severity::Info, Duration::from_secs(600)));
    for device in [&phone, &laptop] {
        assert_eq!(service.wait_for(device, 2, PROMPT).await.len(), 2, "one push per request");
    }
    agent.emit(Draft::new("attention.resolved").subject(withdrawn.id()).data(json!({"outcome": "withdrawn"})));
    for device in [&phone, &laptop] {
        assert_eq!(service.wait_for(device, 3, PROMPT).await.len(), 3, "the withdrawn one's close");
    }
    let on_phone = verify(&service.to(&phone), &phone, &key, &service.origin());
    let on_laptop = verify(&service.to(&laptop), &laptop, &key, &service.origin());
    agent.emit_durably(&relay.base(), BUILDER, Draft::new("progress.status").data(json!({"message": "waiting"}))).await;

    relay.kill9();
    let relay = binary(&service, &dir);
    let agent = agent.reconnect(&relay.addr, BUILDER).await;
    agent.emit(Draft::new("progress.status").data(json!({"message": "back"})));

    let body = json!({"capability": capability_for(&on_phone, &withdrawn), "option": "allow"});
    let (status, refusal) = answer(&relay, body).await;
    assert_eq!((status, refusal["error"].as_str()), (409, Some("request-settled")), "{refusal}");

    // Once the agent's session is routable again, the phone answers.
    let body = json!({"capability": capability_for(&on_phone, &open), "option": "allow"});
    let deadline = Instant::now() + PROMPT;
    let (status, ack) = loop {
        let (status, ack) = answer(&relay, body.clone()).await;
        if status != 503 || Instant::now() > deadline {
            break (status, ack);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!((status, ack["ack"].as_str()), (200, Some("accepted")), "{ack}");
    let commands = agent.commands();
    assert_eq!(commands.len(), 1);
    assert_eq!((commands[0].subject(), commands[0].agent()), (Some(open.id()), "alice"));

    // Settled now: the close goes out, and the laptop's notification no
    // longer answers.
    agent.until_emitted("attention.resolved", open.id()).await;
    for device in [&phone, &laptop] {
        let pushes = verify(&service.wait_for(device, 4, PROMPT).await, device, &key, &service.origin());
        assert_eq!(kinds(&pushes), ["request", "request", "closed", "closed"], "nothing pushed again on restart");
        assert_eq!(pushes[3]["request"], open.id());
    }
    let body = json!({"capability": capability_for(&on_laptop, &open), "option": "deny"});
    let (status, refusal) = answer(&relay, body).await;
    assert_eq!((status, refusal["error"].as_str()), (409, Some("request-settled")), "{refusal}");
    assert_eq!(agent.commands().len(), 1, "one answer reached the agent");
    let _ = std::fs::remove_dir_all(&dir);
}
