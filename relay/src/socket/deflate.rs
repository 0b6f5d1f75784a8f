//! The WebSocket for peers that offer permessage-deflate (RFC 7692), as
//! browsers do. A console on a slow mobile link receives its replay as
//! hundreds of similar JSON events; compressed with one sliding window
//! across messages they shrink several times over. axum's WebSocket has no
//! extensions, so such a connection runs on ratchet instead, behind the
//! same axum [`Message`] interface as a plain one (see [`super::wire`]).
//!
//! ratchet's reads and writes are not cancellation safe, while the run
//! loop selects over them; so each half runs in a task of its own and the
//! connection talks to them through small bounded channels, which keep the
//! backpressure a peer that stops reading exerts. Frames leave when the
//! connection flushes, as on the plain socket: a replay goes out in a few
//! large writes, not one per event.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::ws::{CloseFrame, Message};
use axum::extract::Request;
use axum::http::header::SEC_WEBSOCKET_EXTENSIONS;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use bytes::BytesMut;
use futures_channel::mpsc;
use futures_util::{Sink, SinkExt, Stream, StreamExt};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use ratchet_core::server::{build_response, parse_request_parts};
use ratchet_core::{CloseCode, CloseReason, PayloadType, Role, SubprotocolRegistry, WebSocket, WebSocketConfig};
use ratchet_deflate::{Compression, DeflateConfig, DeflateExtProvider};
use tokio::io::{AsyncRead, AsyncWrite, BufWriter, ReadBuf};
use tokio::sync::oneshot;

use super::compress::{Deflater, Negotiated, Shared, Window};
use super::inflate::{Bounded, Overflow};
use super::wire::Outbound;
use crate::sync::lock;

/// Messages queued towards one half before the other side waits.
const QUEUE: usize = 16;
/// Bytes of frames gathered before they are written, flush or not: a
/// replay still leaves in a few writes, and an idle connection keeps no
/// more than this.
const WRITE_BUFFER: usize = 16 * 1024;

/// Whether the request's `Sec-WebSocket-Extensions` names permessage-deflate.
pub fn offered(headers: &HeaderMap) -> bool {
    headers.get_all(SEC_WEBSOCKET_EXTENSIONS).iter().filter_map(|v| v.to_str().ok()).any(|value| {
        value
            .split(',')
            .any(|offer| offer.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("permessage-deflate"))
    })
}

/// How this side compresses. One window across messages (context
/// takeover) is what makes a stream of similar events small, so it is kept
/// unless the peer asks for a fresh one per message; ratchet resets the
/// window whenever it would accept that request, so the request decides.
fn config(headers: &HeaderMap) -> DeflateConfig {
    let reset_asked = headers
        .get_all(SEC_WEBSOCKET_EXTENSIONS)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|value| value.to_ascii_lowercase().contains("server_no_context_takeover"));
    DeflateConfig {
        accept_no_context_takeover: reset_asked,
        compression_level: Compression::default(),
        ..DeflateConfig::default()
    }
}

/// An accepted upgrade with deflate negotiated: the `101` response to send
/// and what the connection starts from once the peer switches.
pub struct Upgrade {
    response: Response,
    on_upgrade: OnUpgrade,
    negotiated: Negotiated,
}

/// Negotiates deflate for a WebSocket upgrade request. `None` leaves the
/// request untouched: not a valid upgrade, or no offer this side accepts;
/// axum's WebSocket then answers it as it would any other.
pub fn negotiate(request: &mut Request) -> Option<Upgrade> {
    let provider = DeflateExtProvider::with_config(config(request.headers()));
    let registry = SubprotocolRegistry::default();
    let parts =
        parse_request_parts(request.version(), request.method(), request.headers(), provider, &registry).ok()?;
    // ratchet's negotiation decides what is agreed; the halves that run
    // are the relay's own (super::compress, super::inflate).
    parts.extension?;
    let accepted = parts.extension_header?;
    let negotiated = Negotiated {
        window_bits: offered_window_bits(request.headers()),
        no_context_takeover: has_param(&accepted, "server_no_context_takeover"),
    };
    let header = if has_param(&accepted, "client_no_context_takeover") {
        accepted
    } else {
        // A server may ask it of any client (RFC 7692 §7.1.1.2).
        HeaderValue::from_str(&format!("{}; client_no_context_takeover", accepted.to_str().ok()?)).ok()?
    };
    request.extensions().get::<OnUpgrade>()?;
    let response = build_response(parts.key, parts.subprotocol, Some(header)).ok()?;
    let on_upgrade = request.extensions_mut().remove::<OnUpgrade>()?;
    Some(Upgrade { response: response.map(|()| Body::empty()), on_upgrade, negotiated })
}

/// Whether an extension header names `param` (without a value).
fn has_param(header: &HeaderValue, param: &str) -> bool {
    header.to_str().is_ok_and(|v| v.split(';').any(|p| p.trim().eq_ignore_ascii_case(param)))
}

/// The window the peer takes from the relay: `server_max_window_bits` of
/// its first permessage-deflate offer, else the largest.
fn offered_window_bits(headers: &HeaderMap) -> u8 {
    let first_offer = headers
        .get_all(SEC_WEBSOCKET_EXTENSIONS)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find(|offer| offer.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("permessage-deflate"));
    first_offer
        .into_iter()
        .flat_map(|offer| offer.split(';'))
        .filter_map(|param| param.trim().split_once('='))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("server_max_window_bits"))
        .and_then(|(_, bits)| bits.trim().trim_matches('"').parse().ok())
        .unwrap_or(15)
}

impl Upgrade {
    /// Spawns `run` on the connection once the peer has switched protocols
    /// and returns the `101` response. `max_message` bounds an inbound
    /// message; `grace` bounds how long queued frames may take to leave
    /// after the connection is dropped (a peer that stopped reading).
    pub fn on_upgrade<F, Fut>(self, max_message: usize, grace: Duration, run: F) -> Response
    where
        F: FnOnce(Compressed) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let Upgrade { response, on_upgrade, negotiated } = self;
        tokio::spawn(async move {
            let Ok(upgraded) = on_upgrade.await else { return };
            let hold = Arc::new(AtomicBool::new(false));
            let io =
                Batched { inner: BufWriter::with_capacity(WRITE_BUFFER, TokioIo::new(upgraded)), hold: hold.clone() };
            let config = WebSocketConfig { max_message_size: frame_bound(max_message) };
            let window = Window::new(negotiated);
            let (extension, overflow) = Bounded::new(Deflater::new(window.clone()), max_message);
            let socket = WebSocket::from_upgraded(config, io, Some(extension), BytesMut::new(), Role::Server);
            let Ok((sender, receiver)) = socket.split() else { return };
            let (outgoing, queued) = mpsc::channel(QUEUE);
            let (received, incoming) = mpsc::channel(QUEUE);
            let (dropped, gone) = oneshot::channel();
            tokio::spawn(write(sender, queued, hold, window, gone, grace));
            let reader = tokio::spawn(read(receiver, received, max_message, overflow)).abort_handle();
            run(Compressed { outgoing, flushing: false, incoming, reader, _dropped: dropped }).await;
        });
        response
    }
}

/// How many bytes of one message ratchet reads before giving up. A read
/// past it is answered by ratchet itself, with 1002 and no reason; so it
/// sits well above `max_message`, and a message between the two is read,
/// found too big and refused in words (`closing`, 1009 and the limit) as
/// on the plain socket.
fn frame_bound(max_message: usize) -> usize {
    max_message.saturating_add(max_message.max(64 * 1024))
}

/// What the connection hands its writer: a message, a live event's text
/// with its shared compressed form, or "send what you have".
enum Out {
    Message(Message),
    Live { text: Arc<str>, shared: Arc<Shared> },
    Batch(Vec<Arc<str>>),
    Flush,
}

/// A compressing connection as a stream and sink of axum messages.
pub struct Compressed {
    outgoing: mpsc::Sender<Out>,
    /// A flush is queued and the queue not yet drained to it.
    flushing: bool,
    incoming: mpsc::Receiver<Result<Message, axum::Error>>,
    reader: tokio::task::AbortHandle,
    /// Dropped with the connection: starts the writer's grace period.
    _dropped: oneshot::Sender<()>,
}

impl Drop for Compressed {
    fn drop(&mut self) {
        // Nobody reads any more; a silent peer would otherwise hold the task.
        self.reader.abort();
    }
}

impl Stream for Compressed {
    type Item = Result<Message, axum::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.get_mut().incoming).poll_next(cx)
    }
}

impl Sink<Outbound> for Compressed {
    type Error = axum::Error;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().outgoing).poll_ready(cx).map_err(axum::Error::new)
    }

    fn start_send(self: Pin<&mut Self>, item: Outbound) -> Result<(), Self::Error> {
        let out = match item {
            Outbound::Message(message) => Out::Message(message),
            Outbound::Live { text, shared } => Out::Live { text, shared },
            Outbound::Batch(texts) => Out::Batch(texts),
        };
        Pin::new(&mut self.get_mut().outgoing).start_send(out).map_err(axum::Error::new)
    }

    /// Queues a flush; done once the writer has it, not once the peer has the bytes (nor does
    /// the plain socket wait for that).
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        let this = self.get_mut();
        if !this.flushing {
            std::task::ready!(Pin::new(&mut this.outgoing).poll_ready(cx)).map_err(axum::Error::new)?;
            Pin::new(&mut this.outgoing).start_send(Out::Flush).map_err(axum::Error::new)?;
            this.flushing = true;
        }
        std::task::ready!(Pin::new(&mut this.outgoing).poll_flush(cx)).map_err(axum::Error::new)?;
        this.flushing = false;
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().outgoing).poll_close(cx).map_err(axum::Error::new)
    }
}

/// The upgraded connection behind a write buffer. ratchet flushes after
/// every frame; while `hold` is set (the writer is amid a batch) those
/// flushes wait for the batch's own, so its frames share few writes.
/// Between batches a flush goes through at once (a pong, say).
struct Batched {
    inner: BufWriter<TokioIo<hyper::upgrade::Upgraded>>,
    hold: Arc<AtomicBool>,
}

impl AsyncRead for Batched {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Batched {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.hold.load(Ordering::Acquire) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

type Io = Batched;
type Sender = ratchet_core::Sender<Io, <Bounded as ratchet_ext::SplittableExtension>::SplitEncoder>;
type Receiver = ratchet_core::Receiver<Io, <Bounded as ratchet_ext::SplittableExtension>::SplitDecoder>;

/// Writes queued messages until the queue ends or a close is sent; once
/// the connection is dropped, for at most `grace` more.
async fn write(
    mut sender: Sender,
    mut queued: mpsc::Receiver<Out>,
    hold: Arc<AtomicBool>,
    window: Arc<std::sync::Mutex<Window>>,
    gone: oneshot::Receiver<()>,
    grace: Duration,
) {
    let drain = async {
        while let Some(out) = queued.next().await {
            let message = match out {
                Out::Message(message) => message,
                Out::Live { text, shared } => {
                    hold.store(true, Ordering::Release);
                    let compresses = lock(&window).compresses();
                    let deflated = shared.deflated(&text).filter(|_| compresses);
                    if write_text(&mut sender, &window, &text, deflated, false).await.is_err() {
                        return;
                    }
                    continue;
                }
                Out::Batch(texts) => {
                    hold.store(true, Ordering::Release);
                    let deflated = lock(&window).deflate_batch(&texts);
                    for (text, deflated) in texts.iter().zip(&deflated) {
                        if write_text(&mut sender, &window, text, deflated.as_ref(), true).await.is_err() {
                            return;
                        }
                    }
                    continue;
                }
                Out::Flush => {
                    hold.store(false, Ordering::Release);
                    if sender.flush().await.is_err() {
                        return;
                    }
                    continue;
                }
            };
            hold.store(!matches!(message, Message::Close(_)), Ordering::Release);
            let written = match message {
                Message::Text(text) => sender.write_text(text.as_str()).await,
                Message::Binary(bytes) => sender.write_binary(&bytes).await,
                Message::Ping(bytes) => sender.write_ping(&bytes).await,
                Message::Pong(bytes) => sender.write_pong(&bytes).await,
                Message::Close(frame) => {
                    let _ = sender.close(close_reason(frame)).await;
                    return;
                }
            };
            if written.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        () = drain => {}
        () = async { let _ = gone.await; tokio::time::sleep(grace).await } => {}
    }
}

/// Writes one text message: its compressed form as it is, when it has one;
/// else the text, left uncompressed when it belongs to a batch (whose
/// window must not miss a message the peer inflated).
async fn write_text(
    sender: &mut Sender,
    window: &std::sync::Mutex<Window>,
    text: &str,
    deflated: Option<&bytes::Bytes>,
    in_batch: bool,
) -> Result<(), ratchet_core::Error> {
    match deflated {
        Some(deflated) => {
            lock(window).as_is_next(true);
            sender.write(deflated, PayloadType::Text).await
        }
        None => {
            if in_batch {
                lock(window).as_is_next(false);
            }
            sender.write_text(text).await
        }
    }
}

/// Hands received messages to the connection until the peer closes or the
/// read fails (the error is handed on too). ratchet bounds a message's
/// compressed size; inflating stops at the limit ([`super::inflate`]).
async fn read(
    mut receiver: Receiver,
    mut received: mpsc::Sender<Result<Message, axum::Error>>,
    max_message: usize,
    overflow: Overflow,
) {
    let mut buf = BytesMut::new();
    loop {
        let message = receiver.read(&mut buf).await;
        let data = matches!(message, Ok(ratchet_core::Message::Text | ratchet_core::Message::Binary));
        if data && (overflow.take() || buf.len() > max_message) {
            // The connection answers with 1009; reading goes on, for the
            // peer's reply to that close.
            buf.clear();
            if received.send(Err(axum::Error::new(TooBig))).await.is_err() {
                return;
            }
            continue;
        }
        let (item, last) = match message {
            Ok(ratchet_core::Message::Text) => match String::from_utf8(buf.split().to_vec()) {
                Ok(text) => (Ok(Message::Text(text.into())), false),
                Err(invalid) => (Err(axum::Error::new(invalid)), true),
            },
            Ok(ratchet_core::Message::Binary) => (Ok(Message::Binary(buf.split().freeze())), false),
            Ok(ratchet_core::Message::Ping(bytes)) => (Ok(Message::Ping(bytes)), false),
            Ok(ratchet_core::Message::Pong(bytes)) => (Ok(Message::Pong(bytes)), false),
            Ok(ratchet_core::Message::Close(reason)) => (Ok(Message::Close(reason.map(close_frame))), true),
            Err(e) => (Err(axum::Error::new(e)), true),
        };
        if received.send(item).await.is_err() || last {
            return;
        }
    }
}

fn close_reason(frame: Option<CloseFrame>) -> CloseReason {
    match frame {
        None => CloseReason::new(CloseCode::Normal, None),
        Some(frame) => {
            let code = CloseCode::try_from(frame.code.to_be_bytes()).unwrap_or(CloseCode::Normal);
            CloseReason::new(code, Some(frame.reason.as_str().to_owned()))
        }
    }
}

fn close_frame(reason: CloseReason) -> CloseFrame {
    CloseFrame { code: reason.code.into(), reason: reason.description.unwrap_or_default().into() }
}

/// A message that inflated past the size limit.
#[derive(Debug)]
struct TooBig;

impl std::fmt::Display for TooBig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("message too big once inflated")
    }
}

impl std::error::Error for TooBig {}

/// Whether a read failed because the message exceeded the size limit:
/// inflated past it (stopped there, see [`super::inflate`]), or compressed
/// past it (ratchet has then closed the connection with 1002 itself).
pub fn is_too_big(error: &(dyn std::error::Error + 'static)) -> bool {
    error.is::<TooBig>()
        || error.downcast_ref::<ratchet_core::Error>().is_some_and(|e| {
            e.downcast_ref::<ratchet_core::ProtocolError>()
                .is_some_and(|e| matches!(e, ratchet_core::ProtocolError::FrameOverflow))
        })
}
