//! Bearer-token authentication (AEP-0003 §8.1).
//!
//! The token arrives in `Authorization: Bearer …` or, for clients that
//! cannot set headers (browser `EventSource`, the WebSocket constructor),
//! in `?access_token=`. It is compared in constant time and never printed:
//! [`Token`] has no `Display` and its `Debug` is masked.

use axum::http::{header, HeaderMap};
use subtle::ConstantTimeEq;

/// The query parameter that may carry the token (the protocol's name).
pub use aep_client::protocol::TOKEN_PARAM as QUERY_PARAM;

/// A configured bearer token.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// `None` for an empty string: an empty token would authenticate
    /// everyone while claiming the authenticated posture.
    pub fn new(secret: impl Into<String>) -> Option<Token> {
        let secret = secret.into();
        (!secret.is_empty()).then_some(Token(secret))
    }

    /// Constant-time comparison, so response timing reveals nothing about
    /// how much of a guess was right.
    pub fn matches(&self, presented: &str) -> bool {
        bool::from(self.0.as_bytes().ct_eq(presented.as_bytes()))
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// What a request or connection may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// No token is configured: observing and emitting are open, control
    /// is refused.
    Anonymous,
    /// The configured token was presented.
    Authenticated,
}

impl Access {
    /// Commands flow only on authenticated bindings (AEP-0004 §4.1).
    pub fn may_command(self) -> bool {
        self == Access::Authenticated
    }
}

/// A request refused for its credentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    /// A token is required and none was presented.
    Missing,
    /// A token was presented and it is not the configured one.
    Wrong,
}

/// Decides a request's access from its headers and query string.
pub fn check(token: Option<&Token>, headers: &HeaderMap, query: Option<&str>) -> Result<Access, Denied> {
    let Some(token) = token else {
        return Ok(Access::Anonymous);
    };
    let presented = bearer(headers).or_else(|| query.and_then(query_token));
    match presented {
        None => Err(Denied::Missing),
        Some(p) if token.matches(&p) => Ok(Access::Authenticated),
        Some(_) => Err(Denied::Wrong),
    }
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim().to_owned())
}

fn query_token(query: &str) -> Option<String> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).ok()?;
    pairs.into_iter().find(|(k, _)| k == QUERY_PARAM).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(a).unwrap());
        }
        h
    }

    #[test]
    fn open_posture_is_anonymous_whatever_is_presented() {
        assert_eq!(check(None, &headers(Some("Bearer x")), None), Ok(Access::Anonymous));
        assert!(!Access::Anonymous.may_command());
    }

    #[test]
    fn header_or_query_token_authenticates() {
        let t = Token::new("s3cret").unwrap();
        assert_eq!(check(Some(&t), &headers(Some("Bearer s3cret")), None), Ok(Access::Authenticated));
        assert_eq!(check(Some(&t), &headers(Some("bearer s3cret")), None), Ok(Access::Authenticated));
        assert_eq!(check(Some(&t), &headers(None), Some("a=1&access_token=s3cret")), Ok(Access::Authenticated));
        assert_eq!(check(Some(&t), &headers(None), Some("access_token=s3%63ret")), Ok(Access::Authenticated));
    }

    #[test]
    fn missing_and_wrong_tokens_are_told_apart() {
        let t = Token::new("s3cret").unwrap();
        assert_eq!(check(Some(&t), &headers(None), None), Err(Denied::Missing));
        assert_eq!(check(Some(&t), &headers(Some("Bearer s3cre")), None), Err(Denied::Wrong));
        assert_eq!(check(Some(&t), &headers(None), Some("access_token=nope")), Err(Denied::Wrong));
        assert_eq!(check(Some(&t), &headers(Some("Basic s3cret")), None), Err(Denied::Missing));
    }

    #[test]
    fn empty_tokens_and_debug_output_reveal_nothing() {
        assert!(Token::new("").is_none());
        let t = Token::new("s3cret").unwrap();
        assert!(!format!("{t:?}").contains("s3cret"));
    }
}
