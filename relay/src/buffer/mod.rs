//! Bounded replay: per-session buffers of the events a consumer may ask to
//! have again, and the table that caps how many sessions are held.

mod disk;
mod session;
mod store;

pub use disk::DiskError;
pub use session::{Admission, SessionBuffer};
pub use store::{Replay, SessionStore, StoreLimits};

/// A session position `(epoch, seq)`, ordered as AEP-0001 §7 orders them.
pub type Position = (u64, u64);
