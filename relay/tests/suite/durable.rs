//! Durable history (`--data-dir`): the real binary is killed with SIGKILL
//! and restarted on the same directory; every event it answered 202 for is
//! replayed byte for byte, and a resume continues exactly. Without
//! `--data-dir` the loss is reported (`replay-exhausted`), never silent.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use aep_engine::protocol::ids::Draft;
use aep_engine::Event;
use serde_json::{json, Value};
use support::*;

struct Binary {
    process: RelayProcess,
    base: String,
}

impl Binary {
    fn start(data_dir: Option<&Path>, extra: &[&str]) -> Binary {
        let dir = data_dir.map(|d| d.to_str().expect("a UTF-8 data directory"));
        let mut args: Vec<&str> = dir.map(|d| vec!["--data-dir", d]).unwrap_or_default();
        args.extend_from_slice(extra);
        let process = RelayProcess::start(&args);
        let base = process.base();
        Binary { process, base }
    }

    /// SIGKILL: no shutdown path runs.
    fn kill9(self) {
        self.process.kill9();
    }

    async fn post(&self, events: &[Event]) -> reqwest::StatusCode {
        let url = format!("{}/events", self.base);
        post_ndjson(&reqwest::Client::new(), &url, None, ndjson(events)).send().await.unwrap().status()
    }

    /// A finished replay of `session`: its data lines and comment lines.
    async fn replay(&self, session: &str, from: &str) -> (Vec<String>, Vec<String>) {
        let filter = serde_urlencoded::to_string([("filter", json!({ "session": session }).to_string())]).unwrap();
        let from = serde_urlencoded::to_string([("from", from)]).unwrap();
        let body =
            reqwest::get(format!("{}/stream?live=0&{filter}&{from}", self.base)).await.unwrap().text().await.unwrap();
        let data = body.lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_owned).collect();
        let comments = body.lines().filter(|l| l.starts_with(": replay-exhausted")).map(str::to_owned).collect();
        (data, comments)
    }
}

fn positions(session: &str, seq: u64) -> String {
    json!([{ "session": session, "epoch": 0, "seq": seq }]).to_string()
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aep-relay-{name}-{}", fresh_id().to_lowercase()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[tokio::test]
async fn kill_9_loses_nothing_that_was_accepted() {
    let dir = fresh_dir("durable");
    let s = session_name("durable");
    let other = session_name("durable-other");
    let relay = Binary::start(Some(&dir), &[]);
    let mut accepted: Vec<Event> = Vec::new();
    for batch in 0..10u64 {
        let events: Vec<Event> = (0..10).map(|i| event("progress.status", &s, 0, batch * 10 + i)).collect();
        assert_eq!(relay.post(&events).await, 202);
        accepted.extend(events);
        if batch == 4 {
            // A router's hop, seq-less: it sits after seq 49.
            let routed = Draft::new("attention.routed")
                .session(&s)
                .subject(fresh_id())
                .data(json!({"to": "slack"}))
                .build(&sender(), fresh_id(), now())
                .unwrap();
            assert_eq!(relay.post(std::slice::from_ref(&routed)).await, 202);
            accepted.push(routed);
        }
    }
    assert_eq!(relay.post(&[event("session.started", &other, 0, 0)]).await, 202);
    relay.kill9();

    let relay = Binary::start(Some(&dir), &[]);
    let expected: Vec<String> = accepted.iter().map(|e| e.raw().to_owned()).collect();
    let (all, marks) = relay.replay(&s, "all").await;
    assert!(marks.is_empty());
    assert_eq!(all.len(), expected.len(), "every accepted event is back");
    assert_eq!(all, expected, "byte-identical, in order");
    let (after_49, marks) = relay.replay(&s, &positions(&s, 49)).await;
    assert!(marks.is_empty(), "{marks:?}");
    assert_eq!(after_49, expected[50..], "from seq 49: the hop, then seq 50 on");
    let (after_48, _) = relay.replay(&s, &positions(&s, 48)).await;
    assert_eq!(after_48, expected[49..]);
    let (after_99, marks) = relay.replay(&s, &positions(&s, 99)).await;
    assert!(after_99.is_empty() && marks.is_empty(), "caught up: nothing, and nothing lost");
    assert_eq!(relay.replay(&other, "all").await.0.len(), 1);

    // New events after the restart continue the same history, and a second
    // crash keeps them too.
    let more = event("progress.status", &s, 0, 100);
    assert_eq!(relay.post(std::slice::from_ref(&more)).await, 202);
    relay.kill9();
    let relay = Binary::start(Some(&dir), &[]);
    let (after_99, _) = relay.replay(&s, &positions(&s, 99)).await;
    assert_eq!(after_99, vec![more.raw().to_owned()]);
    relay.kill9();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn durable_history_keeps_the_same_bounds_and_eviction_marks() {
    let dir = fresh_dir("bounded");
    let s = session_name("bounded");
    let relay = Binary::start(Some(&dir), &["--buffer", "20"]);
    let events: Vec<Event> = (0..50).map(|i| event("progress.status", &s, 0, i)).collect();
    assert_eq!(relay.post(&events).await, 202);
    relay.kill9();
    let relay = Binary::start(Some(&dir), &["--buffer", "20"]);
    let (all, _) = relay.replay(&s, "all").await;
    let expected: Vec<String> = events[30..].iter().map(|e| e.raw().to_owned()).collect();
    assert_eq!(all, expected, "the newest 20, as before the crash");
    let (from_10, marks) = relay.replay(&s, &positions(&s, 10)).await;
    assert_eq!(marks, vec![format!(": replay-exhausted {s} 0:30")], "the eviction mark survives");
    assert_eq!(from_10, expected);
    relay.kill9();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn without_a_data_dir_a_restart_reports_what_it_lost() {
    let s = session_name("volatile");
    let relay = Binary::start(None, &[]);
    let events: Vec<Event> = (0..10).map(|i| event("progress.status", &s, 0, i)).collect();
    assert_eq!(relay.post(&events).await, 202);
    relay.kill9();
    let relay = Binary::start(None, &[]);
    let (all, _) = relay.replay(&s, "all").await;
    assert!(all.is_empty(), "history was in memory only");
    // Holding nothing of the session, the relay has no earliest position
    // to name; a consumer that had everything lost nothing.
    let (after_4, marks) = relay.replay(&s, &positions(&s, 4)).await;
    assert!(after_4.is_empty() && marks.is_empty(), "{marks:?}");
    // Once the emitter carries on, the loss behind what is held is said.
    let more = event("progress.status", &s, 0, 10);
    assert_eq!(relay.post(std::slice::from_ref(&more)).await, 202);
    let (after_4, marks) = relay.replay(&s, &positions(&s, 4)).await;
    assert_eq!(after_4, vec![more.raw().to_owned()]);
    assert_eq!(marks, vec![format!(": replay-exhausted {s} 0:10")], "the loss is said, not silent");
    relay.kill9();
}

#[test]
fn an_unusable_data_dir_is_refused_at_startup() {
    let file = std::env::temp_dir().join(format!("aep-relay-not-a-dir-{}", fresh_id().to_lowercase()));
    std::fs::write(&file, b"x").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_aep-relay"))
        .args(["--listen", "127.0.0.1:0", "--static-dir", "/nonexistent-console", "--data-dir"])
        .arg(&file)
        .env_remove("AEP_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("durable history"), "{out:?}");
    let _ = std::fs::remove_file(&file);
    let _: Option<Value> = None;
}

impl Binary {
    async fn socket(&self, role: &str) -> Ws {
        let url = format!("{}/socket?access_token={TOKEN}", self.base.replace("http://", "ws://"));
        let mut ws = Ws::connect(&url).await.unwrap();
        ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": role, "identity": {"agent": AGENT}, "capabilities": {}}))
            .await;
        assert_eq!(ws.recv_json().await["type"], "hello");
        ws
    }
}

/// A forwarded command and the target's ack survive a crash in their
/// session's history, in the order they arrived.
#[tokio::test]
async fn a_forwarded_command_and_its_ack_survive_kill_9() {
    let dir = fresh_dir("commands");
    let s = session_name("durable-control");
    let relay = Binary::start(Some(&dir), &["--token", TOKEN]);
    let mut target = relay.socket("emitter").await;
    let opening = event("session.started", &s, 0, 0);
    target.send_text(opening.raw()).await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let mut sender = relay.socket("consumer").await;
    let cmd = command("control.pause", &s, json!({}));
    sender.send_text(cmd.raw()).await;
    assert_eq!(target.recv_text(PROMPT).await.unwrap(), cmd.raw(), "forwarded");
    let ack = Draft::new("control.accepted")
        .session(&s)
        .seq(1)
        .cause(cmd.id())
        .build(&emitter(&s), fresh_id(), now())
        .unwrap();
    target.send_text(ack.raw()).await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    relay.kill9();

    let relay = Binary::start(Some(&dir), &["--token", TOKEN]);
    let filter = serde_urlencoded::to_string([("filter", json!({ "session": s }).to_string())]).unwrap();
    let body = reqwest::Client::new()
        .get(format!("{}/stream?live=0&from=all&{filter}", relay.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let data: Vec<&str> = body.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
    assert_eq!(data, vec![opening.raw(), cmd.raw(), ack.raw()], "{body}");
    relay.kill9();
    let _ = std::fs::remove_dir_all(&dir);
}
