//! Answers to attention requests (AEP-0002 §5.3, AEP-0006, AEP-0008).
//!
//! * [`Answer`]: the `answer` object of `control.attention.respond` and
//!   `attention.answered`, one variant per way of answering.
//! * [`request`]: the open request an answer is checked against, including
//!   its `respond_via` declaration and how an answer is applied to it.
//! * [`text`]: the AEP-0008 rule that typed text naming an option counts as
//!   that option.

mod object;
pub mod request;
pub mod text;

pub use object::{Answer, AnswerError};
pub use request::{Applied, AppliedRule, AttentionKind, Mismatch, OpenRequest, RequestError, RespondVia};
pub use text::{match_text, TextMatch};
