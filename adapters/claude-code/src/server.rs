//! The hook endpoint Claude Code's `http` hooks post to (the kit's):
//! loopback only. A hook that cannot be read, or reaches an adapter
//! shutting down, is answered with no decision, so Claude Code carries on
//! as without it.

use axum::Router;
use tokio::sync::{mpsc, watch};

use crate::daemon::{HookCall, Status};

pub use aep_adapter_kit::server::{bind, MAX_HOOK_BYTES};

/// The path hooks post to.
pub const HOOK_PATH: &str = "/aep-claude-code/hook";

pub fn router(calls: mpsc::UnboundedSender<HookCall>, status: watch::Receiver<Status>) -> Router {
    aep_adapter_kit::server::router(HOOK_PATH, calls, status)
}
