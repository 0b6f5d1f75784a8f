//! The browser side: the bridge to the driver, storage, notifications.

pub mod bridge;
pub mod notify;
pub mod platform;
pub mod push;
pub mod rules;
pub mod storage;
