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

pub async fn socket(State(app): State<AppState>, Caller(access): Caller, mut request: Request) -> Response {
    let task = app.hub.task_guard();
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
    ws.max_message_size(limit).max_frame_size(limit).on_upgrade(move |socket| async move {
        let _task = task;
        crate::socket::run(Wire::Plain(socket), app, access).await;
    })
}
