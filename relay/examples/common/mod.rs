//! What the relay's benchmarks share: sockets to a relay, a target that
//! acks every pause, and timed command round trips.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use aep_engine::protocol::ids::{ulid, Draft, Identity};
use aep_engine::{Event, UnixMs};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

pub const TOKEN: &str = "bench-token";

pub type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub fn now() -> UnixMs {
    UnixMs(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64)
}

pub fn id(n: u128) -> String {
    ulid(now(), n)
}

/// A socket past its hello.
pub async fn socket(addr: SocketAddr, hello: Value) -> Socket {
    let url = format!("ws://{addr}/socket?access_token={TOKEN}");
    let (mut ws, _) = tokio_tungstenite::connect_async_with_config(url, None, true).await.unwrap();
    ws.send(Message::text(hello.to_string())).await.unwrap();
    let reply = next_json(&mut ws).await;
    assert_eq!(reply["type"], "hello");
    ws
}

pub async fn next_json(ws: &mut Socket) -> Value {
    loop {
        match ws.next().await.expect("socket open").unwrap() {
            Message::Text(t) => return serde_json::from_str(&t).unwrap(),
            _ => continue,
        }
    }
}

/// A consumer socket subscribed with `filter`.
pub async fn subscriber(addr: SocketAddr, filter: Value) -> Socket {
    let mut ws = socket(addr, json!({"type": "hello", "versions": ["0.1"], "role": "consumer"})).await;
    ws.send(Message::text(json!({"type": "subscribe", "id": "bench", "filter": filter}).to_string())).await.unwrap();
    assert_eq!(next_json(&mut ws).await["type"], "subscribed");
    ws
}

/// Counts the events `ws` receives, until `expected` or a silence of
/// `silence` (the relay dropped the subscriber or skipped events).
pub fn count_events(mut ws: Socket, expected: u64, silence: Duration) -> JoinHandle<u64> {
    tokio::spawn(async move {
        let mut n = 0;
        while n < expected {
            match tokio::time::timeout(silence, ws.next()).await {
                Ok(Some(Ok(Message::Text(t)))) if t.starts_with("{\"aep\"") => n += 1,
                Ok(Some(Ok(_))) => {}
                _ => break,
            }
        }
        n
    })
}

/// An emitter on `addr` that starts `session` and acks every command sent
/// to it, until the task is aborted.
pub async fn acking_target(addr: SocketAddr, session: &str) -> JoinHandle<()> {
    let target_who = Identity::new(format!("aep://bench/agent/target/session/{session}"), "target");
    let mut target = socket(
        addr,
        json!({"type": "hello", "versions": ["0.1"], "role": "emitter", "identity": {"agent": "target"},
               "capabilities": {"control": {"accepts": ["control.pause"], "ack_window_ms": 10000}}}),
    )
    .await;
    let started = Draft::new("session.started").session(session).seq(0).build(&target_who, id(0), now()).unwrap();
    target.send(Message::text(started.raw().to_owned())).await.unwrap();
    tokio::spawn(async move {
        let mut seq = 1;
        while let Some(Ok(message)) = target.next().await {
            let Message::Text(text) = message else { continue };
            let Ok(command) = Event::parse(&text) else { continue };
            if !command.is_command() {
                continue;
            }
            let ack = Draft::new("control.accepted")
                .session(command.session().unwrap())
                .seq(seq)
                .cause(command.id())
                .data(json!({}))
                .build(&target_who, id(seq as u128 + 1_000_000), now())
                .unwrap();
            seq += 1;
            target.send(Message::text(ack.raw().to_owned())).await.unwrap();
        }
    })
}

/// The sender of the timed commands.
pub fn sender_identity() -> Identity {
    Identity::new("aep://bench/agent/sender", "sender")
}

/// Sends `warm_up + count` pauses to `session` one at a time and times each
/// until its ack reaches `sender` (subscribed to the session); the first
/// `warm_up` are not kept.
pub async fn timed_pauses(sender: &mut Socket, session: &str, warm_up: usize, count: usize) -> Vec<Duration> {
    let me = sender_identity();
    let mut times = Vec::with_capacity(count);
    for n in 0..warm_up + count {
        let command =
            Draft::new("control.pause").session(session).data(json!({})).build(&me, id(n as u128 + 10), now()).unwrap();
        let sent = Instant::now();
        sender.send(Message::text(command.raw().to_owned())).await.unwrap();
        loop {
            let v = next_json(sender).await;
            if v["type"] == "control.accepted" && v["cause"] == command.id() {
                break;
            }
            assert_ne!(v["type"], "error", "{v}");
        }
        if n >= warm_up {
            times.push(sent.elapsed());
        }
    }
    times
}

/// The `p` quantile of sorted durations (nearest rank).
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// POSTs one NDJSON batch to `url` (a relay's `/events`) and expects it taken.
pub async fn post_ndjson(http: &reqwest::Client, url: &str, body: String) {
    let r = http
        .post(url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/x-ndjson")
        .header("aep-version", "0.1")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
}
