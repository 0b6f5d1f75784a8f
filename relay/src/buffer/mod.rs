//! Bounded replay: per-session buffers of the events a consumer may ask to
//! have again, and the table that caps how many sessions are held.

mod commit;
mod disk;
mod session;
mod store;

pub use commit::{Committed, Committer};
pub use disk::{Disk, DiskError, Loaded, Op};
pub use session::{Admission, SessionBuffer};
pub use store::{Replay, SessionStore, StoreLimits};

pub use aep_engine::protocol::event::Position;
