//! The relay's standing rules over HTTP (`/rules` of the relay that served
//! the page), with the page's token: the relay decides who may change them.

use gloo_net::http::Request;
use serde_json::Value;

use super::push::{authorized, call, with_json};
use crate::model::rules::{self, RuleView};

/// Every rule the relay keeps, newest first.
pub async fn list(token: &str) -> Result<Vec<RuleView>, String> {
    let body = call(authorized(Request::get("/rules"), token).build()).await?;
    rules::rules(&body.to_string())
}

/// How a rule would see the open request `id`: its JSON (`tool`, `input`,
/// `refused`…).
pub async fn request(token: &str, id: &str) -> Result<Value, String> {
    let path =
        format!("/rules/request?id={}", percent_encoding::utf8_percent_encode(id, percent_encoding::NON_ALPHANUMERIC));
    call(authorized(Request::get(&path), token).build()).await
}

/// Makes a rule: the relay's answer (`rule`, `request`).
pub async fn make(token: &str, body: Value) -> Result<Value, String> {
    call(with_json(Request::post("/rules"), token, body.to_string())).await
}

/// Changes rule `id` with `body`.
pub async fn edit(token: &str, id: &str, body: Value) -> Result<Value, String> {
    call(with_json(Request::patch(&format!("/rules/{id}")), token, body.to_string())).await
}

/// Revokes rule `id` at once.
pub async fn revoke(token: &str, id: &str) -> Result<Value, String> {
    call(authorized(Request::delete(&format!("/rules/{id}")), token).build()).await
}
