//! The sans-IO relay connection (AEP-0003 §3.5, §4–§7).
//!
//! A [`Connection`] is the protocol half of one WebSocket to a relay: the
//! `hello` exchange, subscriptions with resume positions, rosters,
//! liveness pings, and reconnecting with backoff. It owns no socket and no
//! timer. A driver (the browser WebSocket, a tokio task) reports what
//! happened and carries out what it is told:
//!
//! 1. report: [`Connection::handle_open`], [`Connection::handle_text`],
//!    [`Connection::handle_binary`], [`Connection::handle_closed`],
//!    [`Connection::handle_timeout`];
//! 2. then drain, in this order: [`Connection::poll_transmit`] (send each
//!    text frame), [`Connection::poll_action`] (open or close the socket),
//!    [`Connection::poll_event`] (hand to the application), and arm one
//!    timer for [`Connection::poll_timeout`].
//!
//! The same contract, with each report naming its socket, is
//! [`SocketDriven`]: what the drivers run, for a connection, an agent or a
//! multi-relay hub alike.
//!
//! Resume positions advance only when the application takes an event from
//! [`Connection::poll_event`], so whatever was received but not processed
//! is asked for again after a reconnect: a reconnect loses nothing, and
//! dedupe on `(source, id)` absorbs what is delivered twice.

pub mod agent;
mod backoff;
mod close;
mod config;
mod connection;
mod driven;
pub mod hub;
mod outbox;
mod output;
mod positions;
mod subscription;

pub use backoff::Backoff;
pub use close::{
    sendable_close_code, AUTH_CLOSE_CODES, CLOSE_ABNORMAL, CLOSE_GAVE_UP, CLOSE_NORMAL, CLOSE_NO_STATUS,
    CLOSE_PROTOCOL_ERROR, CLOSE_UPGRADE_FORBIDDEN, CLOSE_UPGRADE_UNAUTHORIZED,
};
pub use config::{Config, ConfigError, ResumePolicy};
pub use connection::{Connection, MAX_INBOX, MAX_SUBSCRIPTIONS};
pub use driven::SocketDriven;
pub use outbox::{MAX_QUEUED_EVENTS, MAX_QUEUED_EVENT_BYTES, MAX_SOCKET_FRAMES};
pub use output::{ClientError, ClientEvent, Refusal, SocketAction, State};
pub use positions::{PositionMap, DEFAULT_MAX_SESSIONS};
pub use subscription::SubState;
