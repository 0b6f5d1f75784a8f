//! The browser side: the bridge to the driver, storage, probes,
//! notifications.

pub mod bridge;
pub mod notify;
pub mod platform;
pub mod probe;
pub mod storage;
