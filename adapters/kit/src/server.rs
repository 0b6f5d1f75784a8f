//! The hook endpoint an agent's hooks post to: loopback only. A hook that
//! cannot be read, or reaches an adapter shutting down, is answered with
//! no decision, so the agent carries on as without it.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};

use crate::daemon::{HookCall, Status};

/// A hook's JSON is at most this big (a file write carries the whole file).
pub const MAX_HOOK_BYTES: usize = 16 * 1024 * 1024;

struct Shared<I> {
    calls: mpsc::UnboundedSender<HookCall<I>>,
    status: watch::Receiver<Status>,
}

impl<I> Clone for Shared<I> {
    fn clone(&self) -> Self {
        Shared { calls: self.calls.clone(), status: self.status.clone() }
    }
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

/// Hooks posted to `path` go to `calls`; `/healthz` says whether the
/// relay is reached and how many requests are held.
pub fn router<I: DeserializeOwned + Send + 'static>(
    path: &str,
    calls: mpsc::UnboundedSender<HookCall<I>>,
    status: watch::Receiver<Status>,
) -> Router {
    Router::new()
        .route(path, post(hook::<I>))
        .route("/healthz", get(health::<I>))
        .layer(DefaultBodyLimit::max(MAX_HOOK_BYTES))
        .with_state(Shared { calls, status })
}

async fn hook<I: DeserializeOwned + Send + 'static>(
    State(shared): State<Shared<I>>,
    body: Bytes,
) -> (StatusCode, Json<Value>) {
    let input = match serde_json::from_slice(&body) {
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

async fn health<I>(State(shared): State<Shared<I>>) -> Json<Value> {
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
