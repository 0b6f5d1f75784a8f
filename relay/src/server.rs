//! The accept loop: HTTP/1.1 connections bounded in number and in time.
//!
//! - At most `max_connections` sockets are open at once (upgraded
//!   WebSockets included, since the permit travels with the socket);
//!   beyond it a connection gets a `503` and is closed, instead of a
//!   socket the relay cannot afford.
//! - A connection waiting for a request head, idle or half-sent, is closed
//!   after `header_read_timeout`; one that had sent part of a head is told
//!   `408` first.
//! - A connection on which no byte has moved either way for
//!   `http_idle_timeout` is closed: a response the peer stopped reading
//!   (an SSE stream whose consumer stalled) cannot hold it forever.
//! - Request bodies have their own deadline (`body_timeout`, answered 408
//!   by the handler that reads them).
//!
//! On shutdown the listener stops, idle connections close, and requests
//! in flight finish (the hub ends every stream).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// The bounds the accept loop applies, copied from the configuration.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
}

/// What a connection over the cap is told before it is closed.
const OVER_CAPACITY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: 76\r\n\r\n{\"error\":\"over-capacity\",\"detail\":\"too many connections; try again shortly\"}";

/// What a peer that sent only part of a request head in time is told.
const HEAD_TIMEOUT: &[u8] = b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: 70\r\n\r\n{\"error\":\"request-timeout\",\"detail\":\"the request head did not arrive\"}";

/// How long an over-capacity peer gets to take its 503.
const REFUSAL_WRITE: Duration = Duration::from_secs(1);

/// Serves `app` on `listener` until `stop` turns true, then waits for the
/// open connections to finish.
pub async fn serve(listener: TcpListener, app: Router, limits: ConnectionLimits, stop: watch::Receiver<bool>) -> io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let mut accept_stop = stop.clone();
    loop {
        let (tcp, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of descriptors or a connection reset before accept:
                // back off a moment rather than spin or stop serving.
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stopped(&mut accept_stop) => break,
        };
        // Frames are small and latency matters (a command round trip is
        // four of them): never hold one back waiting for more (Nagle).
        let _ = tcp.set_nodelay(true);
        match permits.clone().try_acquire_owned() {
            Ok(permit) => {
                tokio::spawn(connection(tcp, permit, app.clone(), limits, stop.clone()));
            }
            Err(_) => {
                tokio::spawn(refuse(tcp));
            }
        }
    }
    drop(listener);
    // Every permit back means every connection (and upgraded socket) ended.
    let _ = permits.acquire_many(limits.max_connections as u32).await;
    Ok(())
}

/// Resolves once shutdown has begun.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|down| *down).await;
}

async fn refuse(mut tcp: TcpStream) {
    let _ = tokio::time::timeout(REFUSAL_WRITE, async {
        tcp.write_all(OVER_CAPACITY).await?;
        tcp.shutdown().await
    })
    .await;
}

async fn connection(
    tcp: TcpStream,
    permit: OwnedSemaphorePermit,
    app: Router,
    limits: ConnectionLimits,
    mut stop: watch::Receiver<bool>,
) {
    let activity = Arc::new(Activity::new());
    let tcp = Arc::new(tcp);
    let io = Tracked { inner: tcp.clone(), activity: activity.clone(), _permit: permit };
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout).keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(app)).with_upgrades();
    tokio::pin!(conn);
    let mut stopping = false;
    loop {
        tokio::select! {
            ended = conn.as_mut() => {
                if ended.is_err_and(|e| e.is_timeout()) && activity.head_in_progress() {
                    // Best effort: the socket's buffer is empty (nothing
                    // was written since the head began), so this fits.
                    let _ = tcp.try_write(HEAD_TIMEOUT);
                }
                return;
            }
            () = stopped(&mut stop), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
            () = activity.silent_for(limits.idle_timeout) => return,
        }
    }
}

/// When bytes last moved on a connection, in milliseconds since `start`,
/// and whether bytes arrived since the last response bytes went out (a
/// request head under way).
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
    read_since_write: std::sync::atomic::AtomicBool,
}

impl Activity {
    fn new() -> Activity {
        Activity { start: Instant::now(), last_ms: AtomicU64::new(0), read_since_write: false.into() }
    }

    fn touch(&self) {
        self.last_ms.store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    fn read(&self) {
        self.touch();
        self.read_since_write.store(true, Ordering::Relaxed);
    }

    fn wrote(&self) {
        self.touch();
        self.read_since_write.store(false, Ordering::Relaxed);
    }

    fn head_in_progress(&self) -> bool {
        self.read_since_write.load(Ordering::Relaxed)
    }

    /// Resolves once nothing has moved for `limit`.
    async fn silent_for(&self, limit: Duration) {
        loop {
            let last = self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
            let deadline = last + limit;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline).await;
        }
    }
}

/// A socket that records its activity and holds its connection permit
/// for as long as it lives (through a WebSocket upgrade too).
struct Tracked {
    /// Shared so a `408` can still be written once hyper gave up on it.
    inner: Arc<TcpStream>,
    activity: Arc<Activity>,
    _permit: OwnedSemaphorePermit,
}

impl AsyncRead for Tracked {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            std::task::ready!(this.inner.poll_read_ready(cx))?;
            let before = buf.filled().len();
            match this.inner.try_read_buf(buf) {
                Ok(_) => {
                    if buf.filled().len() > before {
                        this.activity.read();
                    }
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl Tracked {
    /// Waits until the socket is writable and writes with `write`,
    /// recording activity when anything went out.
    fn poll_written(
        &mut self,
        cx: &mut Context<'_>,
        mut write: impl FnMut(&TcpStream) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        loop {
            std::task::ready!(self.inner.poll_write_ready(cx))?;
            match write(&self.inner) {
                Ok(n) => {
                    if n > 0 {
                        self.activity.wrote();
                    }
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        self.get_mut().poll_written(cx, |socket| socket.try_write(data))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_written(cx, |socket| socket.try_write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // A TCP socket buffers nothing in user space.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The write half closes when the last handle drops; shutting it
        // down early would cut a 408 still to be written.
        Poll::Ready(Ok(()))
    }
}
