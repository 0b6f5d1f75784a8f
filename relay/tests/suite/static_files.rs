//! The console is served from the same origin with the MIME types browsers
//! require; without a build, a built-in page says what is running.

use crate::support;

use std::path::PathBuf;

use support::*;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aep-relay-{name}-{}", fresh_id()));
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    dir
}

#[tokio::test]
async fn serves_the_console_build_with_the_right_types() {
    let dir = temp_dir("dist");
    let files = [
        ("index.html", "text/html; charset=utf-8"),
        ("pkg/app_bg.wasm", "application/wasm"),
        ("pkg/app.js", "text/javascript; charset=utf-8"),
        ("style.css", "text/css; charset=utf-8"),
        ("data.json", "application/json"),
        ("site.webmanifest", "application/manifest+json"),
        ("icon.svg", "image/svg+xml"),
        ("icon.png", "image/png"),
    ];
    for (name, _) in files {
        std::fs::write(dir.join(name), format!("contents of {name}")).unwrap();
    }
    std::fs::write(dir.join(".env"), "SECRET=do-not-serve").unwrap();
    for posture in POSTURES {
        let t = TestRelay::start_with(posture, |c| c.static_dir = Some(dir.clone())).await;
        for (name, mime) in files {
            // No credentials: the console must load before a token is entered.
            let r = t.http.get(t.url(&format!("/{name}"))).send().await.unwrap();
            assert_eq!(r.status(), 200, "{name}");
            assert_eq!(r.headers()["content-type"], mime, "{name}");
            assert!(r.headers().get("content-encoding").is_none());
            assert_eq!(r.text().await.unwrap(), format!("contents of {name}"));
        }
        let root = t.http.get(t.url("/")).send().await.unwrap();
        assert_eq!(root.text().await.unwrap(), "contents of index.html");
        let deep = t.http.get(t.url("/sessions/abc")).send().await.unwrap();
        assert_eq!(deep.text().await.unwrap(), "contents of index.html", "client-side routes");
        assert_eq!(t.http.get(t.url("/missing.js")).send().await.unwrap().status(), 404);
        assert_eq!(t.http.get(t.url("/..%2f..%2fetc/passwd")).send().await.unwrap().status(), 404);
        assert_eq!(t.http.get(t.url("/.hidden")).send().await.unwrap().status(), 404);
        for dotfile in ["/.env", "/%2eenv"] {
            let r = t.http.get(t.url(dotfile)).send().await.unwrap();
            assert_eq!(r.status(), 404, "{dotfile}");
            assert!(!r.text().await.unwrap().contains("SECRET"), "{dotfile}");
        }
        let post = t.http.post(t.url("/index.html")).send().await.unwrap();
        assert_eq!(post.status(), 405);
        assert_eq!(post.headers()["content-type"], "application/json");
        // API routes win over files.
        let api = t.get("/events").send().await.unwrap();
        assert_eq!(api.headers()["content-type"], "application/json");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn without_a_build_a_built_in_page_states_the_posture() {
    let empty = temp_dir("empty");
    for (posture, says) in
        [(Posture::Open, "Control is <strong>off</strong>"), (Posture::Token, "Control is <strong>on</strong>")]
    {
        let t = TestRelay::start_with(posture, |c| c.static_dir = Some(empty.clone())).await;
        let r = t.http.get(t.url("/")).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "text/html; charset=utf-8");
        let page = r.text().await.unwrap();
        assert!(page.contains("AEP relay is running"));
        assert!(page.contains(says), "{posture:?}");
        for endpoint in ["/events", "/stream", "/socket", "/.well-known/aep", "/healthz"] {
            assert!(page.contains(endpoint), "{endpoint}");
        }
        assert!(!page.contains(TOKEN));
    }
    std::fs::remove_dir_all(empty).unwrap();
}

/// What the console build script puts first in `<head>`.
const META_CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval' 'sha256-abc='; object-src 'none'";

fn console_build(name: &str) -> PathBuf {
    let dir = temp_dir(name);
    let index = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\">\n  <meta http-equiv=\"Content-Security-Policy\" content=\"{META_CSP}\"><title>console</title></head><body></body></html>"
    );
    std::fs::write(dir.join("index.html"), index).unwrap();
    let wasm: Vec<u8> = (0..200_000u32).map(|i| (i % 7) as u8).collect();
    std::fs::write(dir.join("console-0123456789abcdef_bg.wasm"), &wasm).unwrap();
    std::fs::write(dir.join("console-0123456789abcdef.js"), "export const x = 1;\n".repeat(500)).unwrap();
    std::fs::write(dir.join("style-fedcba9876543210.css"), "body { margin: 0 }\n".repeat(500)).unwrap();
    std::fs::write(dir.join("site.webmanifest"), "{}").unwrap();
    dir
}

#[tokio::test]
async fn console_responses_carry_security_headers_and_cache_policy() {
    let dir = console_build("headers");
    let t = TestRelay::start_with(Posture::Open, |c| c.static_dir = Some(dir.clone())).await;
    for path in ["/", "/index.html", "/sessions/abc"] {
        let head = t.http.head(t.url(path)).send().await.unwrap();
        assert_eq!(head.status(), 200, "{path}");
        let head_csp = head.headers()["content-security-policy"].clone();
        assert!(head.bytes().await.unwrap().is_empty(), "HEAD has no body");
        let r = t.http.get(t.url(path)).send().await.unwrap();
        let h = r.headers();
        let csp = h["content-security-policy"].to_str().unwrap();
        assert!(csp.starts_with(META_CSP), "the header repeats the page's own policy: {csp}");
        assert_eq!(head_csp, csp, "HEAD says what GET says");
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
        assert_eq!(h["cache-control"], "no-cache", "{path}");
    }
    for asset in ["/console-0123456789abcdef_bg.wasm", "/console-0123456789abcdef.js", "/style-fedcba9876543210.css"] {
        let r = t.http.get(t.url(asset)).send().await.unwrap();
        let h = r.headers();
        assert_eq!(h["cache-control"], "public, max-age=31536000, immutable", "{asset}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{asset}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{asset}");
    }
    let plain = t.http.get(t.url("/site.webmanifest")).send().await.unwrap();
    assert_eq!(plain.headers()["cache-control"], "no-cache", "an unhashed name may change under the same URL");

    // The built-in page frames nothing either.
    let empty = temp_dir("no-build");
    let t = TestRelay::start_with(Posture::Open, |c| c.static_dir = Some(empty.clone())).await;
    let r = t.http.get(t.url("/")).send().await.unwrap();
    assert!(r.headers()["content-security-policy"].to_str().unwrap().contains("frame-ancestors 'none'"));
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    std::fs::remove_dir_all(dir).unwrap();
    std::fs::remove_dir_all(empty).unwrap();
}

#[tokio::test]
async fn wasm_js_and_css_are_served_compressed_when_asked() {
    use std::io::Read;
    let dir = console_build("compressed");
    let t = TestRelay::start_with(Posture::Open, |c| c.static_dir = Some(dir.clone())).await;
    for (asset, file) in [
        ("/console-0123456789abcdef_bg.wasm", "console-0123456789abcdef_bg.wasm"),
        ("/console-0123456789abcdef.js", "console-0123456789abcdef.js"),
        ("/style-fedcba9876543210.css", "style-fedcba9876543210.css"),
        ("/", "index.html"),
    ] {
        let original = std::fs::read(dir.join(file)).unwrap();
        let r = t.http.get(t.url(asset)).header("accept-encoding", "gzip").send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-encoding"], "gzip", "{asset}");
        assert!(r.headers()["vary"].to_str().unwrap().to_ascii_lowercase().contains("accept-encoding"));
        let body = r.bytes().await.unwrap();
        assert!(body.len() < original.len(), "{asset}");
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&body[..]).read_to_end(&mut plain).unwrap();
        assert_eq!(plain, original, "{asset}");
        let br = t.http.get(t.url(asset)).header("accept-encoding", "br").send().await.unwrap();
        assert_eq!(br.headers()["content-encoding"], "br", "{asset}");
        let identity = t.http.get(t.url(asset)).send().await.unwrap();
        assert!(identity.headers().get("content-encoding").is_none());
        assert_eq!(identity.bytes().await.unwrap(), original);
    }
    // API responses and event streams are never compressed.
    let api = t.http.get(t.url("/events")).header("accept-encoding", "gzip").send().await.unwrap();
    assert!(api.headers().get("content-encoding").is_none());
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_precompressed_copy_beside_a_file_is_served_in_its_place() {
    let dir = console_build("precompressed");
    let wasm = "console-0123456789abcdef_bg.wasm";
    std::fs::write(dir.join(format!("{wasm}.br")), b"brotli bytes").unwrap();
    std::fs::write(dir.join(format!("{wasm}.gz")), b"gzip bytes").unwrap();
    let t = TestRelay::start_with(Posture::Open, |c| c.static_dir = Some(dir.clone())).await;
    let url = t.url(&format!("/{wasm}"));
    for (accept, encoding, body) in [("gzip, deflate, br", "br", &b"brotli bytes"[..]), ("gzip", "gzip", b"gzip bytes")]
    {
        let r = t.http.get(&url).header("accept-encoding", accept).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let h = r.headers();
        assert_eq!(h["content-encoding"], encoding, "{accept}");
        assert_eq!(h["content-type"], "application/wasm", "{accept}");
        assert_eq!(h["cache-control"], "public, max-age=31536000, immutable");
        assert_eq!(h["x-content-type-options"], "nosniff");
        let vary = h.get_all("vary").iter().filter(|v| v.to_str().unwrap().eq_ignore_ascii_case("accept-encoding"));
        assert_eq!(vary.count(), 1, "{accept}");
        assert_eq!(r.bytes().await.unwrap(), body, "{accept}");
    }
    let identity = t.http.get(&url).send().await.unwrap();
    assert!(identity.headers().get("content-encoding").is_none());
    assert_eq!(identity.headers()["vary"], "accept-encoding");
    assert_eq!(identity.bytes().await.unwrap().len(), 200_000);
    // The page itself has no copy: compressed on the fly, its policy read.
    let page = t.http.get(t.url("/")).header("accept-encoding", "br").send().await.unwrap();
    assert_eq!(page.headers()["content-encoding"], "br");
    assert!(page.headers()["content-security-policy"].to_str().unwrap().starts_with(META_CSP));
    std::fs::remove_dir_all(dir).unwrap();
}
