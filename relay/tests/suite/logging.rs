//! Tokens never reach the logs (AEP-0003 §8.1), at any level: request
//! lines carry the path only, whatever the query looks like.

use crate::support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use support::*;
use tracing_subscriber::fmt::MakeWriter;

/// Everything logged, in memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

#[tokio::test]
async fn query_strings_never_reach_the_log_at_trace_level() {
    let captured = Captured::default();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("trace"))
        .with_writer(captured.clone())
        .with_ansi(false)
        .init();
    let t = TestRelay::start(Posture::Token).await;
    let queries = [
        "/healthz?ACCESS_TOKEN=SECRET-A",
        "/stream?x=1;access_token=SECRET-B",
        "/events?access_token;=SECRET-C",
        "/healthz?access%5Ftoken=SECRET-D&x=1",
        "/nothing-here?token=SECRET-E",
        "/healthz?access_token=SECRET-F",
    ];
    for q in queries {
        let _ = t.http.get(t.url(q)).send().await.unwrap().bytes().await;
    }
    let ws = Ws::connect(&format!("ws://{}/socket?access_token={TOKEN}&x=SECRET-G", t.relay.local_addr())).await;
    if let Ok(ws) = ws {
        ws.close().await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let log = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
    assert!(log.contains("/healthz"), "request lines are logged at debug: {log}");
    assert!(log.contains("/nothing-here"), "{log}");
    for secret in ["SECRET", TOKEN] {
        assert!(!log.contains(secret), "`{secret}` reached the log:\n{log}");
    }
}
