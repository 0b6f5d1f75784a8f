//! Keeping secrets out of logs (AEP-0003 §8.1 "MUST NOT log it"): a
//! request is logged by its path alone. Query strings are never logged,
//! because a token can hide in one under any spelling a parser might
//! accept (`ACCESS_TOKEN=`, `x=1;access_token=`, `access_token;=`,
//! percent-encoded names), and no masking rule can know them all.

use axum::http::Uri;

/// What a log line may say about a request URI: its path.
pub fn uri_for_log(uri: &Uri) -> &str {
    uri.path()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_path_is_kept() {
        for q in ["/socket?access_token=T0K&x=1", "/socket?x=1;access_token=T0K", "/socket?ACCESS_TOKEN=T0K", "/socket"]
        {
            let uri: Uri = q.parse().unwrap();
            assert_eq!(uri_for_log(&uri), "/socket");
        }
    }
}
