//! The push endpoints:
//!
//! - `GET /push/key`: the VAPID public key (`applicationServerKey`);
//! - `POST /push/subscriptions`: registers the caller's device (a
//!   browser's `PushSubscription` JSON); `GET` lists the caller's own;
//!   `DELETE` (`{"endpoint": …}`) removes one;
//! - `POST /push/answer`: answers a request with a notification's
//!   capability (no bearer token: the capability is the credential).

// The helpers here return the handler's error response itself, once per
// request; boxing it would only add an allocation.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde_json::{json, Value};

use super::answer::{self, Answer};
use super::subscriptions::{self, Offered};
use super::Push;
use crate::auth::Access;
use crate::http::{json_response, Caller};
use crate::state::AppState;

pub const KEY_PATH: &str = "/push/key";
pub const SUBSCRIPTIONS_PATH: &str = "/push/subscriptions";
pub const ANSWER_PATH: &str = "/push/answer";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(KEY_PATH, get(key))
        .route(SUBSCRIPTIONS_PATH, get(list).post(register).delete(remove))
        .route(ANSWER_PATH, post(respond))
}

fn error(status: StatusCode, code: &str, detail: impl Into<String>) -> Response {
    json_response(status, json!({"error": code, "detail": detail.into()}))
}

/// Push is for principals: a relay without credentials has nobody to
/// notify (and routes no answers).
fn principal(caller: Caller) -> Result<Access, Response> {
    let access = caller.reader("use Web Push").map_err(axum::response::IntoResponse::into_response)?;
    if !access.is_authenticated() {
        return Err(error(
            StatusCode::FORBIDDEN,
            "unauthorized",
            "Web Push needs a relay started with credentials (--token or --credentials)",
        ));
    }
    Ok(access)
}

fn enabled(push: Option<Extension<Arc<Push>>>) -> Result<Arc<Push>, Response> {
    push.map(|Extension(p)| p).ok_or_else(|| error(StatusCode::NOT_FOUND, "not-found", "Web Push is off on this relay"))
}

fn json_body<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, Response> {
    serde_json::from_slice(body).map_err(|e| error(StatusCode::BAD_REQUEST, "invalid-request", format!("{e}")))
}

async fn key(caller: Caller, push: Option<Extension<Arc<Push>>>) -> Result<Response, Response> {
    principal(caller)?;
    let push = enabled(push)?;
    Ok(json_response(StatusCode::OK, json!({"publicKey": push.vapid.public_key()})))
}

fn listed(push: &Push, access: &Access) -> Value {
    let devices: Vec<Value> =
        push.subscriptions.of(&access.principal().name).into_iter().map(|d| json!({"endpoint": d.endpoint})).collect();
    json!({"principal": &*access.principal().name, "subscriptions": devices})
}

async fn list(caller: Caller, push: Option<Extension<Arc<Push>>>) -> Result<Response, Response> {
    let access = principal(caller)?;
    let push = enabled(push)?;
    Ok(json_response(StatusCode::OK, listed(&push, &access)))
}

async fn register(caller: Caller, push: Option<Extension<Arc<Push>>>, body: Bytes) -> Result<Response, Response> {
    let access = principal(caller)?;
    let push = enabled(push)?;
    let offered: Offered = json_body(&body)?;
    let device = subscriptions::validate(&offered, &access.principal().name)
        .map_err(|e| error(StatusCode::BAD_REQUEST, "invalid-subscription", e))?;
    let endpoint = device.endpoint.clone();
    push.subscriptions.add(device).map_err(|e| error(StatusCode::CONFLICT, "too-many-subscriptions", e))?;
    let notified = access.principal().roles.operator;
    Ok(json_response(StatusCode::CREATED, json!({"endpoint": endpoint, "requests": notified})))
}

#[derive(serde::Deserialize)]
struct Endpoint {
    endpoint: String,
}

async fn remove(caller: Caller, push: Option<Extension<Arc<Push>>>, body: Bytes) -> Result<Response, Response> {
    let access = principal(caller)?;
    let push = enabled(push)?;
    let Endpoint { endpoint } = json_body(&body)?;
    let normalized = reqwest::Url::parse(endpoint.trim()).map(|u| u.to_string()).unwrap_or(endpoint);
    if !push.subscriptions.remove(&access.principal().name, &normalized) {
        return Err(error(StatusCode::NOT_FOUND, "not-found", "no subscription of yours has this endpoint"));
    }
    Ok(json_response(StatusCode::OK, listed(&push, &access)))
}

async fn respond(
    State(app): State<AppState>,
    push: Option<Extension<Arc<Push>>>,
    body: Bytes,
) -> Result<Response, Response> {
    let push = enabled(push)?;
    let request: Answer = json_body(&body)?;
    match answer::answer(&push, &app.switchboard, request).await {
        Ok(outcome) => Ok(json_response(StatusCode::OK, outcome)),
        Err(refusal) => {
            let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::BAD_REQUEST);
            Err(error(status, refusal.code, refusal.detail))
        }
    }
}
