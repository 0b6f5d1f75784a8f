//! Standing rules as the console shows them: the relay's rules (from its
//! `/rules`) in words, the choices a person makes a rule with from a card,
//! and the request body that makes it. The relay keeps and enforces the
//! rules; this only says them.

use serde_json::{json, Value};

/// How long a rule holds, as a person picks it: (the relay's word, ours).
/// A rule made with one tap holds for the first.
pub const LIFETIMES: [(&str, &str); 3] = [("1h", "1 hour"), ("10m", "10 min"), ("until-revoked", "until revoked")];

/// What a rule made with one tap matches, in words.
pub const ONE_TAP: &str = "this exact request, any session, for 1 hour";

/// A rule as the relay lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleView {
    pub id: String,
    pub author: String,
    pub made_at: u64,
    pub agent: String,
    pub session: Option<String>,
    pub tool: Option<String>,
    /// `exact` or `prefix`.
    pub matching: String,
    pub pattern: String,
    pub option: String,
    pub expires_at: Option<u64>,
    /// `active`, `expired` or `revoked`.
    pub state: String,
    pub revoked_by: Option<String>,
    pub answered: u64,
}

impl RuleView {
    fn from_json(v: &Value) -> RuleView {
        let text = |name: &str| v.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
        let maybe = |name: &str| v.get(name).and_then(Value::as_str).map(str::to_owned);
        RuleView {
            id: text("id"),
            author: text("author"),
            made_at: v.get("made_at").and_then(Value::as_u64).unwrap_or_default(),
            agent: text("agent"),
            session: maybe("session"),
            tool: maybe("tool"),
            matching: text("match"),
            pattern: text("pattern"),
            option: text("option"),
            expires_at: v.get("expires_at").and_then(Value::as_u64),
            state: text("state"),
            revoked_by: v.get("revoked").and_then(|r| r.get("by")).and_then(Value::as_str).map(str::to_owned),
            answered: v.get("answered").and_then(Value::as_u64).unwrap_or_default(),
        }
    }

    pub fn is_active(&self) -> bool {
        self.state == "active"
    }

    /// What it answers, in a line: `allow · build-bot · Bash · exactly
    /// “npm test” · any session`.
    pub fn what(&self) -> String {
        let matching = if self.matching == "prefix" { "starting with" } else { "exactly" };
        let mut parts = vec![self.agent.clone()];
        if let Some(tool) = &self.tool {
            parts.push(tool.clone());
        }
        parts.push(format!("{matching} \u{201c}{}\u{201d}", self.pattern));
        parts.push(match &self.session {
            Some(s) => format!("session {s}"),
            None => "any session".to_owned(),
        });
        format!("Answers \u{201c}{}\u{201d}: {}", self.option, parts.join(" \u{00b7} "))
    }

    /// Where it stands, `until` being the end in the person's own words.
    pub fn standing(&self, until: Option<String>) -> String {
        let answered = match self.answered {
            0 => "nothing answered yet".to_owned(),
            1 => "answered 1 request".to_owned(),
            n => format!("answered {n} requests"),
        };
        let state = match self.state.as_str() {
            "revoked" => match &self.revoked_by {
                Some(by) => format!("revoked by {by}"),
                None => "revoked".to_owned(),
            },
            "expired" => "expired".to_owned(),
            _ => match until {
                Some(at) => format!("holds until {at}"),
                None => "holds until revoked".to_owned(),
            },
        };
        format!("{state}; {answered}")
    }
}

/// The relay's `/rules` answer as rules; an error in words.
pub fn rules(body: &str) -> Result<Vec<RuleView>, String> {
    let value: Value =
        serde_json::from_str(body).map_err(|_| "the relay's answer is not a list of rules".to_owned())?;
    let list = value.get("rules").and_then(Value::as_array).ok_or("the relay's answer is not a list of rules")?;
    Ok(list.iter().map(RuleView::from_json).collect())
}

/// "answered by rule R (made by alice at 14:02)", `made` the rule's
/// making time in the person's own words.
pub fn answered_by(rule: &str, author: &str, made: &str) -> String {
    format!("answered by rule {rule} (made by {author} at {made})")
}

/// What a person chose in a card's rule form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The request it is made from (answered by it too).
    pub request: String,
    pub option: String,
    /// Starts with `pattern` rather than is it.
    pub prefix: bool,
    /// `None`: the request's own input, exactly.
    pub pattern: Option<String>,
    /// Only the request's own session.
    pub this_session: bool,
    /// One of [`LIFETIMES`]' words.
    pub lifetime: String,
}

impl Choice {
    /// The body of `POST /rules`; what the relay does not get here (agent,
    /// tool, session name) it takes from the request.
    pub fn body(&self) -> Value {
        let mut body = json!({ "request": self.request, "option": self.option, "for": self.lifetime });
        if let Some(pattern) = &self.pattern {
            body["match"] = if self.prefix { "prefix" } else { "exact" }.into();
            body["pattern"] = pattern.as_str().into();
        }
        if !self.this_session {
            body["session"] = Value::Null;
        }
        body
    }
}

/// The body of `PATCH /rules/{id}` that makes a rule hold for `lifetime`
/// from now.
pub fn extend(lifetime: &str) -> Value {
    json!({ "for": lifetime })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_relays_rules_read_as_words() {
        let body = r#"{"rules":[{"id":"r-1","author":"alice","made_at":5,"agent":"build-bot","session":null,"tool":"Bash",
            "match":"prefix","pattern":"npm ","option":"allow","expires_at":null,"state":"active","answered":3},
            {"id":"r-0","author":"bob","made_at":1,"agent":"a","session":"s1","tool":null,"match":"exact","pattern":"p",
            "option":"deny","expires_at":9,"state":"revoked","revoked":{"by":"carol","at":2},"answered":1}]}"#;
        let rules = rules(body).unwrap();
        assert_eq!(rules[0].what(), "Answers \u{201c}allow\u{201d}: build-bot \u{00b7} Bash \u{00b7} starting with \u{201c}npm \u{201d} \u{00b7} any session");
        assert_eq!(rules[0].standing(None), "holds until revoked; answered 3 requests");
        assert!(rules[0].is_active() && !rules[1].is_active());
        assert_eq!(
            rules[1].what(),
            "Answers \u{201c}deny\u{201d}: a \u{00b7} exactly \u{201c}p\u{201d} \u{00b7} session s1"
        );
        assert_eq!(rules[1].standing(Some("14:00".into())), "revoked by carol; answered 1 request");
        assert!(super::rules("[]").is_err());
    }

    #[test]
    fn a_choice_becomes_the_relays_request_body() {
        let mut c = Choice {
            request: "req".into(),
            option: "allow".into(),
            prefix: false,
            pattern: None,
            this_session: true,
            lifetime: "1h".into(),
        };
        assert_eq!(c.body(), json!({"request": "req", "option": "allow", "for": "1h"}), "the request's input, exactly");
        c.pattern = Some("npm test".into());
        assert_eq!(
            c.body(),
            json!({"request": "req", "option": "allow", "match": "exact", "pattern": "npm test", "for": "1h"})
        );
        c.this_session = false;
        c.prefix = true;
        assert_eq!(c.body()["session"], Value::Null);
        assert_eq!(c.body()["match"], "prefix");
        assert_eq!(extend("10m"), json!({"for": "10m"}));
        assert_eq!(answered_by("r-1", "alice", "14:02"), "answered by rule r-1 (made by alice at 14:02)");
    }
}
