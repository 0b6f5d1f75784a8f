//! The audit trail's query latency and its cost to ingest. Run in release:
//!
//! ```sh
//! cargo run --release -p aep-relay --example bench_audit
//! ```
//!
//! * query: 1 000 000 commands (each with its ack, 2 000 000 records) by
//!   ten principals across four agents are written to an audit trail, then
//!   a relay serves it and `GET /audit` is timed (p50/p99 of 200 queries)
//!   for a one-day range and for one principal, as JSONL with the chain
//!   and as CSV, and for a principal with one command in a thousand;
//! * ingest: events POSTed as NDJSON to two relays with `--data-dir`, one
//!   keeping the audit trail and one not, alternating, in one run.

use std::time::{Duration, Instant};

use aep_engine::protocol::ids::{Draft, Identity};
use aep_relay::audit::{Audit, Bounds};
use aep_relay::auth::Token;
use aep_relay::{serve, Config, Relay};
use serde_json::json;

mod common;
use common::{id, now, percentile, post_ndjson, TOKEN};

const COMMANDS: u64 = 1_000_000;
const QUERIES: usize = 200;
const INGEST_EVENTS: u64 = 100_000;
const BATCH: u64 = 1_000;

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("aep-bench-audit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Fills an audit trail the way a relay does: each command forwarded,
/// then its target's ack.
fn fill(dir: &std::path::Path) {
    let audit = Audit::open(dir, Bounds { retention: Duration::from_secs(365 * 86_400), max_bytes: u64::MAX }).unwrap();
    let started = Instant::now();
    for n in 0..COMMANDS {
        // One command in a thousand is `rare`'s; the rest spread over nine.
        let principal = if n % 1_000 == 0 { "rare".to_owned() } else { format!("operator{}", n % 9) };
        let agent = format!("agent{}", n % 4);
        let session = format!("session-{}", n % 400);
        let sender = Identity::new(format!("aep://console/agent/{principal}"), &principal);
        let command = Draft::new("control.attention.respond")
            .session(&session)
            .subject(id(u128::from(n) << 1))
            .data(json!({"answer": {"option": "allow"}}))
            .build(&sender, id(u128::from(n) << 1 | 1), now())
            .unwrap();
        audit.forwarded(&command, &principal);
        let target = Identity::new(format!("aep://host/agent/{agent}/session/{session}"), &agent);
        let ack = Draft::new("control.accepted")
            .session(&session)
            .seq(n)
            .cause(command.id())
            .data(json!({}))
            .build(&target, id(u128::from(n) << 2 | 2), now())
            .unwrap();
        audit.saw(&ack);
        if n % 100_000 == 99_999 {
            audit.flush();
            eprintln!("  {} commands written ({:.0} s)", n + 1, started.elapsed().as_secs_f64());
        }
    }
    audit.flush();
    println!(
        "filled: {COMMANDS} commands, {} records in {:.0} s ({:.0} commands/s)",
        audit.len(),
        started.elapsed().as_secs_f64(),
        COMMANDS as f64 / started.elapsed().as_secs_f64()
    );
}

async fn relay(dir: Option<&std::path::Path>, audit: bool) -> Relay {
    let config = Config {
        token: Token::new(TOKEN),
        data_dir: dir.map(std::path::Path::to_path_buf),
        audit_retention: if audit { Duration::from_secs(365 * 86_400) } else { Duration::ZERO },
        audit_bytes: u64::MAX,
        ..Config::default()
    };
    serve(config, tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()).await.unwrap()
}

/// p50 and p99 of `GET /audit?{query}`, and the size of the last answer:
/// bytes, lines, commands.
async fn time_query(http: &reqwest::Client, base: &str, query: &str) -> (Duration, Duration, usize, usize, usize) {
    let mut took = Vec::with_capacity(QUERIES);
    let (mut bytes, mut lines, mut commands) = (0, 0, 0);
    for _ in 0..QUERIES {
        let started = Instant::now();
        let response = http.get(format!("{base}/audit?{query}")).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let body = response.text().await.unwrap();
        took.push(started.elapsed());
        bytes = body.len();
        lines = body.lines().count();
        commands = if query.contains("format=csv") {
            lines - 1
        } else {
            body.lines().filter(|l| l.contains(r#""kind":"command""#) && l.contains(r#""event":"#)).count()
        };
    }
    took.sort();
    (percentile(&took, 0.50), percentile(&took, 0.99), bytes, lines, commands)
}

/// Events per second POSTed to a relay with `--data-dir` (one session,
/// batches of a thousand, each answered once durable).
async fn ingest(relay: &Relay, round: u64) -> f64 {
    let http = reqwest::Client::new();
    let session = format!("ingest-{round}");
    let who = Identity::new(format!("aep://bench/agent/publisher/session/{session}"), "publisher");
    let bodies: Vec<String> = (0..INGEST_EVENTS / BATCH)
        .map(|b| {
            (b * BATCH..(b + 1) * BATCH)
                .map(|seq| {
                    let e = Draft::new("progress.status").session(&session).seq(seq).data(json!({"phase": "working"}));
                    format!("{}\n", e.build(&who, id(u128::from(seq) | u128::from(round) << 64), now()).unwrap().raw())
                })
                .collect()
        })
        .collect();
    let url = format!("{}/events", relay.base_url());
    let started = Instant::now();
    for body in bodies {
        post_ndjson(&http, &url, body).await;
    }
    INGEST_EVENTS as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let dir = scratch("query");
    println!("== audit query over {COMMANDS} stored commands");
    fill(&dir);
    let served = relay(Some(&dir), true).await;
    let base = served.base_url();
    let http = reqwest::Client::new();
    let day = now().0 - 86_400_000;
    let cases = [
        ("one-day range, JSONL with chain", format!("from={day}")),
        ("one-day range, CSV", format!("from={day}&format=csv")),
        ("one principal (1 in 9), JSONL with chain", format!("from={day}&principal=operator3")),
        ("one principal (1 in 9), CSV", format!("from={day}&principal=operator3&format=csv")),
        ("one agent (filter on the time index), CSV", format!("from={day}&agent=agent2&format=csv")),
        ("rare principal (1 in 1000), JSONL with chain", format!("from={day}&principal=rare")),
        ("rare principal (1 in 1000), CSV", format!("from={day}&principal=rare&format=csv")),
    ];
    for (name, query) in &cases {
        let (p50, p99, bytes, lines, commands) = time_query(&http, &base, query).await;
        println!(
            "{name:<48} p50 {:>7.2} ms  p99 {:>7.2} ms  ({commands} commands a page: {lines} lines, {} KiB)",
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            bytes / 1024
        );
    }
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);

    println!("== ingest with --data-dir, audit trail on vs off ({INGEST_EVENTS} events a round, alternating)");
    let (on_dir, off_dir) = (scratch("on"), scratch("off"));
    let on = relay(Some(&on_dir), true).await;
    let off = relay(Some(&off_dir), false).await;
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for round in 0..6 {
        without.push(ingest(&off, round).await);
        with.push(ingest(&on, round).await);
    }
    let mean = |v: &[f64]| v[1..].iter().sum::<f64>() / (v.len() - 1) as f64;
    let (with, without) = (mean(&with), mean(&without));
    println!("audit off: {without:>9.0} events/s");
    println!(
        "audit on:  {with:>9.0} events/s  ({:.1} % of off; first round of each is warm-up)",
        100.0 * with / without
    );
    let _ = (std::fs::remove_dir_all(&on_dir), std::fs::remove_dir_all(&off_dir));
}
