//! `GET /audit`: the audit query, for operators and viewers.
//!
//! `from`/`to` (RFC 3339 or ms since the epoch; default: everything),
//! `principal`, `agent`, `session`, `verb`, `outcome`, `limit` (≤ 1000) and
//! `before` (the `AEP-Audit-Next` header of the previous page) select
//! commands, newest first. `format=jsonl` (default) answers with each
//! command's records (the events' own bytes) and the chain that proves
//! them (a page ends early rather than span more than
//! [`super::MAX_SPAN`] records), closed by the signed head; `format=csv`,
//! one row per command; `format=json`, the same rows as objects.
//!
//! `GET /audit/head`: the chain's head, signed; `GET /audit/key`: the
//! key it is signed with, for an auditor to keep.

use std::sync::Arc;

use aep_engine::UnixMs;
use axum::extract::{Query as QueryString, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::store::Query;
use super::Audit;
use crate::http::{ApiError, Caller};
use crate::state::AppState;

pub const AUDIT_PATH: &str = "/audit";
pub const HEAD_PATH: &str = "/audit/head";
pub const KEY_PATH: &str = "/audit/key";
/// Names where the next page starts.
pub const NEXT_HEADER: &str = "aep-audit-next";
const MOST: usize = 1_000;

#[derive(Deserialize, Default)]
pub struct Params {
    from: Option<String>,
    to: Option<String>,
    principal: Option<String>,
    agent: Option<String>,
    session: Option<String>,
    verb: Option<String>,
    outcome: Option<String>,
    limit: Option<usize>,
    before: Option<String>,
    format: Option<String>,
}

fn time(name: &str, text: &str) -> Result<u64, ApiError> {
    text.parse::<u64>().ok().or_else(|| UnixMs::parse_rfc3339(text).map(|t| t.0)).ok_or_else(|| {
        ApiError::BadQuery(format!("`{name}` must be RFC 3339 or milliseconds since the epoch, not `{text}`"))
    })
}

impl Params {
    fn query(&self) -> Result<Query, ApiError> {
        let before = match &self.before {
            None => None,
            Some(cursor) => {
                let parsed = cursor.split_once('.').and_then(|(at, seq)| Some((at.parse().ok()?, seq.parse().ok()?)));
                Some(parsed.ok_or_else(|| ApiError::BadQuery(format!("`before` is not a page cursor: `{cursor}`")))?)
            }
        };
        let given = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
        Ok(Query {
            from: self.from.as_deref().map(|t| time("from", t)).transpose()?.unwrap_or(0),
            to: self.to.as_deref().map(|t| time("to", t)).transpose()?.unwrap_or(u64::MAX),
            principal: given(&self.principal),
            agent: given(&self.agent),
            session: given(&self.session),
            verb: given(&self.verb),
            outcome: given(&self.outcome),
            limit: self.limit.unwrap_or(100).clamp(1, MOST),
            before,
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Jsonl,
    Csv,
    /// One object per command, for the console's Audit view.
    Json,
}

pub async fn query(
    State(app): State<AppState>,
    caller: Caller,
    QueryString(params): QueryString<Params>,
) -> Result<Response, ApiError> {
    caller.reader("read the audit")?;
    let audit: Arc<Audit> = app.switchboard.audit().ok_or(ApiError::NoAudit)?;
    let format = match params.format.as_deref() {
        None | Some("jsonl") => Format::Jsonl,
        Some("csv") => Format::Csv,
        Some("json") => Format::Json,
        Some(other) => return Err(ApiError::BadQuery(format!("`format` is jsonl, csv or json, not `{other}`"))),
    };
    let query = params.query()?;
    let answer = tokio::task::spawn_blocking(move || -> Result<(String, Option<(u64, u64)>), String> {
        let mut page = audit.page(&query).map_err(|e| e.to_string())?;
        let body = match format {
            Format::Jsonl => audit.export(&query, &mut page).map_err(|e| e.to_string())?,
            Format::Csv => super::csv::rows(&audit.rows(&page).map_err(|e| e.to_string())?)?,
            Format::Json => {
                let rows = audit.rows(&page).map_err(|e| e.to_string())?;
                serde_json::Value::Array(rows.iter().map(super::words::Row::json).collect()).to_string()
            }
        };
        Ok((body, page.next))
    })
    .await
    .map_err(|e| ApiError::AuditUnreadable(e.to_string()))?
    .map_err(ApiError::AuditUnreadable)?;
    let (body, next) = answer;
    let mut response = (StatusCode::OK, body).into_response();
    let h = response.headers_mut();
    let content_type = match format {
        Format::Jsonl => "application/x-ndjson",
        Format::Csv => "text/csv; charset=utf-8",
        Format::Json => "application/json",
    };
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some((at, seq)) = next {
        if let Ok(value) = HeaderValue::from_str(&format!("{at}.{seq}")) {
            h.insert(NEXT_HEADER, value);
        }
    }
    Ok(response)
}

/// `GET /audit/head`: the chain's newest record, signed.
pub async fn head(State(app): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    caller.reader("read the audit")?;
    let audit: Arc<Audit> = app.switchboard.audit().ok_or(ApiError::NoAudit)?;
    let signed = tokio::task::spawn_blocking(move || audit.head())
        .await
        .map_err(|e| ApiError::AuditUnreadable(e.to_string()))?
        .map_err(|e| ApiError::AuditUnreadable(e.to_string()))?;
    Ok(crate::http::json_response(StatusCode::OK, serde_json::to_value(signed).unwrap_or_default()))
}

/// `GET /audit/key`: the public key heads are signed with.
pub async fn key(State(app): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    caller.reader("read the audit")?;
    let audit: Arc<Audit> = app.switchboard.audit().ok_or(ApiError::NoAudit)?;
    Ok(crate::http::json_response(StatusCode::OK, serde_json::json!({ "key": audit.public_key() })))
}
