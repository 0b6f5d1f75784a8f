//! WebSocket frames by hand (RFC 6455 §5.2), for clients that must see the
//! wire as it is: RSV1, opcodes and payload bytes, uninflated. Shared by
//! the deflate tests and the socket benchmark, whose consoles count frames
//! without decoding them.

#![allow(dead_code)]

/// A client text frame, masked with a zero key (which leaves the payload
/// as it is). Client messages here stay under 64 KiB.
pub fn masked_text(payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x81];
    if payload.len() < 126 {
        frame.push(0x80 | payload.len() as u8);
    } else {
        frame.push(0x80 | 126);
        frame.extend_from_slice(&(u16::try_from(payload.len()).expect("under 64 KiB")).to_be_bytes());
    }
    frame.extend_from_slice(&[0, 0, 0, 0]);
    frame.extend_from_slice(payload);
    frame
}

/// One whole server frame at the start of a buffer.
pub struct FrameAt {
    pub fin: bool,
    /// RSV1: the message is compressed (RFC 7692 §6).
    pub compressed: bool,
    pub masked: bool,
    pub opcode: u8,
    /// Where its payload is in the buffer.
    pub payload: std::ops::Range<usize>,
}

impl FrameAt {
    /// The frame's whole length: what to drain once it is read.
    pub fn len(&self) -> usize {
        self.payload.end
    }
}

/// The frame at the start of `buf`, once all of it has arrived.
pub fn frame_at(buf: &[u8]) -> Option<FrameAt> {
    if buf.len() < 2 {
        return None;
    }
    let (len, at) = match buf[1] & 0x7f {
        126 if buf.len() >= 4 => (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4),
        127 if buf.len() >= 10 => (u64::from_be_bytes(buf[2..10].try_into().unwrap()) as usize, 10),
        126 | 127 => return None,
        n => (n as usize, 2),
    };
    (buf.len() >= at + len).then(|| FrameAt {
        fin: buf[0] & 0x80 != 0,
        compressed: buf[0] & 0x40 != 0,
        masked: buf[1] & 0x80 != 0,
        opcode: buf[0] & 0x0f,
        payload: at..at + len,
    })
}
