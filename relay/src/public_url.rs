//! The addresses the relay is reached by (`--public-url`), when that is not
//! the address it listens on: a name on a tailnet, or a TLS-terminating
//! reverse proxy in front of a loopback relay. Each one's host and origin
//! are served like the relay's own, and links point at the first.

use std::fmt;

/// One address the relay is reached by: an origin with nothing after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicUrl {
    /// `scheme://host[:port]`, as a browser sends it in `Origin` (lower
    /// case, default port left out).
    origin: String,
    /// The host alone, as the `Host` check compares it (no brackets).
    host: String,
}

impl PublicUrl {
    /// Reads `http(s)://host[:port][/]`; anything else (another scheme, a
    /// path, a query, a fragment, user info) is refused, saying why.
    pub fn parse(text: &str) -> Result<PublicUrl, String> {
        let refuse = |why: &str| Err(format!("`{text}` is not a public URL: {why} (e.g. https://relay.example:8443)"));
        let url = match url::Url::parse(text.trim()) {
            Ok(url) => url,
            Err(e) => return refuse(&e.to_string()),
        };
        if !matches!(url.scheme(), "http" | "https") {
            return refuse("the scheme must be http or https");
        }
        let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
            return refuse("it names no host");
        };
        if !url.username().is_empty() || url.password().is_some() {
            return refuse("it may not carry a user name or password");
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return refuse("it may carry no path, query or fragment: the relay is served at the root");
        }
        let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
        Ok(PublicUrl { origin: url.origin().ascii_serialization(), host })
    }

    /// `scheme://host[:port]`, for the `Origin` check.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The host name, for the `Host` check.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The console's one-tap link for `token` at this address: the token
    /// rides in the fragment, which browsers never send to a server, and
    /// the console scrubs it from the address bar once read.
    pub fn link(&self, token: &str) -> String {
        format!("{}/#token={token}", self.origin)
    }
}

impl fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/", self.origin)
    }
}

impl std::str::FromStr for PublicUrl {
    type Err = String;

    fn from_str(text: &str) -> Result<PublicUrl, String> {
        PublicUrl::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_kept_as_browsers_send_it() {
        let url = PublicUrl::parse("https://Laptop.Tailnet.ts.net/").unwrap();
        assert_eq!((url.origin(), url.host()), ("https://laptop.tailnet.ts.net", "laptop.tailnet.ts.net"));
        let url = PublicUrl::parse("https://relay.example:8443").unwrap();
        assert_eq!(url.origin(), "https://relay.example:8443");
        assert_eq!(url.link("abc"), "https://relay.example:8443/#token=abc");
        assert_eq!(url.to_string(), "https://relay.example:8443/");
        assert_eq!(PublicUrl::parse("https://relay.example:443").unwrap().origin(), "https://relay.example");
        let v6 = PublicUrl::parse("http://[::1]:8787").unwrap();
        assert_eq!((v6.origin(), v6.host()), ("http://[::1]:8787", "::1"));
    }

    #[test]
    fn anything_but_an_origin_is_refused_with_a_reason() {
        for (bad, why) in [
            ("ftp://relay.example", "scheme"),
            ("relay.example", "not a public URL"),
            ("https://relay.example/console", "path"),
            ("https://relay.example/?x=1", "query"),
            ("https://relay.example/#token=t", "fragment"),
            ("https://me:pw@relay.example", "user name"),
            ("", "not a public URL"),
        ] {
            let error = PublicUrl::parse(bad).unwrap_err();
            assert!(error.contains(why), "{bad}: {error}");
        }
    }
}
