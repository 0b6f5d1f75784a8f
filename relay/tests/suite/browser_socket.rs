//! Every refusal that ends a socket, as a browser sees it: Node's built-in
//! `WebSocket` (undici), which offers permessage-deflate exactly as
//! Chromium does and inflates what it receives asynchronously. Each refusal
//! must arrive whole: the `error` or `closing` frame, then the close frame
//! with its code and reason, never an unexplained 1006.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};

use aep_engine::protocol::ids::{Draft, Identity};
use aep_relay::auth::token_hash;
use serde_json::{json, Value};
use support::*;
use tokio::sync::mpsc;

/// A socket held by Node, driven over its stdio (tests/node/socket.mjs).
struct NodeSocket {
    child: Child,
    stdin: ChildStdin,
    /// Node's observations, one a line, read by a thread of their own.
    lines: mpsc::UnboundedReceiver<String>,
}

impl Drop for NodeSocket {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl NodeSocket {
    /// Opens `url` and waits until it is open over permessage-deflate.
    async fn open(url: &str) -> NodeSocket {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/socket.mjs");
        let mut child = Command::new("node")
            .arg("--experimental-websocket")
            .arg("--no-warnings")
            .arg(script)
            .arg(url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node (20 or later) on PATH: this test drives Node's built-in WebSocket");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (seen, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if seen.send(line).is_err() {
                    return;
                }
            }
        });
        let mut socket = NodeSocket { child, stdin, lines };
        let open = socket.next().await;
        assert_eq!(open["event"], "open", "{open}");
        let extensions = open["extensions"].as_str().unwrap_or_default();
        assert!(extensions.starts_with("permessage-deflate"), "Node negotiated compression: {open}");
        socket
    }

    async fn send(&mut self, frame: &Value) {
        let line = format!("{}\n", json!({"send": frame.to_string()}));
        self.stdin.write_all(line.as_bytes()).unwrap();
    }

    /// The next observation (open, message, error, close).
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(PROMPT, self.lines.recv())
            .await
            .expect("Node reports within the prompt window")
            .expect("Node reports before it exits");
        serde_json::from_str(&line).unwrap()
    }

    /// The next message as JSON; a close or error here fails the test.
    async fn message(&mut self) -> Value {
        let seen = self.next().await;
        assert_eq!(seen["event"], "message", "expected a frame, got {seen}");
        serde_json::from_str(seen["data"].as_str().unwrap()).unwrap()
    }

    /// The close as Node reports it: code and reason.
    async fn closed(mut self) -> (u64, String) {
        let seen = self.next().await;
        assert_eq!(seen["event"], "close", "expected the close, got {seen}");
        (seen["code"].as_u64().unwrap(), seen["reason"].as_str().unwrap().to_owned())
    }

    async fn hello(&mut self) -> Value {
        self.send(&json!({"type": "hello", "versions": ["0.1"], "role": "consumer"})).await;
        let hello = self.message().await;
        assert_eq!(hello["type"], "hello", "{hello}");
        hello
    }
}

fn socket_url(addr: impl std::fmt::Display, token: Option<&str>) -> String {
    match token {
        Some(token) => format!("ws://{addr}/socket?access_token={token}"),
        None => format!("ws://{addr}/socket"),
    }
}

#[tokio::test]
async fn a_first_frame_other_than_hello_is_refused_in_words() {
    let t = TestRelay::start(Posture::Token).await;
    let mut node = NodeSocket::open(&socket_url(t.relay.local_addr(), Some(TOKEN))).await;
    node.send(&json!({"type": "subscribe", "id": "early", "filter": {}})).await;
    let error = node.message().await;
    assert_eq!((error["type"].as_str(), error["code"].as_str()), (Some("error"), Some("hello-required")), "{error}");
    assert_eq!(node.closed().await, (1002, "hello-required".into()));
}

#[tokio::test]
async fn an_unspoken_version_is_refused_with_the_versions_spoken() {
    let t = TestRelay::start(Posture::Token).await;
    let mut node = NodeSocket::open(&socket_url(t.relay.local_addr(), Some(TOKEN))).await;
    node.send(&json!({"type": "hello", "versions": ["9.9"], "role": "consumer"})).await;
    let error = node.message().await;
    assert_eq!(error["code"], "version-unsupported", "{error}");
    assert_eq!(error["versions"], json!(["0.1"]));
    assert_eq!(node.closed().await, (1002, "version-unsupported".into()));
}

/// Without a token a socket may watch but never command: the refusal is
/// in-band, linked to the command, and the connection carries on.
#[tokio::test]
async fn an_unauthorized_command_is_refused_in_band() {
    let t = TestRelay::start(Posture::Open).await;
    let mut node = NodeSocket::open(&socket_url(t.relay.local_addr(), None)).await;
    node.hello().await;
    let command = Draft::new("control.pause")
        .session(session_name("live"))
        .data(json!({}))
        .build(&Identity::new("aep://h/agent/console", "console"), fresh_id(), now())
        .unwrap();
    node.send(&serde_json::from_str(command.raw()).unwrap()).await;
    let refusal = node.message().await;
    assert_eq!(
        (refusal["type"].as_str(), refusal["cause"].as_str(), refusal["code"].as_str()),
        (Some("error"), Some(command.id()), Some("unauthorized")),
        "{refusal}"
    );
    node.send(&json!({"type": "subscribe", "id": "after", "filter": {}})).await;
    assert_eq!(node.message().await["type"], "subscribed", "the connection survives the refusal");
}

#[tokio::test]
async fn a_revoked_principal_is_closed_with_1008() {
    let dir = std::env::temp_dir().join(format!("aep-node-{}", fresh_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("credentials");
    let bob = format!("bob-{}", fresh_id());
    std::fs::write(&file, format!("bob viewer {}\n", token_hash(&bob))).unwrap();
    let relay = RelayProcess::start(&["--credentials", file.to_str().unwrap()]);
    let mut node = NodeSocket::open(&socket_url(&relay.addr, Some(&bob))).await;
    node.hello().await;

    let emptied = dir.join("credentials.tmp");
    std::fs::write(&emptied, "# nobody\n").unwrap();
    std::fs::rename(&emptied, &file).unwrap();
    let closing = node.message().await;
    assert_eq!((closing["type"].as_str(), closing["reason"].as_str()), (Some("closing"), Some("revoked")), "{closing}");
    assert_eq!(node.closed().await, (1008, "revoked".into()));
}

#[tokio::test]
async fn an_oversized_message_is_closed_with_1009_and_the_limit() {
    let t = TestRelay::start_with(Posture::Token, |c| c.max_body = 1024).await;
    let mut node = NodeSocket::open(&socket_url(t.relay.local_addr(), Some(TOKEN))).await;
    node.hello().await;
    node.send(&json!({"type": "subscribe", "id": "x".repeat(2048), "filter": {}})).await;
    let closing = node.message().await;
    assert_eq!((closing["type"].as_str(), closing["reason"].as_str()), (Some("closing"), Some("message-too-big")));
    assert_eq!(node.closed().await, (1009, "message larger than 1024 bytes (max-body)".into()));
}

#[tokio::test]
async fn shutdown_says_closing_then_1001() {
    let t = TestRelay::start(Posture::Token).await;
    let mut node = NodeSocket::open(&socket_url(t.relay.local_addr(), Some(TOKEN))).await;
    node.hello().await;
    node.send(&json!({"type": "subscribe", "id": "all", "filter": {}})).await;
    assert_eq!(node.message().await["type"], "subscribed");
    let outcome = tokio::spawn(t.relay.shutdown());
    let closing = node.message().await;
    assert_eq!(
        (closing["type"].as_str(), closing["reason"].as_str()),
        (Some("closing"), Some("shutdown")),
        "{closing}"
    );
    assert_eq!(node.closed().await, (1001, "shutdown".into()));
    assert_eq!(outcome.await.unwrap(), aep_relay::ShutdownOutcome::Drained);
}
