//! The console is served from the same origin with the MIME types browsers
//! require; without a build, a built-in page says what is running.

mod support;

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
