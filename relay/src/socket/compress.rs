//! The sending half of permessage-deflate (RFC 7692 §7.2.1), shaped so a
//! compressed console costs the relay about what a plain one does:
//!
//! * A live event fanned out to many consoles is compressed once, on its
//!   own, and those bytes go to every compressed console ([`Shared`]).
//!   Any peer inflates a message that never refers to earlier ones.
//! * Everything else a connection writes in one batch (a replay: hundreds
//!   of similar events) shares one window, which is what keeps a phone's
//!   first load small. The window lasts one batch: at the flush its
//!   compressor goes back to a pool all connections share, so an idle
//!   console holds none (a zlib compressor is a few hundred kilobytes).
//! * After a message compressed on its own, the window starts afresh: the
//!   peer's history now ends with bytes this connection's compressor never
//!   saw, so referring back from it would be wrong.
//! * While [`MAX_LEASED`] compressors are out, a batch goes uncompressed
//!   (RSV1 clear), which every peer takes: a storm of replays cannot make
//!   the relay hold a compressor per console.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use bytes::{Bytes, BytesMut};
use flate2::{Compress, Compression, FlushCompress, Status};
use ratchet_ext::{ExtensionEncoder, FrameHeader, OpCode};

use super::inflate::TAIL;
use crate::sync::lock;

/// Messages shorter than this go uncompressed: the frames a connection
/// says of itself are short, and deflate would only add bytes.
const SMALL: usize = 96;
/// Compressors out on lease at most, across all connections: a few per
/// core is all compressing can use at once, and each is ~260 KB.
const MAX_LEASED: usize = 8;
/// Compressors kept for reuse at most.
const MAX_IDLE: usize = 2;
/// The window every pooled compressor uses (the largest, 32 KiB).
const WINDOW_BITS: u8 = 15;

/// What was negotiated for the relay's side of the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// The largest window the peer takes (`server_max_window_bits`).
    pub window_bits: u8,
    /// The peer asked for a fresh window every message.
    pub no_context_takeover: bool,
}

impl Negotiated {
    /// Whether the relay compresses at all. A peer that asked for a window
    /// under the largest gets plain messages (always allowed): browsers
    /// never ask, and shared frames are made for the largest window.
    fn compresses(self) -> bool {
        self.window_bits >= WINDOW_BITS
    }
}

/// The compressors connections share.
struct Pool {
    idle: Mutex<Vec<Compress>>,
    leased: AtomicUsize,
}

static POOL: LazyLock<Pool> = LazyLock::new(|| Pool { idle: Mutex::new(Vec::new()), leased: AtomicUsize::new(0) });

impl Pool {
    /// A compressor with a fresh window, unless too many are out.
    fn lease(&self) -> Option<Lease> {
        if self.leased.fetch_add(1, Ordering::AcqRel) >= MAX_LEASED {
            self.leased.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let compress = lock(&self.idle).pop().unwrap_or_else(new_compress);
        Some(Lease(Some(compress)))
    }
}

fn new_compress() -> Compress {
    Compress::new_with_window_bits(Compression::default(), false, WINDOW_BITS)
}

/// A compressor out of the pool; back to it (window cleared) when dropped.
#[derive(Debug)]
struct Lease(Option<Compress>);

impl Lease {
    fn compress(&mut self) -> &mut Compress {
        self.0.as_mut().expect("held until dropped")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(mut compress) = self.0.take() {
            compress.reset();
            let mut idle = lock(&POOL.idle);
            if idle.len() < MAX_IDLE {
                idle.push(compress);
            }
        }
        POOL.leased.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One live event's compressed form, made by the first compressed
/// connection that sends it and reused by the rest.
#[derive(Debug, Default)]
pub struct Shared(OnceLock<Option<Bytes>>);

impl Shared {
    pub fn new() -> Arc<Shared> {
        Arc::new(Shared::default())
    }

    /// `text` deflated on its own; `None` when it goes uncompressed.
    pub fn deflated(&self, text: &str) -> Option<&Bytes> {
        self.0
            .get_or_init(|| {
                if text.len() < SMALL {
                    return None;
                }
                // Brief, so past the lease limit it takes a compressor of its own.
                let mut lease = POOL.lease();
                let mut own;
                let compress = match lease.as_mut() {
                    Some(lease) => lease.compress(),
                    None => {
                        own = new_compress();
                        &mut own
                    }
                };
                deflate(compress, text.as_bytes()).ok().map(Bytes::from)
            })
            .as_ref()
    }
}

/// A connection's compression state, shared by its writer and the encoder
/// ratchet calls.
#[derive(Debug)]
pub struct Window {
    negotiated: Negotiated,
    /// The batch's compressor, while it has one.
    lease: Option<Lease>,
    /// The next message is already compressed ([`Shared`]).
    precompressed: bool,
}

impl Window {
    pub fn new(negotiated: Negotiated) -> Arc<Mutex<Window>> {
        Arc::new(Mutex::new(Window { negotiated, lease: None, precompressed: false }))
    }

    /// Whether live events go out as their shared compressed form.
    pub fn shares(&self) -> bool {
        self.negotiated.compresses()
    }

    /// The batch is written: its compressor goes back to the pool.
    pub fn end_batch(&mut self) {
        self.lease = None;
    }

    /// The next message is a [`Shared`] form: written as it is, and the
    /// window starts afresh after it.
    pub fn precompressed_next(&mut self) {
        self.lease = None;
        self.precompressed = true;
    }

    fn encode(&mut self, payload: &mut BytesMut, header: &mut FrameHeader) -> Result<(), CompressError> {
        if !matches!(header.opcode, OpCode::Text | OpCode::Binary) {
            return Ok(());
        }
        if std::mem::take(&mut self.precompressed) {
            header.rsv1 = true;
            return Ok(());
        }
        if payload.len() < SMALL || !self.negotiated.compresses() {
            return Ok(());
        }
        if self.lease.is_none() {
            self.lease = POOL.lease();
        }
        let Some(lease) = self.lease.as_mut() else { return Ok(()) };
        let out = deflate(lease.compress(), payload)?;
        if self.negotiated.no_context_takeover {
            self.lease = None;
        }
        payload.clear();
        payload.extend_from_slice(&out);
        header.rsv1 = true;
        Ok(())
    }
}

/// `input` as one message's compressed data: deflated with a sync flush,
/// the four-byte tail the peer adds back taken off.
fn deflate(compress: &mut Compress, input: &[u8]) -> Result<Vec<u8>, CompressError> {
    let start = compress.total_in();
    let mut out = Vec::with_capacity(input.len() / 2 + 64);
    loop {
        let used = (compress.total_in() - start) as usize;
        if out.len() == out.capacity() {
            out.reserve(out.capacity().max(256));
        }
        let status = compress.compress_vec(&input[used..], &mut out, FlushCompress::Sync)?;
        let done = (compress.total_in() - start) as usize == input.len() && out.len() < out.capacity();
        if done || status == Status::StreamEnd {
            break;
        }
    }
    if !out.ends_with(&TAIL) {
        return Err(CompressError::NoSyncFlush);
    }
    out.truncate(out.len() - TAIL.len());
    Ok(out)
}

/// The encoder ratchet calls for each outgoing message.
#[derive(Debug)]
pub struct Deflater {
    window: Arc<Mutex<Window>>,
}

impl Deflater {
    pub fn new(window: Arc<Mutex<Window>>) -> Deflater {
        Deflater { window }
    }
}

impl ExtensionEncoder for Deflater {
    type Error = CompressError;

    fn encode(&mut self, payload: &mut BytesMut, header: &mut FrameHeader) -> Result<(), CompressError> {
        lock(&self.window).encode(payload, header)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CompressError {
    #[error("deflate failed: {0}")]
    Deflate(#[from] flate2::CompressError),
    #[error("deflate did not end the message on a sync flush")]
    NoSyncFlush,
}

#[cfg(test)]
mod tests {
    use flate2::{Decompress, FlushDecompress};

    use super::*;

    const LARGEST: Negotiated = Negotiated { window_bits: 15, no_context_takeover: false };

    fn inflate(window: &mut Decompress, payload: &[u8]) -> Vec<u8> {
        let mut input = payload.to_vec();
        input.extend_from_slice(&TAIL);
        let mut out = Vec::with_capacity(64 * 1024);
        window.decompress_vec(&input, &mut out, FlushDecompress::Sync).unwrap();
        out
    }

    fn header() -> FrameHeader {
        FrameHeader { fin: true, rsv1: false, rsv2: false, rsv3: false, opcode: OpCode::Text }
    }

    fn event(n: usize) -> String {
        format!(
            r#"{{"aep":"0.1","type":"progress.status","seq":{n},"data":{{"phase":"working","message":"step {n} of the build"}}}}"#
        )
    }

    /// Sends `text` through `deflater` and returns what goes on the wire
    /// and whether RSV1 was set.
    fn encode(deflater: &mut Deflater, text: &str) -> (BytesMut, bool) {
        let mut payload = BytesMut::from(text.as_bytes());
        let mut h = header();
        deflater.encode(&mut payload, &mut h).unwrap();
        (payload, h.rsv1)
    }

    /// A batch shares one window; a shared live form between batches
    /// restarts it; the peer's inflater, which never forgets, reads it all.
    #[test]
    fn batches_share_a_window_and_live_forms_restart_it() {
        let window = Window::new(LARGEST);
        let mut deflater = Deflater::new(window.clone());
        let mut peer = Decompress::new(false);
        let mut sizes = Vec::new();
        for n in 0..3 {
            let (wire, rsv1) = encode(&mut deflater, &event(n));
            assert!(rsv1);
            sizes.push(wire.len());
            assert_eq!(inflate(&mut peer, &wire), event(n).as_bytes());
        }
        assert!(sizes[1] < sizes[0] / 2, "the second message refers back to the first: {sizes:?}");
        lock(&window).end_batch();
        assert!(lock(&window).lease.is_none(), "an idle connection holds no compressor");

        let live = event(3);
        let shared = Shared::new();
        let bytes = shared.deflated(&live).unwrap().clone();
        assert!(std::ptr::eq(shared.deflated(&live).unwrap(), shared.deflated(&live).unwrap()), "made once");
        lock(&window).precompressed_next();
        let mut payload = BytesMut::from(&bytes[..]);
        let mut h = header();
        deflater.encode(&mut payload, &mut h).unwrap();
        assert!(h.rsv1 && payload[..] == bytes[..], "the shared form goes out as it is");
        assert_eq!(inflate(&mut peer, &payload), live.as_bytes());

        for n in 4..6 {
            let (wire, _) = encode(&mut deflater, &event(n));
            assert_eq!(inflate(&mut peer, &wire), event(n).as_bytes(), "after a shared form, message {n}");
        }
    }

    #[test]
    fn short_messages_and_continuations_go_uncompressed() {
        let mut deflater = Deflater::new(Window::new(LARGEST));
        assert!(!encode(&mut deflater, r#"{"type":"subscribed","id":"all"}"#).1);
        let mut rest = BytesMut::from(event(1).as_bytes());
        let mut h = FrameHeader { opcode: OpCode::Continuation, ..header() };
        deflater.encode(&mut rest, &mut h).unwrap();
        assert!(!h.rsv1);
        assert!(Shared::new().deflated("short").is_none());
    }

    #[test]
    fn no_context_takeover_keeps_no_window_and_small_windows_go_plain() {
        let window = Window::new(Negotiated { window_bits: 15, no_context_takeover: true });
        let mut deflater = Deflater::new(window.clone());
        let mut peer = Decompress::new(false);
        for n in 0..3 {
            let (wire, rsv1) = encode(&mut deflater, &event(n));
            assert!(rsv1);
            assert_eq!(inflate(&mut peer, &wire), event(n).as_bytes());
            assert!(lock(&window).lease.is_none());
        }
        let small = Window::new(Negotiated { window_bits: 10, no_context_takeover: false });
        assert!(!lock(&small).shares());
        assert!(!encode(&mut Deflater::new(small), &event(1)).1);
    }
}
