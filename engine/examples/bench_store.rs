//! Folds a generated 100 000-event stream through the store and reports
//! throughput and the store's peak heap.
//!
//! The stream mixes 1 024 sessions from 40 agents: runs ending every way,
//! tool calls, attention arcs (options and forms; answered, timed out,
//! routed), commands from several consoles with acks and outcomes, pause
//! and cancel, unknown vendor types, agent heartbeats, and about 5 %
//! redeliveries. Sessions interleave at random, as on a shared relay.
//!
//! Then one long session (an agent that ran all day, folded unbounded):
//! 5 000, 20 000 and 80 000 events with a command and its ack every 20
//! events. Its rate should hold as the session grows; the ratio of the
//! longest to the shortest is printed.
//!
//! Each rate is the best of `AEP_BENCH_ROUNDS` rounds (default 5).
//!
//! Run: `cargo run --release -p aep-engine --example bench_store` (`AEP_BENCH_EVENTS=n`
//! folds a shorter stream, e.g. under a profiler).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use aep_engine::protocol::ids::ulid;
use aep_engine::store::{Folded, Store, StoreConfig};
use aep_engine::{Event, UnixMs};
use serde_json::{json, Value};

/// Counts live and peak heap bytes while [`COUNTING`] is on: the memory
/// round counts, the timed rounds do not pay for counting.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() && COUNTING.load(Ordering::Relaxed) {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() && COUNTING.load(Ordering::Relaxed) {
            grew(new_size);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const EVENTS: usize = 100_000;
const SESSIONS: usize = 1_024;
const AGENTS: usize = 40;
const T0: u64 = 1_783_000_000_000;

/// Deterministic inputs from the engine's seeded generator.
struct Rng(aep_engine::rng::Seeded);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Writes one session's events in emission order.
struct Script<'a> {
    rng: &'a mut Rng,
    source: String,
    agent: String,
    session: String,
    seq: u64,
    t: u64,
    out: VecDeque<String>,
}

impl Script<'_> {
    fn id(&mut self) -> String {
        self.t += 1 + self.rng.below(400);
        ulid(UnixMs(T0 + self.t), u128::from(self.rng.next()))
    }

    fn time(&self) -> String {
        UnixMs(T0 + self.t).to_rfc3339()
    }

    /// An owner event; returns its id.
    fn owner(&mut self, ty: &str, extra: Value) -> String {
        let id = self.id();
        let mut e = json!({"aep": "0.1", "id": id, "type": ty, "time": self.time(), "source": self.source,
                           "agent": self.agent, "session": self.session, "seq": self.seq});
        self.seq += 1;
        merge(&mut e, extra);
        self.out.push_back(e.to_string());
        id
    }

    /// A seq-less event from another party; returns its id.
    fn foreign(&mut self, ty: &str, who: &str, extra: Value) -> String {
        let id = self.id();
        let mut e = json!({"aep": "0.1", "id": id, "type": ty, "time": self.time(),
                           "source": format!("aep://consoles/agent/{who}"), "agent": who, "session": self.session});
        merge(&mut e, extra);
        self.out.push_back(e.to_string());
        id
    }

    fn run(&mut self, n: u64) {
        let run = format!("r{n}");
        let started = self.owner("run.started", json!({"run": run, "data": {"trigger": "user"}}));
        let mut last = started.clone();
        for k in 0..2 + self.rng.below(5) {
            let tool = ["Bash", "Read", "Write", "Grep"][self.rng.below(4) as usize];
            let call = format!("t{n}_{k}");
            let req = self.owner(
                "tool.requested",
                json!({"run": run, "subject": tool, "cause": last, "data": {"tool": {"name": tool, "call_id": call}}}),
            );
            let done = if self.rng.chance(90) { "tool.completed" } else { "tool.failed" };
            last = self.owner(done, json!({"run": run, "subject": tool, "cause": req, "data": {"tool": {"name": tool, "call_id": call}, "error": {"type": "io"}}}));
        }
        if self.rng.chance(5) {
            self.owner("x.acme.session.mood", json!({"run": run, "acmeregion": "eu-1"}));
        }
        if self.rng.chance(50) {
            self.attention(&run, &last);
        }
        if self.rng.chance(8) {
            let console = format!("console-{}", self.rng.below(3));
            let pause = self.foreign("control.pause", &console, json!({}));
            let ack = self.owner("control.accepted", json!({"cause": pause}));
            self.owner("progress.status", json!({"cause": ack, "data": {"phase": "paused"}}));
            let resume = self.foreign("control.resume", &console, json!({}));
            self.owner("control.accepted", json!({"cause": resume}));
        }
        if self.rng.chance(10) {
            let cancel = self.foreign("control.cancel", "console-0", json!({"run": run, "data": {"scope": "run"}}));
            self.owner("control.accepted", json!({"cause": cancel}));
            self.owner("run.cancelled", json!({"run": run, "cause": cancel, "data": {"by": "control"}}));
        } else if self.rng.chance(10) {
            self.owner("run.failed", json!({"run": run, "cause": last, "data": {"reason": "tool_error"}}));
        } else {
            self.owner("run.finished", json!({"run": run, "cause": started, "data": {"duration_ms": 1000}}));
        }
    }

    fn attention(&mut self, run: &str, cause: &str) {
        let form = self.rng.chance(20);
        let data = if form {
            json!({"kind": "form", "prompt": "Configure", "respond_via": ["control"], "fields": [
                {"id": "name", "type": "string", "label": "Name", "required": true},
                {"id": "db", "type": "select", "label": "DB", "other": true, "choices": [{"id": "1", "label": "pg"}]}]})
        } else {
            json!({"kind": "permission", "prompt": "Permission requested: Bash", "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]})
        };
        let severity = ["notice", "warning", "error"][self.rng.below(3) as usize];
        let req = self.owner(
            "attention.requested",
            json!({"run": run, "cause": cause, "severity": severity, "capture": "redacted", "data": data}),
        );
        if self.rng.chance(60) {
            self.foreign("attention.routed", "telegram-sink", json!({"subject": req, "cause": req}));
        }
        if self.rng.chance(80) {
            let console = format!("console-{}", self.rng.below(3));
            let answer =
                if form { json!({"values": {"name": "svc", "db": "MariaDB"}}) } else { json!({"option": "allow"}) };
            let cmd = self.foreign(
                "control.attention.respond",
                &console,
                json!({"subject": req, "cause": req, "data": {"answer": answer}}),
            );
            self.owner("control.accepted", json!({"cause": cmd}));
            let ans = self.owner("attention.answered", json!({"subject": req, "cause": cmd, "capture": "redacted", "data": {"answer": answer, "via": "control", "by": console}}));
            self.owner("attention.resolved", json!({"subject": req, "cause": ans, "data": {"resolution": "answered"}}));
        } else {
            self.owner("attention.timeout", json!({"subject": req, "cause": req, "data": {"after_ms": 30000}}));
        }
    }
}

fn merge(into: &mut Value, extra: Value) {
    if let (Value::Object(a), Value::Object(b)) = (into, extra) {
        a.extend(b);
    }
}

/// The whole stream, interleaved, with redeliveries and heartbeats.
fn generate(rng: &mut Rng) -> Vec<String> {
    let mut scripts: Vec<VecDeque<String>> = (0..SESSIONS)
        .map(|s| {
            let agent = format!("agent-{}", s % AGENTS);
            let session = format!("s{s}");
            let mut script = Script {
                source: format!("aep://host-{}/agent/{agent}/session/{session}", s % 10),
                agent,
                session,
                seq: 0,
                t: rng.below(60_000),
                out: VecDeque::new(),
                rng: &mut *rng,
            };
            script.owner("session.started", json!({"data": {"client": {"name": "bench"}}}));
            for n in 0..8 + script.rng.below(8) {
                script.run(n);
            }
            if script.rng.chance(70) {
                script.owner("session.ended", json!({"data": {"reason": "normal"}}));
            }
            script.out
        })
        .collect();
    let mut live: Vec<usize> = (0..SESSIONS).collect();
    let mut stream: Vec<String> = Vec::with_capacity(events());
    let events = events();
    while stream.len() < events && !live.is_empty() {
        let at = rng.below(live.len() as u64) as usize;
        match scripts[live[at]].pop_front() {
            Some(e) => stream.push(e),
            None => {
                live.swap_remove(at);
                continue;
            }
        }
        if rng.chance(5) && stream.len() > 1 {
            let again = stream[rng.below(stream.len() as u64) as usize].clone();
            stream.push(again);
        }
        if rng.chance(1) {
            let agent = format!("agent-{}", rng.below(AGENTS as u64));
            let id = ulid(UnixMs(T0 + stream.len() as u64), u128::from(rng.next()));
            stream.push(
                json!({"aep": "0.1", "id": id, "type": "agent.heartbeat", "time": UnixMs(T0).to_rfc3339(),
                       "source": format!("aep://host-0/agent/{agent}"), "agent": agent, "data": {"tick": stream.len()}})
                .to_string(),
            );
        }
    }
    stream.truncate(events);
    stream
}

/// How many events to fold: `EVENTS` unless `AEP_BENCH_EVENTS` says.
fn events() -> usize {
    std::env::var("AEP_BENCH_EVENTS").ok().and_then(|n| n.parse().ok()).unwrap_or(EVENTS)
}

/// CPU time this thread has run, in ns (Linux); the machine may be shared,
/// so rates are reported against CPU time as well as wall time.
fn cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Events per second of wall time and, when known, of CPU time.
fn rates(events: usize, Best { wall, cpu }: Best) -> String {
    let per = |secs: f64| events as f64 / secs;
    match cpu {
        Some(ns) => format!(
            "{:>9.0} events/s wall, {:>9.0} events/s CPU ({:.0} ms CPU)",
            per(wall.as_secs_f64()),
            per(ns as f64 / 1e9),
            ns as f64 / 1e6
        ),
        None => format!("{:>9.0} events/s wall ({:.0} ms)", per(wall.as_secs_f64()), wall.as_secs_f64() * 1e3),
    }
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The fastest of several timings: on a shared machine a slower round
/// measures the neighbours, not the fold.
#[derive(Clone, Copy)]
struct Best {
    wall: std::time::Duration,
    cpu: Option<u64>,
}

impl Best {
    const NONE: Best = Best { wall: std::time::Duration::MAX, cpu: Some(u64::MAX) };

    fn keep(&mut self, wall: std::time::Duration, cpu: Option<u64>) {
        self.wall = self.wall.min(wall);
        self.cpu = self.cpu.zip(cpu).map(|(a, b)| a.min(b));
    }

    /// Runs `f` once, keeping its wall and CPU time if they are the best.
    fn time(&mut self, f: impl FnOnce()) {
        let cpu0 = cpu_ns();
        let started = Instant::now();
        f();
        self.keep(started.elapsed(), cpu_ns().zip(cpu0).map(|(b, a)| b - a));
    }
}

/// Rounds per measurement (`AEP_BENCH_ROUNDS`, default 5).
fn rounds() -> usize {
    std::env::var("AEP_BENCH_ROUNDS").ok().and_then(|n| n.parse().ok()).unwrap_or(5).max(1)
}

/// Parses and folds `lines` into a new store, as a driver does.
fn fold_all(config: &StoreConfig, lines: &[&str]) -> (Store, [u64; 3]) {
    let mut store = Store::new(config.clone());
    let mut applied = [0u64; 3];
    for (i, line) in lines.iter().enumerate() {
        let event = Event::parse(line).expect("generated events are valid");
        let slot = match store.apply(event, Some("relay-a"), UnixMs(T0 + i as u64)) {
            Folded::New => 0,
            Folded::Duplicate => 1,
            Folded::Collision => 2,
        };
        applied[slot] += 1;
        if i % 64 == 0 {
            while store.poll_change().is_some() {}
        }
    }
    (store, applied)
}

fn run(name: &str, config: StoreConfig, lines: &[&str]) {
    // Memory first, in a round of its own with the allocator counting: the
    // peak is the store's own memory plus one event in flight.
    let baseline = LIVE.load(Ordering::Relaxed);
    PEAK.store(baseline, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    let (store, [new, dup, collision]) = fold_all(&config, lines);
    let peak = PEAK.load(Ordering::Relaxed) - baseline;
    let held = LIVE.load(Ordering::Relaxed) - baseline;
    let counts = store.counts();
    let inbox = store.inbox().len();
    let flagged: Vec<String> = store.violations().map(|v| v.to_string()).collect();
    drop(store);
    COUNTING.store(false, Ordering::Relaxed);

    // Parse and fold together, timed.
    let mut with_parse = Best::NONE;
    for _ in 0..rounds() {
        let mut folded = None;
        with_parse.time(|| folded = Some(fold_all(&config, lines)));
        drop(folded);
    }

    // Parse alone, then fold alone: events are parsed a chunk at a time
    // (untimed) and each chunk is folded (timed), so the fold sees events
    // as fresh in cache as a driver hands them over.
    let mut parse_only = Best::NONE;
    let mut fold_only = Best::NONE;
    for _ in 0..rounds() {
        parse_only.time(|| {
            for line in lines {
                std::hint::black_box(Event::parse(line).expect("valid"));
            }
        });

        let mut store = Store::new(config.clone());
        let mut wall = std::time::Duration::ZERO;
        for (c, chunk) in lines.chunks(1_000).enumerate() {
            let events: Vec<Event> = chunk.iter().map(|l| Event::parse(l).expect("valid")).collect();
            let started = Instant::now();
            for (i, event) in events.into_iter().enumerate() {
                store.apply(event, Some("relay-a"), UnixMs(T0 + (c * 1_000 + i) as u64));
                if i % 64 == 0 {
                    while store.poll_change().is_some() {}
                }
            }
            wall += started.elapsed();
        }
        // Wall time only: the kernel's CPU clock is too coarse to sum over
        // a hundred short chunks.
        fold_only.keep(wall, None);
    }

    println!("== {name} (best of {} rounds)", rounds());
    println!("  parse only   : {}", rates(lines.len(), parse_only));
    println!("  parse + fold : {}", rates(lines.len(), with_parse));
    println!("  fold only    : {}", rates(lines.len(), fold_only));
    println!("  peak heap    : {:.1} MiB (held at end {:.1} MiB)", mib(peak), mib(held));
    println!("  per event    : {:.0} bytes of peak heap per retained event", peak as f64 / counts.events.max(1) as f64);
    println!("  applied      : {new} new, {dup} duplicate, {collision} collision");
    println!(
        "  held         : {} sessions, {} events, {} runs, {} cards ({} pending, inbox {inbox}), {} commands, {} agents, {} unattached, {} ids",
        counts.sessions, counts.events, counts.runs, counts.cards, counts.pending, counts.commands, counts.agents, counts.unattached, counts.seen_ids
    );
    println!("  violations   : {}", counts.violations);
    for v in flagged.iter().take(5) {
        println!("    {v}");
    }
}

fn main() {
    let mut rng = Rng(aep_engine::rng::Seeded::new(42));
    // One JSONL text, as a log file or a socket's buffer holds a stream:
    // each line is read where it lies, after the one before it.
    let jsonl = generate(&mut rng).join("\n");
    let lines: Vec<&str> = jsonl.split('\n').collect();
    let bytes: usize = lines.iter().map(|l| l.len()).sum();
    let sessions: std::collections::HashSet<&str> =
        lines.iter().filter_map(|l| l.split("\"session\":\"").nth(1)?.split('"').next()).collect();
    println!("stream: {} events, {:.1} MiB of JSON, {} sessions", lines.len(), mib(bytes), sessions.len());
    run("default bounds", StoreConfig::default(), &lines);
    run("unbounded (every session and event held)", StoreConfig::unbounded(), &lines);
    long_session();
}

/// One session's events: tool calls, and every 20 a pause from a console
/// and the agent's ack.
fn long_session_lines(n: usize) -> Vec<String> {
    let source = "aep://host-0/agent/builder/session/all-day";
    let at = |i: usize| UnixMs(T0 + i as u64 * 10).to_rfc3339();
    let mut lines = Vec::with_capacity(n);
    let (mut seq, mut i) = (0u64, 0usize);
    while lines.len() < n {
        i += 1;
        let call = json!({ "aep": "0.1", "id": format!("T{i}"), "type": "tool.requested", "time": at(i), "source": source,
            "agent": "builder", "session": "all-day", "seq": seq, "run": "r1",
            "data": { "tool": { "name": "Bash", "call_id": format!("c{i}") } } });
        lines.push(call.to_string());
        seq += 1;
        if i % 20 == 0 {
            let pause = json!({ "aep": "0.1", "id": format!("P{i}"), "type": "control.pause", "time": at(i),
                "source": "aep://consoles/agent/console-0", "agent": "console-0", "session": "all-day" });
            let ack = json!({ "aep": "0.1", "id": format!("A{i}"), "type": "control.accepted", "time": at(i), "source": source,
                "agent": "builder", "session": "all-day", "seq": seq, "cause": format!("P{i}") });
            lines.push(pause.to_string());
            lines.push(ack.to_string());
            seq += 1;
        }
    }
    lines
}

fn long_session() {
    println!("== one long session (unbounded; a command and its ack every 20 events)");
    let mut rates = Vec::new();
    for n in [5_000, 20_000, 80_000] {
        let events: Vec<Event> = long_session_lines(n).iter().map(|l| Event::parse(l).expect("valid")).collect();
        let mut store = Store::new(StoreConfig::unbounded());
        let started = Instant::now();
        for (i, event) in events.into_iter().enumerate() {
            store.apply(event, Some("relay-a"), UnixMs(T0 + i as u64));
        }
        let rate = n as f64 / started.elapsed().as_secs_f64();
        println!("  {n:>6} events : {rate:>9.0} events/s (fold only)");
        rates.push(rate);
    }
    println!("  80 000 / 5 000 rate ratio: {:.2} (1.00 is linear)", rates[2] / rates[0]);
}
