//! HTTP connections are bounded in time and number: half-sent headers, a
//! body that never ends and an idle keep-alive connection are all closed
//! (with 408 where a request is under way), and beyond the connection cap
//! the relay answers 503 instead of holding the socket.

use crate::support;

use std::time::Duration;

use aep_engine::protocol::ids::Draft;
use aep_engine::Severity;
use serde_json::json;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Reads until the server closes; the text read, or `None` if it is still
/// open after `within`.
async fn read_until_closed(tcp: &mut TcpStream, within: Duration) -> Option<String> {
    let deadline = Instant::now() + within;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(String::from_utf8_lossy(&got).into_owned()),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

async fn relay() -> TestRelay {
    TestRelay::start_with(Posture::Open, |c| {
        c.header_read_timeout = Duration::from_millis(500);
        c.body_timeout = Duration::from_millis(500);
        c.heartbeat = Duration::from_millis(300);
        c.http_idle_timeout = Duration::from_millis(1_500);
        c.max_connections = 8;
        c.drain_timeout = Duration::from_secs(2);
    })
    .await
}

#[tokio::test]
async fn half_sent_headers_are_cut_off() {
    let t = relay().await;
    let mut tcp = TcpStream::connect(t.relay.local_addr()).await.unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").await.unwrap();
    let started = Instant::now();
    let answer = read_until_closed(&mut tcp, Duration::from_secs(3)).await.expect("closed within 3 s");
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.contains(&format!("content-length: {}", body.len())), "{answer}");
}

#[tokio::test]
async fn a_body_that_never_ends_is_answered_408() {
    let t = relay().await;
    let mut tcp = TcpStream::connect(t.relay.local_addr()).await.unwrap();
    let head = "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nAEP-Version: 0.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(b"5\r\n{\"a\":\r\n").await.unwrap();
    let answer = read_until_closed(&mut tcp, Duration::from_secs(3)).await.expect("an answer and a close within 3 s");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("request-timeout"), "{answer}");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed() {
    let t = relay().await;
    let mut tcp = TcpStream::connect(t.relay.local_addr()).await.unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await.unwrap();
    let mut buf = [0u8; 1024];
    let n = tcp.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let rest = read_until_closed(&mut tcp, Duration::from_secs(3)).await.expect("an idle connection stays open");
    assert_eq!(rest, "", "no 408 for a connection that started no request");
}

#[tokio::test]
async fn beyond_the_connection_cap_the_answer_is_503() {
    let t = relay().await;
    let mut held = Vec::new();
    for _ in 0..8 {
        let mut tcp = TcpStream::connect(t.relay.local_addr()).await.unwrap();
        // A request that passed the credential check: each of these holds
        // its connection (kept alive) against newcomers.
        tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await.unwrap();
        let mut buf = [0u8; 1024];
        let n = tcp.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        held.push(tcp);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut extra = TcpStream::connect(t.relay.local_addr()).await.unwrap();
    extra.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await.unwrap();
    let answer = read_until_closed(&mut extra, Duration::from_secs(2)).await.expect("answered and closed");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.contains(&format!("content-length: {}", body.len())), "{answer}");

    // Once the held connections are gone, requests are served again.
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let r = t.get("/healthz").send().await.unwrap();
        if r.status() == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "still refused after the others left");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An event stream whose consumer stopped reading cannot hold its
/// connection: once nothing has moved for the idle timeout, it is closed
/// and its task ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_event_stream_is_closed_after_the_idle_timeout() {
    let t = TestRelay::start_with(Posture::Open, |c| {
        c.heartbeat = Duration::from_millis(300);
        c.http_idle_timeout = Duration::from_millis(1_500);
        // Queue more than the socket buffers hold, so the socket is full
        // (not merely slow) when the queue overflows.
        c.send_queue_bytes = 16 * 1024 * 1024;
        c.drain_timeout = Duration::from_secs(2);
    })
    .await;
    let s = session_name("stalled-sse");
    let filter = serde_urlencoded::to_string([("filter", json!({"session": s}).to_string())]).unwrap();
    let mut tcp = TcpStream::connect(t.relay.local_addr()).await.unwrap();
    tcp.write_all(format!("GET /stream?{filter} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes()).await.unwrap();
    while t.relay.stats().streams == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut seq = 0;
    // Until the relay lets go of the stream one way or the other.
    while t.relay.stats().streams > 0 {
        assert!(seq < 20_000, "the stream is still registered after 160 MB");
        let lines: Vec<String> = (seq..seq + 10)
            .map(|i| {
                let draft = Draft::new("progress.status").seq(i).severity(Severity::Notice);
                event_with(draft.data(json!({"note": "x".repeat(8_000)})), &s).raw().to_owned()
            })
            .collect();
        assert_eq!(t.post_lines(&lines).await.status(), 202);
        seq += 10;
    }
    // Never read. Past the idle timeout the connection and its task are gone.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(t.relay.shutdown().await, aep_relay::ShutdownOutcome::Drained);
    drop(tcp);
}
