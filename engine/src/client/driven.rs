//! The contract between a sans-IO client core (a consumer's
//! [`Connection`], an agent's [`Agent`], a console's multi-relay
//! [`Hub`](super::hub::Hub)) and the driver that owns its sockets and its
//! timer (the browser's, tokio's): open and close the sockets it asks for,
//! feed it each socket's frames and closes with the time, write the frames
//! it queues on the socket it names, and wake it at the time it names. One
//! driver per runtime then serves every core the engine has.
//!
//! Sockets are named by [`SocketDriven::SocketId`]: a core with one socket
//! names it `()`, the hub names each by its relay's index.

use std::fmt::Debug;

use super::agent::{Agent, AgentChange};
use super::connection::Connection;
use super::output::{ClientEvent, SocketAction, State};
use crate::time::UnixMs;

/// A sans-IO core a driver runs; see the module documentation.
pub trait SocketDriven {
    /// Names one of the core's sockets.
    type SocketId: Copy + Eq + Debug + 'static;
    /// What the core reports to its owner.
    type Change;

    /// The core's sockets, in the order of the relays it was given.
    fn sockets(&self) -> impl Iterator<Item = Self::SocketId>;
    /// The lifecycle of `socket`'s connection (`None`: no such socket).
    fn state(&self, socket: Self::SocketId) -> Option<&State>;

    /// Starts connecting (again, after a close or a refusal).
    fn connect(&mut self, now: UnixMs);
    /// Closes deliberately; nothing reconnects until [`Self::connect`].
    fn close(&mut self, now: UnixMs);

    fn handle_open(&mut self, socket: Self::SocketId, now: UnixMs);
    fn handle_text(&mut self, socket: Self::SocketId, text: &str, now: UnixMs);
    fn handle_binary(&mut self, socket: Self::SocketId, bytes: &[u8], now: UnixMs);
    /// The socket closed or failed: `code` is the close frame's, or the
    /// one the engine names for what had none (such as
    /// [`CLOSE_ABNORMAL`](super::CLOSE_ABNORMAL) for a lost connection).
    fn handle_closed(&mut self, socket: Self::SocketId, now: UnixMs, code: u16, reason: &str);
    /// The answer to [`SocketAction::CheckAuthorization`]: the HTTP status
    /// the relay gave the socket's credentials, `None` without an answer.
    fn handle_authorization(&mut self, socket: Self::SocketId, status: Option<u16>, now: UnixMs);
    /// The timer armed from [`Self::poll_timeout`] fired.
    fn handle_timeout(&mut self, now: UnixMs);

    /// The next text frame to write, and the socket that takes it. Frames
    /// of one socket come out in order.
    fn poll_transmit(&mut self) -> Option<(Self::SocketId, String)>;
    /// The next socket operation.
    fn poll_action(&mut self) -> Option<(Self::SocketId, SocketAction)>;
    /// The next change for the owner, oldest first.
    fn poll_change(&mut self) -> Option<Self::Change>;
    /// When [`Self::handle_timeout`] wants to be called next.
    fn poll_timeout(&self) -> Option<UnixMs>;
}

/// A core of one socket keeps its reports without a socket name (as its
/// tests and applications call them); the contract names that socket `()`.
macro_rules! one_socket {
    ($ty:ty, $change:ty, $poll:ident) => {
        impl SocketDriven for $ty {
            type SocketId = ();
            type Change = $change;

            fn sockets(&self) -> impl Iterator<Item = ()> {
                std::iter::once(())
            }
            fn state(&self, (): ()) -> Option<&State> {
                Some(<$ty>::state(self))
            }
            fn connect(&mut self, now: UnixMs) {
                <$ty>::connect(self, now)
            }
            fn close(&mut self, now: UnixMs) {
                <$ty>::close(self, now)
            }
            fn handle_open(&mut self, (): (), now: UnixMs) {
                <$ty>::handle_open(self, now)
            }
            fn handle_text(&mut self, (): (), text: &str, now: UnixMs) {
                <$ty>::handle_text(self, text, now)
            }
            fn handle_binary(&mut self, (): (), bytes: &[u8], now: UnixMs) {
                <$ty>::handle_binary(self, bytes, now)
            }
            fn handle_closed(&mut self, (): (), now: UnixMs, code: u16, reason: &str) {
                <$ty>::handle_closed(self, now, code, reason)
            }
            fn handle_authorization(&mut self, (): (), status: Option<u16>, now: UnixMs) {
                <$ty>::handle_authorization(self, status, now)
            }
            fn handle_timeout(&mut self, now: UnixMs) {
                <$ty>::handle_timeout(self, now)
            }
            fn poll_transmit(&mut self) -> Option<((), String)> {
                <$ty>::poll_transmit(self).map(|text| ((), text))
            }
            fn poll_action(&mut self) -> Option<((), SocketAction)> {
                <$ty>::poll_action(self).map(|action| ((), action))
            }
            fn poll_change(&mut self) -> Option<$change> {
                <$ty>::$poll(self)
            }
            fn poll_timeout(&self) -> Option<UnixMs> {
                <$ty>::poll_timeout(self)
            }
        }
    };
}

one_socket!(Connection, ClientEvent, poll_event);
one_socket!(Agent, AgentChange, poll_change);
