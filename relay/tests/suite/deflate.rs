//! permessage-deflate on `/socket`: a client that offers it (as browsers
//! do) gets it, and its frames arrive compressed with one window across
//! messages and decompress to the same JSON; a client that offers nothing
//! gets plain frames, as before.

use crate::support;

use std::time::Duration;

use flate2::{Decompress, FlushDecompress};
use ratchet_core::{SubprotocolRegistry, WebSocketConfig};
use ratchet_deflate::{Deflate, DeflateConfig, DeflateExtProvider};
use serde_json::{json, Value};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const EVENTS: u64 = 200;

/// A WebSocket client written out by hand, so the test sees the frames as
/// they are on the wire: the response headers, RSV1, the payload bytes.
struct RawClient {
    tcp: TcpStream,
    buf: Vec<u8>,
    /// The response's `Sec-WebSocket-Extensions`, if any.
    extensions: Option<String>,
}

/// One server frame: whether RSV1 (compressed) was set, and its payload.
struct RawFrame {
    compressed: bool,
    opcode: u8,
    payload: Vec<u8>,
}

impl RawClient {
    async fn connect(t: &TestRelay, offer: Option<&str>) -> RawClient {
        let mut tcp = TcpStream::connect(t.relay.local_addr()).await.unwrap();
        let offer = offer.map(|o| format!("Sec-WebSocket-Extensions: {o}\r\n")).unwrap_or_default();
        let request = format!(
            "GET /socket HTTP/1.1\r\nHost: {}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{offer}\r\n",
            t.relay.local_addr()
        );
        tcp.write_all(request.as_bytes()).await.unwrap();
        let mut client = RawClient { tcp, buf: Vec::new(), extensions: None };
        let end = loop {
            if let Some(at) = client.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            client.fill().await;
        };
        let head = String::from_utf8(client.buf.drain(..end).collect()).unwrap();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        client.extensions = head.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("sec-websocket-extensions").then(|| value.trim().to_owned())
        });
        client
    }

    async fn fill(&mut self) {
        let mut chunk = [0u8; 8192];
        let n = tokio::time::timeout(PROMPT, self.tcp.read(&mut chunk)).await.expect("data in time").unwrap();
        assert!(n > 0, "the relay ended the connection");
        self.buf.extend_from_slice(&chunk[..n]);
    }

    /// Sends `value` as one masked, uncompressed text frame (a client may
    /// leave any message uncompressed).
    async fn send(&mut self, value: &Value) {
        self.tcp.write_all(&raw_frame::masked_text(value.to_string().as_bytes())).await.unwrap();
    }

    async fn frame(&mut self) -> RawFrame {
        loop {
            if let Some((frame, used)) = parse(&self.buf) {
                self.buf.drain(..used);
                return frame;
            }
            self.fill().await;
        }
    }
}

/// A whole unmasked server frame at the start of `buf`, and its length.
fn parse(buf: &[u8]) -> Option<(RawFrame, usize)> {
    let at = raw_frame::frame_at(buf)?;
    assert!(at.fin, "one frame per message");
    assert!(!at.masked, "server frames are not masked");
    let frame = RawFrame { compressed: at.compressed, opcode: at.opcode, payload: buf[at.payload.clone()].to_vec() };
    Some((frame, at.len()))
}

/// Inflates one message with the connection's window (RFC 7692 §7.2.2).
fn inflate(window: &mut Decompress, payload: &[u8]) -> Vec<u8> {
    let mut input = payload.to_vec();
    input.extend_from_slice(&[0, 0, 0xff, 0xff]);
    let mut out = Vec::with_capacity(input.len() * 8);
    let start = window.total_in();
    while window.total_in() - start < input.len() as u64 {
        out.reserve(4096);
        let consumed = (window.total_in() - start) as usize;
        window.decompress_vec(&input[consumed..], &mut out, FlushDecompress::Sync).unwrap();
    }
    out
}

async fn relay_with_events() -> (TestRelay, String) {
    let t = TestRelay::start(Posture::Open).await;
    let s = session_name("deflate");
    let events: Vec<_> = (0..EVENTS).map(|i| event("progress.status", &s, 0, i)).collect();
    t.post_events(&events).await;
    (t, s)
}

fn hello() -> Value {
    let identity = json!({"agent": AGENT, "instance": "test"});
    json!({"type": "hello", "versions": ["0.1"], "role": "consumer", "identity": identity, "capabilities": {}})
}

/// Says hello, replays the session, and returns every text message in
/// order (decompressed where it came compressed) with the bytes the
/// payloads took on the wire.
async fn replay(client: &mut RawClient, s: &str, expect_compressed: bool) -> (Vec<Value>, usize) {
    let mut window = Decompress::new(false);
    let mut messages = Vec::new();
    let mut wire = 0;
    client.send(&hello()).await;
    let mut subscribed = false;
    while messages.len() < EVENTS as usize + 2 {
        let frame = client.frame().await;
        assert_eq!(frame.opcode, 1, "text frames only");
        assert!(expect_compressed || !frame.compressed, "RSV1 only where negotiated");
        wire += frame.payload.len();
        let compressed = frame.compressed;
        let text = if compressed { inflate(&mut window, &frame.payload) } else { frame.payload };
        let value: Value = serde_json::from_slice(&text).unwrap();
        // Short frames (`subscribed`) may go either way; events go compressed.
        assert!(!expect_compressed || compressed || value.get("aep").is_none(), "an event sent plain: {value}");
        if value["type"] == "ping" {
            continue;
        }
        messages.push(value);
        if !subscribed {
            client.send(&json!({"type": "subscribe", "id": "all", "filter": {"session": s}, "from": "all"})).await;
            subscribed = true;
        }
    }
    (messages, wire)
}

fn assert_replayed(messages: &[Value]) {
    assert_eq!(messages[0]["type"], "hello", "{}", messages[0]);
    assert_eq!(messages[1], json!({"type": "subscribed", "id": "all"}));
    let seqs: Vec<u64> = messages[2..].iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..EVENTS).collect::<Vec<_>>());
    assert!(messages[2..].iter().all(|e| e["type"] == "progress.status"));
}

#[tokio::test]
async fn a_client_offering_deflate_gets_compressed_frames() {
    let (t, s) = relay_with_events().await;
    let mut client = RawClient::connect(&t, Some("permessage-deflate; client_max_window_bits")).await;
    let agreed = client.extensions.clone().expect("an extension agreed");
    assert!(agreed.starts_with("permessage-deflate"), "{agreed}");
    let (messages, wire) = replay(&mut client, &s, true).await;
    assert_replayed(&messages);
    let plain: usize = messages.iter().map(|m| m.to_string().len()).sum();
    assert!(wire * 3 < plain, "one window across messages: {wire} bytes on the wire for {plain}");
}

#[tokio::test]
async fn a_client_offering_nothing_gets_plain_frames() {
    let (t, s) = relay_with_events().await;
    let mut client = RawClient::connect(&t, None).await;
    assert_eq!(client.extensions, None);
    let (messages, _) = replay(&mut client, &s, false).await;
    assert_replayed(&messages);
}

#[tokio::test]
async fn an_offer_of_another_extension_gets_plain_frames() {
    let (t, s) = relay_with_events().await;
    let mut client = RawClient::connect(&t, Some("x-webkit-deflate-frame")).await;
    assert_eq!(client.extensions, None);
    let (messages, _) = replay(&mut client, &s, false).await;
    assert_replayed(&messages);
}

/// A client library with deflate of its own, compressing what it sends:
/// the relay decompresses it, answers, and closes as it always does.
#[tokio::test]
async fn a_deflate_client_is_understood_both_ways() {
    let (t, s) = relay_with_events().await;
    let (mut ws, mut buf) = deflate_client(&t).await;
    let subscribe = json!({"type": "subscribe", "id": "all", "filter": {"session": s}, "from": "all"});
    ws.write_text(subscribe.to_string()).await.unwrap();
    assert_eq!(next(&mut ws, &mut buf).await, json!({"type": "subscribed", "id": "all"}));
    for seq in 0..EVENTS {
        assert_eq!(next(&mut ws, &mut buf).await["seq"], seq);
    }
    ws.write_text(json!({"type": "bogus-frame", "pad": "x".repeat(2000)}).to_string()).await.unwrap();
    ws.write_text(json!({"type": "subscribe", "id": "two"}).to_string()).await.unwrap();
    assert_eq!(next(&mut ws, &mut buf).await, json!({"type": "subscribed", "id": "two"}), "unknown frames are ignored");
    tokio::time::timeout(
        Duration::from_secs(1),
        ws.close(ratchet_core::CloseReason::new(ratchet_core::CloseCode::Normal, None)),
    )
    .await
    .unwrap()
    .unwrap();
}

/// A client library with deflate of its own, through its `hello`.
async fn deflate_client(t: &TestRelay) -> (ratchet_core::WebSocket<TcpStream, Deflate>, bytes::BytesMut) {
    let tcp = TcpStream::connect(t.relay.local_addr()).await.unwrap();
    let url = format!("ws://{}/socket", t.relay.local_addr());
    let provider = DeflateExtProvider::with_config(DeflateConfig::default());
    let upgraded =
        ratchet_core::subscribe_with(WebSocketConfig::default(), tcp, url, provider, SubprotocolRegistry::default())
            .await
            .unwrap();
    let mut ws = upgraded.into_websocket();
    let mut buf = bytes::BytesMut::new();
    ws.write_text(hello().to_string()).await.unwrap();
    assert_eq!(next(&mut ws, &mut buf).await["type"], "hello");
    (ws, buf)
}

/// The next text message other than `ping`.
async fn next(ws: &mut ratchet_core::WebSocket<TcpStream, Deflate>, buf: &mut bytes::BytesMut) -> Value {
    loop {
        buf.clear();
        let message = tokio::time::timeout(PROMPT, ws.read(buf)).await.unwrap().unwrap();
        if let ratchet_core::Message::Text = message {
            let value: Value = serde_json::from_slice(buf).unwrap();
            if value["type"] != "ping" {
                return value;
            }
        }
    }
}

/// A compressed message that inflates past max-body gets the plain
/// socket's refusal: `closing`, then 1009 naming the limit.
#[tokio::test]
async fn a_compressed_message_too_big_once_inflated_is_refused_with_1009() {
    let t = TestRelay::start_with(Posture::Open, |c| c.max_body = 1024).await;
    let (mut ws, mut buf) = deflate_client(&t).await;
    ws.write_text(json!({"type": "subscribe", "id": "big", "pad": "x".repeat(4096)}).to_string()).await.unwrap();
    let closing = next(&mut ws, &mut buf).await;
    assert_eq!(closing["type"], "closing", "{closing}");
    assert_eq!(closing["reason"], "message-too-big");
    buf.clear();
    let close = tokio::time::timeout(PROMPT, ws.read(&mut buf)).await.unwrap().unwrap();
    let ratchet_core::Message::Close(Some(reason)) = close else { panic!("a close frame, got {close:?}") };
    assert_eq!(u16::from(reason.code), 1009);
    assert!(reason.description.unwrap_or_default().contains("1024"));
}

/// A live event goes to every compressed console as one compressed form,
/// made once: the same bytes on each socket, which each inflates with the
/// window its replay left. The relay asks clients for
/// `client_no_context_takeover`, so it keeps no inflate window for them.
#[tokio::test]
async fn a_live_event_is_compressed_once_for_every_console() {
    let (t, s) = relay_with_events().await;
    let mut consoles = Vec::new();
    for _ in 0..2 {
        let mut client = RawClient::connect(&t, Some("permessage-deflate; client_max_window_bits")).await;
        let agreed = client.extensions.clone().unwrap();
        assert!(agreed.contains("client_no_context_takeover"), "{agreed}");
        let mut window = Decompress::new(false);
        client.send(&hello()).await;
        client.send(&json!({"type": "subscribe", "id": "all", "filter": {"session": s}, "from": "all"})).await;
        let mut events = 0;
        while events < EVENTS {
            let frame = client.frame().await;
            let text = if frame.compressed { inflate(&mut window, &frame.payload) } else { frame.payload };
            let value: Value = serde_json::from_slice(&text).unwrap();
            events += u64::from(value.get("aep").is_some());
        }
        consoles.push((client, window));
    }
    let live = event("progress.status", &s, 0, EVENTS);
    t.post_events(std::slice::from_ref(&live)).await;
    let mut forms = Vec::new();
    for (client, window) in &mut consoles {
        let frame = loop {
            let frame = client.frame().await;
            if frame.compressed {
                break frame;
            }
        };
        assert_eq!(inflate(window, &frame.payload), live.raw().as_bytes());
        forms.push(frame.payload);
    }
    assert_eq!(forms[0], forms[1], "one compressed form for both consoles");
}
