//! Drains a socket's outbox onto the wire: frames, routed commands and
//! events (down-levelled to the subscription's ceiling), batched between
//! flushes; a `ping` frame every heartbeat; and on a relay-initiated close,
//! `closing` with the delivered positions followed by the close frame.
//!
//! A peer that stops reading fills its socket and blocks the writer. When
//! the connection is cut (backpressure overflow, idle timeout), the
//! blocked write is abandoned and `closing` gets a bounded grace period;
//! then the writer returns and the socket is dropped either way.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aep_engine::protocol::frame::{Closing, Frame, ReplayExhausted, SessionPosition};
use axum::extract::ws::{CloseFrame, Message};
use futures_util::stream::SplitSink;
use futures_util::SinkExt;
use tokio::time::{interval_at, Instant, MissedTickBehavior};

use super::delivered::DeliveredPositions;
use super::{Outbound, Wire};
use crate::held::HeldEvent;
use crate::outbox::{CloseReason, Next, Outbox, Outgoing, ReplayPiece};
use crate::wire::event_bytes;

/// Items written between two flushes.
const MAX_BATCH: usize = 256;

type Sink = SplitSink<Wire, Outbound>;
type SendResult = Result<(), axum::Error>;

/// How the writer runs: heartbeat period, how many delivered positions it
/// tracks for `closing`, and how long a cut connection gets to take it.
pub struct WriterOptions {
    pub heartbeat: Duration,
    pub max_tracked: usize,
    pub close_grace: Duration,
}

pub async fn run(mut sink: Sink, outbox: Arc<Outbox>, options: WriterOptions) {
    let mut delivered = DeliveredPositions::new(options.max_tracked);
    let cut = tokio::select! {
        () = drain(&mut sink, &outbox, &mut delivered, options.heartbeat) => return,
        reason = outbox.cut() => reason,
    };
    // The write in progress was abandoned; the peer may not be reading.
    let _ = tokio::time::timeout(options.close_grace, close(&mut sink, cut, &delivered)).await;
}

/// Writes until the outbox closes or the peer is gone.
async fn drain(sink: &mut Sink, outbox: &Outbox, delivered: &mut DeliveredPositions, heartbeat: Duration) {
    let mut ping = interval_at(Instant::now() + heartbeat, heartbeat);
    ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        let first = tokio::select! {
            next = outbox.next() => next,
            _ = ping.tick() => {
                let frame = Frame::Ping { t: Some(now_ms().into()) }.encode();
                if sink.send(Message::Text(frame.into()).into()).await.is_err() {
                    return;
                }
                continue;
            }
        };
        let mut next = Some(first);
        let mut written = 0;
        while let Some(item) = next.take() {
            match item {
                Next::Send(out) => {
                    if write(sink, out, delivered).await.is_err() {
                        return;
                    }
                }
                Next::Close(reason) if !reason.drains_queue() => {
                    // Cut: left to `run`, which bounds the close in time.
                    std::future::pending::<()>().await;
                }
                Next::Close(reason) => {
                    close(sink, reason, delivered).await;
                    return;
                }
            }
            written += 1;
            if written < MAX_BATCH {
                next = outbox.try_next();
            }
        }
        if sink.flush().await.is_err() {
            return;
        }
    }
}

async fn write(sink: &mut Sink, out: Outgoing, delivered: &mut DeliveredPositions) -> SendResult {
    match out {
        Outgoing::Frame(text) => sink.feed(Message::Text(text.into()).into()).await,
        Outgoing::Verbatim(bytes) => sink.feed(Message::Text((&*bytes).into()).into()).await,
        Outgoing::Live(d) => {
            let Some(bytes) = event_bytes(&d.event, d.ceiling) else { return Ok(()) };
            // The stored bytes (not a down-level) are the same for every
            // console: compressed connections share their compressed form.
            let out = if Arc::ptr_eq(&bytes, d.event.raw_arc()) {
                Outbound::Live { text: bytes, shared: d.shared.clone() }
            } else {
                Message::Text((&*bytes).into()).into()
            };
            sink.feed(out).await?;
            for sub in d.subs.iter() {
                note(delivered, sub, &d.event);
            }
            Ok(())
        }
        Outgoing::Replay(batch) => {
            // Handed over whole: a compressed connection deflates it in one
            // go, one window across its messages.
            let (sub, ceiling) = (batch.sub.clone(), batch.ceiling);
            let mut texts: Vec<Arc<str>> = Vec::new();
            let mut events = Vec::new();
            for piece in batch.into_pieces() {
                match piece {
                    ReplayPiece::Exhausted { session, earliest } => {
                        let frame = Frame::ReplayExhausted(ReplayExhausted {
                            sub: sub.to_string(),
                            earliest: SessionPosition::new(&*session, earliest.0, earliest.1),
                        });
                        texts.push(frame.encode().into());
                    }
                    ReplayPiece::Event(e) => {
                        let Some(bytes) = event_bytes(&e, ceiling) else { continue };
                        texts.push(bytes);
                        events.push(e);
                    }
                }
            }
            sink.feed(Outbound::Batch(texts)).await?;
            for e in &events {
                note(delivered, &sub, e);
            }
            Ok(())
        }
    }
}

/// Records a position once its event is handed to the socket: from then
/// on it is written before anything sent after it, `closing` included. A
/// send abandoned by a cut never got that far and is not recorded.
fn note(delivered: &mut DeliveredPositions, sub: &Arc<str>, event: &HeldEvent) {
    if let (Some(session), Some(position)) = (event.session(), event.position()) {
        delivered.record(sub, session, position);
    }
}

/// `closing` then the close frame; nothing when the peer is already gone.
async fn close(sink: &mut Sink, reason: CloseReason, delivered: &DeliveredPositions) {
    let (code, why) = match reason {
        CloseReason::PeerGone => return,
        CloseReason::Shutdown | CloseReason::IdleTimeout | CloseReason::Finished => (1001, reason.as_str().to_owned()),
        // "Policy violation": the credential is no longer valid.
        CloseReason::Revoked => (1008, reason.as_str().to_owned()),
        // "Try again later": resume from the delivered positions.
        CloseReason::Overflow => (1013, reason.as_str().to_owned()),
        // "Message too big", naming the limit the peer ran into.
        CloseReason::TooBig { limit } => (1009, format!("message larger than {limit} bytes (max-body)")),
    };
    let closing =
        Frame::Closing(Closing { reason: reason.as_str().to_owned(), delivered: delivered.entries() }).encode();
    let _ = sink.feed(Message::Text(closing.into()).into()).await;
    let _ = sink.send(Message::Close(Some(CloseFrame { code, reason: why.into() })).into()).await;
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}
