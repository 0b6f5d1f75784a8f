//! Where history is kept, side by side in one run: one relay with history
//! in memory, one with `--data-dir`, one tier member on NATS JetStream, and
//! two members (publishers and sender on one, subscribers and target on
//! the other). Starts its own `nats-server -js` on a free loopback port;
//! run it in a network namespace with only loopback, in release:
//!
//! ```sh
//! cargo build --release -p aep-relay --example bench_tier
//! unshare -n bash -c 'ip link set lo up && exec target/release/examples/bench_tier'
//! ```
//!
//! * fan-out: events POSTed as NDJSON batches by several publishers at
//!   once (each its own session), counted when every WebSocket subscriber
//!   has received all of them;
//! * command round trip: sender socket → relay → target socket, the
//!   target's `control.accepted` → relay → sender (which subscribes to the
//!   session), commands sent one at a time, after a warm-up;
//! * the floor of a cross-member round trip, on the two members' NATS
//!   server without a relay: a core NATS request and reply, and a core
//!   NATS request answered through a JetStream stream (the way a target's
//!   ack reaches a sender on another member).

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aep_engine::protocol::ids::{Draft, Identity};
use aep_relay::auth::Token;
use aep_relay::{serve, Config, Relay};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

mod common;
use common::{
    acking_target, id, next_json, now, percentile, post_ndjson, sender_identity, subscriber, timed_pauses, TOKEN,
};

const PUBLISHERS: u64 = 4;
const EVENTS: u64 = 100_000;
const BATCH: u64 = 500;
const SUBSCRIBERS: usize = 10;
const COMMANDS: usize = 1_000;
const ROUNDS: usize = 5;
/// Commands sent (and answered) before timing starts, per setup and round.
const WARM_UP: usize = 100;

/// How one setup keeps its history.
#[derive(Clone, Copy, PartialEq)]
enum Setup {
    Memory,
    DataDir,
    OneMember,
    TwoMembers,
}

impl Setup {
    fn label(self) -> &'static str {
        match self {
            Setup::Memory => "one process, memory",
            Setup::DataDir => "one process, --data-dir",
            Setup::OneMember => "one member, NATS",
            Setup::TwoMembers => "two members, NATS",
        }
    }
}

struct Nats {
    child: Child,
    url: String,
    dir: std::path::PathBuf,
}

impl Nats {
    fn start() -> Nats {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = std::env::temp_dir().join(format!("aep-bench-nats-{}", id(1)));
        let bin = ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"]
            .into_iter()
            .find(|p| std::path::Path::new(p).is_file())
            .unwrap_or("nats-server");
        let child = Command::new(bin)
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd", dir.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server is installed (scripts/setup)");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "nats-server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Nats { child, url: format!("nats://127.0.0.1:{port}"), dir }
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The relays of one setup: where publishers and senders go, and where
/// subscribers and targets go (the same relay but for two members).
struct Relays {
    front: Relay,
    back: Option<Relay>,
    nats: Option<Nats>,
    dir: Option<std::path::PathBuf>,
}

impl Relays {
    async fn start(setup: Setup) -> Relays {
        let config = || Config { token: Token::new(TOKEN), buffer_depth: 1_000, ..Config::default() };
        let listen = || async { tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap() };
        let (nats, dir) = match setup {
            Setup::OneMember | Setup::TwoMembers => (Some(Nats::start()), None),
            Setup::DataDir => (None, Some(std::env::temp_dir().join(format!("aep-bench-data-{}", id(2))))),
            Setup::Memory => (None, None),
        };
        let member = |name: &str| Config {
            nats: nats.as_ref().map(|n| n.url.clone()),
            member: nats.as_ref().map(|_| name.to_owned()),
            data_dir: dir.clone(),
            ..config()
        };
        let front = serve(member("a"), listen().await).await.unwrap();
        let back = match setup {
            Setup::TwoMembers => Some(serve(member("b"), listen().await).await.unwrap()),
            _ => None,
        };
        Relays { front, back, nats, dir }
    }

    fn front(&self) -> SocketAddr {
        self.front.local_addr()
    }

    fn back(&self) -> SocketAddr {
        self.back.as_ref().unwrap_or(&self.front).local_addr()
    }

    async fn stop(self) {
        self.front.shutdown().await;
        if let Some(back) = self.back {
            back.shutdown().await;
        }
        if let Some(dir) = self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Events per second from the first POST until every subscriber has them.
async fn fan_out(relays: &Relays) -> f64 {
    let run = id(0);
    let sessions: Vec<String> = (0..PUBLISHERS).map(|p| format!("bench-{run}-{p}")).collect();
    let per = EVENTS / PUBLISHERS;
    let bodies: Vec<Vec<String>> = sessions
        .iter()
        .map(|session| {
            let who = Identity::new(format!("aep://bench/agent/publisher/session/{session}"), "publisher");
            (0..per / BATCH)
                .map(|b| {
                    (b * BATCH..(b + 1) * BATCH)
                        .map(|seq| {
                            let e = Draft::new("progress.status")
                                .session(session)
                                .seq(seq)
                                .data(json!({"phase": "working"}));
                            format!("{}\n", e.build(&who, id(seq as u128), now()).unwrap().raw())
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    let mut readers = Vec::new();
    for _ in 0..SUBSCRIBERS {
        let mut ws = subscriber(relays.back(), json!({"session": sessions})).await;
        readers.push(tokio::spawn(async move {
            let mut n = 0;
            while n < EVENTS {
                match tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
                    Ok(Some(Ok(Message::Text(t)))) if t.starts_with("{\"aep\"") => n += 1,
                    Ok(Some(Ok(_))) => {}
                    _ => break,
                }
            }
            n
        }));
    }
    let url = format!("http://{}/events", relays.front());
    let started = Instant::now();
    let mut publishers = Vec::new();
    for bodies in bodies {
        let url = url.clone();
        publishers.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            for body in bodies {
                post_ndjson(&http, &url, body).await;
            }
        }));
    }
    for p in publishers {
        p.await.unwrap();
    }
    let mut short = 0;
    for r in readers {
        if r.await.unwrap() < EVENTS {
            short += 1;
        }
    }
    let elapsed = started.elapsed();
    if short > 0 {
        println!("  ({short} of {SUBSCRIBERS} subscribers fell behind and were dropped: backpressure)");
    }
    EVENTS as f64 / elapsed.as_secs_f64()
}

/// Round-trip times of commands answered by a target that acks each one.
async fn command_round_trips(relays: &Relays) -> Vec<Duration> {
    let session = format!("bench-control-{}", id(7));
    let target_task = acking_target(relays.back(), &session).await;
    let mut sender = subscriber(relays.front(), json!({"session": session})).await;
    let me = sender_identity();
    // The claim reaches the sender's member (at once on one relay).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let probe = Draft::new("control.pause").session(&session).data(json!({})).build(&me, id(5), now()).unwrap();
        sender.send(Message::text(probe.raw().to_owned())).await.unwrap();
        let answer = loop {
            let v = next_json(&mut sender).await;
            if v["type"] == "error" || (v["type"] == "control.accepted" && v["cause"] == probe.id()) {
                break v;
            }
        };
        if answer["type"] == "control.accepted" {
            break;
        }
        assert!(Instant::now() < deadline, "the target's claim never reached the sender's relay: {answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let times = timed_pauses(&mut sender, &session, WARM_UP, COMMANDS).await;
    target_task.abort();
    times
}

/// What two hops through nats-server cost without a relay, on the two
/// members' NATS server, as the floor of a cross-member round trip:
/// `core` a request and its reply over core NATS; `tier` the same request
/// answered the way a target's ack travels (published to a JetStream
/// stream, received by the requester from an ordered push consumer).
async fn nats_floor(url: &str) -> (Vec<Duration>, Vec<Duration>) {
    use async_nats::jetstream::{self, consumer, stream};
    let a = async_nats::connect(url).await.unwrap();
    let b = async_nats::connect(url).await.unwrap();
    let mut requests = a.subscribe("floor.core").await.unwrap();
    let mut asks = a.subscribe("floor.ask").await.unwrap();
    // Both subscriptions are on the server before anything is sent.
    a.flush().await.unwrap();
    let replier = a.clone();
    let core_task = tokio::spawn(async move {
        while let Some(m) = requests.next().await {
            if let Some(reply) = m.reply {
                replier.publish(reply, m.payload).await.unwrap();
            }
        }
    });
    let mut core = Vec::with_capacity(COMMANDS);
    let mut n = 0;
    let mut missed = 0;
    while n < WARM_UP + COMMANDS {
        let sent = Instant::now();
        match b.request("floor.core", "ping".into()).await {
            Ok(_) => {}
            // The responder's interest has not reached the server yet (or
            // was lost to a reconnect): not a sample; try again.
            Err(e) if e.kind() == async_nats::RequestErrorKind::NoResponders && missed < 100 => {
                missed += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            Err(e) => panic!("core NATS request: {e}"),
        }
        if n >= WARM_UP {
            core.push(sent.elapsed());
        }
        n += 1;
    }
    core_task.abort();
    let js_a = jetstream::new(a.clone());
    let js_b = jetstream::new(b.clone());
    let name = format!("FLOOR_{}", id(3));
    let config = stream::Config {
        name: name.clone(),
        subjects: vec![format!("floor.js.{name}")],
        storage: stream::StorageType::File,
        ..Default::default()
    };
    let js_stream = js_b.get_or_create_stream(config).await.unwrap();
    let ordered = consumer::push::OrderedConfig { deliver_subject: b.new_inbox(), ..Default::default() };
    let mut delivered = js_stream.create_consumer(ordered).await.unwrap().messages().await.unwrap();
    let subject = format!("floor.js.{name}");
    let js_task = tokio::spawn(async move {
        while let Some(m) = asks.next().await {
            let ack = js_a.publish(subject.clone(), m.payload).await.unwrap();
            ack.await.unwrap();
        }
    });
    b.flush().await.unwrap();
    let mut tier = Vec::with_capacity(COMMANDS);
    for n in 0..WARM_UP + COMMANDS {
        let sent = Instant::now();
        b.publish("floor.ask", format!("{n}").into()).await.unwrap();
        b.flush().await.unwrap();
        let m = tokio::time::timeout(Duration::from_secs(5), delivered.next()).await.unwrap().unwrap().unwrap();
        assert_eq!(m.payload, format!("{n}").as_bytes());
        if n >= WARM_UP {
            tier.push(sent.elapsed());
        }
    }
    js_task.abort();
    let _ = js_b.delete_stream(&name).await;
    (core, tier)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() {
    println!("aep-relay history homes, loopback ({} build)", if cfg!(debug_assertions) { "debug" } else { "release" });
    println!(
        "fan-out: {EVENTS} events from {PUBLISHERS} concurrent publishers (NDJSON batches of {BATCH}) to {SUBSCRIBERS} WebSocket subscribers"
    );
    println!(
        "command round trip: {COMMANDS} commands one at a time, sender -> relay -> target -> ack -> relay -> sender"
    );
    println!("load average: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
    // Optional argument: the setups after the first (memory, the baseline)
    // to run, e.g. `data-dir,two`.
    let only = std::env::args().nth(1).unwrap_or_default();
    let setups = [Setup::Memory, Setup::DataDir, Setup::OneMember, Setup::TwoMembers];
    let chosen: Vec<Setup> = setups
        .into_iter()
        .filter(|setup| {
            let key = match setup {
                Setup::Memory => "memory",
                Setup::DataDir => "data-dir",
                Setup::OneMember => "one",
                Setup::TwoMembers => "two",
            };
            *setup == Setup::Memory || only.is_empty() || only.split(',').any(|o| o == key)
        })
        .collect();
    // The setups take turns, ROUNDS times, so a busy machine slows them
    // alike: the rate is each setup's median round, the percentiles are
    // over all of its commands.
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); chosen.len()];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); chosen.len()];
    let (mut core, mut tier) = (Vec::new(), Vec::new());
    for round in 1..=ROUNDS {
        for (n, setup) in chosen.iter().enumerate() {
            let relays = Relays::start(*setup).await;
            rates[n].push(fan_out(&relays).await);
            times[n].extend(command_round_trips(&relays).await);
            if *setup == Setup::TwoMembers {
                let (c, t) = nats_floor(&relays.nats.as_ref().unwrap().url).await;
                core.extend(c);
                tier.extend(t);
            }
            relays.stop().await;
        }
        println!("  round {round} of {ROUNDS} done");
    }
    let rows: Vec<(Setup, f64, Duration, Duration)> = chosen
        .iter()
        .zip(rates.iter_mut().zip(times.iter_mut()))
        .map(|(setup, (rates, times))| {
            rates.sort_by(f64::total_cmp);
            times.sort();
            (*setup, rates[rates.len() / 2], percentile(times, 0.50), percentile(times, 0.99))
        })
        .collect();
    let (_, memory_rate, _, memory_p99) = rows[0];
    println!();
    println!(
        "{:<26} {:>12} {:>9} {:>10} {:>10} {:>10}",
        "setup", "events/s", "vs mem", "cmd p50", "cmd p99", "p99 vs mem"
    );
    for (setup, rate, p50, p99) in &rows {
        println!(
            "{:<26} {:>12.0} {:>8.0}% {:>7.3} ms {:>7.3} ms {:>9.2}x",
            setup.label(),
            rate,
            100.0 * rate / memory_rate,
            ms(*p50),
            ms(*p99),
            ms(*p99) / ms(memory_p99),
        );
    }
    for (label, times) in [("floor: NATS request/reply", &mut core), ("floor: NATS then JetStream", &mut tier)] {
        if times.is_empty() {
            continue;
        }
        times.sort();
        let (p50, p99) = (percentile(times, 0.50), percentile(times, 0.99));
        println!(
            "{:<26} {:>12} {:>9} {:>7.3} ms {:>7.3} ms {:>9.2}x",
            label,
            "",
            "",
            ms(p50),
            ms(p99),
            ms(p99) / ms(memory_p99)
        );
    }
    println!("load average: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
}
