//! Web Push cost on loopback, against a push service on loopback (HTTPS).
//! Run in release:
//!
//! ```sh
//! cargo run --release -p aep-relay --example bench_push
//! ```
//!
//! * push delay: from POSTing an `attention.requested` to the relay until
//!   the push service has each push (ingest, encryption, VAPID and the
//!   TLS request included), with 1 and 1 000 registered devices, burst
//!   collapse off so every push is sent;
//! * fan-out with pushes on and off, in the same run: events per second
//!   from the first POST until a WebSocket subscriber has them all, one in
//!   50 an answerable request, without and with 1 000 devices registered
//!   (burst collapse as configured by default).
//!
//! The push service runs on a low-priority thread of its own (in use it is
//! another host); the relay's push thread runs below the relay's others.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use aep_engine::protocol::ids::{Draft, Identity};
use aep_engine::{Severity, UnixMs};
use aep_relay::auth::{Principal, Roles, Token};
use aep_relay::{serve, Config, Relay};
use serde_json::json;

mod common;
#[path = "../tests/suite/support/push_service.rs"]
mod push_service;
use common::{count_events, id, now, percentile, post_ndjson, subscriber, TOKEN};
use push_service::PushService;

const DEVICES: [usize; 2] = [1, 1_000];
const EVENTS: u64 = 50_000;
const BATCH: u64 = 1_000;
/// One event in this many is an answerable request.
const REQUEST_EVERY: u64 = 50;

/// The operators whose devices are registered: one device each (a
/// principal may register at most 32).
fn operator(n: usize) -> (String, String) {
    (format!("op-{n}"), format!("bench-operator-token-{n}"))
}

async fn start(service: &PushService, collapse: bool) -> Relay {
    let mut config = Config { token: Token::new(TOKEN), ..Config::default() };
    let roles = Roles { agent: false, operator: true, viewer: true };
    for n in 0..DEVICES[1] {
        let (name, token) = operator(n);
        config.principals.push((Token::new(token).unwrap(), Principal::named(&name, roles)));
    }
    config.push.extra_roots = vec![service.ca_file.clone()];
    if !collapse {
        config.push.burst = usize::MAX;
    }
    serve(config, tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()).await.unwrap()
}

async fn register(http: &reqwest::Client, relay: &Relay, service: &PushService, devices: usize) {
    for n in 0..devices {
        let (name, token) = operator(n);
        let device = service.device(&name);
        let r = http
            .post(format!("{}/push/subscriptions", relay.base_url()))
            .bearer_auth(token)
            .json(&device.subscription())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
    }
}

fn request(session: &str, seq: u64, who: &Identity) -> String {
    let expires = UnixMs(now().0 + 600_000).to_rfc3339();
    Draft::new("attention.requested")
        .session(session)
        .seq(seq)
        .severity(Severity::Warning)
        .data(json!({
            "kind": "permission",
            "prompt": "Allow the build to write to /tmp?",
            "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}],
            "respond_via": ["control"],
            "expires_at": expires,
        }))
        .build(who, id(u128::from(seq) << 64 | u128::from(rand::random::<u64>())), now())
        .unwrap()
        .raw()
        .to_owned()
}

/// Delays from POST to each push's arrival, `requests` requests one at a
/// time to `devices` devices.
async fn push_delays(devices: usize, requests: u64) -> Vec<Duration> {
    let service = push_service();
    let relay = start(&service, false).await;
    let http = reqwest::Client::new();
    register(&http, &relay, &service, devices).await;
    let session = format!("bench-push-{devices}");
    let who = Identity::new(format!("aep://bench/agent/publisher/session/{session}"), "publisher");
    let url = format!("{}/events", relay.base_url());
    let mut delays = Vec::new();
    for seq in 0..requests {
        let before = service.count();
        let body = format!("{}\n", request(&session, seq, &who));
        let posted = Instant::now();
        post_ndjson(&http, &url, body).await;
        let deadline = posted + Duration::from_secs(60);
        while service.count() < before + devices {
            assert!(Instant::now() < deadline, "pushes did not arrive");
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        delays.extend(service.received.lock().unwrap()[before..].iter().map(|r| r.at.duration_since(posted)));
    }
    relay.shutdown().await;
    delays.sort();
    delays
}

/// Events per second until one subscriber has all of them.
async fn fan_out_rate(addr: SocketAddr, base: &str) -> f64 {
    let session = format!("bench-fan-{}", id(1));
    let who = Identity::new(format!("aep://bench/agent/publisher/session/{session}"), "publisher");
    let bodies: Vec<String> = (0..EVENTS / BATCH)
        .map(|b| {
            (b * BATCH..(b + 1) * BATCH)
                .map(|seq| {
                    let line = if seq % REQUEST_EVERY == 0 {
                        request(&session, seq, &who)
                    } else {
                        let e =
                            Draft::new("progress.status").session(&session).seq(seq).data(json!({"phase": "working"}));
                        e.build(&who, id(seq as u128), now()).unwrap().raw().to_owned()
                    };
                    format!("{line}\n")
                })
                .collect()
        })
        .collect();
    let reader = count_events(subscriber(addr, json!({"session": session})).await, EVENTS, Duration::from_secs(5));
    let http = reqwest::Client::new();
    let url = format!("{base}/events");
    let started = Instant::now();
    for body in bodies {
        post_ndjson(&http, &url, body).await;
    }
    let got = reader.await.unwrap();
    assert_eq!(got, EVENTS, "the subscriber fell behind");
    EVENTS as f64 / started.elapsed().as_secs_f64()
}

/// The push service on a thread of its own at low priority: in use it is
/// another host, so its CPU should not count against the relay's.
fn push_service() -> PushService {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // SAFETY: a plain system call on the calling thread.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 15) };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            tx.send(PushService::start().await).unwrap();
            std::future::pending::<()>().await
        })
    });
    rx.recv().unwrap()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() {
    println!("aep-relay Web Push benchmark ({} build)", if cfg!(debug_assertions) { "debug" } else { "release" });
    println!("request -> push leaving the relay (measured at a loopback push service over HTTPS):");
    for devices in DEVICES {
        let requests = if devices == 1 { 300 } else { 10 };
        let delays = push_delays(devices, requests).await;
        println!(
            "  {devices:>5} device(s), {requests} requests one at a time, {} pushes: \
             p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            delays.len(),
            ms(percentile(&delays, 0.50)),
            ms(percentile(&delays, 0.99)),
            ms(*delays.last().unwrap()),
        );
    }
    println!("fan-out, {EVENTS} events (one in {REQUEST_EVERY} an answerable request) to one WebSocket subscriber:");
    let service = push_service();
    let mut rates = Vec::new();
    for devices in [0, 1_000] {
        let relay = start(&service, true).await;
        register(&reqwest::Client::new(), &relay, &service, devices).await;
        let before = service.count();
        let rate = fan_out_rate(relay.local_addr(), &relay.base_url()).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        println!("  {devices:>5} devices: {rate:>9.0} events/s ({} pushes sent)", service.count() - before);
        rates.push(rate);
        relay.shutdown().await;
    }
    println!("  pushes on / off: {:.0} %", rates[1] / rates[0] * 100.0);
}
