//! The console, served from the same origin as the API: `tower-http`'s
//! [`ServeDir`] over the static directory (its build output; MIME types
//! by extension, `application/wasm` included), `/` as `index.html`, and
//! client-side routes (extension-less paths) falling back to `index.html`.
//! Without an `index.html` a small built-in page says the relay is up and
//! how to use it. Dotfiles are never served: a `.git` or `.env` beside a
//! build stays private.
//!
//! Every console response says `nosniff` and `no-referrer`. HTML carries a
//! `Content-Security-Policy` header: the policy the build put in the
//! page's own `<meta>` (one source of truth), plus `frame-ancestors 'none'`,
//! which only a header can express. Content-hashed assets are cached for
//! good; everything else is revalidated. Text is declared UTF-8. Responses
//! are compressed when the client asks: from the build's precompressed
//! `.br` / `.gz` copy beside the file when there is one (maximum quality,
//! no work per request), on the fly otherwise.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::handler::Handler;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower::ServiceExt;
use tower_http::compression::CompressionLayer;
use tower_http::services::{ServeDir, ServeFile};
use tower_http::set_header::SetResponseHeaderLayer;

use super::ApiError;
use crate::config::Config;
use crate::discovery::{EVENTS_PATH, HEALTH_PATH, SOCKET_PATH, STREAM_PATH, WELL_KNOWN_PATH};
use crate::state::AppState;

/// The service every path outside the API reaches.
pub fn console(app: &AppState) -> Router {
    let missing = not_in_build.with_state(app.clone());
    let files = match &app.config.static_dir {
        Some(dir) => Router::new().fallback_service(
            ServeDir::new(dir)
                .precompressed_br()
                .precompressed_gzip()
                .call_fallback_on_method_not_allowed(true)
                .fallback(missing),
        ),
        None => Router::new().fallback_service(missing),
    };
    files
        .layer(middleware::from_fn(console_headers))
        .layer(SetResponseHeaderLayer::overriding(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")))
        .layer(SetResponseHeaderLayer::overriding(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")))
        .layer(CompressionLayer::new())
}

/// What the directory does not hold: a client-side route gets
/// `index.html`, `/` without a build the built-in page, the rest 404.
async fn not_in_build(State(app): State<AppState>, request: Request) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return ApiError::MethodNotAllowed.into_response();
    }
    let path = request.uri().path().to_owned();
    if let Some(dir) = app.config.static_dir.as_ref().filter(|_| is_client_route(&path)) {
        let Ok(index) = ServeFile::new(dir.join("index.html")).oneshot(request).await;
        if index.status() != StatusCode::NOT_FOUND {
            return index.map(Body::new);
        }
    }
    if path == "/" || path == "/index.html" {
        return builtin_page(&app.config, &app.addr.to_string());
    }
    ApiError::NotFound.into_response()
}

/// A path the console routes itself: no segment is hidden and the last
/// names no file type.
fn is_client_route(path: &str) -> bool {
    let mut segments = path.split('/').filter(|s| !s.is_empty());
    !segments.clone().any(|s| s.starts_with('.')) && segments.next_back().is_none_or(|last| !last.contains('.'))
}

/// Whether any segment of the path is hidden (`.git`, `.env`), as
/// written or percent-encoded.
fn is_hidden(path: &str) -> bool {
    path.split('/').any(|s| s.starts_with('.') || s.to_ascii_lowercase().starts_with("%2e"))
}

/// Dotfiles refused; then the cache policy by name, `Vary`, the page's
/// own security policy on HTML, and the UTF-8 charset on text.
async fn console_headers(mut request: Request, next: Next) -> Response {
    if is_hidden(request.uri().path()) {
        return ApiError::NotFound.into_response();
    }
    // HEAD carries GET's headers, and a page's policy is read from its
    // body: answered as GET, whose body the server then leaves out.
    if request.method() == Method::HEAD {
        *request.method_mut() = Method::GET;
    }
    let hashed = is_content_hashed(request.uri().path());
    let response = next.run(request).await;
    let status = response.status();
    let mut response = with_page_policy(response).await;
    let kept = status.is_success() || status == StatusCode::NOT_MODIFIED;
    let cache = if kept && hashed { IMMUTABLE } else { "no-cache" };
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    // Which file answers depends on what the client accepts (a
    // precompressed copy or the file itself); the on-the-fly compression
    // outside sees this and does not repeat it.
    if !h.get_all(header::VARY).iter().any(|v| v.as_bytes().eq_ignore_ascii_case(b"accept-encoding")) {
        h.append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    let text = h
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .filter(|t| t.starts_with("text/") && !t.contains(';'));
    if let Some(with_charset) = text.and_then(|t| HeaderValue::from_str(&format!("{t}; charset=utf-8")).ok()) {
        h.insert(header::CONTENT_TYPE, with_charset);
    }
    response
}

/// An HTML page without a policy header gets its `<meta>` policy plus
/// `frame-ancestors 'none'`. Pages come only from the build, so each is
/// read whole.
async fn with_page_policy(response: Response) -> Response {
    let h = response.headers();
    let is_html = h.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|t| t.starts_with("text/html"));
    if !is_html || h.contains_key(header::CONTENT_SECURITY_POLICY) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return ApiError::NotFound.into_response();
    };
    let policy = header_policy(meta_policy(&String::from_utf8_lossy(&bytes)).as_deref());
    parts.headers.insert(header::CONTENT_SECURITY_POLICY, policy);
    Response::from_parts(parts, Body::from(bytes))
}

/// Cache policy of a file whose name changes whenever its content does.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// Whether the file name carries a content hash, as Trunk's `filehash`
/// writes it (`console-0123456789abcdef_bg.wasm`): a run of at least 16
/// hex digits between separators.
fn is_content_hashed(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    stem.split(['-', '_', '.']).any(|part| part.len() >= 16 && part.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The policy of the page's `<meta http-equiv="Content-Security-Policy">`.
fn meta_policy(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("<meta") {
        let start = from + at;
        let end = start + lower[start..].find('>')?;
        let tag = &html[start..end];
        let attrs = attributes(tag);
        let is_csp = attrs
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("http-equiv") && v.eq_ignore_ascii_case("content-security-policy"));
        if is_csp {
            return attrs.into_iter().find(|(k, _)| k.eq_ignore_ascii_case("content")).map(|(_, v)| unescape(&v));
        }
        from = end;
    }
    None
}

/// `name="value"` and `name='value'` pairs of one tag.
fn attributes(tag: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = tag.trim_start_matches("<meta");
    while let Some(eq) = rest.find('=') {
        let name = rest[..eq].trim().rsplit(char::is_whitespace).next().unwrap_or("").to_owned();
        let after = rest[eq + 1..].trim_start();
        let Some(quote) = after.chars().next().filter(|c| *c == '"' || *c == '\'') else { break };
        let Some(close) = after[1..].find(quote) else { break };
        out.push((name, after[1..1 + close].to_owned()));
        rest = &after[close + 2..];
    }
    out
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The header policy: the page's own, plus `frame-ancestors 'none'`
/// (ignored in `<meta>`). A page without a policy still may not be framed.
fn header_policy(meta: Option<&str>) -> HeaderValue {
    const NO_FRAMING: &str = "frame-ancestors 'none'";
    let policy = match meta.map(|m| m.trim().trim_end_matches(';').trim()) {
        Some(m) if !m.is_empty() && !m.contains("frame-ancestors") => format!("{m}; {NO_FRAMING}"),
        Some(m) if !m.is_empty() => m.to_owned(),
        _ => NO_FRAMING.to_owned(),
    };
    HeaderValue::from_str(&policy).unwrap_or_else(|_| HeaderValue::from_static(NO_FRAMING))
}

/// The page shown when no console build is present.
fn builtin_page(config: &Config, addr: &str) -> Response {
    let posture = if config.control_enabled() {
        "Control is <strong>on</strong>: a bearer token is required for every request, and commands are routed."
    } else {
        "Control is <strong>off</strong> (development posture): no token is configured, so observing is open and every command is refused. Start the relay with <code>--token</code> to route commands."
    };
    let console = match &config.static_dir {
        Some(dir) => format!(
            "No console build was found in <code>{}</code> (no <code>index.html</code>).",
            html_escape(&dir.display().to_string())
        ),
        None => "No console directory is configured.".to_owned(),
    };
    let page = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>AEP relay</title>\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"></head>\n<body>\n<h1>AEP relay is running</h1>\n\
<p>Listening on <code>{addr}</code>. {posture}</p>\n<p>{console}</p>\n<h2>Endpoints</h2>\n<ul>\n\
<li><code>GET {EVENTS_PATH}</code> and <code>GET {WELL_KNOWN_PATH}</code>: discovery document</li>\n\
<li><code>POST {EVENTS_PATH}</code>: ingest (<code>application/json</code> or <code>application/x-ndjson</code>, header <code>AEP-Version: 0.1</code>)</li>\n\
<li><code>GET {STREAM_PATH}</code>: server-sent events (<code>filter</code>, <code>capture</code>, <code>from</code>, <code>live=0</code>)</li>\n\
<li><code>{SOCKET_PATH}</code>: WebSocket (hello, subscribe, roster, control)</li>\n\
<li><code>GET {HEALTH_PATH}</code>: liveness</li>\n</ul>\n</body></html>\n",
        addr = html_escape(addr),
    );
    let mut response = page.into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    // The page has no script, style or form of its own.
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    );
    response
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_policy_is_the_meta_policy_without_framing() {
        let html = r#"<head><meta charset="utf-8"><META http-equiv="Content-Security-Policy" content="default-src 'self'; script-src 'sha256-a+b='"></head>"#;
        let meta = meta_policy(html).unwrap();
        assert_eq!(meta, "default-src 'self'; script-src 'sha256-a+b='");
        assert_eq!(header_policy(Some(&meta)), "default-src 'self'; script-src 'sha256-a+b='; frame-ancestors 'none'");
        assert_eq!(header_policy(None), "frame-ancestors 'none'");
        assert_eq!(meta_policy("<meta charset=\"utf-8\">"), None);
    }

    #[test]
    fn hashed_names_are_recognised() {
        assert!(is_content_hashed("/console-0123456789abcdef_bg.wasm"));
        assert!(is_content_hashed("/assets/style-fedcba9876543210.css"));
        assert!(!is_content_hashed("/site.webmanifest"));
        assert!(!is_content_hashed("/index.html"));
        assert!(!is_content_hashed("/icon-192.png"));
    }

    #[test]
    fn client_routes_name_no_file_and_hide_nothing() {
        for route in ["/", "/sessions/abc", "/history/"] {
            assert!(is_client_route(route), "{route}");
        }
        for file in ["/missing.js", "/.hidden", "/..%2f..%2fetc/passwd", "/a/.git/config"] {
            assert!(!is_client_route(file), "{file}");
        }
        assert!(is_hidden("/a/.git/config") && is_hidden("/%2Eenv") && !is_hidden("/pkg/app.js"));
    }
}
