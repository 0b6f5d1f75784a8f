//! A demo agent is driven like any engine core: every report goes to
//! the engine's [`Agent`](aep_engine::client::agent::Agent), except that a
//! command frame waits out the persona's thinking time before the engine
//! sees it, and a new socket forgets commands still being thought about
//! (their connection is gone; a retry is decided afresh).

use aep_engine::client::agent::AgentChange;
use aep_engine::client::{SocketAction, SocketDriven, State};
use aep_engine::protocol::frame::Frame;
use aep_engine::UnixMs;

use super::{DemoAgent, Timer};

impl DemoAgent {
    fn forget_pondered(&mut self) {
        self.timers.retain(|(_, t)| !matches!(t, Timer::Decide(_)));
    }
}

/// One socket, as the agent's.
impl SocketDriven for DemoAgent {
    type SocketId = ();
    type Change = AgentChange;

    fn sockets(&self) -> impl Iterator<Item = ()> {
        std::iter::once(())
    }

    fn state(&self, (): ()) -> Option<&State> {
        Some(self.agent.state())
    }

    fn connect(&mut self, now: UnixMs) {
        self.agent.connect(now)
    }

    fn close(&mut self, now: UnixMs) {
        self.agent.close(now)
    }

    fn handle_open(&mut self, (): (), now: UnixMs) {
        self.forget_pondered();
        self.agent.handle_open(now)
    }

    fn handle_text(&mut self, (): (), text: &str, now: UnixMs) {
        match Frame::decode(text) {
            Ok(Frame::Event(command)) if command.is_command() && self.agent.state() == &State::Live => {
                self.consider(text, &command, now)
            }
            _ => self.agent.handle_text(text, now),
        }
    }

    fn handle_binary(&mut self, (): (), bytes: &[u8], now: UnixMs) {
        self.agent.handle_binary(bytes, now)
    }

    fn handle_closed(&mut self, (): (), now: UnixMs, code: u16, reason: &str) {
        self.forget_pondered();
        self.agent.handle_closed(now, code, reason)
    }

    fn handle_authorization(&mut self, (): (), status: Option<u16>, now: UnixMs) {
        self.agent.handle_authorization(status, now)
    }

    fn handle_timeout(&mut self, now: UnixMs) {
        self.agent.handle_timeout(now)
    }

    fn poll_transmit(&mut self) -> Option<((), String)> {
        self.agent.poll_transmit().map(|text| ((), text))
    }

    fn poll_action(&mut self) -> Option<((), SocketAction)> {
        self.agent.poll_action().map(|action| ((), action))
    }

    fn poll_change(&mut self) -> Option<AgentChange> {
        self.agent.poll_change()
    }

    fn poll_timeout(&self) -> Option<UnixMs> {
        self.agent.poll_timeout()
    }
}
