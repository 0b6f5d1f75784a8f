//! An answer is held on this device for a few seconds before it leaves,
//! so a slip can be undone; approving something dangerous takes a second,
//! deliberate step. Denying stays one tap (and is held the same way).

use aep_engine::{Severity, UnixMs};

/// How long an answer waits on this device before it is sent.
pub const UNDO_MS: u64 = 5_000;

/// Approving a request at or above this severity takes a second step.
pub const CONFIRM_FROM: Severity = Severity::Error;

/// After the first tap, the button ignores taps this long, so a double
/// tap cannot be both steps.
pub const CONFIRM_INERT_MS: f64 = 500.0;

/// Whether choosing an option takes a second step: only a permissive one
/// (it grants what was asked), on a severe request or one the agent marked
/// as destructive.
pub fn needs_confirm(severity: Severity, destructive: bool, permissive: bool) -> bool {
    permissive && (destructive || severity >= CONFIRM_FROM)
}

/// The button's words while it waits for its second tap: why, and what
/// the tap does.
pub fn confirm_words(severity: Severity, destructive: bool, label: &str) -> String {
    let why = if destructive { "destructive" } else { severity.as_str() };
    format!("Tap again to {label} ({why})")
}

/// One answer waiting on this device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// Tells holds apart (the same request can be held, undone, held again).
    pub seq: u64,
    /// The request it answers.
    pub request: String,
    /// What it says, in words: `“Allow”`, `“not now”`, `2 form values`.
    pub what: String,
    /// When it leaves on its own.
    pub until: UnixMs,
}

impl Held {
    /// `Sending “Deny” in 4 s`.
    pub fn words(&self, now: UnixMs) -> String {
        let left = self.until.0.saturating_sub(now.0).div_ceil(1000);
        let left = left.clamp(1, UNDO_MS.div_ceil(1000));
        format!("Sending {} in {left} s", self.what)
    }
}

/// What happens to held answers when the page is closed: they are not
/// sent. Said on the card while one is held.
pub const CLOSING_DROPS: &str = "Not sent yet: closing this page drops it.";

/// What an answer says, in the words of the card's options.
pub fn what(answer: &aep_engine::control::answer::Answer, options: &[super::card::OptionView]) -> String {
    use aep_engine::control::answer::Answer;
    match answer {
        Answer::Option { id, .. } => format!(
            "\u{201c}{}\u{201d}",
            options.iter().find(|o| &o.id == id && !o.label_is_id).map_or(id.as_str(), |o| o.label.as_str())
        ),
        Answer::Text { text } => format!("\u{201c}{text}\u{201d}"),
        Answer::Values { map } => super::words::count(map.len(), "form value", "form values"),
    }
}
