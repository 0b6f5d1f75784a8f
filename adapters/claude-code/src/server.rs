//! The hook endpoint Claude Code's `http` hooks post to: loopback only.
//! A hook that cannot be read, or reaches an adapter shutting down, is
//! answered with no decision, so Claude Code carries on as without it.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};

use crate::daemon::{HookCall, Status};
use crate::hook::HookInput;

/// The path hooks post to.
pub const HOOK_PATH: &str = "/aep-claude-code/hook";
/// A hook's JSON is at most this big (a `Write` carries the whole file).
pub const MAX_HOOK_BYTES: usize = 16 * 1024 * 1024;

#[derive(Clone)]
struct Shared {
    calls: mpsc::UnboundedSender<HookCall>,
    status: watch::Receiver<Status>,
}

/// Binds `addr`, which must be a loopback address.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    if !addr.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("the hook endpoint listens on loopback only, not {addr}"),
        ));
    }
    TcpListener::bind(addr).await
}

pub fn router(calls: mpsc::UnboundedSender<HookCall>, status: watch::Receiver<Status>) -> Router {
    Router::new()
        .route(HOOK_PATH, post(hook))
        .route("/healthz", get(health))
        .layer(DefaultBodyLimit::max(MAX_HOOK_BYTES))
        .with_state(Shared { calls, status })
}

async fn hook(State(shared): State<Shared>, body: Bytes) -> (StatusCode, Json<Value>) {
    let input = match HookInput::parse(&body) {
        Ok(i) => i,
        Err(e) => {
            tracing::warn!("unreadable hook input: {e}");
            return (StatusCode::BAD_REQUEST, Json(json!({ "error": format!("unreadable hook input: {e}") })));
        }
    };
    let (reply, answer) = oneshot::channel();
    if shared.calls.send(HookCall { input, reply }).is_err() {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({})));
    }
    match answer.await {
        Ok(output) => (StatusCode::OK, Json(output)),
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, Json(json!({}))),
    }
}

async fn health(State(shared): State<Shared>) -> Json<Value> {
    let s = shared.status.borrow().clone();
    Json(json!({ "ok": true, "relay": s.live, "held": s.held }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_hook_endpoint_listens_on_loopback_only() {
        for addr in ["0.0.0.0:0", "[::]:0"] {
            let err = bind(addr.parse().unwrap()).await.expect_err(addr);
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{addr}: {err}");
        }
        assert!(bind("127.0.0.1:0".parse().unwrap()).await.is_ok());
    }
}
