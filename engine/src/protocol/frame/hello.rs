//! `hello` (AEP-0003 §4): roles, identity and the capabilities each side
//! declares, control and replay among them.

use serde_json::{Map, Value};

use super::members::{extend_missing, opt_string, string_list, strings, take};

/// A command's ack window when the target declared none (AEP-0004 §3).
pub const DEFAULT_ACK_WINDOW_MS: u64 = 10_000;

/// The `hello` role (AEP-0003 §4 rule 2). A role this engine does not know
/// is kept as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Consumer,
    Emitter,
    Both,
    Other(String),
}

impl Role {
    pub fn parse(s: &str) -> Role {
        match s {
            "consumer" => Role::Consumer,
            "emitter" => Role::Emitter,
            "both" => Role::Both,
            other => Role::Other(other.to_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Role::Consumer => "consumer",
            Role::Emitter => "emitter",
            Role::Both => "both",
            Role::Other(s) => s,
        }
    }

    /// Whether this role emits events (and so may claim sessions).
    pub fn is_emitter(&self) -> bool {
        matches!(self, Role::Emitter | Role::Both)
    }

    /// Whether this role watches (subscribe, roster).
    pub fn is_consumer(&self) -> bool {
        matches!(self, Role::Consumer | Role::Both)
    }
}

/// Declarations a `hello` may not make (AEP-0003 §4): a role outside the
/// three defined (rule 2), or an emitting role without its agent (rule 3).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeclarationError {
    /// Emitters name their agent in `hello` (AEP-0003 §4 rule 3).
    #[error("an emitter must name its agent in hello identity")]
    EmitterWithoutAgent,
    /// Only `consumer`, `emitter` and `both` are defined.
    #[error("unknown role `{0}` (consumer, emitter or both)")]
    UnknownRole(String),
}

/// Checks a role and identity a `hello` declares (AEP-0003 §4 rules 2, 3).
pub fn check_declarations(role: &Role, identity: Option<&HelloIdentity>) -> Result<(), DeclarationError> {
    if let Role::Other(other) = role {
        return Err(DeclarationError::UnknownRole(other.clone()));
    }
    let has_agent = identity.and_then(|i| i.agent.as_deref()).is_some_and(|a| !a.is_empty());
    if role.is_emitter() && !has_agent {
        return Err(DeclarationError::EmitterWithoutAgent);
    }
    Ok(())
}

/// `hello.identity` (AEP-0003 §4 rule 3).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HelloIdentity {
    /// Required for emitters: the envelope `agent` of what they send.
    pub agent: Option<String>,
    /// Disambiguates processes of one agent.
    pub instance: Option<String>,
    /// The optional signed identity document, carried uninterpreted.
    pub card: Option<Value>,
}

/// `capabilities.control` (AEP-0004 §4): which commands a target takes.
/// Kept close to verbatim because relays repeat it in rosters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ControlCapability {
    /// Authoritative: commands outside it are nacked `unsupported`.
    pub accepts: Option<Vec<String>>,
    pub ack_window_ms: Option<u64>,
    /// Members not interpreted here, including known ones of the wrong shape.
    pub other: Map<String, Value>,
}

impl ControlCapability {
    pub fn new(accepts: impl IntoIterator<Item = impl Into<String>>, ack_window_ms: Option<u64>) -> ControlCapability {
        ControlCapability {
            accepts: Some(accepts.into_iter().map(Into::into).collect()),
            ack_window_ms,
            other: Map::new(),
        }
    }

    /// Whether a command type is declared.
    pub fn accepts(&self, ty: &str) -> bool {
        self.accepts.as_ref().is_some_and(|a| a.iter().any(|t| t == ty))
    }

    /// The declared window, or the protocol default.
    pub fn ack_window(&self) -> u64 {
        self.ack_window_ms.unwrap_or(DEFAULT_ACK_WINDOW_MS)
    }

    pub(super) fn from_map(mut map: Map<String, Value>) -> ControlCapability {
        ControlCapability {
            accepts: take(&mut map, "accepts", string_list),
            ack_window_ms: take(&mut map, "ack_window_ms", Value::as_u64),
            other: map,
        }
    }

    pub(super) fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(a) = &self.accepts {
            m.insert("accepts".into(), strings(a));
        }
        if let Some(w) = self.ack_window_ms {
            m.insert("ack_window_ms".into(), w.into());
        }
        extend_missing(&mut m, &self.other);
        m
    }
}

/// `capabilities.replay` (AEP-0003 §5).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplayCapability {
    /// Buffer depth (per session or global; the endpoint documents which).
    pub buffer: Option<u64>,
    /// Whether `from: "all"` is implemented.
    pub all: Option<bool>,
    pub other: Map<String, Value>,
}

impl ReplayCapability {
    pub(super) fn from_map(mut map: Map<String, Value>) -> ReplayCapability {
        ReplayCapability {
            buffer: take(&mut map, "buffer", Value::as_u64),
            all: take(&mut map, "all", Value::as_bool),
            other: map,
        }
    }

    pub(super) fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(b) = self.buffer {
            m.insert("buffer".into(), b.into());
        }
        if let Some(a) = self.all {
            m.insert("all".into(), a.into());
        }
        extend_missing(&mut m, &self.other);
        m
    }
}

/// `hello.capabilities` (AEP-0003 §4). Declarations, never a validation
/// gate: a known key of the wrong shape is treated as undeclared and kept
/// in `other` with the unknown keys.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Capabilities {
    /// Categories the emitter expects to emit (a routing hint).
    pub emits: Option<Vec<String>>,
    /// Capture levels offered.
    pub capture: Option<Vec<String>>,
    pub control: Option<ControlCapability>,
    pub replay: Option<ReplayCapability>,
    /// Filter dialects, e.g. `attr-match`.
    pub filters: Option<Vec<String>>,
    /// Present (an object) when the `roster` frame is answered (§4.1).
    pub roster: Option<Map<String, Value>>,
    pub other: Map<String, Value>,
}

impl Capabilities {
    /// Whether the peer answers `roster` requests.
    pub fn declares_roster(&self) -> bool {
        self.roster.is_some()
    }

    /// The name a relay says the connection's credential belongs to
    /// (`experimental.principal.name`): a sender whose relay names it
    /// sends its commands under that `agent`, the only one the relay
    /// accepts from it.
    pub fn principal(&self) -> Option<&str> {
        self.other.get(EXPERIMENTAL)?.get(PRINCIPAL)?.get("name")?.as_str().filter(|n| !n.is_empty())
    }

    /// Names the connection's principal ([`Capabilities::principal`]).
    pub fn set_principal(&mut self, name: &str, roles: &[&str]) {
        self.put_principal(serde_json::json!({ "name": name, "roles": roles }));
    }

    /// Says what the connection's credential may do without naming it
    /// (`experimental.principal.roles`): a credential that may speak as
    /// any agent keeps the sender's own name.
    pub fn set_roles(&mut self, roles: &[&str]) {
        self.put_principal(serde_json::json!({ "roles": roles }));
    }

    fn put_principal(&mut self, principal: Value) {
        let experimental = self.other.entry(EXPERIMENTAL).or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = experimental {
            m.insert(PRINCIPAL.into(), principal);
        }
    }

    /// The roles a relay says the connection's credential holds
    /// (`experimental.principal.roles`: `agent`, `operator`, `viewer`), when
    /// it said.
    pub fn roles(&self) -> Option<Vec<&str>> {
        let roles = self.other.get(EXPERIMENTAL)?.get(PRINCIPAL)?.get("roles")?.as_array()?;
        Some(roles.iter().filter_map(Value::as_str).collect())
    }

    /// Whether the relay said this connection may send commands: only an
    /// `operator` may (AEP-0004 §4.1). `None` when it did not say.
    pub fn may_command(&self) -> Option<bool> {
        self.roles().map(|r| r.contains(&OPERATOR))
    }

    /// Whether the peer implements `from: "all"`.
    pub fn replay_all(&self) -> bool {
        self.replay.as_ref().and_then(|r| r.all).unwrap_or(false)
    }

    pub fn from_map(mut map: Map<String, Value>) -> Capabilities {
        Capabilities {
            emits: take(&mut map, "emits", string_list),
            capture: take(&mut map, "capture", string_list),
            control: take(&mut map, "control", |v| v.as_object().cloned().map(ControlCapability::from_map)),
            replay: take(&mut map, "replay", |v| v.as_object().cloned().map(ReplayCapability::from_map)),
            filters: take(&mut map, "filters", string_list),
            roster: take(&mut map, "roster", |v| v.as_object().cloned()),
            other: map,
        }
    }

    pub fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(v) = &self.emits {
            m.insert("emits".into(), strings(v));
        }
        if let Some(v) = &self.capture {
            m.insert("capture".into(), strings(v));
        }
        if let Some(c) = &self.control {
            m.insert("control".into(), Value::Object(c.to_map()));
        }
        if let Some(r) = &self.replay {
            m.insert("replay".into(), Value::Object(r.to_map()));
        }
        if let Some(v) = &self.filters {
            m.insert("filters".into(), strings(v));
        }
        if let Some(r) = &self.roster {
            m.insert("roster".into(), Value::Object(r.clone()));
        }
        extend_missing(&mut m, &self.other);
        m
    }
}

/// `capabilities.experimental`, the graduation namespace (AEP-0003 §4).
const EXPERIMENTAL: &str = "experimental";
/// Who the relay takes this connection's credential for.
const PRINCIPAL: &str = "principal";
/// The role that may send commands.
const OPERATOR: &str = "operator";

/// The `hello` frame (AEP-0003 §4).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hello {
    /// Ordered preference, newest first; a responder lists exactly one.
    pub versions: Vec<String>,
    pub role: Option<Role>,
    pub identity: Option<HelloIdentity>,
    pub capabilities: Capabilities,
}

impl Hello {
    /// Whether the peer's role and identity may be accepted
    /// ([`check_declarations`]). A hello without a role declares nothing
    /// to check, and is read as a consumer's.
    pub fn check_declarations(&self) -> Result<(), DeclarationError> {
        self.role.as_ref().map_or(Ok(()), |role| check_declarations(role, self.identity.as_ref()))
    }

    /// The first of the peer's versions (its preference order) that we
    /// also speak; `None` means `version-unsupported`.
    pub fn negotiate<'a>(&'a self, supported: &[&str]) -> Option<&'a str> {
        self.versions.iter().map(String::as_str).find(|v| supported.contains(v))
    }

    pub(super) fn decode(obj: &Map<String, Value>) -> Hello {
        let identity = obj.get("identity").and_then(Value::as_object).map(|id| HelloIdentity {
            agent: opt_string(id, "agent"),
            instance: opt_string(id, "instance"),
            card: id.get("card").filter(|c| !c.is_null()).cloned(),
        });
        Hello {
            versions: obj.get("versions").and_then(string_list).unwrap_or_default(),
            role: obj.get("role").and_then(Value::as_str).map(Role::parse),
            identity,
            capabilities: obj
                .get("capabilities")
                .and_then(Value::as_object)
                .map(|c| Capabilities::from_map(c.clone()))
                .unwrap_or_default(),
        }
    }

    pub(super) fn encode(&self, m: &mut Map<String, Value>) {
        m.insert("versions".into(), strings(&self.versions));
        if let Some(r) = &self.role {
            m.insert("role".into(), r.as_str().into());
        }
        if let Some(id) = &self.identity {
            let mut i = Map::new();
            if let Some(a) = &id.agent {
                i.insert("agent".into(), a.as_str().into());
            }
            if let Some(n) = &id.instance {
                i.insert("instance".into(), n.as_str().into());
            }
            if let Some(c) = &id.card {
                i.insert("card".into(), c.clone());
            }
            m.insert("identity".into(), Value::Object(i));
        }
        m.insert("capabilities".into(), Value::Object(self.capabilities.to_map()));
    }
}
