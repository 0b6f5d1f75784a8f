//! `GET /socket`: the HTTP side of the WebSocket binding. Credentials are
//! checked before the upgrade, so a refused caller never gets a socket;
//! the connection itself is [`crate::socket`]'s.

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::State;
use axum::response::Response;

use super::Caller;
use crate::state::AppState;

pub async fn socket(State(app): State<AppState>, Caller(access): Caller, ws: WebSocketUpgrade) -> Response {
    let task = app.hub.task_guard();
    let limit = app.config.max_body;
    ws.max_message_size(limit).max_frame_size(limit).on_upgrade(move |socket| async move {
        let _task = task;
        crate::socket::run(socket, app, access).await;
    })
}
