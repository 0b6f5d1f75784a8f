//! What hostile or broken peers cost a relay process, on loopback, in
//! bounded time. Runs the relay binary as a child process (so its memory
//! and descriptors are its own) and prints, per scenario, the child's
//! resident memory or open descriptors:
//!
//! * 200 consumers that subscribe and then stop reading, during a flood of
//!   20 000 events (1 KB, `notice`, so none may be dropped);
//! * 200 sockets that each send one 1 MB `ping` and never read;
//! * 300 connections that send half a request head and stall;
//! * `/healthz` while 8 consumers with 8 filters of 256 patterns each
//!   (none matching) see 5 000 events ingested in one POST: the slowest
//!   probe's latency against the ingest's time (a ratio; well under 1/4
//!   means health does not wait behind the fan-out);
//! * durability: 20 000 events POSTed (202) across 20 sessions, then
//!   `kill -9` and a restart: events lost without and with `--data-dir`,
//!   and ingest throughput with `--data-dir` against in memory (ratio).
//!
//! `--durability` runs only that scenario.
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
        Relay::start_with(binary, &[])
    }

    fn start_with(binary: &str, extra: &[&str]) -> Relay {
        let mut child = Command::new(binary)
            .args(["--listen", "127.0.0.1:0", "--static-dir", "/nonexistent-console"])
            .args(extra)
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

const HEAVY_CONSUMERS: usize = 8;
const HEAVY_FILTERS: usize = 8;
const HEAVY_PATTERNS: usize = 256;
const HEAVY_EVENTS: u64 = 5_000;

/// The slowest `/healthz` answer while one POST of 5 000 events fans out to
/// consumers whose every pattern is tried and none matches, the ingest's
/// time, and how many probes were answered meanwhile.
async fn health_during_fan_out(binary: &str) -> (Duration, Duration, usize) {
    let relay = Relay::start(binary);
    let mut consumers = Vec::new();
    for c in 0..HEAVY_CONSUMERS {
        let mut ws = socket(relay.addr).await;
        for i in 0..HEAVY_FILTERS {
            let types: Vec<String> = (0..HEAVY_PATTERNS).map(|k| format!("zz{c}x{i}y{k}.*")).collect();
            let subscribe = json!({"type": "subscribe", "id": format!("s{i}"), "filter": {"type": types}});
            ws.send(Message::text(subscribe.to_string())).await.unwrap();
        }
        consumers.push(ws);
    }
    let http = reqwest::Client::new();
    let mut body: String = (0..HEAVY_EVENTS).map(|n| event(n) + "\n").collect();
    body.shrink_to_fit();
    let started = Instant::now();
    let post = {
        let request = post_ndjson(&http, &format!("http://{}/events", relay.addr), body);
        tokio::spawn(async move {
            let status = request.send().await.unwrap().status();
            assert_eq!(status, 202);
            Instant::now()
        })
    };
    let health = format!("http://{}/healthz", relay.addr);
    let (mut slowest, mut probes) = (Duration::ZERO, 0);
    while !post.is_finished() {
        let asked = Instant::now();
        assert!(http.get(&health).send().await.unwrap().status().is_success());
        slowest = slowest.max(asked.elapsed());
        probes += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ingest = post.await.unwrap() - started;
    drop(consumers);
    (slowest, ingest, probes)
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
        let _ = tokio::time::timeout(Duration::from_secs(20), post_ndjson(&http, &url, body).send()).await;
        seq += FLOOD_BATCH;
        peak = peak.max(relay.rss_mb());
    }
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(relay.rss_mb());
    }
    let health =
        tokio::time::timeout(Duration::from_secs(5), http.get(format!("http://{}/healthz", relay.addr)).send())
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

const DURABLE_SESSIONS: u64 = 20;
const DURABLE_PER_SESSION: u64 = 1_000;
const DURABLE_BATCH: u64 = 500;

/// One NDJSON batch of `session`'s events from `seq0` on.
fn batch(session: u64, seq0: u64) -> String {
    (seq0..seq0 + DURABLE_BATCH).map(|seq| format!("{}\n", session_event(session, seq))).collect()
}

/// An NDJSON POST of `body` to `url`, as an ingesting agent sends it.
fn post_ndjson(http: &reqwest::Client, url: &str, body: String) -> reqwest::RequestBuilder {
    http.post(url).header("content-type", "application/x-ndjson").header("aep-version", "0.1").body(body)
}

fn session_event(session: u64, seq: u64) -> String {
    json!({
        "aep": "0.1", "id": format!("01J{session:03}{seq:020}"), "type": "progress.status", "time": "2026-07-03T10:00:00Z",
        "source": format!("aep://bench/agent/durable/session/d{session}"), "agent": "durable",
        "session": format!("d{session}"), "seq": seq, "severity": "notice", "data": {"note": "x".repeat(400)}
    })
    .to_string()
}

/// What one durability run measured.
struct Durability {
    accepted: u64,
    replayed: u64,
    events_per_s: f64,
}

/// POSTs every event (counting the 202s), kills the relay with SIGKILL,
/// restarts it with the same options and counts what `from=all` replays.
async fn kill_9_run(binary: &str, data_dir: Option<&std::path::Path>) -> Durability {
    let dir_arg = data_dir.map(|d| d.display().to_string());
    let extra: Vec<&str> = match &dir_arg {
        Some(d) => vec!["--data-dir", d.as_str()],
        None => Vec::new(),
    };
    let relay = Relay::start_with(binary, &extra);
    let http = reqwest::Client::new();
    let url = format!("http://{}/events", relay.addr);
    let mut accepted = 0;
    let started = Instant::now();
    for seq0 in (0..DURABLE_PER_SESSION).step_by(DURABLE_BATCH as usize) {
        for session in 0..DURABLE_SESSIONS {
            let r = post_ndjson(&http, &url, batch(session, seq0)).send().await.unwrap();
            if r.status() == 202 {
                accepted += DURABLE_BATCH;
            }
        }
    }
    let events_per_s = accepted as f64 / started.elapsed().as_secs_f64();
    drop(relay); // SIGKILL
    let relay = Relay::start_with(binary, &extra);
    let body =
        http.get(format!("http://{}/stream?live=0&from=all", relay.addr)).send().await.unwrap().text().await.unwrap();
    let replayed = body.lines().filter(|l| l.starts_with("data: ")).count() as u64;
    Durability { accepted, replayed, events_per_s }
}

/// File size after each of three floods, each many times the bound: it
/// levels off instead of growing with what was posted.
async fn disk_bound(binary: &str, total_bytes: usize) -> (u64, Vec<u64>) {
    let dir = std::env::temp_dir().join(format!("aep-bench-bound-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dir_arg = dir.display().to_string();
    let total = total_bytes.to_string();
    let relay = Relay::start_with(binary, &["--data-dir", &dir_arg, "--total-buffer-bytes", &total]);
    let http = reqwest::Client::new();
    let url = format!("http://{}/events", relay.addr);
    let mut posted = 0u64;
    let mut sizes = Vec::new();
    for round in 0..3 {
        for seq0 in (round * DURABLE_PER_SESSION..(round + 1) * DURABLE_PER_SESSION).step_by(DURABLE_BATCH as usize) {
            for session in 0..DURABLE_SESSIONS {
                let body = batch(session, seq0);
                posted += body.len() as u64;
                post_ndjson(&http, &url, body).send().await.unwrap();
            }
        }
        sizes.push(std::fs::metadata(dir.join("history.redb")).map_or(0, |m| m.len()));
    }
    drop(relay);
    let _ = std::fs::remove_dir_all(&dir);
    (posted, sizes)
}

async fn durability(binary: &str) {
    let dir = std::env::temp_dir().join(format!("aep-bench-durable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let memory = kill_9_run(binary, None).await;
    let disk = kill_9_run(binary, Some(&dir)).await;
    let size = std::fs::metadata(dir.join("history.redb")).map_or(0, |m| m.len());
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "kill -9 after {} accepted events: lost {} in memory, {} with --data-dir (database file {:.1} MB)",
        memory.accepted,
        memory.accepted - memory.replayed.min(memory.accepted),
        disk.accepted - disk.replayed.min(disk.accepted),
        size as f64 / (1024.0 * 1024.0),
    );
    println!(
        "ingest ({DURABLE_BATCH}-event NDJSON POSTs, one publisher): {:.0} events/s in memory, {:.0} with --data-dir (with/without {:.2}x)",
        memory.events_per_s,
        disk.events_per_s,
        disk.events_per_s / memory.events_per_s,
    );
    let bound = 2 * 1024 * 1024;
    let (posted, sizes) = disk_bound(binary, bound).await;
    let mb = |b: u64| format!("{:.1}", b as f64 / 1048576.0);
    println!(
        "disk bound: {} MB posted in three floods with --total-buffer-bytes {} MB; database file after each: {} MB (last file/bound {:.1}x)",
        mb(posted),
        mb(bound as u64),
        sizes.iter().map(|s| mb(*s)).collect::<Vec<_>>().join(", "),
        *sizes.last().unwrap_or(&0) as f64 / bound as f64,
    );
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
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let only_durability = args.iter().any(|a| a == "--durability");
    args.retain(|a| a != "--durability");
    let binary = args.first().map_or("target/debug/aep-relay", String::as_str).to_owned();
    let baseline = args.get(1).cloned();

    durability(&binary).await;
    if only_durability {
        return;
    }

    let (slowest, ingest, probes) = health_during_fan_out(&binary).await;
    let base = match &baseline {
        Some(b) => Some(health_during_fan_out(b).await),
        None => None,
    };
    println!(
        "/healthz during a {HEAVY_EVENTS}-event fan-out to {HEAVY_CONSUMERS}x{HEAVY_FILTERS} filters of {HEAVY_PATTERNS} patterns: \
         slowest probe {:.1} ms of a {:.0} ms ingest (ratio {:.3}{}), {probes} probes",
        slowest.as_secs_f64() * 1e3,
        ingest.as_secs_f64() * 1e3,
        slowest.as_secs_f64() / ingest.as_secs_f64(),
        ratio(slowest.as_secs_f64(), base.map(|b| b.0.as_secs_f64())),
    );

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
