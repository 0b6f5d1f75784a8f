//! Control (AEP-0004): commands, their acks and their outcomes.
//!
//! * [`ack`]: recognising acks, shared by the sender, the target and the store.
//! * [`sender`]: building commands and following each one to a decision and
//!   an outcome.
//! * [`target`]: receiving commands exactly once and answering them.

pub mod ack;
pub mod answer;
pub mod sender;
pub mod target;
