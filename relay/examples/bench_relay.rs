//! Relay throughput and command latency on loopback. Run in release:
//!
//! ```sh
//! cargo run --release -p aep-relay --example bench_relay
//! ```
//!
//! * ingest to fan-out: events POSTed as NDJSON by one publisher, counted
//!   when every WebSocket subscriber has received all of them;
//! * command round trip: sender socket → relay → target socket, the
//!   target's `control.accepted` → relay → sender (which subscribes to the
//!   session), over 1 000 commands sent one at a time, on an idle relay
//!   and while a flood fans out to 1, 10 and 100 subscribers.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use aep_engine::protocol::ids::{Draft, Identity};
use aep_relay::auth::Token;
use aep_relay::{serve, Config, Relay};
use futures_util::StreamExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

mod common;
use common::{acking_target, id, now, percentile, post_ndjson, subscriber, timed_pauses, TOKEN};

const EVENTS: u64 = 100_000;
const BATCH: u64 = 1_000;
const COMMANDS: usize = 1_000;

async fn start() -> Relay {
    let config = Config { token: Token::new(TOKEN), buffer_depth: 1_000, ..Config::default() };
    serve(config, tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()).await.unwrap()
}

/// Events per second from the first POST until every subscriber has them.
/// `posting` hears when the subscribers are in place and the POSTs begin.
async fn fan_out(addr: SocketAddr, subscribers: usize, posting: Option<tokio::sync::oneshot::Sender<()>>) -> f64 {
    let session = format!("bench-{}", id(subscribers as u128));
    let who = Identity::new(format!("aep://bench/agent/publisher/session/{session}"), "publisher");
    let bodies: Vec<String> = (0..EVENTS / BATCH)
        .map(|b| {
            (b * BATCH..(b + 1) * BATCH)
                .map(|seq| {
                    let e = Draft::new("progress.status").session(&session).seq(seq).data(json!({"phase": "working"}));
                    format!("{}\n", e.build(&who, id(seq as u128), now()).unwrap().raw())
                })
                .collect()
        })
        .collect();
    let mut readers = Vec::new();
    for _ in 0..subscribers {
        let mut ws = subscriber(addr, json!({"session": session})).await;
        readers.push(tokio::spawn(async move {
            let mut n = 0;
            while n < EVENTS {
                // Silence for 2 s, or the socket closed: the relay skipped
                // info events or dropped this subscriber for falling behind.
                match tokio::time::timeout(Duration::from_secs(2), ws.next()).await {
                    Ok(Some(Ok(Message::Text(t)))) if t.starts_with("{\"aep\"") => n += 1,
                    Ok(Some(Ok(_))) => {}
                    _ => break,
                }
            }
            n
        }));
    }
    let http = reqwest::Client::new();
    let url = format!("http://{addr}/events");
    let started = Instant::now();
    if let Some(tx) = posting {
        let _ = tx.send(());
    }
    for body in bodies {
        post_ndjson(&http, &url, body).await;
    }
    let ingested = started.elapsed();
    let mut short = 0;
    for r in readers {
        if r.await.unwrap() < EVENTS {
            short += 1;
        }
    }
    let elapsed = started.elapsed();
    if short > 0 {
        println!("  {short} of {subscribers} subscriber(s) fell behind and were dropped or skipped info events (backpressure)");
    }
    println!(
        "  {subscribers:>2} subscriber(s): {EVENTS} events ingested in {:.0} ms, fanned out in {:.0} ms",
        ingested.as_secs_f64() * 1e3,
        elapsed.as_secs_f64() * 1e3
    );
    EVENTS as f64 / elapsed.as_secs_f64()
}

/// Round-trip times of commands answered by a target that acks each one.
async fn command_round_trips(addr: SocketAddr) -> Vec<Duration> {
    let session = format!("bench-control-{}", id(7));
    let target_task = acking_target(addr, &session).await;
    let mut sender = subscriber(addr, json!({"session": session})).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut times = timed_pauses(&mut sender, &session, 0, COMMANDS).await;
    target_task.abort();
    times.sort();
    times
}

fn report(label: &str, times: &[Duration]) {
    println!(
        "  {label}: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        percentile(times, 0.50).as_secs_f64() * 1e3,
        percentile(times, 0.99).as_secs_f64() * 1e3,
        times.last().unwrap().as_secs_f64() * 1e3,
    );
}

#[tokio::main]
async fn main() {
    println!("aep-relay loopback benchmark ({} build)", if cfg!(debug_assertions) { "debug" } else { "release" });
    println!("ingest -> fan-out ({EVENTS} events, NDJSON batches of {BATCH}, WebSocket subscribers):");
    let mut rates = Vec::new();
    for n in [1, 10, 100] {
        let relay = start().await;
        rates.push((n, fan_out(relay.local_addr(), n, None).await));
        relay.shutdown().await;
    }
    for (n, rate) in &rates {
        println!("  {n:>3} subscriber(s): {rate:>9.0} events/s ({:.0} deliveries/s)", rate * *n as f64);
    }
    println!(
        "command round trip (sender -> relay -> target -> ack -> relay -> sender), {COMMANDS} commands one at a time:"
    );
    let relay = start().await;
    report("idle relay            ", &command_round_trips(relay.local_addr()).await);
    relay.shutdown().await;
    for n in [1, 10, 100] {
        let relay = start().await;
        let addr = relay.local_addr();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let flood = tokio::spawn(async move { fan_out(addr, n, Some(tx)).await });
        // Measured while the flood is under way.
        rx.await.expect("the flood starts");
        let times = command_round_trips(addr).await;
        flood.await.unwrap();
        report(&format!("during a flood to {n:>3}"), &times);
        relay.shutdown().await;
    }
}
