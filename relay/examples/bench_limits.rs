//! What hostile or broken peers cost a relay process, on loopback, in
//! bounded time. Runs the relay binary as a child process (so its memory
//! and descriptors are its own) and prints, per scenario, the child's
//! resident memory or open descriptors:
//!
//! * 200 consumers that subscribe and then stop reading, during a flood of
//!   20 000 events (1 KB, `notice`, so none may be dropped);
//! * 200 sockets that each send one 1 MB `ping` and never read;
//! * 300 connections that send half a request head and stall.
//!
//! ```sh
//! cargo build -p aep-relay --bin aep-relay
//! cargo run -p aep-relay --example bench_limits -- target/debug/aep-relay [baseline-binary]
//! ```
//!
//! With a second binary, every scenario runs against both in the same run
//! and the ratio is printed (the machine is noisy; compare within a run).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

const STALLED_CONSUMERS: usize = 200;
const FLOOD_EVENTS: u64 = 20_000;
const FLOOD_BATCH: u64 = 500;
const PINGERS: usize = 200;
const PING_BYTES: usize = 1024 * 1024;
const HALF_OPEN: usize = 300;
/// How long the half-open connections are watched: past the relay's
/// default header-read timeout (10 s).
const HALF_OPEN_WATCH: Duration = Duration::from_secs(13);

/// A relay child process, killed on drop.
struct Relay {
    child: Child,
    addr: SocketAddr,
}

impl Relay {
    fn start(binary: &str) -> Relay {
        let mut child = Command::new(binary)
            .args(["--listen", "127.0.0.1:0", "--static-dir", "/nonexistent-console"])
            .env("RUST_LOG", "error")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("boot line");
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in the boot line {line:?}"));
        Relay { child, addr }
    }

    fn status_kb(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    fn rss_mb(&self) -> f64 {
        self.status_kb("VmRSS:") as f64 / 1024.0
    }

    fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).map_or(0, |d| d.count())
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn socket(addr: SocketAddr) -> Socket {
    let (mut ws, _) =
        tokio_tungstenite::connect_async_with_config(format!("ws://{addr}/socket"), None, true).await.unwrap();
    ws.send(Message::text(json!({"type": "hello", "versions": ["0.1"], "role": "consumer"}).to_string()))
        .await
        .unwrap();
    ws
}

fn event(n: u64) -> String {
    json!({
        "aep": "0.1", "id": format!("01J{n:023}"), "type": "progress.status", "time": "2026-07-03T10:00:00Z",
        "source": "aep://bench/agent/flood/session/flood", "agent": "flood", "session": "flood", "seq": n,
        "severity": "notice", "data": {"note": "x".repeat(900)}
    })
    .to_string()
}

/// Peak and final RSS (MB) while 200 stalled consumers face a flood.
async fn stalled_consumers(binary: &str) -> (f64, f64, String) {
    let relay = Relay::start(binary);
    let mut consumers = Vec::new();
    for _ in 0..STALLED_CONSUMERS {
        let mut ws = socket(relay.addr).await;
        ws.send(Message::text(json!({"type": "subscribe", "id": "s", "filter": {"session": "flood"}}).to_string()))
            .await
            .unwrap();
        consumers.push(ws); // never read again
    }
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let url = format!("http://{}/events", relay.addr);
    let mut peak: f64 = 0.0;
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut seq = 0;
    while seq < FLOOD_EVENTS && Instant::now() < deadline {
        let body: String = (seq..seq + FLOOD_BATCH).map(|n| event(n) + "\n").collect();
        let post = http.post(&url).header("content-type", "application/x-ndjson").header("aep-version", "0.1").body(body);
        let _ = tokio::time::timeout(Duration::from_secs(20), post.send()).await;
        seq += FLOOD_BATCH;
        peak = peak.max(relay.rss_mb());
    }
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(relay.rss_mb());
    }
    let health = tokio::time::timeout(Duration::from_secs(5), http.get(format!("http://{}/healthz", relay.addr)).send())
        .await
        .ok()
        .and_then(Result::ok);
    let connections = match health {
        Some(r) => r.json::<serde_json::Value>().await.map_or("?".into(), |v| v["connections"].to_string()),
        None => "no answer".into(),
    };
    let end = relay.rss_mb();
    drop(consumers);
    (peak, end, format!("{seq} events posted, /healthz connections after: {connections}"))
}

/// Peak RSS (MB) while 200 sockets each send a 1 MB ping and never read.
async fn big_pings(binary: &str) -> f64 {
    let relay = Relay::start(binary);
    let t = "p".repeat(PING_BYTES);
    let mut sockets = Vec::new();
    let mut peak: f64 = relay.rss_mb();
    for _ in 0..PINGERS {
        let mut ws = socket(relay.addr).await;
        let ping = json!({"type": "ping", "t": t}).to_string();
        let _ = tokio::time::timeout(Duration::from_secs(5), ws.send(Message::text(ping))).await;
        sockets.push(ws);
        peak = peak.max(relay.rss_mb());
    }
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(relay.rss_mb());
    }
    drop(sockets);
    peak
}

/// Open descriptors of the relay right after 300 half-open requests, and
/// after watching them for a while.
async fn half_open(binary: &str) -> (usize, usize) {
    let relay = Relay::start(binary);
    let idle = relay.fds();
    let mut held = Vec::new();
    for _ in 0..HALF_OPEN {
        let mut tcp = TcpStream::connect(relay.addr).await.unwrap();
        let _ = tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: bench\r\n").await;
        held.push(tcp);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let during = relay.fds().saturating_sub(idle);
    tokio::time::sleep(HALF_OPEN_WATCH).await;
    let after = relay.fds().saturating_sub(idle);
    drop(held);
    (during, after)
}

fn ratio(now: f64, base: Option<f64>) -> String {
    match base {
        Some(b) if now > 0.0 => format!(" (baseline {b:.1}, baseline/now {:.1}x)", b / now),
        Some(b) => format!(" (baseline {b:.1})"),
        None => String::new(),
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let binary = args.first().map_or("target/debug/aep-relay", String::as_str).to_owned();
    let baseline = args.get(1).cloned();

    let (peak, end, note) = stalled_consumers(&binary).await;
    let base = match &baseline {
        Some(b) => Some(stalled_consumers(b).await),
        None => None,
    };
    println!(
        "stalled consumers ({STALLED_CONSUMERS}) during a {FLOOD_EVENTS}-event flood: peak RSS {peak:.1} MB{}, at end {end:.1} MB{}; {note}",
        ratio(peak, base.as_ref().map(|b| b.0)),
        ratio(end, base.as_ref().map(|b| b.1)),
    );
    if let Some((_, _, note)) = &base {
        println!("  baseline: {note}");
    }

    let pings = big_pings(&binary).await;
    let base = match &baseline {
        Some(b) => Some(big_pings(b).await),
        None => None,
    };
    println!("{PINGERS} one-megabyte pings, never read: peak RSS {pings:.1} MB{}", ratio(pings, base));

    let (during, after) = half_open(&binary).await;
    let base = match &baseline {
        Some(b) => Some(half_open(b).await),
        None => None,
    };
    println!(
        "{HALF_OPEN} half-open requests: +{during} descriptors after 0.5 s{}, +{after} after {} s{}",
        ratio(during as f64, base.map(|b| b.0 as f64)),
        HALF_OPEN_WATCH.as_secs() as f64 + 0.5,
        ratio(after as f64, base.map(|b| b.1 as f64)),
    );
}
