//! The WebSocket URL of a relay, with the access token as `?access_token=`
//! (browsers cannot set an `Authorization` header on an upgrade).
//!
//! The token only ever goes into the URL handed to the socket: labels and
//! errors are built from the URL without its query, so neither can leak it.

use crate::protocol::ids::encode as percent_encode;

/// The relay's WebSocket endpoint when a URL names only the origin.
pub const DEFAULT_SOCKET_PATH: &str = "/socket";
/// The query parameter relays read the token from.
pub use crate::protocol::TOKEN_PARAM;

/// Why a relay URL cannot be used. Never carries the URL itself, which may
/// hold a token.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Only `ws`, `wss`, `http` and `https` are understood; an empty
    /// scheme means the URL had none.
    #[error("{}", scheme_message(.0))]
    Scheme(String),
    #[error("the relay URL names no host")]
    NoHost,
    /// Spaces and control characters are refused rather than guessed at.
    #[error("the relay URL contains spaces or control characters")]
    BadCharacter,
}

/// A missing scheme and a wrong one call for different advice.
fn scheme_message(scheme: &str) -> String {
    if scheme.is_empty() {
        "a relay URL needs a scheme (ws://, wss://, http:// or https://)".to_owned()
    } else {
        format!("unsupported relay URL scheme `{scheme}` (ws, wss, http or https)")
    }
}

/// A relay URL split into what the socket needs.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Parts {
    scheme: &'static str,
    authority: String,
    path: String,
    /// Query pairs other than the token, as written.
    query: Vec<String>,
}

fn parse(url: &str) -> Result<Parts, UrlError> {
    let url = url.trim();
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(UrlError::BadCharacter);
    }
    let (scheme, rest) = url.split_once("://").ok_or_else(|| UrlError::Scheme(String::new()))?;
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "ws" | "http" => "ws",
        "wss" | "https" => "wss",
        _ => return Err(UrlError::Scheme(scheme.chars().take(16).collect())),
    };
    let rest = rest.split('#').next().unwrap_or_default();
    let (before_query, query) = match rest.split_once('?') {
        Some((a, q)) => (a, q),
        None => (rest, ""),
    };
    let (authority, path) = match before_query.find('/') {
        Some(i) => (&before_query[..i], &before_query[i..]),
        None => (before_query, ""),
    };
    // Credentials in the authority would end up in the label; refuse them.
    if authority.is_empty() || authority.contains('@') {
        return Err(UrlError::NoHost);
    }
    let path = if path.is_empty() || path == "/" { DEFAULT_SOCKET_PATH.to_owned() } else { path.to_owned() };
    let query = query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| p.split('=').next() != Some(TOKEN_PARAM))
        .map(str::to_owned)
        .collect();
    Ok(Parts { scheme, authority: authority.to_owned(), path, query })
}

/// The URL to open: `http(s)` mapped to `ws(s)`, an origin-only URL
/// pointed at [`DEFAULT_SOCKET_PATH`], and the token (when given) as the
/// only `access_token` parameter.
pub fn socket_url(url: &str, token: Option<&str>) -> Result<String, UrlError> {
    let p = parse(url)?;
    let mut query = p.query;
    if let Some(t) = token.filter(|t| !t.is_empty()) {
        query.push(format!("{TOKEN_PARAM}={}", percent_encode(t)));
    }
    let mut out = format!("{}://{}{}", p.scheme, p.authority, p.path);
    if !query.is_empty() {
        out.push('?');
        out.push_str(&query.join("&"));
    }
    Ok(out)
}

/// Where a driver asks whether the relay takes the token, for
/// [`SocketAction::CheckAuthorization`](crate::client::SocketAction::CheckAuthorization):
/// the HTTP binding's `GET …/events` beside the socket (`/socket` replaced),
/// which answers 401 to a token the relay refuses. No query: the token goes
/// in an `Authorization` header.
pub fn check_url(url: &str) -> Result<String, UrlError> {
    let p = parse(url)?;
    let scheme = if p.scheme == "wss" { "https" } else { "http" };
    let path = p.path.trim_end_matches('/');
    let base = path.strip_suffix(DEFAULT_SOCKET_PATH).unwrap_or(path);
    Ok(format!("{scheme}://{}{base}/events", p.authority))
}

/// What a driver needs to reach one relay. The token is kept apart from
/// labels and errors: it goes only into the socket URL and the check's
/// `Authorization` header. (No `Debug`, so it cannot be printed by accident.)
#[derive(Clone)]
pub struct RelayAddress {
    /// See [`socket_url`]; holds the token.
    pub socket: String,
    /// See [`check_url`].
    pub check: String,
    pub token: Option<String>,
}

impl RelayAddress {
    pub fn new(url: &str, token: Option<&str>) -> Result<RelayAddress, UrlError> {
        let token = token.map(str::trim).filter(|t| !t.is_empty());
        Ok(RelayAddress { socket: socket_url(url, token)?, check: check_url(url)?, token: token.map(str::to_owned) })
    }
}

/// A printable name for the relay: its socket URL without any query, so
/// it is safe to show, log and put in errors.
pub fn relay_label(url: &str) -> Result<String, UrlError> {
    let p = parse(url)?;
    Ok(format!("{}://{}{}", p.scheme, p.authority, p.path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_urls_point_at_the_socket_and_carry_the_token_encoded() {
        assert_eq!(
            socket_url("http://127.0.0.1:8080", Some("a b&c")).unwrap(),
            "ws://127.0.0.1:8080/socket?access_token=a%20b%26c"
        );
        assert_eq!(socket_url("https://relay.example/", None).unwrap(), "wss://relay.example/socket");
        assert_eq!(
            socket_url("ws://h:1/custom/ws?x=1#frag", Some("t")).unwrap(),
            "ws://h:1/custom/ws?x=1&access_token=t"
        );
    }

    #[test]
    fn a_token_already_in_the_url_is_replaced_and_never_labelled() {
        let url = "wss://h/socket?access_token=old&keep=1";
        assert_eq!(socket_url(url, Some("new")).unwrap(), "wss://h/socket?keep=1&access_token=new");
        assert_eq!(socket_url(url, None).unwrap(), "wss://h/socket?keep=1");
        assert_eq!(relay_label(url).unwrap(), "wss://h/socket");
    }

    #[test]
    fn the_authorization_check_goes_to_the_http_binding_without_the_token() {
        assert_eq!(check_url("ws://127.0.0.1:8787").unwrap(), "http://127.0.0.1:8787/events");
        assert_eq!(check_url("wss://h/socket?access_token=t").unwrap(), "https://h/events");
        assert_eq!(check_url("https://h/aep/socket/").unwrap(), "https://h/aep/events");
        assert_eq!(check_url("ws://h/custom").unwrap(), "http://h/custom/events");
        let e = RelayAddress::new("http://h:1", Some(" tok ")).unwrap();
        assert_eq!(
            (e.socket.as_str(), e.check.as_str(), e.token.as_deref()),
            ("ws://h:1/socket?access_token=tok", "http://h:1/events", Some("tok"))
        );
        assert_eq!(RelayAddress::new("http://h:1", Some("  ")).unwrap().token, None);
    }

    #[test]
    fn bad_urls_are_refused_without_echoing_them() {
        let secret = "ftp://h/?access_token=s3cret";
        let err = socket_url(secret, None).unwrap_err();
        assert!(!err.to_string().contains("s3cret"), "{err}");
        assert_eq!(err, UrlError::Scheme("ftp".into()));
        assert_eq!(socket_url("ws://user:pw@h/", None), Err(UrlError::NoHost));
        assert_eq!(socket_url("ws:///socket", None), Err(UrlError::NoHost));
        assert_eq!(socket_url("relay.example", None), Err(UrlError::Scheme(String::new())));
        assert_eq!(socket_url("ws://h/a b", None), Err(UrlError::BadCharacter));
    }
}
