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
//! backpressure a peer that stops reading exerts.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::ws::{CloseFrame, Message};
use axum::extract::Request;
use axum::http::header::SEC_WEBSOCKET_EXTENSIONS;
use axum::http::HeaderMap;
use axum::response::Response;
use bytes::BytesMut;
use futures_channel::mpsc;
use futures_util::{Sink, SinkExt, Stream, StreamExt};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use ratchet_rs::deflate::{Deflate, DeflateConfig, DeflateExtProvider};
use ratchet_core::server::{build_response, parse_request_parts};
use ratchet_rs::{CloseCode, CloseReason, Role, SubprotocolRegistry, WebSocket, WebSocketConfig};
use tokio::io::BufWriter;
use tokio::sync::oneshot;

/// Messages queued towards one half before the other side waits.
const QUEUE: usize = 16;

/// Whether the request's `Sec-WebSocket-Extensions` names permessage-deflate.
pub fn offered(headers: &HeaderMap) -> bool {
    headers.get_all(SEC_WEBSOCKET_EXTENSIONS).iter().filter_map(|v| v.to_str().ok()).any(|value| {
        value.split(',').any(|offer| offer.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("permessage-deflate"))
    })
}

/// An accepted upgrade with deflate negotiated: the `101` response to send
/// and what the connection starts from once the peer switches.
pub struct Upgrade {
    response: Response,
    on_upgrade: OnUpgrade,
    deflate: Deflate,
}

/// Negotiates deflate for a WebSocket upgrade request. `None` leaves the
/// request untouched: not a valid upgrade, or no offer this side accepts;
/// axum's WebSocket then answers it as it would any other.
pub fn negotiate(request: &mut Request) -> Option<Upgrade> {
    let provider = DeflateExtProvider::with_config(DeflateConfig::default());
    let registry = SubprotocolRegistry::default();
    let parts =
        parse_request_parts(request.version(), request.method(), request.headers(), provider, &registry).ok()?;
    let deflate = parts.extension?;
    request.extensions().get::<OnUpgrade>()?;
    let response = build_response(parts.key, parts.subprotocol, parts.extension_header).ok()?;
    let on_upgrade = request.extensions_mut().remove::<OnUpgrade>()?;
    Some(Upgrade { response: response.map(|()| Body::empty()), on_upgrade, deflate })
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
        let Upgrade { response, on_upgrade, deflate } = self;
        tokio::spawn(async move {
            let Ok(upgraded) = on_upgrade.await else { return };
            // One write per frame rather than one for its header and one for its payload.
            let io = BufWriter::new(TokioIo::new(upgraded));
            let config = WebSocketConfig { max_message_size: max_message };
            let socket = WebSocket::from_upgraded(config, io, Some(deflate), BytesMut::new(), Role::Server);
            let Ok((sender, receiver)) = socket.split() else { return };
            let (outgoing, queued) = mpsc::channel(QUEUE);
            let (received, incoming) = mpsc::channel(QUEUE);
            let (dropped, gone) = oneshot::channel();
            tokio::spawn(write(sender, queued, gone, grace));
            let reader = tokio::spawn(read(receiver, received)).abort_handle();
            run(Compressed { outgoing, incoming, reader, _dropped: dropped }).await;
        });
        response
    }
}

/// A compressing connection as a stream and sink of axum messages.
pub struct Compressed {
    outgoing: mpsc::Sender<Message>,
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

impl Sink<Message> for Compressed {
    type Error = axum::Error;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().outgoing).poll_ready(cx).map_err(axum::Error::new)
    }

    fn start_send(self: Pin<&mut Self>, item: Message) -> Result<(), Self::Error> {
        Pin::new(&mut self.get_mut().outgoing).start_send(item).map_err(axum::Error::new)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().outgoing).poll_flush(cx).map_err(axum::Error::new)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().outgoing).poll_close(cx).map_err(axum::Error::new)
    }
}

type Io = BufWriter<TokioIo<hyper::upgrade::Upgraded>>;
type Sender = ratchet_rs::Sender<Io, <Deflate as ratchet_rs::SplittableExtension>::SplitEncoder>;
type Receiver = ratchet_rs::Receiver<Io, <Deflate as ratchet_rs::SplittableExtension>::SplitDecoder>;

/// Writes queued messages until the queue ends or a close is sent; once
/// the connection is dropped, for at most `grace` more.
async fn write(mut sender: Sender, mut queued: mpsc::Receiver<Message>, gone: oneshot::Receiver<()>, grace: Duration) {
    let drain = async {
        while let Some(message) = queued.next().await {
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

/// Hands received messages to the connection until the peer closes or the
/// read fails (the error is handed on too).
async fn read(mut receiver: Receiver, mut received: mpsc::Sender<Result<Message, axum::Error>>) {
    let mut buf = BytesMut::new();
    loop {
        let (item, last) = match receiver.read(&mut buf).await {
            Ok(ratchet_rs::Message::Text) => match String::from_utf8(buf.split().to_vec()) {
                Ok(text) => (Ok(Message::Text(text.into())), false),
                Err(invalid) => (Err(axum::Error::new(invalid)), true),
            },
            Ok(ratchet_rs::Message::Binary) => (Ok(Message::Binary(buf.split().freeze())), false),
            Ok(ratchet_rs::Message::Ping(bytes)) => (Ok(Message::Ping(bytes)), false),
            Ok(ratchet_rs::Message::Pong(bytes)) => (Ok(Message::Pong(bytes)), false),
            Ok(ratchet_rs::Message::Close(reason)) => (Ok(Message::Close(reason.map(close_frame))), true),
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

/// Whether a read failed because the message exceeded the size limit.
pub fn is_too_big(error: &ratchet_rs::Error) -> bool {
    error.downcast_ref::<ratchet_rs::ProtocolError>().is_some_and(|e| matches!(e, ratchet_rs::ProtocolError::FrameOverflow))
}
