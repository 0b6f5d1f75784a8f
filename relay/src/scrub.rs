//! Keeping secrets out of logs: a URL that carried `?access_token=` is
//! logged with the value replaced (AEP-0003 §8.1 "MUST NOT log it").

use crate::auth::QUERY_PARAM;

/// The path and query of a request URI with any `access_token` value
/// masked. Every other byte is kept so the log still says what was asked.
pub fn uri_for_log(path_and_query: &str) -> String {
    let Some((path, query)) = path_and_query.split_once('?') else {
        return path_and_query.to_owned();
    };
    let masked: Vec<String> = query
        .split('&')
        .map(|pair| {
            let name = pair.split_once('=').map_or(pair, |(k, _)| k);
            if is_token_param(name) {
                format!("{name}=<redacted>")
            } else {
                pair.to_owned()
            }
        })
        .collect();
    format!("{path}?{}", masked.join("&"))
}

/// Matches the parameter name however it is percent-encoded.
fn is_token_param(raw_name: &str) -> bool {
    let decoded: String = serde_urlencoded::from_str::<Vec<(String, String)>>(&format!("{raw_name}=x"))
        .ok()
        .and_then(|v| v.into_iter().next())
        .map(|(k, _)| k)
        .unwrap_or_else(|| raw_name.to_owned());
    decoded == QUERY_PARAM
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_the_token_and_keeps_the_rest() {
        assert_eq!(uri_for_log("/socket?access_token=T0K&x=1"), "/socket?access_token=<redacted>&x=1");
        assert_eq!(
            uri_for_log("/stream?filter=%7B%7D&access%5Ftoken=T0K"),
            "/stream?filter=%7B%7D&access%5Ftoken=<redacted>"
        );
        assert_eq!(uri_for_log("/events"), "/events");
        assert!(!uri_for_log("/s?access_token=abc&access_token=def").contains("abc"));
    }
}
