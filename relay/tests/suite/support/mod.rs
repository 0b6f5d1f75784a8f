//! Shared test harness: a real relay on an ephemeral loopback port, and
//! real HTTP, SSE and WebSocket clients talking to it.

#![allow(dead_code)]

pub mod agent;
pub mod compressed;
pub mod console;
pub mod proxy;
pub mod push_service;
pub mod raw_frame;
pub mod target;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aep_engine::protocol::ids::{ulid, Draft, Identity};
use aep_engine::{Event, UnixMs};
use aep_relay::auth::Token;
use aep_relay::{serve, Config, Relay};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub const TOKEN: &str = "T-0123456789abcdef";
pub const AGENT: &str = "aep-live-check";
/// A generous bound for anything that should happen promptly on loopback.
pub const PROMPT: Duration = Duration::from_secs(5);

/// The relay binary as a user runs it: an ephemeral loopback port, no
/// console, none of the relay's own environment variables. Killed when
/// dropped.
pub struct RelayProcess {
    pub child: std::process::Child,
    /// `127.0.0.1:PORT`, as its first line says.
    pub addr: String,
    /// That first line.
    pub boot: String,
}

impl RelayProcess {
    pub fn start(args: &[&str]) -> RelayProcess {
        use std::io::{BufRead, BufReader};
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_aep-relay"));
        command.args(["--listen", "127.0.0.1:0", "--static-dir", "/nonexistent-console"]).args(args);
        for var in [
            "AEP_TOKEN",
            "AEP_TOKEN_FILE",
            "AEP_CREDENTIALS",
            "AEP_DATA_DIR",
            "AEP_NATS",
            "AEP_MEMBER",
            "AEP_TLS_CERT",
            "AEP_TLS_KEY",
        ]
        .into_iter()
        .chain(["AEP_VAPID_KEY", "AEP_PUSH_CA", "AEP_PUSH_CONTACT"])
        {
            command.env_remove(var);
        }
        command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
        let mut child = command.spawn().unwrap();
        let mut boot = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut boot).unwrap();
        // `listening on http://ADDR` or `https://ADDR`.
        let url = boot.split("listening on ").nth(1).expect(&boot).split_whitespace().next().unwrap();
        let addr = url.split_once("://").expect(&boot).1.to_owned();
        RelayProcess { child, addr, boot }
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The HTTP status `GET /events` answers `token` with: whether the
    /// relay accepts that credential now.
    pub async fn status_for(&self, token: &str) -> u16 {
        let events = format!("{}/events", self.base());
        reqwest::Client::new().get(events).bearer_auth(token).send().await.unwrap().status().as_u16()
    }

    /// SIGKILL: no shutdown path runs.
    pub fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for RelayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The two postures every check runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Posture {
    /// No token configured: observation open, control refused.
    Open,
    /// Token [`TOKEN`] configured and presented by every client.
    Token,
}

pub const POSTURES: [Posture; 2] = [Posture::Open, Posture::Token];

/// The two WebSocket bindings every socket check runs over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// A client that offers no extension (tokio-tungstenite).
    Plain,
    /// A client that offers permessage-deflate as browsers do.
    Compressed,
}

pub const BINDINGS: [Binding; 2] = [Binding::Plain, Binding::Compressed];

pub struct TestRelay {
    pub relay: Relay,
    pub posture: Posture,
    /// What [`TestRelay::ws`] connects with.
    pub binding: Binding,
    pub http: reqwest::Client,
}

impl TestRelay {
    pub async fn start(posture: Posture) -> TestRelay {
        TestRelay::start_with(posture, |_| {}).await
    }

    pub async fn start_with(posture: Posture, tweak: impl FnOnce(&mut Config)) -> TestRelay {
        let mut config = Config::default();
        if posture == Posture::Token {
            config.token = Token::new(TOKEN);
        }
        tweak(&mut config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let relay = serve(config, listener).await.unwrap();
        TestRelay {
            relay,
            posture,
            binding: Binding::Plain,
            http: reqwest::Client::builder().no_proxy().build().unwrap(),
        }
    }

    /// The same relay, its sockets opened over `binding`.
    pub fn over(mut self, binding: Binding) -> TestRelay {
        self.binding = binding;
        self
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.relay.base_url())
    }

    /// A request carrying the posture's credentials.
    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.authed(self.http.get(self.url(path)))
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.authed(self.http.post(self.url(path)))
    }

    fn authed(&self, r: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self.posture {
            Posture::Open => r,
            Posture::Token => r.bearer_auth(TOKEN),
        }
    }

    /// POSTs `body` to `/events` as `content_type`, declaring 0.1.
    pub async fn post_body(&self, content_type: &str, body: impl Into<reqwest::Body>) -> reqwest::Response {
        declared(self.post("/events"), content_type).body(body).send().await.unwrap()
    }

    /// POSTs NDJSON lines (with a trailing newline) as 0.1.
    pub async fn post_lines(&self, lines: &[String]) -> reqwest::Response {
        let mut body = lines.join("\n");
        body.push('\n');
        self.post_body("application/x-ndjson", body).await
    }

    pub async fn post_events(&self, events: &[Event]) -> reqwest::Response {
        let lines: Vec<String> = events.iter().map(|e| e.raw().to_owned()).collect();
        self.post_lines(&lines).await
    }

    pub async fn post_one(&self, event: &Event) -> reqwest::Response {
        self.post_body("application/json", event.raw().to_owned()).await
    }

    /// Opens `/stream?{query}` and checks it is an event stream.
    pub async fn sse(&self, query: &str) -> Sse {
        self.sse_with(query, |r| r).await
    }

    pub async fn sse_with(
        &self,
        query: &str,
        f: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Sse {
        let response = f(self.get(&format!("/stream?{query}"))).send().await.unwrap();
        assert_eq!(response.status(), 200, "GET /stream?{query}");
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Sse { response, buf: String::new(), ended: false }
    }

    /// A WebSocket to `/socket`, the token in `?access_token=` as browsers
    /// and the live checker send it.
    pub async fn ws(&self) -> Ws {
        self.ws_with(None).await
    }

    /// A WebSocket presenting `token`, or the posture's when `None`.
    pub async fn ws_with(&self, token: Option<&str>) -> Ws {
        let mut url = format!("ws://{}/socket", self.relay.local_addr());
        match (token, self.posture) {
            (Some(token), _) => url.push_str(&format!("?access_token={token}")),
            (None, Posture::Token) => url.push_str(&format!("?access_token={TOKEN}")),
            (None, Posture::Open) => {}
        }
        Ws::connect_over(&url, self.binding).await.unwrap()
    }

    /// A socket that has completed `hello` with `role` and `capabilities`.
    pub async fn ws_hello(&self, role: &str, identity: Value, capabilities: Value) -> (Ws, Value) {
        self.ws_hello_with(None, role, identity, capabilities).await
    }

    pub async fn ws_hello_with(
        &self,
        token: Option<&str>,
        role: &str,
        identity: Value,
        capabilities: Value,
    ) -> (Ws, Value) {
        let mut ws = self.ws_with(token).await;
        ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": role, "identity": identity, "capabilities": capabilities})).await;
        let reply = ws.recv_json().await;
        assert_eq!(reply["type"], "hello", "{reply}");
        (ws, reply)
    }

    pub async fn consumer(&self) -> Ws {
        self.ws_hello("consumer", json!({"agent": AGENT, "instance": "test"}), json!({})).await.0
    }
}

/// A unique, lowercase ULID.
/// `request` as a batch of events: `content_type`, declaring AEP 0.1.
pub fn declared(request: reqwest::RequestBuilder, content_type: &str) -> reqwest::RequestBuilder {
    request.header("content-type", content_type).header("aep-version", "0.1")
}

/// `events` as an NDJSON body, each on its line.
pub fn ndjson<'a>(events: impl IntoIterator<Item = &'a Event>) -> String {
    events.into_iter().map(|e| format!("{}\n", e.raw())).collect()
}

/// A `POST` of an NDJSON `body` to `url` (a relay's `/events`), declaring
/// 0.1, with `token` as its bearer credential when there is one.
pub fn post_ndjson(
    http: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    body: impl Into<reqwest::Body>,
) -> reqwest::RequestBuilder {
    let request = http.post(url);
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    declared(request, "application/x-ndjson").body(body)
}

pub fn fresh_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(1);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    ulid(now(), nanos << 24 ^ u128::from(n))
}

pub fn now() -> UnixMs {
    UnixMs(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64)
}

pub fn session_name(prefix: &str) -> String {
    format!("{prefix}-{}", fresh_id().to_lowercase())
}

/// The checker's identity for events in `session`.
pub fn emitter(session: &str) -> Identity {
    Identity::new(format!("aep://live-check/agent/{AGENT}/session/{session}"), AGENT)
}

/// The checker's identity for commands.
pub fn sender() -> Identity {
    Identity::new(format!("aep://live-check/agent/{AGENT}"), AGENT)
}

/// A positioned session event built with the engine's draft builder.
pub fn event(ty: &str, session: &str, epoch: u64, seq: u64) -> Event {
    Draft::new(ty).session(session).epoch(epoch).seq(seq).build(&emitter(session), fresh_id(), now()).unwrap()
}

pub fn event_with(draft: Draft, session: &str) -> Event {
    draft.session(session).build(&emitter(session), fresh_id(), now()).unwrap()
}

/// A command addressed to `session`.
pub fn command(ty: &str, session: &str, data: Value) -> Event {
    Draft::new(ty).session(session).data(data).build(&sender(), fresh_id(), now()).unwrap()
}

/// One server-sent-events message.
#[derive(Debug, Default, Clone)]
pub struct SseMessage {
    pub comments: Vec<String>,
    pub event: Option<String>,
    pub data: Vec<String>,
    pub id: Option<String>,
    pub raw: String,
}

impl SseMessage {
    pub fn json(&self) -> Value {
        serde_json::from_str(self.data.last().expect("a data line")).unwrap()
    }

    pub fn is_comment_only(&self) -> bool {
        self.data.is_empty() && self.event.is_none()
    }
}

pub struct Sse {
    response: reqwest::Response,
    buf: String,
    ended: bool,
}

impl Sse {
    /// An event stream already answered (by any relay).
    pub fn from_response(response: reqwest::Response) -> Sse {
        Sse { response, buf: String::new(), ended: false }
    }

    /// The next message within `within`; `None` on timeout or end.
    pub async fn next(&mut self, within: Duration) -> Option<SseMessage> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(at) = self.buf.find("\n\n") {
                let raw: String = self.buf.drain(..at + 2).collect();
                return Some(parse_message(&raw));
            }
            if self.ended {
                return None;
            }
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Err(_) => return None,
                Ok(Ok(Some(bytes))) => self.buf.push_str(std::str::from_utf8(&bytes).unwrap()),
                Ok(Ok(None)) | Ok(Err(_)) => self.ended = true,
            }
        }
    }

    /// The next message carrying data, skipping comments (heartbeats).
    pub async fn next_data(&mut self, within: Duration) -> Option<SseMessage> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let m = self.next(left).await?;
            if !m.data.is_empty() {
                return Some(m);
            }
        }
    }

    /// Every data message until `within` passes or the stream ends.
    pub async fn collect_data(&mut self, within: Duration) -> Vec<SseMessage> {
        let deadline = tokio::time::Instant::now() + within;
        let mut out = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_data(left).await {
                Some(m) => out.push(m),
                None => return out,
            }
        }
    }

    /// The whole remaining body, which must end within `within`.
    pub async fn body_until_end(mut self, within: Duration) -> String {
        let mut body = std::mem::take(&mut self.buf);
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Err(_) => panic!("stream did not end within {within:?}; got so far: {body}"),
                Ok(Ok(Some(bytes))) => body.push_str(std::str::from_utf8(&bytes).unwrap()),
                Ok(Ok(None)) => return body,
                Ok(Err(e)) => panic!("stream failed: {e}"),
            }
        }
    }

    pub fn has_ended(&self) -> bool {
        self.ended && self.buf.is_empty()
    }
}

pub fn parse_message(raw: &str) -> SseMessage {
    assert!(!raw.contains('\r'), "SSE must use LF only: {raw:?}");
    let mut m = SseMessage { raw: raw.to_owned(), ..SseMessage::default() };
    for line in raw.split('\n').filter(|l| !l.is_empty()) {
        if let Some(c) = line.strip_prefix(':') {
            m.comments.push(c.trim_start().to_owned());
        } else if let Some(v) = line.strip_prefix("event: ") {
            m.event = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("data: ") {
            m.data.push(v.to_owned());
        } else if let Some(v) = line.strip_prefix("id: ") {
            m.id = Some(v.to_owned());
        } else {
            panic!("unexpected SSE line {line:?}");
        }
    }
    m
}

/// Something read from a socket.
#[derive(Debug)]
pub enum Incoming {
    Text(String),
    Binary,
    Closed(Option<u16>),
}

pub struct Ws {
    inner: Inner,
}

enum Inner {
    Plain(WebSocketStream<MaybeTlsStream<TcpStream>>),
    Compressed(compressed::Client),
    /// Over TLS (`wss://`), as a phone reaches a relay off-host.
    Secure(Box<WebSocketStream<tokio_rustls::client::TlsStream<TcpStream>>>),
}

impl Ws {
    pub async fn connect(url: &str) -> Result<Ws, tokio_tungstenite::tungstenite::Error> {
        let (inner, _) = tokio_tungstenite::connect_async_with_config(url, None, true).await?;
        Ok(Ws { inner: Inner::Plain(inner) })
    }

    /// A socket over `binding`; `Err` says why the upgrade failed.
    pub async fn connect_over(url: &str, binding: Binding) -> Result<Ws, String> {
        match binding {
            Binding::Plain => Ws::connect(url).await.map_err(|e| e.to_string()),
            Binding::Compressed => compressed::Client::connect(url)
                .await
                .map(|c| Ws { inner: Inner::Compressed(c) })
                .map_err(|e| e.to_string()),
        }
    }

    pub fn from_stream(inner: WebSocketStream<MaybeTlsStream<TcpStream>>) -> Ws {
        Ws { inner: Inner::Plain(inner) }
    }

    pub fn secure(inner: WebSocketStream<tokio_rustls::client::TlsStream<TcpStream>>) -> Ws {
        Ws { inner: Inner::Secure(Box::new(inner)) }
    }

    /// The next text, binary or close, or the end; `None` on timeout.
    async fn next_got(&mut self, deadline: tokio::time::Instant) -> Option<compressed::Got> {
        match &mut self.inner {
            Inner::Compressed(client) => tokio::time::timeout_at(deadline, client.next()).await.ok(),
            Inner::Plain(ws) => next_tungstenite(ws, deadline).await,
            Inner::Secure(ws) => next_tungstenite(ws, deadline).await,
        }
    }

    pub async fn send(&mut self, v: &Value) {
        self.send_text(&v.to_string()).await;
    }

    pub async fn send_text(&mut self, text: &str) {
        match &mut self.inner {
            Inner::Plain(ws) => ws.send(Message::text(text.to_owned())).await.unwrap(),
            Inner::Secure(ws) => ws.send(Message::text(text.to_owned())).await.unwrap(),
            Inner::Compressed(client) => client.send_text(text).await,
        }
    }

    pub async fn send_binary(&mut self, bytes: Vec<u8>) {
        match &mut self.inner {
            Inner::Plain(ws) => ws.send(Message::binary(bytes)).await.unwrap(),
            Inner::Secure(ws) => ws.send(Message::binary(bytes)).await.unwrap(),
            Inner::Compressed(client) => client.send_binary(&bytes).await,
        }
    }

    /// The next text frame or close within `within`; `None` on timeout.
    pub async fn recv(&mut self, within: Duration) -> Option<Incoming> {
        use compressed::Got;
        Some(match self.next_got(tokio::time::Instant::now() + within).await? {
            Got::Text(t) => Incoming::Text(t),
            Got::Binary => Incoming::Binary,
            Got::Close(frame) => Incoming::Closed(frame.map(|(code, _)| code)),
            Got::Ended => Incoming::Closed(None),
        })
    }

    /// The close frame's code and reason, skipping text frames; `None` if
    /// the connection ended without one (an abrupt end, seen as 1006).
    pub async fn recv_close_frame(&mut self, within: Duration) -> Option<(u16, String)> {
        use compressed::Got;
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match self.next_got(deadline).await? {
                Got::Close(frame) => return frame,
                Got::Ended => return None,
                Got::Text(_) | Got::Binary => continue,
            }
        }
    }

    /// The next text frame as JSON, answering relay `ping` frames as any
    /// live client does.
    pub async fn recv_json(&mut self) -> Value {
        self.recv_json_within(PROMPT).await.expect("a frame within the prompt window")
    }

    pub async fn recv_json_within(&mut self, within: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.recv(left).await? {
                Incoming::Text(t) => {
                    let v: Value = serde_json::from_str(&t).unwrap();
                    if v["type"] == "ping" && v.get("aep").is_none() {
                        self.send(&json!({"type": "pong", "t": v["t"]})).await;
                        continue;
                    }
                    return Some(v);
                }
                other => panic!("expected a text frame, got {other:?}"),
            }
        }
    }

    /// The next text frame's exact text, answering relay pings.
    pub async fn recv_text(&mut self, within: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.recv(left).await? {
                Incoming::Text(t) if t.starts_with("{\"type\":\"ping\"") => {
                    self.send(&json!({"type": "pong", "t": serde_json::from_str::<Value>(&t).unwrap()["t"]})).await;
                    continue;
                }
                Incoming::Text(t) => return Some(t),
                other => panic!("expected a text frame, got {other:?}"),
            }
        }
    }

    /// The next text frame, pings included.
    pub async fn recv_text_raw(&mut self) -> String {
        match self.recv(PROMPT).await {
            Some(Incoming::Text(t)) => t,
            other => panic!("expected a text frame, got {other:?}"),
        }
    }

    /// Every frame until `within` passes, skipping pings.
    pub async fn collect(&mut self, within: Duration) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + within;
        let mut out = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.recv_json_within(left).await {
                Some(v) => out.push(v),
                None => return out,
            }
        }
    }

    pub async fn subscribe(&mut self, frame: Value) -> Value {
        self.send(&frame).await;
        self.recv_json().await
    }

    pub async fn close(self) {
        match self.inner {
            Inner::Plain(mut ws) => {
                let _ = ws.close(None).await;
            }
            Inner::Secure(mut ws) => {
                let _ = ws.as_mut().close(None).await;
            }
            Inner::Compressed(client) => client.close().await,
        }
    }
}

/// The next text, binary or close from a tungstenite client, or the end;
/// `None` on timeout.
async fn next_tungstenite<S>(ws: &mut WebSocketStream<S>, deadline: tokio::time::Instant) -> Option<compressed::Got>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use compressed::Got;
    loop {
        return Some(match tokio::time::timeout_at(deadline, ws.next()).await.ok()? {
            Some(Ok(Message::Text(t))) => Got::Text(t.to_string()),
            Some(Ok(Message::Binary(_))) => Got::Binary,
            Some(Ok(Message::Close(frame))) => Got::Close(frame.map(|f| (u16::from(f.code), f.reason.to_string()))),
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => Got::Ended,
        });
    }
}

/// Runs each named check, an `async fn(Binding)`, over both bindings, as
/// the tests `NAME::plain` and `NAME::compressed`.
#[macro_export]
macro_rules! over_both_bindings {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test]
                async fn plain() {
                    super::$name(super::Binding::Plain).await
                }

                #[tokio::test]
                async fn compressed() {
                    super::$name(super::Binding::Compressed).await
                }
            }
        )*
    };
}
