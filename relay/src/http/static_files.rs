//! The console, served from the same origin as the API: files from the
//! static directory (its build output) with the MIME types browsers insist
//! on (`application/wasm` above all), `/` as `index.html`, and extension-less
//! paths falling back to `index.html` for client-side routes. Without an
//! `index.html` a small built-in page says the relay is up and how to use it.
//!
//! Every console response says `nosniff` and `no-referrer`. HTML carries a
//! `Content-Security-Policy` header: the policy the build put in the
//! page's own `<meta>` (one source of truth), plus `frame-ancestors 'none'`,
//! which only a header can express. Content-hashed assets are cached for
//! good; everything else is revalidated. Compression is applied by the
//! router (see [`super::router`]).

use std::path::{Path, PathBuf};

use axum::extract::State;
use axum::http::{header, HeaderValue, Method, Uri};
use axum::response::{IntoResponse, Response};

use super::ApiError;
use crate::state::AppState;
use crate::config::Config;
use crate::discovery::{EVENTS_PATH, HEALTH_PATH, SOCKET_PATH, STREAM_PATH, WELL_KNOWN_PATH};

pub async fn serve(State(app): State<AppState>, method: Method, uri: Uri) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return ApiError::MethodNotAllowed.into_response();
    }
    let Some(relative) = safe_relative(uri.path()) else {
        return not_found();
    };
    if let Some(dir) = &app.config.static_dir {
        if let Some(response) = from_dir(dir, &relative).await {
            return response;
        }
    }
    if relative.as_os_str().is_empty() || relative == Path::new("index.html") {
        return builtin_page(&app.config, &app.addr.to_string());
    }
    not_found()
}

/// Resolves a file in `dir`, with the `index.html` fallbacks.
async fn from_dir(dir: &Path, relative: &Path) -> Option<Response> {
    let direct = dir.join(relative);
    let direct =
        if tokio::fs::metadata(&direct).await.is_ok_and(|m| m.is_dir()) { direct.join("index.html") } else { direct };
    if let Some(r) = file_response(&direct).await {
        return Some(r);
    }
    if relative.extension().is_none() {
        return file_response(&dir.join("index.html")).await;
    }
    None
}

async fn file_response(path: &Path) -> Option<Response> {
    let bytes = tokio::fs::read(path).await.ok()?;
    let is_html = path.extension().is_some_and(|e| e == "html" || e == "htm");
    let csp = is_html.then(|| header_policy(meta_policy(&String::from_utf8_lossy(&bytes)).as_deref()));
    let mut response = bytes.into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime_type(path)));
    let cache = if is_content_hashed(path) { IMMUTABLE } else { "no-cache" };
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if let Some(csp) = csp {
        h.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    secure(&mut response);
    Some(response)
}

/// Cache policy of a file whose name changes whenever its content does.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// Headers every console response carries.
fn secure(response: &mut Response) {
    let h = response.headers_mut();
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
}

/// Whether the file name carries a content hash, as Trunk's `filehash`
/// writes it (`console-0123456789abcdef_bg.wasm`): a run of at least 16
/// hex digits between separators.
fn is_content_hashed(path: &Path) -> bool {
    let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else { return false };
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
    s.replace("&quot;", "\"").replace("&#39;", "'").replace("&apos;", "'").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
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

/// The request path as a relative path that cannot leave the directory:
/// no `..`, no hidden segments, no backslashes or drive letters. `None`
/// refuses the request.
fn safe_relative(path: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        if segment.starts_with('.') || segment.contains(['\\', ':', '\0']) {
            return None;
        }
        out.push(segment);
    }
    Some(out)
}

/// MIME type by extension; browsers refuse to compile wasm or run modules
/// served under the wrong one.
pub fn mime_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("json" | "map") => "application/json",
        Some("webmanifest") => "application/manifest+json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("txt") => "text/plain; charset=utf-8",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    }
}

fn not_found() -> Response {
    ApiError::NotFound.into_response()
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
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // The page has no script, style or form of its own.
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    );
    secure(&mut response);
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
        assert!(is_content_hashed(Path::new("console-0123456789abcdef_bg.wasm")));
        assert!(is_content_hashed(Path::new("style-fedcba9876543210.css")));
        assert!(!is_content_hashed(Path::new("site.webmanifest")));
        assert!(!is_content_hashed(Path::new("index.html")));
        assert!(!is_content_hashed(Path::new("icon-192.png")));
    }

    #[test]
    fn refuses_paths_that_leave_the_directory() {
        assert_eq!(safe_relative("/"), Some(PathBuf::new()));
        assert_eq!(safe_relative("/pkg/app_bg.wasm"), Some(PathBuf::from("pkg/app_bg.wasm")));
        assert_eq!(safe_relative("/../etc/passwd"), None);
        assert_eq!(safe_relative("/a/.git/config"), None);
        assert_eq!(safe_relative("/a\\..\\b"), None);
    }

    #[test]
    fn mime_types_browsers_require() {
        assert_eq!(mime_type(Path::new("x.wasm")), "application/wasm");
        assert_eq!(mime_type(Path::new("x.JS")), "text/javascript; charset=utf-8");
        assert_eq!(mime_type(Path::new("site.webmanifest")), "application/manifest+json");
    }
}
