//! The rules endpoints:
//!
//! - `GET /rules`: every rule, with its state (operators and viewers);
//! - `GET /rules/request?id=…`: an open request as a rule would see it
//!   (agent, session, tool, input, options), and why no rule may answer
//!   it, if none may;
//! - `POST /rules`: makes a rule (operators only);
//! - `PATCH /rules/{id}`: edits one; `DELETE /rules/{id}`: revokes it.
//!
//! A viewer's attempt to change a rule is refused here, by the relay,
//! whatever its console shows.

// The helpers return the handler's error response itself, once per
// request; boxing it would only add an allocation.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use serde_json::{json, Map, Value};

use super::rule::{Lifetime, Matching, Rule};
use super::{now_ms, Edit, Proposal, Refusal, Rules};
use crate::auth::Principal;
use crate::http::{json_response, ApiError, Caller};
use crate::state::AppState;

pub const RULES_PATH: &str = "/rules";
pub const RULE_PATH: &str = "/rules/{id}";
pub const REQUEST_PATH: &str = "/rules/request";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(RULES_PATH, get(list).post(make))
        .route(REQUEST_PATH, get(request))
        .route(RULE_PATH, axum::routing::patch(edit).delete(revoke))
}

fn error(status: StatusCode, code: &str, detail: impl Into<String>) -> Response {
    json_response(status, json!({"error": code, "detail": detail.into()}))
}

fn refused(r: Refusal) -> Response {
    error(StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST), r.code, r.detail)
}

fn enabled(rules: Option<Extension<Arc<Rules>>>) -> Result<Arc<Rules>, Response> {
    rules.map(|Extension(r)| r).ok_or_else(|| {
        error(
            StatusCode::NOT_FOUND,
            "not-found",
            "standing rules are off on this relay (it needs credentials, and is not one member of a tier)",
        )
    })
}

/// Only an operator changes rules: they answer requests on its behalf.
fn operator(caller: Caller) -> Result<Arc<Principal>, Response> {
    let access = caller.0;
    if !access.may_command() {
        let principal = access.principal().name.to_string();
        return Err(ApiError::Forbidden {
            principal,
            what: "make, edit or revoke standing rules: only an operator may answer requests",
        }
        .into_response());
    }
    Ok(access.principal().clone())
}

/// A rule as the API shows it: what it is, and where it stands now.
fn shown(rule: &Rule, now: u64) -> Value {
    let mut v = serde_json::to_value(rule).unwrap_or_default();
    v["state"] = rule.state(now).as_str().into();
    v
}

async fn list(caller: Caller, rules: Option<Extension<Arc<Rules>>>) -> Result<Response, Response> {
    caller.reader("read standing rules").map_err(IntoResponse::into_response)?;
    let rules = enabled(rules)?;
    let now = now_ms();
    let listed: Vec<Value> = rules.list().iter().map(|r| shown(r, now)).collect();
    Ok(json_response(StatusCode::OK, json!({ "rules": listed })))
}

#[derive(serde::Deserialize)]
struct RequestId {
    id: String,
}

async fn request(
    caller: Caller,
    rules: Option<Extension<Arc<Rules>>>,
    Query(RequestId { id }): Query<RequestId>,
) -> Result<Response, Response> {
    caller.reader("read standing rules").map_err(IntoResponse::into_response)?;
    let rules = enabled(rules)?;
    let Some(r) = rules.request(&id) else {
        return Err(error(
            StatusCode::NOT_FOUND,
            "request-settled",
            format!("the request `{id}` is not open on this relay"),
        ));
    };
    Ok(json_response(
        StatusCode::OK,
        json!({
            "id": r.id, "agent": r.agent, "session": r.session, "tool": r.tool, "input": r.input,
            "options": r.options, "refused": r.guarded().map(|skip| skip.words()),
        }),
    ))
}

/// The JSON object of a request body, or a 400 naming what is wrong.
fn object(body: &Bytes) -> Result<Map<String, Value>, Response> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(error(StatusCode::BAD_REQUEST, "invalid-rule", "the body must be a JSON object")),
        Err(e) => Err(error(StatusCode::BAD_REQUEST, "invalid-rule", format!("the body is not JSON: {e}"))),
    }
}

fn invalid(detail: impl Into<String>) -> Response {
    error(StatusCode::BAD_REQUEST, "invalid-rule", detail)
}

/// A string member: absent, or a string.
fn text(body: &Map<String, Value>, name: &str) -> Result<Option<String>, Response> {
    match body.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(format!("`{name}` must be a string"))),
    }
}

/// A member that may be `null` on purpose: absent, `null`, or a string.
fn nullable(body: &Map<String, Value>, name: &str) -> Result<Option<Option<String>>, Response> {
    match body.get(name) {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(Value::String(s)) => Ok(Some(Some(s.clone()))),
        Some(_) => Err(invalid(format!("`{name}` must be a string or null"))),
    }
}

fn matching(body: &Map<String, Value>) -> Result<Option<Matching>, Response> {
    text(body, "match")?.map(|m| Matching::parse(&m).map_err(invalid)).transpose()
}

fn lifetime(body: &Map<String, Value>) -> Result<Option<Lifetime>, Response> {
    text(body, "for")?.map(|t| Lifetime::parse(&t).map_err(invalid)).transpose()
}

const KNOWN: [&str; 8] = ["request", "agent", "session", "tool", "match", "pattern", "option", "for"];

async fn make(caller: Caller, rules: Option<Extension<Arc<Rules>>>, body: Bytes) -> Result<Response, Response> {
    let author = operator(caller)?;
    let rules = enabled(rules)?;
    let body = object(&body)?;
    if let Some(unknown) = body.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(invalid(format!("`{unknown}` is not part of a rule ({})", KNOWN.join(", "))));
    }
    let proposal = Proposal {
        request: text(&body, "request")?,
        agent: text(&body, "agent")?,
        session: nullable(&body, "session")?,
        tool: nullable(&body, "tool")?,
        matching: matching(&body)?,
        pattern: text(&body, "pattern")?,
        option: text(&body, "option")?.ok_or_else(|| invalid("a rule needs the `option` it answers with"))?,
        lifetime: lifetime(&body)?.ok_or_else(|| invalid("a rule needs `for`: 10m, 1h or until-revoked"))?,
    };
    let (rule, request) = rules.make(&author, proposal).map_err(refused)?;
    Ok(json_response(StatusCode::CREATED, json!({ "rule": shown(&rule, now_ms()), "request": request })))
}

async fn edit(
    caller: Caller,
    rules: Option<Extension<Arc<Rules>>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, Response> {
    let by = operator(caller)?;
    let rules = enabled(rules)?;
    let body = object(&body)?;
    if let Some(unknown) = body.keys().find(|k| !["match", "pattern", "option", "for"].contains(&k.as_str())) {
        return Err(invalid(format!("`{unknown}` cannot be edited (match, pattern, option, for)")));
    }
    let change = Edit {
        matching: matching(&body)?,
        pattern: text(&body, "pattern")?,
        option: text(&body, "option")?,
        lifetime: lifetime(&body)?,
    };
    let rule = rules.edit(&by, &id, change).map_err(refused)?;
    Ok(json_response(StatusCode::OK, json!({ "rule": shown(&rule, now_ms()) })))
}

async fn revoke(
    caller: Caller,
    rules: Option<Extension<Arc<Rules>>>,
    Path(id): Path<String>,
) -> Result<Response, Response> {
    let by = operator(caller)?;
    let rules = enabled(rules)?;
    let rule = rules.revoke(&by, &id).map_err(refused)?;
    Ok(json_response(StatusCode::OK, json!({ "rule": shown(&rule, now_ms()) })))
}
