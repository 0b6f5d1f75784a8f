//! Unauthenticated clients cannot use up the connection cap: silent or
//! tokenless connections are the first to go when the relay is full, and a
//! connection that sends no request head soon is closed.

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// 50 attackers on a relay capped at 50 connections, each holding a silent
/// connection and opening a new one as soon as it is closed, for as long
/// as the authenticated client works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_attacker_connections_do_not_block_an_authenticated_client() {
    let t = TestRelay::start_with(Posture::Token, |c| c.max_connections = 50).await;
    let addr = t.relay.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let mut attackers = Vec::new();
    for i in 0..50 {
        let stop = stop.clone();
        attackers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let Ok(mut tcp) = TcpStream::connect(addr).await else { continue };
                if i % 2 == 1 {
                    // Half of them send a request without a token.
                    let _ = tcp.write_all(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await;
                }
                let mut buf = [0u8; 1024];
                // Held until the relay closes it.
                while let Ok(n) = tcp.read(&mut buf).await {
                    if n == 0 || stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let client = reqwest::Client::builder().no_proxy().pool_max_idle_per_host(0).build().unwrap();
    let mut served = 0;
    for _ in 0..14 {
        let r = client.get(t.url("/events")).bearer_auth(TOKEN).timeout(PROMPT).send().await;
        if r.is_ok_and(|r| r.status() == 200) {
            served += 1;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // And a socket, which keeps its slot while the attack goes on.
    let (mut ws, _) = t.ws_hello("consumer", json!({}), json!({})).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    ws.send(&json!({"type": "ping", "t": 1})).await;
    assert_eq!(ws.recv_json().await["type"], "pong", "the authenticated socket was not pushed out");
    stop.store(true, Ordering::Relaxed);
    for a in attackers {
        a.abort();
    }
    assert_eq!(served, 14, "every authenticated request was served");
}

#[tokio::test]
async fn a_connection_that_sends_no_request_head_is_closed_soon() {
    let t = TestRelay::start_with(Posture::Token, |c| c.first_request_timeout = Duration::from_millis(300)).await;
    let mut tcp = TcpStream::connect(t.relay.local_addr()).await.unwrap();
    let started = std::time::Instant::now();
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(3), tcp.read(&mut buf)).await.expect("closed").unwrap_or(0);
    assert_eq!(n, 0);
    assert!(started.elapsed() < Duration::from_secs(2));
}
