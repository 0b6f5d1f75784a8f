//! Turning what was typed on the connect screen into a hub, and the
//! one-tap link format (`#token=…`, optionally `&relay=…`).

use aep_engine::client::hub::{relay_label, HubConfig, RelayAddress, RelaySpec};
use aep_engine::client::Config;
use aep_engine::protocol::frame::HelloIdentity;
use aep_engine::protocol::ids::{source_uri, Identity};

/// The `agent` this console sends commands as.
pub const AGENT: &str = "aep-console";
/// Cards kept per session. A console exists to show every request still
/// waiting, so this is well above the store's default (closed cards are
/// dropped first; only past this many *pending* ones would any be lost).
pub const MAX_CARDS_PER_SESSION: usize = 2_048;
/// Events kept per session for its timeline.
pub const MAX_TIMELINE_PER_SESSION: usize = 1_024;

/// One relay as typed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelayInput {
    pub url: String,
    /// May be empty (a relay in its open development posture).
    pub token: String,
}

/// A hub's configuration, and per relay where to reach it (the endpoint
/// holds the token).
pub struct Setup {
    pub hub: HubConfig,
    pub relays: Vec<RelaySpec>,
    pub endpoints: Vec<RelayAddress>,
}

/// Checks every relay; errors come per row and never quote a URL (it
/// may hold a token).
pub fn build(inputs: &[RelayInput], host: &str, seed: u64) -> Result<Setup, Vec<(usize, String)>> {
    let mut errors = Vec::new();
    let mut relays = Vec::new();
    let mut endpoints = Vec::new();
    for (i, r) in inputs.iter().enumerate() {
        let endpoint = match RelayAddress::new(&r.url, Some(&r.token)) {
            Ok(e) => e,
            Err(e) => {
                errors.push((i, e.to_string()));
                continue;
            }
        };
        let mut label = match relay_label(&r.url) {
            Ok(l) => l,
            Err(e) => {
                errors.push((i, e.to_string()));
                continue;
            }
        };
        if relays.iter().any(|s: &RelaySpec| s.label == label) {
            label = format!("{label} #{}", i + 1);
        }
        let mut config = Config::consumer();
        config.identity = Some(HelloIdentity { agent: Some(AGENT.to_owned()), ..HelloIdentity::default() });
        config.jitter_seed = seed.wrapping_add(i as u64);
        relays.push(RelaySpec { label, config });
        endpoints.push(endpoint);
    }
    if inputs.is_empty() {
        errors.push((0, "add at least one relay".to_owned()));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut hub = HubConfig::new(Identity::new(source_uri(host, AGENT, None), AGENT), seed);
    hub.store.max_cards_per_session = MAX_CARDS_PER_SESSION;
    hub.store.max_timeline_per_session = MAX_TIMELINE_PER_SESSION;
    Ok(Setup { hub, relays, endpoints })
}

/// The relay that served the page: `ws(s)://host/socket`.
pub fn default_relay(protocol: &str, host: &str) -> String {
    let scheme = if protocol == "https:" { "wss" } else { "ws" };
    format!("{scheme}://{host}/socket")
}

/// What a one-tap link carried in its fragment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Link {
    pub token: Option<String>,
    pub relays: Vec<String>,
}

/// Reads `#token=…&relay=…` (either may be absent; `relay` may repeat).
/// `None` when the fragment holds neither, so other fragments are left
/// alone.
pub fn read_link(hash: &str) -> Option<Link> {
    let body = hash.strip_prefix('#').unwrap_or(hash);
    let mut link = Link::default();
    let mut any = false;
    for pair in body.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "token" => {
                any = true;
                link.token = Some(percent_decode(v)).filter(|t| !t.is_empty());
            }
            "relay" => {
                any = true;
                let v = percent_decode(v);
                if !v.is_empty() {
                    link.relays.push(v);
                }
            }
            _ => {}
        }
    }
    any.then_some(link)
}

/// Where a one-tap link would connect, and which of its relays are
/// unknown: neither the relay that served the page nor one already saved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkPlan {
    pub relays: Vec<RelayInput>,
    /// Rows of `relays` the person has not used from here.
    pub unknown: Vec<usize>,
}

impl LinkPlan {
    /// A link connects at once only to relays the person already uses;
    /// one that names any other is shown on the connect screen first, so
    /// a crafted link cannot move the console to someone else's relay.
    pub fn must_ask(&self) -> bool {
        !self.unknown.is_empty()
    }
}

/// What asking says about each unknown relay.
pub const UNKNOWN_RELAY: &str =
    "This link points to a relay that did not serve this page and that you have not used here. Check the address before you connect.";

/// Plans a link: its relays (the page's own when it names none), each with
/// its token, and which of them are unknown given `origin` (the page's
/// relay) and the relays `saved` on this device or tab.
pub fn plan_link(link: Link, origin: &str, saved: &[RelayInput]) -> LinkPlan {
    let token = link.token.unwrap_or_default();
    let urls = if link.relays.is_empty() { vec![origin.to_owned()] } else { link.relays };
    let known = |url: &str| same_relay(url, origin) || saved.iter().any(|s| same_relay(url, &s.url));
    let unknown = urls.iter().enumerate().filter(|(_, url)| !known(url)).map(|(i, _)| i).collect();
    let relays = urls.into_iter().map(|url| RelayInput { url, token: token.clone() }).collect();
    LinkPlan { relays, unknown }
}

/// Whether two typed relay addresses name the same socket (case of the
/// scheme and host, a trailing `/` or `/socket`, and any query aside).
fn same_relay(a: &str, b: &str) -> bool {
    fn key(url: &str) -> String {
        let url = url.trim().split(['?', '#']).next().unwrap_or("");
        let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
        let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
        let path = path.trim_end_matches('/');
        let path = path.strip_suffix("socket").unwrap_or(path).trim_end_matches('/');
        format!("{}://{}/{path}", scheme.to_ascii_lowercase(), host.to_ascii_lowercase())
    }
    key(a) == key(b)
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_carry_a_token_and_relays() {
        assert_eq!(read_link("#/sessions"), None);
        assert_eq!(read_link(""), None);
        let l = read_link("#token=s3cr%2Ft&relay=wss%3A%2F%2Fa.example%2Fsocket").unwrap();
        assert_eq!(l.token.as_deref(), Some("s3cr/t"));
        assert_eq!(l.relays, ["wss://a.example/socket"]);
        assert_eq!(read_link("#token=abc%").unwrap().token.as_deref(), Some("abc%"));
    }

    fn input(url: &str) -> RelayInput {
        RelayInput { url: url.into(), token: "saved".into() }
    }

    #[test]
    fn a_link_connects_at_once_only_to_relays_already_in_use() {
        let origin = "ws://127.0.0.1:8787/socket";
        let own = plan_link(read_link("#token=t").unwrap(), origin, &[]);
        assert!(!own.must_ask());
        assert_eq!(own.relays, [RelayInput { url: origin.into(), token: "t".into() }]);
        let same = plan_link(read_link("#token=t&relay=WS%3A%2F%2F127.0.0.1%3A8787%2F").unwrap(), origin, &[]);
        assert!(!same.must_ask(), "the page's own relay, spelled otherwise");
        let other = read_link("#relay=ws%3A%2F%2Fother%2Fsocket").unwrap();
        let plan = plan_link(other.clone(), origin, &[]);
        assert!(plan.must_ask());
        assert_eq!(plan.unknown, [0]);
        assert!(!plan_link(other, origin, &[input("ws://other")]).must_ask(), "a saved relay is known");
        let mixed = plan_link(
            read_link("#relay=ws%3A%2F%2F127.0.0.1%3A8787%2Fsocket&relay=wss%3A%2F%2Fevil.example%2Fsocket").unwrap(),
            origin,
            &[],
        );
        assert_eq!(mixed.unknown, [1]);
    }

    #[test]
    fn setups_keep_tokens_out_of_labels_and_errors() {
        let ok = build(
            &[
                RelayInput { url: "ws://127.0.0.1:8787".into(), token: "hunter2".into() },
                RelayInput { url: "wss://relay.example/socket".into(), token: String::new() },
            ],
            "console.example",
            7,
        )
        .unwrap_or_else(|_| panic!("valid"));
        assert_eq!(ok.endpoints[0].socket, "ws://127.0.0.1:8787/socket?access_token=hunter2");
        assert!(ok.relays.iter().all(|r| !r.label.contains("hunter2")));
        let bad = build(&[RelayInput { url: "ftp://x?access_token=hunter2".into(), token: "hunter2".into() }], "h", 1);
        let errs = bad.err().unwrap();
        assert!(errs.iter().all(|(_, e)| !e.contains("hunter2")), "{errs:?}");
    }

    #[test]
    fn the_default_relay_is_the_serving_origin() {
        assert_eq!(default_relay("https:", "h.example"), "wss://h.example/socket");
    }
}
