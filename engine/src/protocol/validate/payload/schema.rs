//! The per-type payload schemas of AEP-0002 §5, compiled into static data at
//! build time (see `build.rs`): the browser has no filesystem, and a table
//! costs nothing to load.
//!
//! A [`Schema`] node keeps only the keywords the engine enforces, plus the
//! field's `x-aep-capture` annotation, which drives down-leveling.

use serde_json::Value;

use crate::protocol::vocabulary::Capture;

/// One JSON value kind, as named by the `type` keyword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Null,
    Boolean,
    Object,
    Array,
    Number,
    Integer,
    String,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Boolean => "boolean",
            Kind::Object => "object",
            Kind::Array => "array",
            Kind::Number => "number",
            Kind::Integer => "integer",
            Kind::String => "string",
        }
    }

    const ALL: [Kind; 7] =
        [Kind::Null, Kind::Boolean, Kind::Object, Kind::Array, Kind::Number, Kind::Integer, Kind::String];

    const fn bit(self) -> u8 {
        1 << self as u8
    }

    /// JSON Schema kinds: `integer` admits any number with no fractional
    /// part (`3.0` included), `number` admits every number.
    pub fn admits(self, value: &Value) -> bool {
        match (self, value) {
            (Kind::Null, Value::Null)
            | (Kind::Boolean, Value::Bool(_))
            | (Kind::Object, Value::Object(_))
            | (Kind::Array, Value::Array(_))
            | (Kind::Number, Value::Number(_))
            | (Kind::String, Value::String(_)) => true,
            (Kind::Integer, Value::Number(n)) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        }
    }
}

/// The set of kinds a `type` keyword allows; empty means any value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kinds(u8);

impl Kinds {
    /// No `type` keyword: every value is admitted.
    pub const ANY: Kinds = Kinds(0);

    pub const fn with(self, kind: Kind) -> Kinds {
        Kinds(self.0 | kind.bit())
    }

    pub fn admits(self, value: &Value) -> bool {
        self.0 == 0 || self.iter().any(|k| k.admits(value))
    }

    pub fn iter(self) -> impl Iterator<Item = Kind> {
        Kind::ALL.into_iter().filter(move |k| self.0 & k.bit() != 0)
    }

    /// `"string or object"`, for messages.
    pub fn describe(self) -> String {
        let names: Vec<&str> = self.iter().map(Kind::as_str).collect();
        names.join(" or ")
    }
}

/// A scalar from an `enum` or `const` keyword.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Literal {
    Null,
    Bool(bool),
    Number(f64),
    Str(&'static str),
}

impl Literal {
    pub fn matches(self, value: &Value) -> bool {
        match (self, value) {
            (Literal::Null, Value::Null) => true,
            (Literal::Bool(a), Value::Bool(b)) => a == *b,
            (Literal::Number(a), Value::Number(b)) => b.as_f64() == Some(a),
            (Literal::Str(a), Value::String(b)) => a == b,
            _ => false,
        }
    }
}

impl std::fmt::Display for Literal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Literal::Null => f.write_str("null"),
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Number(n) => f.write_str(&crate::text::number(*n)),
            Literal::Str(s) => f.write_str(&crate::text::quote(s)),
        }
    }
}

/// String formats the engine checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// RFC 3339 date-time.
    DateTime,
}

/// A named member of an object schema.
#[derive(Debug)]
pub struct Property {
    pub name: &'static str,
    pub schema: &'static Schema,
}

/// One schema node.
#[derive(Debug)]
pub struct Schema {
    pub kinds: Kinds,
    /// The `x-aep-capture` annotation: the lowest capture level at which
    /// the field may be present (AEP-0002 §5.1). `None` when unannotated.
    pub capture: Option<Capture>,
    pub properties: &'static [Property],
    pub required: &'static [&'static str],
    /// `enum`: the value must be one of these.
    pub allowed: Option<&'static [Literal]>,
    pub constant: Option<Literal>,
    pub items: Option<&'static Schema>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub format: Option<Format>,
    /// `if` / `then`: when the value conforms to the first, the second applies.
    pub conditional: Option<(&'static Schema, &'static Schema)>,
}

impl Schema {
    /// The schema of a named member.
    pub fn property(&self, name: &str) -> Option<&'static Schema> {
        self.properties.iter().find(|p| p.name == name).map(|p| p.schema)
    }

    /// The schema of a named member, looking through an array into its
    /// items, so `documents` → `content` reaches `documents[].content`.
    pub fn member(&self, name: &str) -> Option<&'static Schema> {
        self.property(name).or_else(|| self.items.and_then(|items| items.property(name)))
    }
}

include!(concat!(env!("OUT_DIR"), "/payload_schemas.rs"));

/// The payload schema of a type, when the type has one (registered core
/// types; vendor and unknown types have none and are carried unchecked).
pub fn lookup(ty: &str) -> Option<&'static Schema> {
    TYPES.binary_search_by(|(name, _)| (*name).cmp(ty)).ok().map(|i| TYPES[i].1)
}

/// Every type with a payload schema, in name order.
pub fn types() -> impl Iterator<Item = &'static str> {
    TYPES.iter().map(|(name, _)| *name)
}
