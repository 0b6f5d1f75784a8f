//! What a person asks of the console: answers (held on the device first),
//! session commands, retries, dismissing a notice. A command that cannot
//! leave is refused in words, never queued.

use aep_browser::driver;
use aep_engine::client::hub::{Hub, HubError, Recipient};
use aep_engine::control::answer::Answer;
use aep_engine::control::sender::{Address, CancelScope};
use aep_engine::store::CardRef;
use aep_engine::{Capture, UnixMs};
use leptos::prelude::*;
use serde_json::{Map, Value};

use super::{Console, HeldAnswer};
use crate::model::hold::{Held, UNDO_MS};
use crate::model::session::Lane;
use crate::model::words;
use crate::web::platform::{after, now};

impl Console {
    fn send(self, f: impl FnOnce(&mut Hub) -> Result<String, HubError>) -> Result<String, String> {
        let d = self.shared().ok_or_else(|| "Not connected to any relay.".to_owned())?;
        let out = driver::with(&d, |d| f(&mut d.hub)).map_err(|e| words::not_sent(&e));
        self.schedule();
        out
    }

    pub fn respond(self, card: &CardRef, answer: Answer) -> Result<String, String> {
        let id = card.request.to_string();
        self.send(move |hub| hub.respond(&id, answer, now()))
    }

    /// Holds `answer` on this device for [`UNDO_MS`], then sends it; a
    /// refusal to send is put in `error`. Returns the hold. One answer per
    /// request per device: while one is held, another (the second half of
    /// a double tap, a key pressed twice) holds nothing more.
    pub fn hold(self, card: &CardRef, answer: Answer, what: String, error: RwSignal<Option<String>>) -> u64 {
        let request = card.request.to_string();
        if let Some(seq) = self.held.with_untracked(|h| h.iter().find(|x| x.request == request).map(|x| x.seq)) {
            return seq;
        }
        let state = self.state();
        let seq = state.hold_seq.get() + 1;
        state.hold_seq.set(seq);
        state.held.borrow_mut().push((seq, HeldAnswer { card: card.clone(), answer, error }));
        let until = UnixMs(now().0 + UNDO_MS);
        self.held.update(|h| h.push(Held { seq, request, what, until }));
        after(UNDO_MS as i32, move || self.release(seq));
        seq
    }

    fn take_held(self, seq: u64) -> Option<HeldAnswer> {
        let state = self.state();
        let held = {
            let mut all = state.held.borrow_mut();
            all.iter().position(|(s, _)| *s == seq).map(|i| all.remove(i).1)
        };
        self.held.update(|h| h.retain(|x| x.seq != seq));
        held
    }

    /// Sends a held answer now (its window ended, or "Send now").
    pub fn release(self, seq: u64) {
        let Some(h) = self.take_held(seq) else { return };
        crate::ui::keys::focus_after_answer(&format!("card-{}", h.card.request));
        self.answer_now(&h.card, h.answer, h.error);
    }

    /// Sends `answer` now; a refusal to send is said in `error`.
    pub fn answer_now(self, card: &CardRef, answer: Answer, error: RwSignal<Option<String>>) {
        if let Err(e) = self.respond(card, answer) {
            error.try_set(Some(format!("{} \u{2014} {e}", crate::web::platform::wall(now()))));
        }
    }

    /// Drops a held answer unsent.
    pub fn undo(self, seq: u64) {
        self.take_held(seq);
    }

    fn target(lane: &Lane, run: Option<&str>) -> Recipient {
        let to = Address { session: lane.name.clone(), run: run.map(str::to_owned) };
        Recipient { to, relay: lane.verbs.relay.clone() }
    }

    pub fn cancel(self, lane: &Lane, run: Option<&str>, reason: Option<String>) -> Result<String, String> {
        let scope = if run.is_some() { CancelScope::Run } else { CancelScope::Session };
        let t = Self::target(lane, run);
        self.send(move |hub| hub.cancel(&t, scope, reason, now()))
    }

    pub fn pause(self, lane: &Lane) -> Result<String, String> {
        let t = Self::target(lane, None);
        self.send(move |hub| hub.pause(&t, now()))
    }

    pub fn resume(self, lane: &Lane) -> Result<String, String> {
        let t = Self::target(lane, None);
        self.send(move |hub| hub.resume(&t, now()))
    }

    pub fn vendor(self, lane: &Lane, ty: &str, data: Map<String, Value>) -> Result<String, String> {
        let t = Self::target(lane, lane.open_run().map(|r| r.name.as_str()));
        let ty = ty.to_owned();
        self.send(move |hub| hub.vendor(&ty, &t, None, data, Capture::Redacted, now()))
    }

    /// Sends a timed-out command again: same id, same bytes.
    pub fn retry(self, id: &str) -> Result<(), String> {
        let id = id.to_owned();
        self.send(move |hub| hub.retry(&id, now()).map(|()| String::new())).map(|_| ())
    }

    pub fn dismiss_notice(self, id: u64) {
        self.notices.update(|n| n.retain(|x| x.id != id));
    }
}
