//! Who sent a request, as an extractor: a handler that takes a [`Caller`]
//! runs only for requests whose credentials pass (AEP-0003 §8.1); the rest
//! are answered 401 before it runs.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::error::ApiError;
use crate::auth::Access;
use crate::state::AppState;

/// The access a request's credentials grant.
#[derive(Clone, Debug)]
pub struct Caller(pub Access);

impl Caller {
    /// The access, when it includes reading; otherwise a 403 naming `what`.
    pub fn reader(self, what: &'static str) -> Result<Access, ApiError> {
        if self.0.may_read() {
            Ok(self.0)
        } else {
            Err(ApiError::Forbidden { principal: self.0.principal().name.to_string(), what })
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Caller, ApiError> {
        app.access(&parts.headers, parts.uri.query()).map(Caller).map_err(ApiError::Unauthorized)
    }
}
