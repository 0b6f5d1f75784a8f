//! The receiving half of permessage-deflate (RFC 7692 §7.2.2), bounded:
//! a message stops inflating as soon as it passes the relay's message
//! limit. A small compressed message can stand for a thousand times its
//! size, so checking the size after inflating would let any client, even
//! a watcher without a token, make the relay hold that much for a moment.
//!
//! The relay asks every peer for `client_no_context_takeover`, so each
//! message inflates on its own and no window is kept between messages (a
//! kept one is 32 KiB a connection, for the few commands a console sends).
//!
//! The sending half is [`super::compress`]; [`Bounded`] pairs the two
//! as the connection's extension. A message stopped at the limit reaches
//! the connection empty, with [`Overflow`] raised, so the connection
//! refuses it in words (`closing`, then 1009) as it refuses any message
//! too big, rather than ratchet ending the connection on an error.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::compress::{CompressError, Deflater};
use bytes::BytesMut;
use flate2::{Decompress, FlushDecompress, Status};
use ratchet_ext::{Extension, ExtensionDecoder, ExtensionEncoder, FrameHeader, OpCode, RsvBits, SplittableExtension};

/// Ends every message's compressed data (RFC 7692 §7.2.2).
pub(super) const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// Deflate as negotiated, inflating into at most `limit` bytes a message.
#[derive(Debug)]
pub struct Bounded {
    deflate: Deflater,
    inflate: Inflate,
}

impl Bounded {
    /// The extension, and the flag its messages past `limit` raise.
    pub fn new(deflate: Deflater, limit: usize) -> (Bounded, Overflow) {
        let inflate = Inflate::new(limit);
        let overflow = Overflow(inflate.over.clone());
        (Bounded { deflate, inflate }, overflow)
    }
}

/// Raised when a message was stopped at the limit.
#[derive(Clone, Debug)]
pub struct Overflow(Arc<AtomicBool>);

impl Overflow {
    /// Whether the message just read was stopped at the limit (and
    /// lowers the flag).
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::AcqRel)
    }
}

/// Inflates compressed messages, each on its own.
pub struct Inflate {
    /// How many bytes the last message inflated to (or was stopped at).
    last_out: u64,
    limit: usize,
    /// The message being received was sent compressed.
    compressed: bool,
    /// Raised for a message stopped at the limit.
    over: Arc<AtomicBool>,
}

impl std::fmt::Debug for Inflate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inflate").field("limit", &self.limit).finish_non_exhaustive()
    }
}

impl Inflate {
    fn new(limit: usize) -> Inflate {
        Inflate { last_out: 0, limit, compressed: false, over: Arc::new(AtomicBool::new(false)) }
    }

    /// `payload` inflated in place, or refused once past the limit.
    fn inflate(&mut self, payload: &mut BytesMut) -> Result<(), InflateError> {
        let mut window = Decompress::new(false);
        let inflated = inflate_into(&mut window, payload, self.limit);
        self.last_out = window.total_out();
        inflated
    }
}

/// One message inflated in place with `window`, stopped once past `limit`.
fn inflate_into(window: &mut Decompress, payload: &mut BytesMut, limit: usize) -> Result<(), InflateError> {
    payload.extend_from_slice(&TAIL);
    let start = window.total_in();
    let mut out: Vec<u8> = Vec::with_capacity((payload.len() * 4).min(limit.saturating_add(1)));
    loop {
        let used = (window.total_in() - start) as usize;
        // Done when the input is used up and the output had room to spare.
        if used >= payload.len() && out.len() < out.capacity() {
            break;
        }
        if out.len() == out.capacity() {
            // Never room for more than one byte past the limit.
            let room = limit.saturating_add(1).saturating_sub(out.len());
            if room == 0 {
                return Err(InflateError::TooBig(limit));
            }
            out.reserve_exact(out.len().max(4096).min(room));
        }
        let before = (window.total_in(), out.len());
        let status = window.decompress_vec(&payload[used..], &mut out, FlushDecompress::Sync)?;
        if out.len() > limit {
            return Err(InflateError::TooBig(limit));
        }
        if status == Status::StreamEnd {
            break;
        }
        if (window.total_in(), out.len()) == before {
            // Nothing came out: the end when the input is used up (the
            // output had filled its room exactly as the input ran out),
            // else data that cannot go on.
            if (window.total_in() - start) as usize >= payload.len() {
                break;
            }
            return Err(InflateError::Stalled);
        }
    }
    payload.clear();
    payload.extend_from_slice(&out);
    Ok(())
}

impl ExtensionDecoder for Inflate {
    type Error = InflateError;

    fn decode(&mut self, payload: &mut BytesMut, header: &mut FrameHeader) -> Result<(), InflateError> {
        match header.opcode {
            OpCode::Binary | OpCode::Text => {
                self.compressed = header.rsv1;
                // The whole message is inflated when its last frame is in.
                if !self.compressed || !header.fin {
                    return Ok(());
                }
            }
            OpCode::Continuation if header.fin && self.compressed => {}
            _ => return Ok(()),
        }
        self.compressed = false;
        match self.inflate(payload) {
            Err(InflateError::TooBig(_)) => {
                payload.clear();
                self.over.store(true, Ordering::Release);
            }
            other => other?,
        }
        header.rsv1 = true;
        Ok(())
    }
}

impl ExtensionEncoder for Bounded {
    type Error = CompressError;

    fn encode(&mut self, payload: &mut BytesMut, header: &mut FrameHeader) -> Result<(), Self::Error> {
        self.deflate.encode(payload, header)
    }
}

impl ExtensionDecoder for Bounded {
    type Error = InflateError;

    fn decode(&mut self, payload: &mut BytesMut, header: &mut FrameHeader) -> Result<(), Self::Error> {
        self.inflate.decode(payload, header)
    }
}

impl Extension for Bounded {
    fn bits(&self) -> RsvBits {
        RsvBits { rsv1: true, rsv2: false, rsv3: false }
    }
}

impl SplittableExtension for Bounded {
    type SplitEncoder = Deflater;
    type SplitDecoder = Inflate;

    fn split(self) -> (Self::SplitEncoder, Inflate) {
        (self.deflate, self.inflate)
    }
}

/// Why a compressed message was not taken.
#[derive(Debug, thiserror::Error)]
pub enum InflateError {
    #[error("message too big once inflated (the limit is {0} bytes)")]
    TooBig(usize),
    #[error("the compressed message is not valid deflate data: {0}")]
    Corrupt(#[from] flate2::DecompressError),
    #[error("the compressed message ends inside its data")]
    Stalled,
}

#[cfg(test)]
mod tests {
    use flate2::{Compress, Compression, FlushCompress};

    use super::*;

    /// `text` compressed as a client sends it: raw deflate, sync-flushed,
    /// the four-byte tail dropped.
    fn compressed(window: &mut Compress, text: &[u8]) -> BytesMut {
        let mut out = Vec::with_capacity(text.len() + 64);
        window.compress_vec(text, &mut out, FlushCompress::Sync).unwrap();
        assert!(out.ends_with(&TAIL));
        out.truncate(out.len() - TAIL.len());
        BytesMut::from(&out[..])
    }

    fn header(opcode: OpCode, fin: bool, rsv1: bool) -> FrameHeader {
        FrameHeader { fin, rsv1, rsv2: false, rsv3: false, opcode }
    }

    /// As a peer told `client_no_context_takeover` sends them.
    #[test]
    fn every_message_inflates_on_its_own() {
        let mut inflate = Inflate::new(1 << 20);
        let event = br#"{"aep":"0.1","type":"progress.status","data":{"phase":"working"}}"#;
        for _ in 0..3 {
            let mut payload = compressed(&mut Compress::new(Compression::default(), false), event);
            inflate.decode(&mut payload, &mut header(OpCode::Text, true, true)).unwrap();
            assert_eq!(&payload[..], &event[..]);
        }
    }

    #[test]
    fn an_uncompressed_message_passes_untouched() {
        let mut inflate = Inflate::new(1 << 20);
        let mut payload = BytesMut::from(&b"plain"[..]);
        inflate.decode(&mut payload, &mut header(OpCode::Text, false, false)).unwrap();
        inflate.decode(&mut payload, &mut header(OpCode::Continuation, true, false)).unwrap();
        assert_eq!(&payload[..], b"plain");
    }

    #[test]
    fn inflating_stops_at_the_limit_not_after() {
        // A megabyte of zeros is about a kilobyte compressed.
        let bomb = vec![0u8; 1 << 20];
        let mut client = Compress::new(Compression::best(), false);
        let mut payload = compressed(&mut client, &bomb);
        assert!(payload.len() < 8 * 1024, "{} bytes compressed", payload.len());
        let mut inflate = Inflate::new(64 * 1024);
        let err = inflate.inflate(&mut payload.clone()).unwrap_err();
        assert!(matches!(err, InflateError::TooBig(65536)), "{err}");
        assert!(inflate.last_out <= 64 * 1024 + 1, "inflated {} bytes", inflate.last_out);
        // As the connection reads it: the message arrives empty, the flag raised.
        let mut inflate = Inflate::new(64 * 1024);
        let overflow = Overflow(inflate.over.clone());
        inflate.decode(&mut payload, &mut header(OpCode::Binary, true, true)).unwrap();
        assert!(payload.is_empty() && overflow.take() && !overflow.take());
    }

    #[test]
    fn a_message_at_the_limit_is_taken() {
        let text = vec![b'a'; 4096];
        let mut client = Compress::new(Compression::default(), false);
        let mut payload = compressed(&mut client, &text);
        Inflate::new(4096).decode(&mut payload, &mut header(OpCode::Text, true, true)).unwrap();
        assert_eq!(payload.len(), 4096);
    }

    /// The output buffer starts at four times the compressed size. A
    /// message that inflates to exactly that fills it as its input runs
    /// out: one more call then has nothing to add, which is the end of the
    /// message, not a stall (a browser's command now and then).
    #[test]
    fn a_message_that_fills_the_first_buffer_exactly_is_taken() {
        let mut found = 0;
        for pad in 0..400 {
            for id in 0..40 {
                let text = format!(r#"{{"type":"control.pause","id":"c{id}","note":"{}"}}"#, "ab".repeat(pad));
                let mut payload = compressed(&mut Compress::new(Compression::default(), false), text.as_bytes());
                if text.len() != (payload.len() + TAIL.len()) * 4 {
                    continue;
                }
                found += 1;
                let decoded = Inflate::new(1 << 20).decode(&mut payload, &mut header(OpCode::Text, true, true));
                assert!(decoded.is_ok(), "{} bytes from {}: {decoded:?}", text.len(), payload.len());
                assert_eq!(&payload[..], text.as_bytes());
            }
        }
        assert!(found > 0, "no message of that size was found to try");
    }

    #[test]
    fn garbage_is_refused() {
        let mut payload = BytesMut::from(&[0xffu8, 0xff, 0xff, 0xff, 0x00][..]);
        let err = Inflate::new(1024).decode(&mut payload, &mut header(OpCode::Text, true, true)).unwrap_err();
        assert!(matches!(err, InflateError::Corrupt(_) | InflateError::Stalled), "{err}");
    }
}
