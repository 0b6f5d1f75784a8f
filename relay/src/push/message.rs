//! What a push says: a small JSON the service worker turns into a
//! notification. It never carries a bearer token; the prompt is cut short
//! and the whole stays well within a push service's 4 KB once encrypted.

use std::time::Duration;

use aep_engine::protocol::attention::OptionMeaning;
use aep_engine::{Severity, UnixMs};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::requests::Request;

/// Plaintext bytes at most: 4096 less the record's overhead (header,
/// key id, tag, padding delimiter) with room to spare.
pub const MAX_PAYLOAD: usize = 3000;
const MAX_PROMPT: usize = 280;
const MAX_LABEL: usize = 60;
const MAX_OPTIONS: usize = 8;
/// The `Topic` summaries replace each other under.
pub const SUMMARY_TOPIC: &str = "aep-waiting-summary";

/// `Urgency` (RFC 8030 §5.3): a critical request wakes the device.
pub fn urgency(severity: Severity) -> &'static str {
    if severity >= Severity::Critical {
        "high"
    } else {
        "normal"
    }
}

/// `Topic` (RFC 8030 §5.4): 32 base64url characters from the request id,
/// so a later push for the same request replaces the earlier one.
pub fn topic(request: &str) -> String {
    let digest = Sha256::digest(request.as_bytes());
    URL_SAFE_NO_PAD.encode(digest)[..32].to_owned()
}

/// `TTL`: until the request expires, else `default`.
pub fn ttl(request: &Request, now: UnixMs, default: Duration) -> Duration {
    match request.expires_at {
        Some(at) => Duration::from_millis(at.0.saturating_sub(now.0)),
        None => default,
    }
}

/// Where the console opens at the request's card (relative to the relay).
pub fn card_url(request: &Request) -> String {
    let query = serde_urlencoded::to_string([("session", request.session.as_str()), ("request", request.id.as_str())])
        .unwrap_or_default();
    format!("/?{query}")
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// A request's push, with the capability that answers it.
pub fn request(request: &Request, capability: &str) -> Vec<u8> {
    let options: Vec<Value> = request
        .options
        .iter()
        .take(MAX_OPTIONS)
        .map(|(id, label)| json!({"id": id, "label": cut(label, MAX_LABEL), "meaning": OptionMeaning::of(id).as_str()}))
        .collect();
    let mut body = json!({
        "kind": "request",
        "request": request.id,
        "session": request.session,
        "agent": request.agent,
        "prompt": cut(&request.prompt, MAX_PROMPT),
        "severity": request.severity.as_str(),
        "destructive": request.destructive,
        "options": options,
        "url": card_url(request),
        "capability": capability,
    });
    let mut bytes = serde_json::to_vec(&body).expect("json");
    if bytes.len() > MAX_PAYLOAD {
        // Unusually long ids or labels: the notification still says who
        // waits and opens the card; answering happens there.
        body["options"] = json!([]);
        body["capability"] = Value::Null;
        body["prompt"] = json!(cut(&request.prompt, 80));
        bytes = serde_json::to_vec(&body).expect("json");
    }
    bytes
}

/// The push that takes a settled request's notification away.
pub fn closed(request: &Request) -> Vec<u8> {
    serde_json::to_vec(&json!({"kind": "closed", "request": request.id, "session": request.session})).expect("json")
}

/// One push for many waiting requests.
pub fn summary(waiting: usize) -> Vec<u8> {
    let text = if waiting == 1 { "1 request is waiting".to_owned() } else { format!("{waiting} requests are waiting") };
    serde_json::to_vec(&json!({"kind": "summary", "waiting": waiting, "prompt": text, "url": "/"})).expect("json")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(prompt: &str) -> Request {
        Request {
            id: "01J0000000000000000000000".into(),
            session: "s".into(),
            agent: "a".into(),
            prompt: prompt.into(),
            severity: Severity::Critical,
            options: vec![("allow".into(), "Allow".into())],
            expires_at: None,
            destructive: false,
        }
    }

    #[test]
    fn topics_are_short_url_safe_and_stable() {
        let t = topic("some-request-id");
        assert_eq!(t.len(), 32);
        assert!(t.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert_eq!(t, topic("some-request-id"));
        assert_ne!(t, topic("another"));
    }

    #[test]
    fn a_destructive_request_says_so_for_the_notification() {
        let plain: Value = serde_json::from_slice(&request(&req("p"), "c")).unwrap();
        assert_eq!(plain["destructive"], false);
        let marked: Value = serde_json::from_slice(&request(&Request { destructive: true, ..req("p") }, "c")).unwrap();
        assert_eq!(marked["destructive"], true);
    }

    #[test]
    fn each_option_says_what_choosing_it_means() {
        let options = vec![
            ("deny_once".into(), "Deny".into()),
            ("allow".into(), "Allow".into()),
            ("later".into(), "Later".into()),
        ];
        let v: Value = serde_json::from_slice(&request(&Request { options, ..req("p") }, "c")).unwrap();
        let meanings: Vec<&str> =
            v["options"].as_array().unwrap().iter().map(|o| o["meaning"].as_str().unwrap()).collect();
        assert_eq!(meanings, ["refuses", "grants", "neither"]);
    }

    #[test]
    fn a_long_prompt_is_cut_and_the_payload_stays_small() {
        let body = request(&req(&"x".repeat(10_000)), &"c".repeat(400));
        assert!(body.len() <= MAX_PAYLOAD);
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["prompt"].as_str().unwrap().chars().count(), MAX_PROMPT);
        assert_eq!(urgency(Severity::Critical), "high");
        assert_eq!(urgency(Severity::Warning), "normal");
    }
}
