//! `/socket`: the WebSocket binding (AEP-0003 §3.5), a full-duplex
//! connection that says `hello` first, then subscribes, emits, asks for
//! the roster and sends or receives commands.
//!
//! One task per connection runs the reader and the writer side by side:
//! the reader turns frames into switchboard operations, the writer drains the
//! connection's outbox onto the wire. Whichever ends first ends both.

mod compress;
mod deflate;
mod delivered;
mod handshake;
mod inbound;
mod inflate;
mod wire;
mod writer;

use axum::extract::ws::Message;
use futures_util::{Stream, StreamExt};
use tokio::time::{sleep_until, Instant};

use crate::auth::Access;
use crate::discovery;
use crate::outbox::{CloseReason, Outbox};
use crate::state::AppState;
use crate::switchboard::Peer;
use inbound::{FrameLimits, Inbound};

pub use compress::Shared;
pub use deflate::{negotiate as negotiate_deflate, offered as deflate_offered};
pub use wire::{Outbound, Wire};

/// What an idle socket costs the relay, on either binding, as
/// `examples/bench_sockets.rs` measures it (about 26–33 KB): the figure the
/// start-up line multiplies by `--max-connections`.
pub const IDLE_SOCKET_BYTES: usize = 32 * 1024;

/// Runs one upgraded connection for `access` until either side ends it.
pub async fn run(socket: Wire, app: AppState, access: Access) {
    let (mut sink, mut stream) = socket.split();
    let mut shutdown = app.switchboard.shutdown_signal();
    let grace = app.config.close_grace;
    let Some(hello) = handshake::await_hello(&mut sink, &mut stream, app.config.hello_timeout, &mut shutdown).await
    else {
        linger(&mut stream, grace).await;
        return;
    };
    let peer = Peer::from_hello(&hello);
    let (may_watch, may_emit) = (peer.may_watch(), peer.may_emit());
    let (conn, outbox) = app.switchboard.attach_socket(
        access.clone(),
        peer,
        discovery::hello(&app.config, app.addr, Some(access.principal())),
    );
    if app.switchboard.is_shutting_down() {
        outbox.close(CloseReason::Shutdown);
    }
    let limits = FrameLimits {
        ping: app.config.max_ping,
        event: app.config.event_limit(),
        request: app.config.max_request_frame,
    };
    let inbound = Inbound { switchboard: &app.switchboard, conn, outbox: &outbox, access, may_watch, may_emit, limits };
    let options = writer::WriterOptions {
        heartbeat: app.config.heartbeat,
        max_tracked: app.config.max_sessions,
        close_grace: grace,
    };
    let writer = writer::run(sink, outbox.clone(), options);
    tokio::pin!(writer);
    let reader = read_loop(&mut stream, &inbound, &outbox, app.config.idle_timeout);
    let ended = tokio::select! {
        _ = &mut writer => ReadEnd::Gone,
        ended = reader => ended,
    };
    if let ReadEnd::TooBig = ended {
        // Said with 1009 and the limit, not a reset; the writer bounds it.
        outbox.close(CloseReason::TooBig { limit: app.config.max_body });
        writer.await;
    }
    app.switchboard.detach(conn);
    linger(&mut stream, grace).await;
}

/// After the relay's close frame, waits (at most `grace`) for the peer's
/// own close frame or the end of the connection before dropping it: the
/// closing handshake of RFC 6455 §7.1.1. Ending the TCP connection right
/// after the close frame loses what precedes it at a client still working
/// through its input (a browser inflating a compressed `error` frame sees
/// the connection drop first and reports 1006, no frame, no reason).
async fn linger<S>(stream: &mut S, grace: std::time::Duration)
where
    S: Stream<Item = Result<Message, axum::Error>> + Unpin,
{
    let peer_closed = async {
        while let Some(Ok(message)) = stream.next().await {
            if let Message::Close(_) = message {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(grace, peer_closed).await;
}

/// How the reading side ended.
enum ReadEnd {
    /// The peer closed or the connection broke.
    Gone,
    /// The peer sent a message over the size limit.
    TooBig,
}

/// Reads until the peer goes away. A peer silent past the idle timeout is
/// asked to close (the writer sends `closing`, then the close frame).
async fn read_loop<S>(stream: &mut S, inbound: &Inbound<'_>, outbox: &Outbox, idle: std::time::Duration) -> ReadEnd
where
    S: Stream<Item = Result<Message, axum::Error>> + Unpin,
{
    let mut deadline = Instant::now() + idle;
    loop {
        tokio::select! {
            message = stream.next() => {
                deadline = Instant::now() + idle;
                match message {
                    Some(Ok(Message::Text(text))) => inbound.text(text.as_str()),
                    Some(Ok(Message::Binary(_))) => inbound.binary(),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                    Some(Err(e)) if is_too_big(&e) => return ReadEnd::TooBig,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => return ReadEnd::Gone,
                }
            }
            _ = sleep_until(deadline) => {
                outbox.close(CloseReason::IdleTimeout);
                deadline = Instant::now() + idle;
            }
        }
    }
}

/// Whether a read failed because the message exceeded the size limit.
fn is_too_big(error: &axum::Error) -> bool {
    use tokio_tungstenite::tungstenite::Error;
    let Some(inner) = std::error::Error::source(error) else { return false };
    inner.downcast_ref::<Error>().is_some_and(|e| matches!(e, Error::Capacity(_))) || deflate::is_too_big(inner)
}
