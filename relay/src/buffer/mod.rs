//! Bounded replay: per-session buffers of the events a consumer may ask to
//! have again, and the table that caps how many sessions are held.

mod disk;
mod session;
mod store;

pub use disk::DiskError;
pub use session::{Admission, SessionBuffer};
pub use store::{Replay, SessionStore, StoreLimits};

pub use aep_client::protocol::event::Position;
