//! `GET /socket`: the HTTP side of the WebSocket binding. Credentials are
//! checked before the upgrade, so a refused caller never gets a socket;
//! the connection itself is [`crate::socket`]'s. A peer that offers
//! permessage-deflate (a browser) gets its frames compressed; any other
//! peer gets axum's plain WebSocket.

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{FromRequest, Request, State};
use axum::response::{IntoResponse, Response};

use super::Caller;
use crate::socket::{deflate_offered, negotiate_deflate, Wire};
use crate::state::AppState;

/// Bytes read from a plain socket at a time. A console sends little (hello,
/// subscriptions, commands); tungstenite's default of 128 KiB, zeroed
/// before every read, was most of what an idle console cost the relay.
const READ_BUFFER: usize = 4 * 1024;
/// Bytes of frames gathered before they are written: enough for several
/// events a write during a replay, and the buffer a connection keeps.
const WRITE_BUFFER: usize = 16 * 1024;

pub async fn socket(State(app): State<AppState>, Caller(access): Caller, mut request: Request) -> Response {
    let task = app.switchboard.task_guard();
    let limit = app.config.max_body;
    if deflate_offered(request.headers()) {
        if let Some(upgrade) = negotiate_deflate(&mut request) {
            return upgrade.on_upgrade(limit, app.config.close_grace, move |socket| async move {
                let _task = task;
                crate::socket::run(Wire::Compressed(socket), app, access).await;
            });
        }
    }
    let ws = match WebSocketUpgrade::from_request(request, &app).await {
        Ok(ws) => ws,
        Err(refused) => return refused.into_response(),
    };
    ws.max_message_size(limit)
        .max_frame_size(limit)
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(WRITE_BUFFER)
        .on_upgrade(move |socket| async move {
            let _task = task;
            crate::socket::run(Wire::plain(socket), app, access).await;
        })
}
