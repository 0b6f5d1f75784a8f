//! The `attr-match` subscription filter (AEP-0003 §6).
//!
//! A filter is a JSON object of predicates, one per envelope attribute,
//! all of which must hold. Parsing fails closed: a key or predicate this
//! dialect does not define is an error, never a silent match-all, so a
//! subscription can narrow by mistake but never widen.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::envelope::Core;
use super::event::{Capture, Event, Severity};
use super::validate::is_extension_name;
use super::vocabulary::codes;

/// The core attributes a filter may name (AEP-0003 §6.2 rule 1). The other
/// core names (`time`, `seq`, `aep`, `traceparent`, `data`) are refused.
pub const FILTERABLE_CORE: [&str; 12] =
    ["id", "type", "subject", "source", "agent", "session", "run", "step", "epoch", "cause", "severity", "capture"];

/// What kind of mistake made a filter invalid. Every kind answers on the
/// wire as `invalid-filter`; the kind tells a person which rule was broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FilterErrorKind {
    /// The filter is not a JSON object.
    NotAnObject,
    /// A core attribute that is not filterable (`seq`, `time`, `data`, …).
    UnfilterableKey,
    /// Neither a core attribute nor a legal extension-attribute name.
    IllegalKey,
    /// A predicate whose JSON shape the key does not take.
    BadPredicate,
    /// A `*` where no pattern is allowed: bare, mid-string, or off `type`.
    BadPattern,
    /// An inclusion array with no members.
    EmptyInclusion,
    /// A severity comparison with an unknown operator or level.
    BadSeverity,
}

impl FilterErrorKind {
    /// A stable, dotted identifier for logs and tests.
    pub fn code(self) -> &'static str {
        match self {
            FilterErrorKind::NotAnObject => "filter.not-object",
            FilterErrorKind::UnfilterableKey => "filter.unfilterable-key",
            FilterErrorKind::IllegalKey => "filter.illegal-key",
            FilterErrorKind::BadPredicate => "filter.bad-predicate",
            FilterErrorKind::BadPattern => "filter.bad-pattern",
            FilterErrorKind::EmptyInclusion => "filter.empty-inclusion",
            FilterErrorKind::BadSeverity => "filter.bad-severity",
        }
    }
}

/// Why a filter was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {}{detail}", .kind.code(), key_prefix(.key.as_deref()))]
pub struct FilterError {
    pub kind: FilterErrorKind,
    /// The offending key, when one key is to blame.
    pub key: Option<String>,
    /// What was wrong, for people.
    pub detail: String,
}

impl FilterError {
    /// The `error` frame code for any invalid filter (AEP-0003 §6.5).
    pub const WIRE_CODE: &'static str = codes::INVALID_FILTER;

    fn new(kind: FilterErrorKind, key: &str, detail: impl Into<String>) -> FilterError {
        FilterError { kind, key: Some(key.to_owned()), detail: detail.into() }
    }
}

/// "`key`: " when one key is to blame, so the message names it first.
fn key_prefix(key: Option<&str>) -> String {
    key.map(|k| format!("`{k}`: ")).unwrap_or_default()
}

/// One `type` pattern: an exact type or a `prefix.*` family.
#[derive(Clone, Debug, PartialEq, Eq)]
enum TypePattern {
    Exact(String),
    /// The prefix including its trailing dot, so `attention.*` never
    /// matches the bare `attention`.
    Family(String),
}

impl TypePattern {
    fn parse(key: &str, s: &str) -> Result<TypePattern, FilterError> {
        let bad = |why: &str| Err(FilterError::new(FilterErrorKind::BadPattern, key, format!("`{s}`: {why}")));
        if s.is_empty() {
            return bad("an empty type matches nothing");
        }
        if s == "*" {
            return bad("a bare `*` is not a pattern; use `{}` or omit the key to match every type");
        }
        if let Some(prefix) = s.strip_suffix(".*") {
            if prefix.is_empty() || prefix.contains('*') || prefix.ends_with('.') {
                return bad("a type pattern is `prefix.*` with a non-empty prefix");
            }
            return Ok(TypePattern::Family(format!("{prefix}.")));
        }
        if s.contains('*') {
            return bad("`*` is only allowed as a trailing `.*`; omit the key to match every type");
        }
        Ok(TypePattern::Exact(s.to_owned()))
    }

    fn matches(&self, ty: &str) -> bool {
        match self {
            TypePattern::Exact(t) => t == ty,
            TypePattern::Family(p) => ty.len() > p.len() && ty.starts_with(p.as_str()),
        }
    }
}

/// The predicate one key carries.
#[derive(Clone, Debug, PartialEq)]
enum Predicate {
    /// Equality (one member) or inclusion (any of several); exact JSON
    /// comparison, no coercion.
    AnyOf(Vec<Value>),
    /// `type` only: exact types and families, any of which may match.
    Type(Vec<TypePattern>),
    /// `severity` only: inclusive bounds in the AEP-0001 §8.1 order.
    SeverityBand { gte: Severity, lte: Severity },
}

/// An attribute value as the matcher sees it, borrowed where possible so
/// matching an event allocates nothing.
enum Attr<'a> {
    Str(&'a str),
    Uint(u64),
    Json(&'a Value),
}

impl Attr<'_> {
    fn as_str(&self) -> Option<&str> {
        match self {
            Attr::Str(s) => Some(s),
            Attr::Json(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    fn equals(&self, v: &Value) -> bool {
        match self {
            Attr::Str(s) => v.as_str() == Some(*s),
            Attr::Uint(n) => v.is_u64() && v.as_u64() == Some(*n),
            Attr::Json(a) => *a == v,
        }
    }
}

/// A parsed, valid `attr-match` filter.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    predicates: Vec<(String, Predicate)>,
    /// The filter as it was given, returned by [`Filter::to_value`] so a
    /// re-sent subscription says exactly what the user asked for.
    source: Map<String, Value>,
}

impl PartialEq for Filter {
    fn eq(&self, other: &Filter) -> bool {
        self.source == other.source
    }
}

impl Filter {
    /// The empty filter `{}`: every event matches.
    pub fn match_all() -> Filter {
        Filter::default()
    }

    /// Parses a filter, refusing anything the dialect does not define.
    pub fn parse(value: &Value) -> Result<Filter, FilterError> {
        let Value::Object(map) = value else {
            return Err(FilterError {
                kind: FilterErrorKind::NotAnObject,
                key: None,
                detail: "a filter is a JSON object".into(),
            });
        };
        let mut predicates = Vec::with_capacity(map.len());
        for (key, pred) in map {
            check_key(key)?;
            predicates.push((key.clone(), parse_predicate(key, pred)?));
        }
        Ok(Filter { predicates, source: map.clone() })
    }

    /// Parses a filter from JSON text (the SSE `filter` query parameter).
    pub fn parse_json(text: &str) -> Result<Filter, FilterError> {
        let value: Value = serde_json::from_str(text).map_err(|e| FilterError {
            kind: FilterErrorKind::NotAnObject,
            key: None,
            detail: format!("not JSON: {e}"),
        })?;
        Filter::parse(&value)
    }

    /// The filter as JSON, exactly as it was parsed.
    pub fn to_value(&self) -> Value {
        Value::Object(self.source.clone())
    }

    /// Whether this is `{}`.
    pub fn is_match_all(&self) -> bool {
        self.predicates.is_empty()
    }

    /// How many values the filter compares against: a cost measure an
    /// endpoint may cap (`limit-exceeded`).
    pub fn weight(&self) -> usize {
        self.predicates
            .iter()
            .map(|(_, p)| match p {
                Predicate::AnyOf(v) => v.len(),
                Predicate::Type(v) => v.len(),
                Predicate::SeverityBand { .. } => 1,
            })
            .sum()
    }

    /// Whether `event` matches, with the envelope defaults applied.
    pub fn matches(&self, event: &Event) -> bool {
        self.matches_with(|name| event_attr(event, name))
    }

    /// Whether a JSON object shaped like an event matches, with the defaults
    /// (`severity` info, `capture` metadata, `epoch` 0) applied. The object
    /// need not be a valid event.
    pub fn matches_value(&self, object: &Map<String, Value>) -> bool {
        self.matches_with(|name| object_attr(object, name))
    }

    fn matches_with<'a>(&self, lookup: impl Fn(&str) -> Option<Attr<'a>>) -> bool {
        self.predicates.iter().all(|(key, pred)| {
            let Some(attr) = lookup(key) else { return false };
            match pred {
                Predicate::AnyOf(values) => values.iter().any(|v| attr.equals(v)),
                Predicate::Type(patterns) => attr.as_str().is_some_and(|t| patterns.iter().any(|p| p.matches(t))),
                Predicate::SeverityBand { gte, lte } => {
                    attr.as_str().and_then(Severity::parse).is_some_and(|s| *gte <= s && s <= *lte)
                }
            }
        })
    }
}

impl Serialize for Filter {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.source.serialize(serializer)
    }
}

fn check_key(key: &str) -> Result<(), FilterError> {
    if FILTERABLE_CORE.contains(&key) {
        return Ok(());
    }
    if Core::of(key).is_some() {
        let why = match key {
            "seq" => "positions are the resume mechanism, not a filter",
            "data" => "routing never parses payloads",
            "traceparent" => "trace context is pass-through metadata",
            _ => "this core attribute is not filterable",
        };
        return Err(FilterError::new(FilterErrorKind::UnfilterableKey, key, why));
    }
    if !is_extension_name(key) {
        return Err(FilterError::new(
            FilterErrorKind::IllegalKey,
            key,
            "not a filterable core attribute nor a legal extension name ([a-z0-9]{1,20})",
        ));
    }
    Ok(())
}

fn parse_predicate(key: &str, value: &Value) -> Result<Predicate, FilterError> {
    match (key, value) {
        ("type", Value::String(s)) => Ok(Predicate::Type(vec![TypePattern::parse(key, s)?])),
        ("type", Value::Array(items)) => {
            if items.is_empty() {
                return Err(empty_inclusion(key));
            }
            let patterns = items
                .iter()
                .map(|item| match item {
                    Value::String(s) => TypePattern::parse(key, s),
                    other => Err(FilterError::new(
                        FilterErrorKind::BadPredicate,
                        key,
                        format!("type patterns are strings, got {other}"),
                    )),
                })
                .collect::<Result<_, _>>()?;
            Ok(Predicate::Type(patterns))
        }
        ("type", other) => Err(FilterError::new(
            FilterErrorKind::BadPredicate,
            key,
            format!("`type` takes a pattern or an array of patterns, got {other}"),
        )),
        ("severity", Value::Object(cmp)) => parse_severity_band(key, cmp),
        (_, Value::Array(items)) => {
            if items.is_empty() {
                return Err(empty_inclusion(key));
            }
            for item in items {
                check_scalar(key, item)?;
            }
            Ok(Predicate::AnyOf(items.clone()))
        }
        (_, scalar) => {
            check_scalar(key, scalar)?;
            Ok(Predicate::AnyOf(vec![scalar.clone()]))
        }
    }
}

fn empty_inclusion(key: &str) -> FilterError {
    FilterError::new(FilterErrorKind::EmptyInclusion, key, "an inclusion array needs at least one member")
}

/// Scalars are strings, integers and booleans; a `*` in a string would be
/// a pattern, and patterns exist only on `type`.
fn check_scalar(key: &str, value: &Value) -> Result<(), FilterError> {
    match value {
        Value::String(s) if s.contains('*') => {
            Err(FilterError::new(FilterErrorKind::BadPattern, key, format!("`{s}`: patterns apply only to `type`")))
        }
        Value::String(_) | Value::Bool(_) => Ok(()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(()),
        other => Err(FilterError::new(
            FilterErrorKind::BadPredicate,
            key,
            format!("expected a string, integer, boolean or an array of them, got {other}"),
        )),
    }
}

fn parse_severity_band(key: &str, cmp: &Map<String, Value>) -> Result<Predicate, FilterError> {
    let bad = |detail: String| Err(FilterError::new(FilterErrorKind::BadSeverity, key, detail));
    if cmp.is_empty() {
        return bad("a severity comparison needs `gte`, `lte` or both".into());
    }
    let mut gte = Severity::Debug;
    let mut lte = Severity::Critical;
    for (op, level) in cmp {
        let Some(level) = level.as_str().and_then(Severity::parse) else {
            return bad(format!("`{op}`: {level} is not a severity level"));
        };
        match op.as_str() {
            "gte" => gte = level,
            "lte" => lte = level,
            other => return bad(format!("`{other}` is not a severity operator (gte, lte)")),
        }
    }
    Ok(Predicate::SeverityBand { gte, lte })
}

fn event_attr<'a>(event: &'a Event, name: &str) -> Option<Attr<'a>> {
    let s = |v: Option<&'a str>| v.map(Attr::Str);
    match name {
        "id" => Some(Attr::Str(event.id())),
        "type" => Some(Attr::Str(event.ty())),
        "subject" => s(event.subject()),
        "source" => Some(Attr::Str(event.source())),
        "agent" => Some(Attr::Str(event.agent())),
        "session" => s(event.session()),
        "run" => s(event.run()),
        "step" => s(event.step()),
        "epoch" => Some(Attr::Uint(event.epoch())),
        "cause" => s(event.cause()),
        "severity" => Some(Attr::Str(event.severity().as_str())),
        "capture" => Some(Attr::Str(event.capture().as_str())),
        other => event.extensions().get(other).map(Attr::Json),
    }
}

fn object_attr<'a>(object: &'a Map<String, Value>, name: &str) -> Option<Attr<'a>> {
    if let Some(v) = object.get(name) {
        return Some(Attr::Json(v));
    }
    match name {
        "severity" => Some(Attr::Str(Severity::default().as_str())),
        "capture" => Some(Attr::Str(Capture::default().as_str())),
        "epoch" => Some(Attr::Uint(0)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(extra: Value) -> Event {
        let mut v = json!({
            "aep": "0.1", "id": "01J0000000000000000000000A", "type": "attention.requested",
            "time": "2026-07-03T10:15:04.221Z", "source": "aep://h/agent/a/session/s1",
            "agent": "codex", "session": "s1", "seq": 4
        });
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        Event::from_value(v).unwrap()
    }

    fn parse(v: Value) -> Filter {
        Filter::parse(&v).unwrap_or_else(|e| panic!("{v}: {e}"))
    }

    #[test]
    fn event_and_object_matching_agree() {
        let filters = [
            json!({}),
            json!({"type": ["attention.*"], "severity": {"gte": "notice"}}),
            json!({"severity": "info"}),
            json!({"capture": "metadata", "epoch": 0}),
            json!({"epoch": 2}),
            json!({"acmeregion": ["eu-1", "us-2"]}),
            json!({"run": "r1"}),
            json!({"type": "attention"}),
            json!({"agent": "codex", "type": ["tool.*", "attention.requested"]}),
        ];
        let events = [
            json!({}),
            json!({"severity": "warning"}),
            json!({"epoch": 2, "capture": "full"}),
            json!({"acmeregion": "eu-1", "run": "r1"}),
        ];
        for f in &filters {
            let filter = parse(f.clone());
            for extra in &events {
                let ev = event(extra.clone());
                let obj = ev.to_value();
                assert_eq!(
                    filter.matches(&ev),
                    filter.matches_value(obj.as_object().unwrap()),
                    "filter {f} on {extra}"
                );
            }
        }
    }

    #[test]
    fn family_needs_a_dot_after_the_prefix() {
        let f = parse(json!({"type": "attention.*"}));
        assert!(f.matches_value(json!({"type": "attention.requested"}).as_object().unwrap()));
        assert!(!f.matches_value(json!({"type": "attention"}).as_object().unwrap()));
        assert!(!f.matches_value(json!({"type": "attentionx.requested"}).as_object().unwrap()));
    }

    #[test]
    fn no_coercion_between_json_types() {
        let f = parse(json!({"epoch": "0"}));
        assert!(!f.matches(&event(json!({}))));
        let f = parse(json!({"acmeflag": true}));
        assert!(f.matches(&event(json!({"acmeflag": true}))));
        assert!(!f.matches(&event(json!({"acmeflag": "true"}))));
    }

    #[test]
    fn severity_band_is_inclusive() {
        let f = parse(json!({"severity": {"gte": "notice", "lte": "error"}}));
        for (level, hit) in [("info", false), ("notice", true), ("error", true), ("critical", false)] {
            assert_eq!(f.matches(&event(json!({"severity": level}))), hit, "{level}");
        }
    }

    #[test]
    fn refusals_name_their_kind() {
        let cases = [
            (json!([]), FilterErrorKind::NotAnObject),
            (json!({"seq": 1}), FilterErrorKind::UnfilterableKey),
            (json!({"Bad-Key": 1}), FilterErrorKind::IllegalKey),
            (json!({"type": "*"}), FilterErrorKind::BadPattern),
            (json!({"type": ".*"}), FilterErrorKind::BadPattern),
            (json!({"type": "a*.b"}), FilterErrorKind::BadPattern),
            (json!({"type": 3}), FilterErrorKind::BadPredicate),
            (json!({"session": {"eq": "s"}}), FilterErrorKind::BadPredicate),
            (json!({"session": null}), FilterErrorKind::BadPredicate),
            (json!({"epoch": 1.5}), FilterErrorKind::BadPredicate),
            (json!({"agent": [["a"]]}), FilterErrorKind::BadPredicate),
            (json!({"type": []}), FilterErrorKind::EmptyInclusion),
            (json!({"severity": {}}), FilterErrorKind::BadSeverity),
            (json!({"severity": {"gte": "loud"}}), FilterErrorKind::BadSeverity),
            (json!({"capture": {"gte": "none"}}), FilterErrorKind::BadPredicate),
        ];
        for (v, kind) in cases {
            let err = Filter::parse(&v).expect_err(&v.to_string());
            assert_eq!(err.kind, kind, "{v}: {err}");
        }
    }

    #[test]
    fn round_trips_and_weighs() {
        let v = json!({"type": ["attention.*", "tool.completed"], "agent": "codex", "severity": {"gte": "notice"}});
        let f = parse(v.clone());
        assert_eq!(f.to_value(), v);
        assert_eq!(serde_json::to_value(&f).unwrap(), v);
        assert_eq!(f.weight(), 4);
        assert!(Filter::match_all().is_match_all());
        assert!(Filter::parse_json("{\"type\":").is_err());
    }
}
