//! The WebSocket close codes the engine sends, and the ones drivers
//! report for what never had a close frame, named once for every driver.

/// Close codes that mean "not authorised": IANA's 3000/3003, and the
/// drivers' codes for an upgrade refused with HTTP 401/403.
pub const AUTH_CLOSE_CODES: [u16; 4] = [3000, 3003, CLOSE_UPGRADE_UNAUTHORIZED, CLOSE_UPGRADE_FORBIDDEN];
/// What a driver reports for an upgrade refused with HTTP 401: the engine
/// treats it as a refusal rather than something to retry.
pub const CLOSE_UPGRADE_UNAUTHORIZED: u16 = 4401;
/// What a driver reports for an upgrade refused with HTTP 403.
pub const CLOSE_UPGRADE_FORBIDDEN: u16 = 4403;
/// What a driver reports for a socket that ended without a close frame
/// (a network error, a failed connect, the device going offline): RFC 6455
/// §7.1.5's 1006, which is reported, never sent.
pub const CLOSE_ABNORMAL: u16 = 1006;
/// What a driver reports for a close frame that carried no code: RFC
/// 6455 §7.1.5's 1005, which is reported, never sent.
pub const CLOSE_NO_STATUS: u16 = 1005;
/// Our close code for an orderly close.
pub const CLOSE_NORMAL: u16 = 1000;
/// Our close code after refusing the relay's handshake.
pub const CLOSE_PROTOCOL_ERROR: u16 = 1002;
/// Our close code for a socket we gave up on (no hello, no pong, backlog).
pub const CLOSE_GAVE_UP: u16 = 4000;

/// Whether an application may send `code`: the WebSocket API throws on
/// anything but 1000 and the 3000–4999 range (RFC 6455 §7.4.2 leaves the
/// rest to the protocol itself), so a driver sends [`CLOSE_NORMAL`] instead.
pub fn sendable_close_code(code: u16) -> bool {
    code == CLOSE_NORMAL || (3000..=4999).contains(&code)
}
