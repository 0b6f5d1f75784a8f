//! What a socket driver does for a sans-IO endpoint, whichever it is (a
//! consumer's [`Connection`], an agent's [`Agent`]): open and close the
//! socket it asks for, feed it frames and closes with the time, move the
//! frames it queues, and wake it at the time it names. One driver per
//! runtime then serves every endpoint the engine has.

use super::agent::{Agent, AgentChange};
use super::connection::Connection;
use super::output::{ClientEvent, SocketAction, State};
use crate::time::UnixMs;

pub trait Endpoint {
    /// What the endpoint reports to its owner.
    type Notice;

    fn connect(&mut self, now: UnixMs);
    fn close(&mut self, now: UnixMs);
    fn handle_open(&mut self, now: UnixMs);
    fn handle_text(&mut self, text: &str, now: UnixMs);
    fn handle_binary(&mut self, bytes: &[u8], now: UnixMs);
    fn handle_closed(&mut self, now: UnixMs, code: u16, reason: &str);
    fn handle_timeout(&mut self, now: UnixMs);
    fn poll_transmit(&mut self) -> Option<String>;
    fn poll_action(&mut self) -> Option<SocketAction>;
    fn poll_notice(&mut self) -> Option<Self::Notice>;
    fn poll_timeout(&self) -> Option<UnixMs>;
    fn state(&self) -> &State;
}

/// Forwards each driver report to the inherent method of the same name.
macro_rules! endpoint {
    ($ty:ty, $notice:ty, $poll:ident) => {
        impl Endpoint for $ty {
            type Notice = $notice;

            fn connect(&mut self, now: UnixMs) {
                <$ty>::connect(self, now)
            }
            fn close(&mut self, now: UnixMs) {
                <$ty>::close(self, now)
            }
            fn handle_open(&mut self, now: UnixMs) {
                <$ty>::handle_open(self, now)
            }
            fn handle_text(&mut self, text: &str, now: UnixMs) {
                <$ty>::handle_text(self, text, now)
            }
            fn handle_binary(&mut self, bytes: &[u8], now: UnixMs) {
                <$ty>::handle_binary(self, bytes, now)
            }
            fn handle_closed(&mut self, now: UnixMs, code: u16, reason: &str) {
                <$ty>::handle_closed(self, now, code, reason)
            }
            fn handle_timeout(&mut self, now: UnixMs) {
                <$ty>::handle_timeout(self, now)
            }
            fn poll_transmit(&mut self) -> Option<String> {
                <$ty>::poll_transmit(self)
            }
            fn poll_action(&mut self) -> Option<SocketAction> {
                <$ty>::poll_action(self)
            }
            fn poll_notice(&mut self) -> Option<$notice> {
                <$ty>::$poll(self)
            }
            fn poll_timeout(&self) -> Option<UnixMs> {
                <$ty>::poll_timeout(self)
            }
            fn state(&self) -> &State {
                <$ty>::state(self)
            }
        }
    };
}

endpoint!(Connection, ClientEvent, poll_event);
endpoint!(Agent, AgentChange, poll_change);
