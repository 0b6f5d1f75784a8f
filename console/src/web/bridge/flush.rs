//! One flush per burst of changes: what the driver touched is read from
//! the hub once, and each signal is written only when its value changed.

use std::collections::HashSet;

use aep_browser::driver;
use aep_engine::client::hub::Hub;
use aep_engine::client::State as RelayState;
use aep_engine::store::CardRef;
use aep_engine::UnixMs;
use leptos::prelude::*;

use super::{move_on, set_if_changed, Bridge, Console, Inner, Notice, MAX_FLUSH_GAP_MS, ROSTER_REFRESH_MS};
use crate::model::announce::News;
use crate::model::card::{self, CardView};
use crate::model::notice::NoticeKind;
use crate::model::touched::Touched;
use crate::model::{inbox, session, status};
use crate::web::notify;
use crate::web::platform::{after, hidden, now, perf_now};

impl Console {
    /// After a driver turn: flushes at once when the last flush is old
    /// enough (a flood of socket messages starves timers), else later.
    pub fn kick(self, urgent: bool) {
        let state = self.state();
        if urgent || perf_now() - state.last_flush.get() >= state.flush_gap() {
            self.flush();
        } else {
            self.schedule();
        }
    }

    pub fn schedule(self) {
        let state = self.state();
        if state.scheduled.replace(true) {
            return;
        }
        // Coalesce bursts: the next flush comes a gap after the last one.
        let due = state.last_flush.get() + state.flush_gap() - perf_now();
        after(due.clamp(16.0, MAX_FLUSH_GAP_MS) as i32, move || self.flush());
    }

    fn flush(self) {
        let state = self.state();
        state.scheduled.set(false);
        let Some(rc) = state.shared() else { return };
        let started = perf_now();
        state.last_flush.set(started);
        let mut asks: Vec<usize> = Vec::new();
        {
            // Both or neither: what the driver touched is taken only when
            // it can be applied, else the next flush finds it still there.
            let (Ok(mut guard), Ok(mut lists)) = (rc.try_borrow_mut(), state.inner.try_borrow_mut()) else {
                self.schedule();
                return;
            };
            let Some(inner) = lists.as_mut() else { return };
            let d = &mut *guard;
            let touched = std::mem::take(&mut d.handler.touched);
            self.apply(&state, inner, &d.hub, touched, &mut asks);
        }
        // Signals change only now, with nothing borrowed: whatever they
        // wake may read the hub and the card views again.
        let writes = state.later.take();
        for write in writes {
            write();
        }
        aep_engine::order::sort_by(&mut asks, Ord::cmp);
        asks.dedup();
        if !asks.is_empty() {
            driver::with(&rc, |d| {
                for r in asks {
                    let _ = d.hub.request_roster(r);
                }
            });
        }
        // What a flush costs is mostly what it wakes: the components' effects,
        // then the browser's style, layout and paint. All of it has run by
        // the task after the next frame.
        request_animation_frame(move || after(0, move || state.cost_ms.set(perf_now() - started)));
    }

    fn apply(self, state: &Bridge, inner: &mut Inner, hub: &Hub, t: Touched, asks: &mut Vec<usize>) {
        let at = now();
        // The hub dropped changes nobody drained: redraw everything.
        let full = !inner.flushed || hub.dropped_changes() != inner.dropped;
        inner.dropped = hub.dropped_changes();
        // The sessions on screen these changes touched.
        let sessions = state.revisions(|key| t.redraws(key, full));
        let live: Vec<usize> = (0..hub.relay_count()).filter(|r| hub.state(*r) == Some(&RelayState::Live)).collect();
        let mut relays = status::relays(hub);
        status::remember(&mut relays, &mut inner.principals);
        let shown = relays.clone();
        state.later(move || set_if_changed(self.relays, shown));

        for said in t.notices.iter().filter(|n| n.kind == NoticeKind::Closing) {
            inner.closing.insert(said.relay.clone(), false);
        }
        for said in t.notices {
            let id = state.notice_seq.get() + 1;
            state.notice_seq.set(id);
            state.later(move || {
                self.notices.update(|n| {
                    if !n.iter().any(|x| x.text == said.text) {
                        n.push(Notice { id, relay: said.relay, kind: said.kind, text: said.text });
                        if n.len() > 8 {
                            n.remove(0);
                        }
                    }
                })
            });
        }

        // "Closing the connection" is over once that relay has gone and is
        // live again.
        for r in &t.away {
            if let Some(away) = hub.label(*r).and_then(|l| inner.closing.get_mut(l)) {
                *away = true;
            }
        }
        let back: Vec<String> = relays
            .iter()
            .filter(|r| r.is_live() && inner.closing.get(&r.label) == Some(&true))
            .map(|r| r.label.clone())
            .collect();
        if !back.is_empty() {
            for label in &back {
                inner.closing.remove(label);
            }
            state.later(move || {
                let stale = |n: &Notice| n.kind == NoticeKind::Closing && back.contains(&n.relay);
                if self.notices.with_untracked(|n| n.iter().any(stale)) {
                    self.notices.update(|n| n.retain(|x| !stale(x)));
                }
            });
        }

        let mut cards = t.cards;
        for id in &t.commands {
            let subject = hub.sender().get(id).and_then(|c| c.command().subject().map(str::to_owned));
            if let Some(r) = subject.and_then(|s| inner.list.card_for_request(&s).cloned()) {
                cards.insert(r);
            }
        }
        // A roster or a connection that changed can change whom a card can
        // reach (and whether this console may answer): every card is read again.
        let reach = t.rosters || t.status;
        if full || reach || !cards.is_empty() || inner.list.rows_expire(at) {
            self.refresh_cards(state, inner, hub, &cards, full || reach, at);
        }
        if !sessions.is_empty() {
            state.later(move || sessions.iter().for_each(move_on));
        }
        if full || t.store || t.status || t.rosters {
            let lanes = session::lanes(hub);
            state.later(move || set_if_changed(self.lanes, lanes));
        }
        if t.session_events && inner.flushed {
            asks.extend(live.iter().copied());
        }
        if at.since(inner.last_roster) >= ROSTER_REFRESH_MS {
            inner.last_roster = at;
            asks.extend(live.iter().copied());
        }
        inner.flushed = true;
    }

    /// Views are built only for cards on screen (see [`Console::card`]);
    /// here the list is refreshed, and the views of changed cards.
    fn refresh_cards(
        self,
        state: &Bridge,
        inner: &mut Inner,
        hub: &Hub,
        changed: &HashSet<CardRef>,
        full: bool,
        at: UnixMs,
    ) {
        let store = hub.store();
        let list = inner.list.refresh(hub, at);
        // Every card drawn, counted or not: one answered here whose agent
        // is gone is still on screen with what came of the answer.
        for (r, s) in &inner.cards {
            if !(full || changed.contains(r)) {
                continue;
            }
            if let Some(c) = store.card(r) {
                let v = card::view(hub, c);
                let s = s.clone();
                state.later(move || {
                    if s.with_untracked(|old| old != &v) {
                        s.set(v);
                    }
                });
            }
        }
        for r in &list.gone {
            inner.cards.remove(r);
        }
        // New requests are announced while the page is hidden, not those a
        // first catch-up brings.
        if inner.flushed && self.notify.get_untracked() && hidden() {
            let fresh: Vec<CardView> =
                list.fresh.iter().filter_map(|r| store.card(r)).map(|c| card::view(hub, c)).collect();
            if !fresh.is_empty() {
                state.later(move || notify::new_requests(&fresh));
            }
        }
        // Said in the live region, not for what a first catch-up brings.
        if inner.flushed {
            let news = News::gather(hub, &list.fresh, &list.settled);
            state.later(move || {
                let me = self.relays.with_untracked(|r| status::me(r));
                if let Some(words) = news.words(&me) {
                    self.announced.set(words);
                }
            });
        }
        let (rows, order) = (list.rows, list.order);
        state.later(move || set_if_changed(self.rows, rows));
        state.later(move || set_if_changed(self.inbox, order));

        let settled_changed = full || changed.iter().any(|r| store.card(r).is_none_or(|c| !c.needs_answer()));
        if settled_changed {
            let history = inbox::history(hub);
            state.later(move || set_if_changed(self.history, history));
        }
    }
}
