//! A tokio driver for the engine's sans-IO endpoints (a consumer's
//! [`Connection`], an agent's [`Agent`]): a real WebSocket
//! (tokio-tungstenite), the wall clock, and nothing else. The endpoint
//! decides everything (hello, pings, backoff, refusals, acks); this only
//! opens and closes sockets, moves text frames and arms one timer.
//!
//! [`Connection`]: aep_engine::client::Connection
//! [`Agent`]: aep_engine::client::agent::Agent

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use std::convert::Infallible;

use aep_engine::client::{Endpoint, SocketAction, State, CLOSE_ABNORMAL, CLOSE_UPGRADE_UNAUTHORIZED};
use aep_engine::UnixMs;
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{sleep_until, timeout, Instant};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{connect_async, MaybeTlsStream, WebSocketStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Longest wait for a TCP connect plus upgrade, or for a close handshake.
const SOCKET_DEADLINE: Duration = Duration::from_secs(10);

/// The wall clock as the engine counts time.
pub fn now() -> UnixMs {
    let ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    UnixMs(u64::try_from(ms).unwrap_or(u64::MAX))
}

/// What [`Link::next`] returns. Matched on at once, never stored, so the
/// notification stays unboxed.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Step<N, R = Infallible> {
    /// The endpoint's next notification.
    Notice(N),
    /// The caller's wake-up time came.
    Wake,
    /// A message arrived in the caller's inbox ([`Link::next_or`]), or
    /// `None`: the inbox closed, nobody can ask anything any more.
    Inbox(R),
}

/// One endpoint over one (re)opened WebSocket.
pub struct Link<E> {
    conn: E,
    url: String,
    socket: Option<Socket>,
}

impl<E: Endpoint> Link<E> {
    pub fn new(conn: E, url: impl Into<String>) -> Link<E> {
        Link { conn, url: url.into(), socket: None }
    }

    /// The endpoint, for intents (connect, subscribe, send, emit).
    pub fn conn(&mut self) -> &mut E {
        &mut self.conn
    }

    pub fn is_live(&self) -> bool {
        *self.conn.state() == State::Live
    }

    /// Carries out whatever the endpoint asked for, then waits for its
    /// next notification, or until `until` passes ([`Step::Wake`]).
    pub async fn next(&mut self, until: Option<UnixMs>) -> Step<E::Notice> {
        match self.wait::<Infallible>(until, None).await {
            Step::Notice(n) => Step::Notice(n),
            Step::Wake => Step::Wake,
            Step::Inbox(Some(never)) => match never {},
            Step::Inbox(None) => unreachable!("without an inbox nothing arrives from one"),
        }
    }

    /// As [`Link::next`], and also returns what arrives in `inbox`
    /// meanwhile. Waiting is only ever cut short between socket
    /// operations, so no frame is half written.
    pub async fn next_or<R>(
        &mut self,
        until: Option<UnixMs>,
        inbox: &mut UnboundedReceiver<R>,
    ) -> Step<E::Notice, Option<R>> {
        self.wait(until, Some(inbox)).await
    }

    async fn wait<R>(
        &mut self,
        until: Option<UnixMs>,
        mut inbox: Option<&mut UnboundedReceiver<R>>,
    ) -> Step<E::Notice, Option<R>> {
        loop {
            self.pump().await;
            if let Some(notice) = self.conn.poll_notice() {
                return Step::Notice(notice);
            }
            if until.is_some_and(|u| now() >= u) {
                return Step::Wake;
            }
            let timer = match (self.conn.poll_timeout(), until) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let sleep = async {
                match timer {
                    Some(at) => sleep_until(Instant::now() + Duration::from_millis(at.since(now()))).await,
                    None => std::future::pending().await,
                }
            };
            let asked = async {
                match inbox.as_deref_mut() {
                    Some(inbox) => inbox.recv().await,
                    None => std::future::pending().await,
                }
            };
            let message = async {
                match self.socket.as_mut() {
                    Some(socket) => socket.next().await,
                    None => std::future::pending().await,
                }
            };
            // All three are cancel-safe: the losers lose nothing.
            tokio::select! {
                message = message => self.on_message(message),
                () = sleep => self.conn.handle_timeout(now()),
                asked = asked => return Step::Inbox(asked),
            }
        }
    }

    /// Closes deliberately (a `closing` frame, then the close handshake).
    pub async fn close(&mut self) {
        self.conn.close(now());
        self.pump().await;
        if let Some(mut socket) = self.socket.take() {
            let _ = timeout(SOCKET_DEADLINE, socket.close(None)).await;
        }
    }

    /// Socket actions, then frames to write, until neither is left.
    async fn pump(&mut self) {
        loop {
            let mut busy = false;
            while let Some(action) = self.conn.poll_action() {
                busy = true;
                match action {
                    SocketAction::Open => self.open().await,
                    SocketAction::Close { code, reason } => self.shut(code, reason).await,
                    // `open` sees the upgrade's HTTP status and reports a
                    // 401/403 as an authorization close itself.
                    SocketAction::CheckAuthorization => {}
                }
            }
            while let Some(text) = self.conn.poll_transmit() {
                busy = true;
                let Some(socket) = self.socket.as_mut() else { continue };
                if let Err(e) = socket.send(Message::text(text)).await {
                    self.socket = None;
                    self.conn.handle_closed(now(), CLOSE_ABNORMAL, &e.to_string());
                }
            }
            if !busy {
                return;
            }
        }
    }

    async fn open(&mut self) {
        self.socket = None;
        match timeout(SOCKET_DEADLINE, connect_async(self.url.as_str())).await {
            Ok(Ok((socket, _response))) => {
                self.socket = Some(socket);
                self.conn.handle_open(now());
            }
            Ok(Err(WsError::Http(response))) if matches!(response.status().as_u16(), 401 | 403) => {
                self.conn.handle_closed(now(), CLOSE_UPGRADE_UNAUTHORIZED, "unauthorized: the relay refused the token");
            }
            Ok(Err(e)) => self.conn.handle_closed(now(), CLOSE_ABNORMAL, &e.to_string()),
            Err(_) => self.conn.handle_closed(now(), CLOSE_ABNORMAL, "connect timed out"),
        }
    }

    async fn shut(&mut self, code: u16, reason: String) {
        if let Some(mut socket) = self.socket.take() {
            let frame = CloseFrame { code: CloseCode::from(code), reason: reason.into() };
            let _ = timeout(SOCKET_DEADLINE, socket.close(Some(frame))).await;
        }
    }

    fn on_message(&mut self, message: Option<Result<Message, WsError>>) {
        let at = now();
        match message {
            Some(Ok(Message::Text(text))) => self.conn.handle_text(text.as_str(), at),
            Some(Ok(Message::Binary(bytes))) => self.conn.handle_binary(&bytes, at),
            // tungstenite answers pings itself.
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
            Some(Ok(Message::Close(frame))) => {
                self.socket = None;
                let (code, reason) = frame.map_or((1005, String::new()), |f| (u16::from(f.code), f.reason.to_string()));
                self.conn.handle_closed(at, code, &reason);
            }
            Some(Err(e)) => {
                self.socket = None;
                self.conn.handle_closed(at, CLOSE_ABNORMAL, &e.to_string());
            }
            None => {
                self.socket = None;
                self.conn.handle_closed(at, CLOSE_ABNORMAL, "connection lost");
            }
        }
    }
}
