//! What a console costs the relay on each WebSocket binding, side by side
//! in one run: a client that offers nothing (plain) and one that offers
//! permessage-deflate as browsers do (compressed). Build the relay in
//! release first:
//!
//! ```sh
//! cargo build --release -p aep-relay
//! cargo run --release -p aep-relay --example bench_sockets [-- RELAY_BINARY [CONSOLES…]]
//! ```
//!
//! For 1, 100 and 1,000 consoles (or the counts given), a fresh relay
//! process each time, every console subscribed to everything with a replay
//! of the session held:
//!
//! * memory: the relay's RSS growth per console once every replay is
//!   delivered and the consoles sit idle;
//! * CPU: the relay's own user + system time per delivered event while a
//!   flood fans out to every console, read from `/proc`, so the clients'
//!   cost is not counted;
//! * fan-out: events per second from the first POST until every console
//!   has every event.
//!
//! The consoles are raw sockets that count frames without inflating them,
//! so the clients are never the bottleneck.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aep_engine::protocol::ids::{Draft, Identity};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;
#[path = "../tests/suite/support/raw_frame.rs"]
mod raw_frame;
use common::{id, now, post_ndjson, TOKEN};
use raw_frame::{frame_at, masked_text};

/// Events held before the consoles connect: each console's replay.
const HELD: u64 = 200;
/// Events a POST.
const BODY: u64 = 500;
/// Deliveries in the CPU phase (events × consoles), so each count takes
/// a measurable share of CPU time.
const DELIVERIES: u64 = 400_000;

#[derive(Clone, Copy, PartialEq)]
enum Binding {
    Plain,
    Compressed,
}

impl Binding {
    fn name(self) -> &'static str {
        match self {
            Binding::Plain => "plain",
            Binding::Compressed => "compressed",
        }
    }
}

/// A relay process of its own for one measurement.
struct RelayProcess {
    child: Child,
    addr: SocketAddr,
}

impl RelayProcess {
    fn start(binary: &str) -> RelayProcess {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let child = Command::new(binary)
            .args(["--listen", &addr.to_string(), "--max-connections", "4096"])
            .args(["--max-connections-per-address", "4096", "--static-dir", "/nonexistent"])
            .env("AEP_TOKEN", TOKEN)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{binary}: {e} (build it with cargo build --release -p aep-relay)"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "the relay did not start listening");
            std::thread::sleep(Duration::from_millis(20));
        }
        RelayProcess { child, addr }
    }

    /// Resident memory, bytes.
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap();
        kb * 1024
    }

    /// User + system CPU time so far.
    fn cpu(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        // Fields after the parenthesised command name; utime and stime are 14th and 15th.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        // USER_HZ is 100 on Linux.
        Duration::from_millis(ticks * 10)
    }
}

impl Drop for RelayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// NDJSON bodies of `count` events in `session` from `seq`, 500 a body:
/// the kinds of event a console receives, with text of realistic length.
fn bodies(session: &str, from: u64, count: u64) -> Vec<String> {
    let who = Identity::new(format!("aep://bench/agent/coder/session/{session}"), "coder");
    let events: Vec<String> = (from..from + count)
        .map(|seq| {
            let draft = match seq % 4 {
                0 | 1 => Draft::new("progress.status")
                    .data(json!({"phase": "working", "message": format!("Compiling aep-engine v0.1.0 (/work/main/engine), step {seq}")})),
                2 => Draft::new("tool.requested").data(
                    json!({"tool": {"name": "Bash", "call_id": format!("call-{seq}")}, "args_redacted": {"command": format!("cargo test --workspace -- case_{seq}")}}),
                ),
                _ => Draft::new("tool.completed").data(
                    json!({"tool": {"name": "Bash", "call_id": format!("call-{}", seq - 1)}, "status": "ok", "duration_ms": seq * 7}),
                ),
            };
            format!("{}\n", draft.session(session).seq(seq).build(&who, id(seq as u128), now()).unwrap().raw())
        })
        .collect();
    events.chunks(BODY as usize).map(|c| c.concat()).collect()
}

/// One console: a raw socket past `hello` and `subscribe` (replay of all
/// held), counting the text frames it receives into `received`.
async fn console(addr: SocketAddr, binding: Binding, received: Arc<AtomicU64>, wire: Arc<AtomicU64>) {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let offer = match binding {
        Binding::Plain => "",
        Binding::Compressed => "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n",
    };
    let request = format!(
        "GET /socket?access_token={TOKEN} HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{offer}\r\n"
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut buf = Vec::with_capacity(16 * 1024);
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        read_more(&mut tcp, &mut buf).await;
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert_eq!(head.contains("permessage-deflate"), binding == Binding::Compressed, "{head}");
    buf.drain(..head_end);
    for frame in [
        json!({"type": "hello", "versions": ["0.1"], "role": "consumer"}),
        json!({"type": "subscribe", "id": "all", "filter": {}, "from": "all"}),
    ] {
        tcp.write_all(&masked_text(frame.to_string().as_bytes())).await.unwrap();
    }
    loop {
        while let Some(frame) = frame_at(&buf) {
            buf.drain(..frame.len());
            wire.fetch_add(frame.len() as u64, Ordering::Relaxed);
            if frame.opcode == 0x1 {
                received.fetch_add(1, Ordering::Relaxed);
            }
        }
        if !read_more(&mut tcp, &mut buf).await {
            return;
        }
    }
}

async fn read_more(tcp: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    match tcp.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

/// Waits until `counter` reaches `target`; false after 120 s without.
async fn reach(counter: &AtomicU64, target: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(120);
    while counter.load(Ordering::Relaxed) < target {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

struct Row {
    replay_bytes_per_console: f64,
    idle_bytes_per_console: f64,
    cpu_us_per_delivery: f64,
    events_per_s: f64,
}

async fn measure(binary: &str, binding: Binding, consoles: u64) -> Row {
    let relay = RelayProcess::start(binary);
    let http = reqwest::Client::new();
    let url = format!("http://{}/events", relay.addr);
    let session = format!("bench-{}", id(consoles as u128));
    for body in bodies(&session, 0, HELD) {
        post_ndjson(&http, &url, body).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = relay.rss();

    let received = Arc::new(AtomicU64::new(0));
    let wire = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..consoles {
        tasks.push(tokio::spawn(console(relay.addr, binding, received.clone(), wire.clone())));
        // A few at a time, as consoles open, not all in one instant.
        if tasks.len() % 50 == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    // Each console's `subscribed` and its replay.
    assert!(reach(&received, consoles * (HELD + 1)).await, "every replay delivered");
    let replay_wire = wire.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = relay.rss();

    let events = (DELIVERIES / consoles).clamp(200, 20_000);
    let flood = bodies(&session, HELD, events);
    let (cpu_before, started) = (relay.cpu(), Instant::now());
    // At most two bodies ahead of the slowest console, so no queue
    // reaches the relay's backpressure bound and nothing is dropped.
    let mut posted = 0;
    for body in flood {
        post_ndjson(&http, &url, body).await;
        posted += BODY;
        let behind = posted.min(events).saturating_sub(2 * BODY);
        assert!(reach(&received, consoles * (HELD + 1 + behind)).await, "the consoles keep up");
    }
    let delivered = reach(&received, consoles * (HELD + 1 + events)).await;
    let (cpu, wall) = (relay.cpu() - cpu_before, started.elapsed());
    assert!(
        delivered,
        "{}: every event delivered to every console ({} of {} frames)",
        binding.name(),
        received.load(Ordering::Relaxed),
        consoles * (HELD + 1 + events)
    );
    for task in tasks {
        task.abort();
    }
    Row {
        replay_bytes_per_console: replay_wire as f64 / consoles as f64,
        idle_bytes_per_console: (idle as f64 - before as f64) / consoles as f64,
        cpu_us_per_delivery: cpu.as_secs_f64() * 1e6 / (events * consoles) as f64,
        events_per_s: events as f64 / wall.as_secs_f64(),
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let binary = args.first().cloned().unwrap_or_else(|| "target/release/aep-relay".into());
    let counts: Vec<u64> = match args.get(1..) {
        Some(rest) if !rest.is_empty() => rest.iter().map(|c| c.parse().unwrap()).collect(),
        _ => vec![1, 100, 1_000],
    };
    println!("relay {binary}; replay {HELD} events a console; CPU phase {DELIVERIES} deliveries (200 events at least)");
    println!(
        "{:>8} | {:>21} | {:>21} | {:>21} | {:>23}",
        "consoles", "replay KB/console p/c", "idle KB/console p/c", "CPU µs/delivery p/c", "fan-out events/s p/c"
    );
    for consoles in counts {
        let plain = measure(&binary, Binding::Plain, consoles).await;
        let compressed = measure(&binary, Binding::Compressed, consoles).await;
        println!(
            "{consoles:>8} | {:>9.1} / {:>9.1} | {:>9.1} / {:>9.1} | {:>9.2} / {:>9.2} | {:>10.0} / {:>10.0}   (CPU c/p {:.2})",
            plain.replay_bytes_per_console / 1024.0,
            compressed.replay_bytes_per_console / 1024.0,
            plain.idle_bytes_per_console / 1024.0,
            compressed.idle_bytes_per_console / 1024.0,
            plain.cpu_us_per_delivery,
            compressed.cpu_us_per_delivery,
            plain.events_per_s,
            compressed.events_per_s,
            compressed.cpu_us_per_delivery / plain.cpu_us_per_delivery,
        );
    }
}
