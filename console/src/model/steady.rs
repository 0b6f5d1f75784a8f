//! When a card may be answered by pointer or key: only once it has been on
//! screen, unmoved, long enough to have been seen. A double click whose
//! first half settles a card must not land its second half on the card
//! that slides into the freed slot, nor on one that just arrived above.

/// How long a card must sit still before its buttons act.
pub const STILL_MS: f64 = 400.0;

/// Positions closer than this are the same place: sub-pixel layout, and
/// the browser rounding a scroll it makes to device pixels (a card held in
/// place on screen while something above it changes can shift by half a
/// pixel). Far less than any button.
const SAME_PLACE_PX: f64 = 2.0;

/// Whether a card's buttons act now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Just drawn or just moved: clicks are ignored until `STILL_MS` pass.
    Settling,
    /// Seen in place long enough: clicks answer.
    Ready,
}

/// Where a card was last seen and since when it has been there, in view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Steadiness {
    /// Its top edge in page coordinates, and where that was on screen (the
    /// page's scroll subtracted), once measured.
    top: Option<(f64, f64)>,
    /// Some of it is inside the viewport. Out of view nothing can be
    /// clicked, so that alone does not make a card wait; coming into view
    /// does.
    visible: bool,
    /// When it was drawn, last moved or last came into view
    /// (milliseconds, any monotonic clock).
    still_since: f64,
}

impl Steadiness {
    /// A card drawn at `now`: it has not been seen yet.
    pub fn drawn(now: f64) -> Steadiness {
        Steadiness { top: None, visible: false, still_since: now }
    }

    /// Notes the card's top edge (page coordinates), the page's scroll and
    /// whether any of the card is in view at `now`; a move, or coming into
    /// view (scrolled to), restarts the wait. Returns true when it moved or
    /// came into view.
    ///
    /// A move is what a finger sees: the card's place on the page and on
    /// the screen both changed. The person's own scrolling moves it on the
    /// screen only; the browser keeping what is on screen in place while
    /// something above it (out of view) changes moves it on the page only.
    /// Neither is a move.
    pub fn observe(&mut self, top: f64, scroll: f64, visible: bool, now: f64) -> bool {
        let on_screen = top - scroll;
        let moved = self.top.is_some_and(|(page, screen)| {
            (page - top).abs() > SAME_PLACE_PX && (screen - on_screen).abs() > SAME_PLACE_PX
        });
        let appeared = visible && !self.visible && self.top.is_some();
        if moved || appeared {
            self.still_since = now;
        }
        self.top = Some((top, on_screen));
        self.visible = visible;
        moved || appeared
    }

    pub fn readiness(&self, now: f64) -> Readiness {
        if now - self.still_since >= STILL_MS {
            Readiness::Ready
        } else {
            Readiness::Settling
        }
    }

    /// Milliseconds until it is ready, if it is not yet.
    pub fn ready_in(&self, now: f64) -> Option<f64> {
        let left = self.still_since + STILL_MS - now;
        (left > 0.0).then_some(left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drawn_card_waits_before_its_buttons_act() {
        let mut s = Steadiness::drawn(1_000.0);
        s.observe(120.0, 0.0, true, 1_016.0);
        assert_eq!(s.readiness(1_150.0), Readiness::Settling);
        assert_eq!(s.ready_in(1_150.0), Some(250.0));
        assert_eq!(s.readiness(1_400.0), Readiness::Ready);
        assert_eq!(s.ready_in(1_400.0), None);
    }

    #[test]
    fn a_card_sliding_into_a_freed_slot_starts_over() {
        // Seen for a second below the card that was answered...
        let mut s = Steadiness::drawn(0.0);
        s.observe(600.0, 0.0, true, 10.0);
        assert_eq!(s.readiness(1_000.0), Readiness::Ready);
        // ...then the card above settles 40 ms after a click and this one
        // moves up into its place: the second click, 150 ms after the
        // first, finds it settling.
        assert!(s.observe(120.0, 0.0, true, 1_040.0));
        assert_eq!(s.readiness(1_150.0), Readiness::Settling);
        assert_eq!(s.readiness(1_440.0), Readiness::Ready);
    }

    #[test]
    fn a_card_scrolled_into_view_waits_before_its_buttons_act() {
        // Drawn below the fold long ago...
        let mut s = Steadiness::drawn(0.0);
        s.observe(2_000.0, 0.0, false, 10.0);
        // ...then a flick brings it under the finger.
        assert!(s.observe(2_000.0, 1_500.0, true, 5_000.0));
        assert_eq!(s.readiness(5_100.0), Readiness::Settling);
        assert_eq!(s.readiness(5_400.0), Readiness::Ready);
    }

    #[test]
    fn scrolling_it_along_is_not_a_move() {
        let mut s = Steadiness::drawn(0.0);
        s.observe(900.0, 300.0, true, 10.0);
        assert!(!s.observe(900.0, 420.0, true, 1_000.0), "the person's own scrolling");
        assert_eq!(s.readiness(1_001.0), Readiness::Ready);
    }

    #[test]
    fn a_change_out_of_view_above_it_that_the_browser_makes_up_for_is_not_a_move() {
        // Seen at 300 px on screen; a card above, out of view, folds to a
        // row 180 px shorter and the browser scrolls by as much, so what is
        // under the finger stays put.
        let mut s = Steadiness::drawn(0.0);
        s.observe(2_300.0, 2_000.0, true, 10.0);
        assert!(!s.observe(2_120.0, 1_820.0, true, 1_000.0));
        // Held in place to the device pixel, not the CSS one.
        assert!(!s.observe(1_890.5, 1_591.0, true, 1_001.0));
        assert_eq!(s.readiness(1_001.0), Readiness::Ready);
        // Without that scroll it does move under the finger.
        assert!(s.observe(1_940.0, 1_820.0, true, 2_000.0));
        assert_eq!(s.readiness(2_100.0), Readiness::Settling);
    }

    #[test]
    fn staying_put_keeps_a_card_ready() {
        let mut s = Steadiness::drawn(0.0);
        s.observe(300.0, 0.0, true, 5.0);
        assert!(!s.observe(300.2, 0.0, true, 800.0));
        assert_eq!(s.readiness(801.0), Readiness::Ready);
    }
}
