//! The sending half of permessage-deflate (RFC 7692 §7.2.1), shaped so a
//! compressed console costs the relay about what a plain one does:
//!
//! * A live event fanned out to many consoles is compressed once, on its
//!   own, and those bytes go to every compressed console ([`Shared`]).
//!   Any peer inflates a message that never refers to earlier ones.
//! * A replay (hundreds of similar events) is deflated in one go with one
//!   window across its messages, which is what keeps a phone's first load
//!   small ([`Window::deflate_batch`]), and then written.
//! * Any other message is deflated on its own.
//!
//! A compressor is held only while it compresses, never across a write, and
//! comes from a pool all connections share: an idle console holds none (a
//! zlib compressor is a few hundred kilobytes), and however many replays
//! are under way, no more compressors are busy than threads compressing.
//! Every message is either on its own or in one batch's window, so the
//! peer's history never holds bytes a batch's compressor did not see.

use std::sync::{Arc, Mutex, OnceLock};

use bytes::{Bytes, BytesMut};
use flate2::{Compress, Compression, FlushCompress, Status};
use ratchet_ext::{ExtensionEncoder, FrameHeader, OpCode};

use super::inflate::TAIL;
use crate::sync::lock;

/// Messages shorter than this go uncompressed: the frames a connection
/// says of itself are short, and deflate would only add bytes.
const SMALL: usize = 96;
/// Compressors kept for reuse at most (each is ~260 KB).
const MAX_IDLE: usize = 4;
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

/// The compressors connections share, each with a fresh window.
static POOL: Mutex<Vec<Compress>> = Mutex::new(Vec::new());

fn lease() -> Lease {
    Lease(Some(lock(&POOL).pop().unwrap_or_else(new_compress)))
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
            let mut idle = lock(&POOL);
            if idle.len() < MAX_IDLE {
                idle.push(compress);
            }
        }
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
                deflate(lease().compress(), text.as_bytes()).ok().map(Bytes::from)
            })
            .as_ref()
    }
}

/// A connection's compression state, shared by its writer and the encoder
/// ratchet calls.
#[derive(Debug)]
pub struct Window {
    negotiated: Negotiated,
    /// The next message goes out as it is: `Some(true)` already
    /// compressed, `Some(false)` uncompressed whatever its size.
    as_is: Option<bool>,
}

impl Window {
    pub fn new(negotiated: Negotiated) -> Arc<Mutex<Window>> {
        Arc::new(Mutex::new(Window { negotiated, as_is: None }))
    }

    /// Whether messages go out compressed at all.
    pub fn compresses(&self) -> bool {
        self.negotiated.compresses()
    }

    /// The next message goes out as it is: already compressed ([`Shared`],
    /// a batch's), with RSV1; or uncompressed, so that it stays out of the
    /// peer's window (a batch's message that is not deflated).
    pub fn as_is_next(&mut self, compressed: bool) {
        self.as_is = Some(compressed);
    }

    /// A replay's messages deflated in one go, one window across them
    /// (unless the peer asked for none); `None` for each that goes
    /// uncompressed (short ones, which stay out of the peer's window).
    pub fn deflate_batch(&self, texts: &[Arc<str>]) -> Vec<Option<Bytes>> {
        if !self.negotiated.compresses() {
            return vec![None; texts.len()];
        }
        let mut lease = lease();
        texts
            .iter()
            .map(|text| {
                if text.len() < SMALL {
                    return None;
                }
                let out = deflate(lease.compress(), text.as_bytes()).ok().map(Bytes::from);
                if self.negotiated.no_context_takeover {
                    lease.compress().reset();
                }
                out
            })
            .collect()
    }

    fn encode(&mut self, payload: &mut BytesMut, header: &mut FrameHeader) -> Result<(), CompressError> {
        if !matches!(header.opcode, OpCode::Text | OpCode::Binary) {
            return Ok(());
        }
        if let Some(compressed) = self.as_is.take() {
            header.rsv1 = compressed;
            return Ok(());
        }
        if payload.len() < SMALL || !self.negotiated.compresses() {
            return Ok(());
        }
        let out = deflate(lease().compress(), payload)?;
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

    /// What the write task does with an already compressed form.
    fn send_precompressed(window: &Arc<Mutex<Window>>, deflater: &mut Deflater, bytes: &Bytes) -> BytesMut {
        lock(window).as_is_next(true);
        let mut payload = BytesMut::from(&bytes[..]);
        let mut h = header();
        deflater.encode(&mut payload, &mut h).unwrap();
        assert!(h.rsv1 && payload[..] == bytes[..], "a compressed form goes out as it is");
        payload
    }

    /// A replay shares one window; live forms and single messages stand
    /// on their own; the peer's inflater, which never forgets, reads it all.
    #[test]
    fn a_batch_shares_a_window_and_everything_else_stands_alone() {
        let window = Window::new(LARGEST);
        let mut deflater = Deflater::new(window.clone());
        let mut peer = Decompress::new(false);
        let (single, rsv1) = encode(&mut deflater, &event(0));
        assert!(rsv1);
        assert_eq!(inflate(&mut peer, &single), event(0).as_bytes());

        let texts: Vec<Arc<str>> = (1..6).map(|n| Arc::from(event(n))).collect();
        let batch = lock(&window).deflate_batch(&texts);
        for (n, form) in batch.iter().enumerate() {
            let wire = send_precompressed(&window, &mut deflater, form.as_ref().unwrap());
            assert_eq!(inflate(&mut peer, &wire), texts[n].as_bytes());
        }
        let sizes: Vec<usize> = batch.iter().map(|b| b.as_ref().unwrap().len()).collect();
        assert!(sizes[1] < sizes[0] / 2, "the batch refers back within itself: {sizes:?} after {}", single.len());

        let live = event(6);
        let shared = Shared::new();
        let bytes = shared.deflated(&live).unwrap().clone();
        assert!(std::ptr::eq(shared.deflated(&live).unwrap(), shared.deflated(&live).unwrap()), "made once");
        let wire = send_precompressed(&window, &mut deflater, &bytes);
        assert_eq!(inflate(&mut peer, &wire), live.as_bytes());
        let (after, _) = encode(&mut deflater, &event(7));
        assert_eq!(inflate(&mut peer, &after), event(7).as_bytes());
    }

    #[test]
    fn short_messages_and_continuations_go_uncompressed() {
        let window = Window::new(LARGEST);
        let mut deflater = Deflater::new(window.clone());
        assert!(!encode(&mut deflater, r#"{"type":"subscribed","id":"all"}"#).1);
        let mut rest = BytesMut::from(event(1).as_bytes());
        let mut h = FrameHeader { opcode: OpCode::Continuation, ..header() };
        deflater.encode(&mut rest, &mut h).unwrap();
        assert!(!h.rsv1);
        assert!(Shared::new().deflated("short").is_none());
        let short: Arc<str> = Arc::from("{}");
        assert_eq!(lock(&window).deflate_batch(&[short, Arc::from(event(2))])[0], None);
    }

    #[test]
    fn no_context_takeover_and_small_windows_are_honoured() {
        let window = Window::new(Negotiated { window_bits: 15, no_context_takeover: true });
        let mut deflater = Deflater::new(window.clone());
        let mut peer = Decompress::new(false);
        let texts: Vec<Arc<str>> = (0..3).map(|n| Arc::from(event(n))).collect();
        let batch = lock(&window).deflate_batch(&texts);
        let sizes: Vec<usize> = batch.iter().map(|b| b.as_ref().unwrap().len()).collect();
        assert!(sizes[1] * 3 > sizes[0] * 2, "no message refers back: {sizes:?}");
        for (n, form) in batch.iter().enumerate() {
            let wire = send_precompressed(&window, &mut deflater, form.as_ref().unwrap());
            assert_eq!(inflate(&mut peer, &wire), texts[n].as_bytes());
        }
        let small = Window::new(Negotiated { window_bits: 10, no_context_takeover: false });
        assert!(!lock(&small).compresses());
        assert!(lock(&small).deflate_batch(&texts).iter().all(Option::is_none));
        assert!(!encode(&mut Deflater::new(small), &event(1)).1);
    }
}
