//! A broken rule, as every validator reports it: a stable rule id a
//! caller may match on, and a detail for people. Its own module, so the
//! validators (envelope, payload, the store's stream rules) share it
//! without importing one another.

use std::fmt;

use serde::Serialize;

/// One broken rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Stable rule id, e.g. `envelope.scope.agent`.
    pub rule: &'static str,
    /// What was wrong, for people.
    pub detail: String,
}

impl Violation {
    pub fn new(rule: &'static str, detail: impl Into<String>) -> Violation {
        Violation { rule, detail: detail.into() }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.rule, self.detail)
    }
}
