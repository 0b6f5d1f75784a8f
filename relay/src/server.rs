//! The accept loop: HTTP/1.1 connections bounded in number and in time.
//!
//! - At most `max_connections` sockets are open at once (upgraded
//!   WebSockets included, since the slot travels with the socket);
//!   beyond it a connection gets a `503` and is closed, instead of a
//!   socket the relay cannot afford.
//! - Connections that have not yet passed the credential check are
//!   *unproven*. They may hold at most `max_connections - reserved` slots
//!   and `max_connections_per_address` from one address; past either, or
//!   when the cap is reached, the oldest unproven connection is closed to
//!   make room, so silent or unauthenticated clients cannot starve
//!   authenticated ones. A new connection takes no slot until it sends
//!   something (silent ones wait outside, bounded in number and per
//!   address), and is closed if no complete request head follows within
//!   `first_request_timeout`.
//! - A connection waiting for a request head, idle or half-sent, is closed
//!   after `header_read_timeout`; one that had sent part of a head is told
//!   `408` first.
//! - A connection on which no byte has moved either way for
//!   `http_idle_timeout` is closed: a response the peer stopped reading
//!   (an SSE stream whose consumer stalled) cannot hold it forever.
//! - Request bodies have their own deadline (`body_timeout`, answered 408
//!   by the handler that reads them).
//!
//! - With TLS on, the handshake counts toward `first_request_timeout`, and
//!   a peer that speaks plain HTTP to the port is told to use `https://`
//!   and closed, without taking a slot.
//!
//! On shutdown the listener stops, idle connections close, and requests
//! in flight finish (the switchboard ends every stream).

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use crate::tls;

/// The bounds the accept loop applies, copied from the configuration.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub per_address: usize,
    pub reserved: usize,
    pub first_request_timeout: Duration,
}

/// What a connection has shown so far, set by the request path: a request
/// head arrived; a request passed the credential check.
#[derive(Default, Debug)]
pub struct Proof {
    requested: AtomicBool,
    proven: AtomicBool,
}

impl Proof {
    pub fn requested(&self) {
        self.requested.store(true, Ordering::Relaxed);
    }

    pub fn proven(&self) {
        self.proven.store(true, Ordering::Relaxed);
    }

    fn is_proven(&self) -> bool {
        self.proven.load(Ordering::Relaxed)
    }

    fn has_requested(&self) -> bool {
        self.requested.load(Ordering::Relaxed)
    }
}

/// One open connection as the slot table sees it.
struct Slot {
    ip: IpAddr,
    proof: Arc<Proof>,
    evict: Arc<Notify>,
}

/// Every open connection, oldest first.
struct Slots {
    open: Mutex<BTreeMap<u64, Slot>>,
    next: AtomicU64,
    limits: ConnectionLimits,
}

/// Connections accepted and not yet heard from: at most
/// `WAITING_PER_SLOT × max_connections` in all and `per_address` from one
/// address, each for at most `first_request_timeout`.
struct Waiting {
    by_address: Mutex<HashMap<IpAddr, usize>>,
    limits: ConnectionLimits,
}

const WAITING_PER_SLOT: usize = 4;

struct WaitingGuard {
    waiting: Arc<Waiting>,
    ip: IpAddr,
}

impl Waiting {
    fn enter(self: &Arc<Self>, ip: IpAddr) -> Option<WaitingGuard> {
        let mut by = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
        let total: usize = by.values().sum();
        let here = by.get(&ip).copied().unwrap_or(0);
        if here >= self.limits.per_address || total >= self.limits.max_connections.saturating_mul(WAITING_PER_SLOT) {
            return None;
        }
        *by.entry(ip).or_default() += 1;
        Some(WaitingGuard { waiting: self.clone(), ip })
    }
}

impl Drop for WaitingGuard {
    fn drop(&mut self) {
        let mut by = self.waiting.by_address.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = by.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                by.remove(&self.ip);
            }
        }
    }
}

/// A connection's place in [`Slots`], given back when it ends.
struct SlotGuard {
    slots: Arc<Slots>,
    id: u64,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.slots.open.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
    }
}

impl Slots {
    /// Takes a slot for a connection from `ip`, closing the oldest unproven
    /// connection when room is needed; `None` when every slot is held by a
    /// proven connection.
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<(SlotGuard, Arc<Proof>, Arc<Notify>)> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let reserved = self.limits.reserved.min(self.limits.max_connections / 4);
        let unproven_cap = self.limits.max_connections - reserved;
        let unproven = |open: &BTreeMap<u64, Slot>, from: Option<IpAddr>| {
            open.values().filter(|s| !s.proof.is_proven() && from.is_none_or(|ip| s.ip == ip)).count()
        };
        let evict_oldest = |open: &mut BTreeMap<u64, Slot>, from: Option<IpAddr>| -> bool {
            let oldest =
                open.iter().find(|(_, s)| !s.proof.is_proven() && from.is_none_or(|ip| s.ip == ip)).map(|(id, _)| *id);
            match oldest.and_then(|id| open.remove(&id)) {
                Some(slot) => {
                    slot.evict.notify_one();
                    true
                }
                None => false,
            }
        };
        if unproven(&open, Some(ip)) >= self.limits.per_address {
            evict_oldest(&mut open, Some(ip));
        }
        if (open.len() >= self.limits.max_connections || unproven(&open, None) >= unproven_cap)
            && !evict_oldest(&mut open, None)
            && open.len() >= self.limits.max_connections
        {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let proof = Arc::new(Proof::default());
        let evict = Arc::new(Notify::new());
        open.insert(id, Slot { ip, proof: proof.clone(), evict: evict.clone() });
        Some((SlotGuard { slots: self.clone(), id }, proof, evict))
    }
}

/// What a connection over the cap is told before it is closed.
const OVER_CAPACITY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: 76\r\n\r\n{\"error\":\"over-capacity\",\"detail\":\"too many connections; try again shortly\"}";

/// What a peer that sent only part of a request head in time is told.
const HEAD_TIMEOUT: &[u8] = b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: 70\r\n\r\n{\"error\":\"request-timeout\",\"detail\":\"the request head did not arrive\"}";

/// How long an over-capacity peer gets to take its 503.
const REFUSAL_WRITE: Duration = Duration::from_secs(1);

/// Serves `app` on `listener` (over TLS when `tls` is given) until `stop`
/// turns true, then waits for the open connections to finish.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    tls: Option<TlsAcceptor>,
    stop: watch::Receiver<bool>,
) -> io::Result<()> {
    // Evicted connections end promptly but not at once: room for them.
    let capacity = limits.max_connections * 2;
    let permits = Arc::new(Semaphore::new(capacity));
    let slots = Arc::new(Slots { open: Mutex::new(BTreeMap::new()), next: AtomicU64::new(0), limits });
    let waiting = Arc::new(Waiting { by_address: Mutex::new(HashMap::new()), limits });
    let mut accept_stop = stop.clone();
    loop {
        let (tcp, peer) = tokio::select! {
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
        let Some(waiting) = waiting.enter(peer.ip()) else {
            tokio::spawn(refuse(tcp));
            continue;
        };
        let (slots, permits, app, tls, stop) = (slots.clone(), permits.clone(), app.clone(), tls.clone(), stop.clone());
        tokio::spawn(async move {
            // A slot is taken only once the peer has sent something: a
            // silent connection costs a task and a descriptor, never a slot.
            let ready = tokio::time::timeout(limits.first_request_timeout, tcp.readable()).await;
            if !matches!(ready, Ok(Ok(()))) {
                return;
            }
            if tls.is_some() && !begins_handshake(&tcp).await {
                // Still counted as waiting: plain requests cannot pile up.
                refuse_plain(tcp).await;
                return;
            }
            drop(waiting);
            match (slots.admit(peer.ip()), permits.try_acquire_owned()) {
                (Some((slot, proof, evict)), Ok(permit)) => {
                    let occupancy = Occupancy { _permit: permit, _slot: slot };
                    // The handshake and the first request head share one deadline.
                    let deadline = Instant::now() + limits.first_request_timeout;
                    let activity = Arc::new(Activity::new());
                    let tcp = Arc::new(tcp);
                    let raw = Tracked { inner: tcp.clone(), activity: activity.clone(), _occupancy: occupancy };
                    let ends = Ends { proof, evict, activity, deadline, limits, stop };
                    match tls {
                        None => connection(raw, Some(tcp), ends, app).await,
                        Some(acceptor) => {
                            let handshake = tokio::select! {
                                done = tokio::time::timeout_at(deadline, acceptor.accept(raw)) => done,
                                () = ends.evict.notified() => return,
                            };
                            if let Ok(Ok(secured)) = handshake {
                                connection(secured, None, ends, app).await;
                            }
                        }
                    }
                }
                _ => refuse(tcp).await,
            }
        });
    }
    drop(listener);
    // Every permit back means every connection (and upgraded socket) ended.
    let _ = permits.acquire_many(capacity as u32).await;
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

/// Whether the peer's first byte opens a TLS handshake.
async fn begins_handshake(tcp: &TcpStream) -> bool {
    let mut first = [0u8; 1];
    matches!(tcp.peek(&mut first).await, Ok(1) if first[0] == tls::HANDSHAKE_RECORD)
}

/// Most of a plain request head read before it is answered.
const PLAIN_HEAD: usize = 8 * 1024;

/// Tells a plain-HTTP peer on the HTTPS port where to go. Its request head
/// is read first, and what follows drained briefly after the answer, so
/// the close does not reset the connection before the answer is read.
async fn refuse_plain(mut tcp: TcpStream) {
    let fallback = tcp.local_addr().map(|a| a.to_string()).unwrap_or_default();
    let _ = tokio::time::timeout(REFUSAL_WRITE, async {
        let mut head = Vec::with_capacity(1024);
        let mut chunk = [0u8; 1024];
        while head.len() < PLAIN_HEAD && !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match tcp.read(&mut chunk).await? {
                0 => break,
                n => head.extend_from_slice(&chunk[..n]),
            }
        }
        tcp.write_all(&tls::plain_http_refusal(&head, &fallback)).await?;
        tcp.shutdown().await?;
        while tcp.read(&mut chunk).await? > 0 {}
        io::Result::Ok(())
    })
    .await;
}

/// What a connection occupies while it lives: its permit and its slot.
struct Occupancy {
    _permit: OwnedSemaphorePermit,
    _slot: SlotGuard,
}

/// What ends a connection: eviction, its first request not arriving by
/// `deadline`, shutdown, silence.
struct Ends {
    proof: Arc<Proof>,
    evict: Arc<Notify>,
    activity: Arc<Activity>,
    deadline: Instant,
    limits: ConnectionLimits,
    stop: watch::Receiver<bool>,
}

/// Serves HTTP/1.1 on `io` (the tracked socket, or TLS over it). `plain`
/// is the socket itself when its bytes are HTTP, so a `408` can still be
/// written once hyper gave up on the connection.
async fn connection<I>(io: I, plain: Option<Arc<TcpStream>>, ends: Ends, app: Router)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Ends { proof, evict, activity, deadline, limits, mut stop } = ends;
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout).keep_alive(true);
    let marked = proof.clone();
    let service = app.map_request(move |mut request: hyper::Request<hyper::body::Incoming>| {
        marked.requested();
        request.extensions_mut().insert(marked.clone());
        request
    });
    let conn = builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(service)).with_upgrades();
    tokio::pin!(conn);
    let mut stopping = false;
    // Bytes arrived; a whole request head must follow as promptly.
    let first_request = tokio::time::sleep_until(deadline);
    tokio::pin!(first_request);
    let mut waiting_first = true;
    loop {
        tokio::select! {
            () = evict.notified() => return,
            () = &mut first_request, if waiting_first => {
                waiting_first = false;
                if !proof.has_requested() {
                    return;
                }
            }
            ended = conn.as_mut() => {
                let head_cut = ended.is_err_and(|e| e.is_timeout()) && activity.head_in_progress();
                if let (true, Some(tcp)) = (head_cut, &plain) {
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
    _occupancy: Occupancy,
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
