//! The browser side: the bridge to the driver, storage, notifications.

pub mod bridge;
mod feed;
pub mod notify;
pub mod platform;
pub mod storage;
