//! A tokio driver for the engine's sans-IO cores (a consumer's
//! [`Connection`], an agent's [`Agent`], a multi-relay [`Hub`]: anything
//! [`SocketDriven`]): real WebSockets (tokio-tungstenite), the wall clock,
//! and nothing else. The core decides everything (hello, pings, backoff,
//! refusals, acks); this only opens and closes sockets, moves text frames
//! and arms one timer.
//!
//! [`Connection`]: aep_engine::client::Connection
//! [`Agent`]: aep_engine::client::agent::Agent
//! [`Hub`]: aep_engine::client::hub::Hub

use std::convert::Infallible;
use std::future::poll_fn;
use std::task::Poll;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aep_engine::client::{
    SocketAction, SocketDriven, State, CLOSE_ABNORMAL, CLOSE_NO_STATUS, CLOSE_UPGRADE_FORBIDDEN,
    CLOSE_UPGRADE_UNAUTHORIZED,
};
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
    /// The core's next change.
    Notice(N),
    /// The caller's wake-up time came.
    Wake,
    /// A message arrived in the caller's inbox ([`Link::next_or`]), or
    /// `None`: the inbox closed, nobody can ask anything any more.
    Inbox(R),
}

/// One of the core's sockets: where it connects, and the WebSocket while
/// one is open.
struct Slot<Id> {
    id: Id,
    url: String,
    socket: Option<Socket>,
}

/// A core over its (re)opened WebSockets.
pub struct Link<E: SocketDriven> {
    conn: E,
    slots: Vec<Slot<E::SocketId>>,
    /// The slot read first next time, so a busy socket cannot starve the
    /// others.
    turn: usize,
}

impl<E: SocketDriven<SocketId = ()>> Link<E> {
    /// A core of one socket, which connects to `url`.
    pub fn new(conn: E, url: impl Into<String>) -> Link<E> {
        Link::with_urls(conn, [url.into()])
    }
}

impl<E: SocketDriven> Link<E> {
    /// `urls` are where the core's sockets connect, in the order of
    /// [`SocketDriven::sockets`] (a hub's: its relays').
    pub fn with_urls(conn: E, urls: impl IntoIterator<Item = String>) -> Link<E> {
        let slots = conn.sockets().zip(urls).map(|(id, url)| Slot { id, url, socket: None }).collect();
        Link { conn, slots, turn: 0 }
    }

    /// The core, for intents (connect, subscribe, send, emit).
    pub fn conn(&mut self) -> &mut E {
        &mut self.conn
    }

    /// Whether every socket's connection is live.
    pub fn is_live(&self) -> bool {
        self.slots.iter().all(|s| self.conn.state(s.id) == Some(&State::Live))
    }

    /// Carries out whatever the core asked for, then waits for its next
    /// change, or until `until` passes ([`Step::Wake`]).
    pub async fn next(&mut self, until: Option<UnixMs>) -> Step<E::Change> {
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
    ) -> Step<E::Change, Option<R>> {
        self.wait(until, Some(inbox)).await
    }

    async fn wait<R>(
        &mut self,
        until: Option<UnixMs>,
        mut inbox: Option<&mut UnboundedReceiver<R>>,
    ) -> Step<E::Change, Option<R>> {
        loop {
            self.pump().await;
            if let Some(change) = self.conn.poll_change() {
                return Step::Notice(change);
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
            // The first socket with something to say, from this turn's.
            let (slots, turn) = (&mut self.slots, self.turn);
            let message = poll_fn(|cx| {
                for index in (turn..slots.len()).chain(0..turn) {
                    if let Some(Poll::Ready(message)) = slots[index].socket.as_mut().map(|s| s.poll_next_unpin(cx)) {
                        return Poll::Ready((index, message));
                    }
                }
                Poll::Pending
            });
            // All three are cancel-safe: the losers lose nothing.
            tokio::select! {
                (index, message) = message => self.on_message(index, message),
                () = sleep => self.conn.handle_timeout(now()),
                asked = asked => return Step::Inbox(asked),
            }
        }
    }

    /// Closes deliberately (a `closing` frame, then the close handshakes).
    pub async fn close(&mut self) {
        self.conn.close(now());
        self.pump().await;
        for slot in &mut self.slots {
            if let Some(mut socket) = slot.socket.take() {
                let _ = timeout(SOCKET_DEADLINE, socket.close(None)).await;
            }
        }
    }

    /// Socket actions, then frames to write, until neither is left.
    async fn pump(&mut self) {
        loop {
            let mut busy = false;
            while let Some((id, action)) = self.conn.poll_action() {
                busy = true;
                let Some(index) = self.index(id) else { continue };
                match action {
                    SocketAction::Open => self.open(index).await,
                    SocketAction::Close { code, reason } => self.shut(index, code, reason).await,
                    // `open` sees the upgrade's HTTP status and reports a
                    // 401/403 as an authorization close itself.
                    SocketAction::CheckAuthorization => {}
                }
            }
            while let Some((id, text)) = self.conn.poll_transmit() {
                busy = true;
                let Some(slot) = self.index(id).map(|i| &mut self.slots[i]) else { continue };
                let Some(socket) = slot.socket.as_mut() else { continue };
                if let Err(e) = socket.send(Message::text(text)).await {
                    slot.socket = None;
                    self.conn.handle_closed(id, now(), CLOSE_ABNORMAL, &e.to_string());
                }
            }
            if !busy {
                return;
            }
        }
    }

    fn index(&self, id: E::SocketId) -> Option<usize> {
        self.slots.iter().position(|s| s.id == id)
    }

    async fn open(&mut self, index: usize) {
        let slot = &mut self.slots[index];
        let id = slot.id;
        slot.socket = None;
        match timeout(SOCKET_DEADLINE, connect_async(slot.url.as_str())).await {
            Ok(Ok((socket, _response))) => {
                slot.socket = Some(socket);
                self.conn.handle_open(id, now());
            }
            Ok(Err(WsError::Http(response))) if matches!(response.status().as_u16(), 401 | 403) => {
                let code = if response.status().as_u16() == 401 {
                    CLOSE_UPGRADE_UNAUTHORIZED
                } else {
                    CLOSE_UPGRADE_FORBIDDEN
                };
                self.conn.handle_closed(id, now(), code, "unauthorized: the relay refused the token");
            }
            Ok(Err(e)) => self.conn.handle_closed(id, now(), CLOSE_ABNORMAL, &e.to_string()),
            Err(_) => self.conn.handle_closed(id, now(), CLOSE_ABNORMAL, "connect timed out"),
        }
    }

    async fn shut(&mut self, index: usize, code: u16, reason: String) {
        if let Some(mut socket) = self.slots[index].socket.take() {
            let frame = CloseFrame { code: CloseCode::from(code), reason: reason.into() };
            let _ = timeout(SOCKET_DEADLINE, socket.close(Some(frame))).await;
        }
    }

    fn on_message(&mut self, index: usize, message: Option<Result<Message, WsError>>) {
        let at = now();
        self.turn = (index + 1) % self.slots.len();
        let slot = &mut self.slots[index];
        let id = slot.id;
        match message {
            Some(Ok(Message::Text(text))) => self.conn.handle_text(id, text.as_str(), at),
            Some(Ok(Message::Binary(bytes))) => self.conn.handle_binary(id, &bytes, at),
            // tungstenite answers pings itself.
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
            Some(Ok(Message::Close(frame))) => {
                slot.socket = None;
                let (code, reason) =
                    frame.map_or((CLOSE_NO_STATUS, String::new()), |f| (u16::from(f.code), f.reason.to_string()));
                self.conn.handle_closed(id, at, code, &reason);
            }
            Some(Err(e)) => {
                slot.socket = None;
                self.conn.handle_closed(id, at, CLOSE_ABNORMAL, &e.to_string());
            }
            None => {
                slot.socket = None;
                self.conn.handle_closed(id, at, CLOSE_ABNORMAL, "connection lost");
            }
        }
    }
}
