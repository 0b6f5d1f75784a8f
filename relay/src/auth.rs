//! Bearer-token authentication (AEP-0003 §8.1).
//!
//! The token arrives in `Authorization: Bearer …` or, for clients that
//! cannot set headers (browser `EventSource`, the WebSocket constructor),
//! in `?access_token=`. It is compared in constant time and never printed:
//! [`Token`] has no `Display` and its `Debug` is masked.

use std::sync::{Arc, RwLock};

use aep_engine::protocol::ids::encode;
use axum::http::{header, HeaderMap};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The query parameter that may carry the token (the protocol's name).
pub use aep_engine::protocol::TOKEN_PARAM as QUERY_PARAM;

/// A configured bearer token.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// `None` for an empty string: an empty token would authenticate
    /// everyone while claiming the authenticated posture.
    pub fn new(secret: impl Into<String>) -> Option<Token> {
        let secret = secret.into();
        (!secret.is_empty()).then_some(Token(secret))
    }

    /// Constant-time comparison, so response timing reveals nothing about
    /// how much of a guess was right.
    pub fn matches(&self, presented: &str) -> bool {
        bool::from(self.0.as_bytes().ct_eq(presented.as_bytes()))
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// A role a credential grants (several may be granted together).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Roles {
    /// May emit events into sessions it owns, under its own `agent` and
    /// `source`.
    pub agent: bool,
    /// May send commands (and read).
    pub operator: bool,
    /// May read: the stream, the socket's subscriptions, the roster.
    pub viewer: bool,
}

impl Roles {
    pub const ALL: Roles = Roles { agent: true, operator: true, viewer: true };

    /// Reads `agent,operator,viewer` (any of them, comma-separated).
    pub fn parse(text: &str) -> Result<Roles, String> {
        let mut roles = Roles::default();
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "agent" => roles.agent = true,
                "operator" => roles.operator = true,
                "viewer" => roles.viewer = true,
                other => return Err(format!("unknown role `{other}` (agent, operator or viewer)")),
            }
        }
        if roles == Roles::default() {
            return Err("no role given".into());
        }
        Ok(roles)
    }

    fn may_read(self) -> bool {
        self.viewer || self.operator
    }
}

/// Which `agent` names a principal may speak as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Agents {
    /// Any name: the single-token owner, the development posture and the
    /// built-in demonstration agents (asserted identity, AEP-0004 §8).
    Any,
    /// Only these names (a credentials-file principal: its own name).
    Named(Vec<String>),
}

/// Who sent a request or holds a connection: a name and what it may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    pub name: Arc<str>,
    pub roles: Roles,
    pub agents: Agents,
}

impl Principal {
    /// A principal that may speak only under its own name.
    pub fn named(name: &str, roles: Roles) -> Principal {
        Principal { name: Arc::from(name), roles, agents: Agents::Named(vec![name.to_owned()]) }
    }

    /// The one principal of `--token`: every role, any agent name.
    pub fn owner() -> Principal {
        Principal { name: Arc::from(OWNER), roles: Roles::ALL, agents: Agents::Any }
    }

    /// Whoever reaches a relay with no credentials configured: it may
    /// watch and emit, never command.
    pub fn anonymous() -> Principal {
        Principal {
            name: Arc::from(ANONYMOUS),
            roles: Roles { agent: true, operator: false, viewer: true },
            agents: Agents::Any,
        }
    }

    /// Whether this principal may speak as `agent`.
    pub fn may_be(&self, agent: &str) -> bool {
        match &self.agents {
            Agents::Any => true,
            Agents::Named(names) => names.iter().any(|n| n == agent),
        }
    }

    /// Why an event with this `agent` and `source` is not this principal's
    /// to emit; `Ok` when it is. A named principal's `source` must be of
    /// the form `aep://{host}/agent/{its name}[/...]`.
    pub fn check_emitter(&self, agent: &str, source: &str) -> Result<(), String> {
        if !self.roles.agent {
            return Err(format!("`{}` may not emit events (it is not an agent)", self.name));
        }
        if !self.may_be(agent) {
            return Err(format!("`{}` may not emit as agent `{agent}`", self.name));
        }
        if matches!(self.agents, Agents::Named(_)) && source_agent(source).is_none_or(|a| a != encode(agent)) {
            return Err(format!(
                "`{}` may emit only under a source of its own (aep://host/agent/{agent}/…)",
                self.name
            ));
        }
        Ok(())
    }
}

/// The (still encoded) agent segment of `aep://{host}/agent/{agent}[/…]`.
fn source_agent(source: &str) -> Option<&str> {
    let rest = source.strip_prefix("aep://")?;
    let (_, path) = rest.split_once('/')?;
    let after = path.strip_prefix("agent/")?;
    Some(after.split('/').next().unwrap_or(after))
}

/// The name `--token`'s principal goes by.
pub const OWNER: &str = "owner";
/// The name of whoever reaches a relay that has no credentials.
pub const ANONYMOUS: &str = "anonymous";

/// What a request or connection may do: its principal, and whether it
/// presented a credential.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    principal: Arc<Principal>,
    authenticated: bool,
}

impl Access {
    /// No credentials are configured: observing and emitting are open,
    /// control is refused.
    pub fn anonymous() -> Access {
        Access { principal: Arc::new(Principal::anonymous()), authenticated: false }
    }

    /// A presented credential's principal.
    pub fn authenticated(principal: Arc<Principal>) -> Access {
        Access { principal, authenticated: true }
    }

    pub fn principal(&self) -> &Arc<Principal> {
        &self.principal
    }

    pub fn is_authenticated(&self) -> bool {
        self.authenticated
    }

    /// Commands flow only on authenticated bindings (AEP-0004 §4.1), and
    /// only from operators.
    pub fn may_command(&self) -> bool {
        self.authenticated && self.principal.roles.operator
    }

    /// Reading the stream, subscribing, the roster.
    pub fn may_read(&self) -> bool {
        self.principal.roles.may_read()
    }

    /// Emitting events at all (each is then checked by
    /// [`Principal::check_emitter`]).
    pub fn may_emit(&self) -> bool {
        self.principal.roles.agent
    }
}

/// The hash a credentials file keeps for a token: SHA-256, in hex.
pub fn token_hash(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A new random token: 32 hex digits (128 bits) from the operating
/// system's generator, for the demonstration agents and paired devices.
pub fn fresh_token() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The credentials a relay accepts: each token's hash and its principal.
/// Tokens themselves are never kept; a presented one is hashed and
/// compared, in constant time, with every entry.
#[derive(Default)]
pub struct Keyring {
    entries: RwLock<Vec<(Vec<u8>, Arc<Principal>)>>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.read().iter().map(|(_, p)| p.name.clone()).collect();
        f.debug_struct("Keyring").field("principals", &names).finish()
    }
}

impl Keyring {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<(Vec<u8>, Arc<Principal>)>> {
        self.entries.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a credential by its token.
    pub fn add(&self, token: &Token, principal: Principal) {
        self.add_hash(&token_hash(&token.0), principal);
    }

    fn add_hash(&self, hex: &str, principal: Principal) {
        let bytes = decode_hex(hex).unwrap_or_default();
        self.entries.write().unwrap_or_else(|p| p.into_inner()).push((bytes, Arc::new(principal)));
    }

    /// Replaces every credential whose principal is not in `keep` with
    /// `entries` (a credentials file reloaded).
    pub fn replace(&self, keep: &[Arc<str>], entries: Vec<(String, Principal)>) {
        let mut held = self.entries.write().unwrap_or_else(|p| p.into_inner());
        held.retain(|(_, p)| keep.contains(&p.name));
        for (hex, principal) in entries {
            if let Some(bytes) = decode_hex(&hex) {
                held.push((bytes, Arc::new(principal)));
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Whether a principal by this name is still configured.
    pub fn holds(&self, name: &str) -> bool {
        self.read().iter().any(|(_, p)| &*p.name == name)
    }

    /// The principal configured under `name`, while it is.
    pub fn named(&self, name: &str) -> Option<Arc<Principal>> {
        self.read().iter().find(|(_, p)| &*p.name == name).map(|(_, p)| p.clone())
    }

    /// Every principal configured now.
    pub fn principals(&self) -> Vec<Arc<Principal>> {
        self.read().iter().map(|(_, p)| p.clone()).collect()
    }

    /// The principal a presented token belongs to.
    pub fn find(&self, presented: &str) -> Option<Arc<Principal>> {
        let hash = Sha256::digest(presented.as_bytes());
        let mut found = None;
        for (expected, principal) in self.read().iter() {
            if bool::from(expected.as_slice().ct_eq(hash.as_slice())) && found.is_none() {
                found = Some(principal.clone());
            }
        }
        found
    }
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    let hex = hex.strip_prefix("sha256:").unwrap_or(hex);
    if hex.len() != 64 {
        return None;
    }
    (0..32).map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()).collect()
}

/// Reads a credentials file: one principal a line, `name roles hash`, the
/// roles comma-separated (`agent`, `operator`, `viewer`), the hash the
/// token's SHA-256 in hex (optionally `sha256:`-prefixed); `#` starts a
/// comment.
pub fn parse_credentials(text: &str) -> Result<Vec<(String, Principal)>, String> {
    let mut out: Vec<(String, Principal)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [name, roles, hash] = fields[..] else {
            return Err(format!("line {}: expected `name roles sha256-hex`", n + 1));
        };
        let roles = Roles::parse(roles).map_err(|e| format!("line {}: {e}", n + 1))?;
        if decode_hex(hash).is_none() {
            return Err(format!("line {}: the hash must be 64 hex digits (SHA-256 of the token)", n + 1));
        }
        if name == OWNER || name == ANONYMOUS || out.iter().any(|(_, p)| &*p.name == name) {
            return Err(format!("line {}: the name `{name}` is taken", n + 1));
        }
        out.push((hash.to_owned(), Principal::named(name, roles)));
    }
    Ok(out)
}

/// A request refused for its credentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    /// A token is required and none was presented.
    Missing,
    /// A token was presented and it is not the configured one.
    Wrong,
}

/// Decides a request's access from its headers and query string: with no
/// keyring (no credentials configured) everyone is anonymous.
pub fn check(keyring: Option<&Keyring>, headers: &HeaderMap, query: Option<&str>) -> Result<Access, Denied> {
    let Some(keyring) = keyring else {
        return Ok(Access::anonymous());
    };
    let presented = bearer(headers).or_else(|| query.and_then(query_token));
    match presented {
        None => Err(Denied::Missing),
        Some(p) => keyring.find(&p).map(Access::authenticated).ok_or(Denied::Wrong),
    }
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim().to_owned())
}

fn query_token(query: &str) -> Option<String> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).ok()?;
    pairs.into_iter().find(|(k, _)| k == QUERY_PARAM).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(a).unwrap());
        }
        h
    }

    fn ring(token: &str) -> Keyring {
        let ring = Keyring::default();
        ring.add(&Token::new(token).unwrap(), Principal::owner());
        ring
    }

    fn owner() -> Result<Access, Denied> {
        Ok(Access::authenticated(Arc::new(Principal::owner())))
    }

    #[test]
    fn open_posture_is_anonymous_whatever_is_presented() {
        assert_eq!(check(None, &headers(Some("Bearer x")), None), Ok(Access::anonymous()));
        assert!(!Access::anonymous().may_command());
    }

    #[test]
    fn header_or_query_token_authenticates() {
        let t = ring("s3cret");
        assert_eq!(check(Some(&t), &headers(Some("Bearer s3cret")), None), owner());
        assert_eq!(check(Some(&t), &headers(Some("bearer s3cret")), None), owner());
        assert_eq!(check(Some(&t), &headers(None), Some("a=1&access_token=s3cret")), owner());
        assert_eq!(check(Some(&t), &headers(None), Some("access_token=s3%63ret")), owner());
    }

    #[test]
    fn missing_and_wrong_tokens_are_told_apart() {
        let t = ring("s3cret");
        assert_eq!(check(Some(&t), &headers(None), None), Err(Denied::Missing));
        assert_eq!(check(Some(&t), &headers(Some("Bearer s3cre")), None), Err(Denied::Wrong));
        assert_eq!(check(Some(&t), &headers(None), Some("access_token=nope")), Err(Denied::Wrong));
        assert_eq!(check(Some(&t), &headers(Some("Basic s3cret")), None), Err(Denied::Missing));
    }

    #[test]
    fn a_credentials_file_names_principals_by_token_hash() {
        let text = format!(
            "# who roles hash\nbuild-bot agent {}\nalice operator,viewer sha256:{}\n",
            token_hash("b"),
            token_hash("a")
        );
        let entries = parse_credentials(&text).unwrap();
        let ring = Keyring::default();
        ring.replace(&[], entries);
        let alice = ring.find("a").unwrap();
        assert_eq!(&*alice.name, "alice");
        assert!(alice.roles.operator && !alice.roles.agent);
        let bot = ring.find("b").unwrap();
        assert!(bot.check_emitter("build-bot", "aep://h/agent/build-bot/session/s").is_ok());
        assert!(bot.check_emitter("other", "aep://h/agent/other/session/s").is_err());
        assert!(bot.check_emitter("build-bot", "aep://h/agent/other/session/s").is_err());
        assert!(alice.check_emitter("alice", "aep://h/agent/alice").is_err(), "an operator is no agent");
        assert!(ring.find("c").is_none());
        assert!(parse_credentials("x agent 1234").is_err());
        assert!(parse_credentials(&format!("x root {}", token_hash("x"))).is_err());
        assert!(!text.contains("\nbuild-bot agent b"), "the file holds no token");
    }

    #[test]
    fn empty_tokens_and_debug_output_reveal_nothing() {
        assert!(Token::new("").is_none());
        let t = Token::new("s3cret").unwrap();
        assert!(!format!("{t:?}").contains("s3cret"));
    }
}
