//! One standing rule, and the pure decisions about it: which requests it
//! answers (agent, session, tool and a pattern of the tool's input), how
//! long it holds, and why it does not answer a request. The relay's
//! [`super::Rules`] drives it with events and the clock; nothing here
//! reads either.

use std::time::Duration;

use aep_engine::protocol::attention::Channel;
use aep_engine::{Event, Severity};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest a rule may be made to hold for, short of "until revoked".
pub const LONGEST: Duration = Duration::from_secs(30 * 24 * 3600);

/// The severity from which no rule answers: an error or worse is for a
/// person every time.
pub const SEVERE: Severity = Severity::Error;

/// How a rule's pattern is compared with a request's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Matching {
    /// The input is the pattern, exactly.
    Exact,
    /// The input starts with the pattern.
    Prefix,
}

impl Matching {
    pub fn parse(text: &str) -> Result<Matching, String> {
        match text {
            "exact" => Ok(Matching::Exact),
            "prefix" => Ok(Matching::Prefix),
            other => Err(format!("`match` is `exact` or `prefix`, not `{other}`")),
        }
    }

    pub fn matches(self, pattern: &str, input: &str) -> bool {
        match self {
            Matching::Exact => input == pattern,
            Matching::Prefix => input.starts_with(pattern),
        }
    }
}

/// How long a rule holds from when it is made (or edited).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Lifetime {
    For(Duration),
    #[default]
    UntilRevoked,
}

impl Lifetime {
    /// `until-revoked`, or a duration as people write it (`10m`, `1h`),
    /// from one second to [`LONGEST`].
    pub fn parse(text: &str) -> Result<Lifetime, String> {
        if text == "until-revoked" {
            return Ok(Lifetime::UntilRevoked);
        }
        let span = humantime::parse_duration(text)
            .map_err(|e| format!("`for` is a duration (10m, 1h) or `until-revoked`, not `{text}`: {e}"))?;
        if span < Duration::from_secs(1) || span > LONGEST {
            return Err(format!("`for` must be between 1s and 30 days (or `until-revoked`), not `{text}`"));
        }
        Ok(Lifetime::For(span))
    }

    /// When a rule made at `now` with this lifetime ends (ms), if ever.
    pub fn expires_at(self, now: u64) -> Option<u64> {
        match self {
            Lifetime::For(span) => Some(now.saturating_add(span.as_millis() as u64)),
            Lifetime::UntilRevoked => None,
        }
    }
}

/// Who ended a rule before its time, and when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ended {
    pub by: String,
    pub at: u64,
}

/// A standing answer: while it holds, the requests it matches are
/// answered with `option` on its author's behalf.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub id: String,
    /// The operator who made it: its answers are sent as theirs.
    pub author: String,
    /// When it was made, ms since the epoch.
    pub made_at: u64,
    pub agent: String,
    /// `None`: any session of the agent.
    pub session: Option<String>,
    /// The tool the request names; `None` for requests that name none
    /// (their input is then the request's prompt).
    pub tool: Option<String>,
    #[serde(rename = "match")]
    pub matching: Matching,
    pub pattern: String,
    /// The option it answers with: one the request must offer.
    pub option: String,
    /// `None`: until revoked.
    pub expires_at: Option<u64>,
    #[serde(default)]
    pub revoked: Option<Ended>,
    /// The last change after it was made.
    #[serde(default)]
    pub edited: Option<Ended>,
    /// Requests it answered.
    #[serde(default)]
    pub answered: u64,
}

/// Where a rule stands at a given time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Active,
    Expired,
    Revoked,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Active => "active",
            State::Expired => "expired",
            State::Revoked => "revoked",
        }
    }
}

/// An `attention.requested` as a rule sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub id: String,
    pub agent: String,
    pub session: String,
    pub tool: Option<String>,
    /// What the tool would do (its command, file, URL…), else the prompt.
    pub input: String,
    /// The ids of the options it offers.
    pub options: Vec<String>,
    pub destructive: bool,
    pub severity: Severity,
    /// It may be answered with `control.attention.respond`.
    pub by_control: bool,
}

impl Request {
    /// The facts of an `attention.requested` in a session.
    pub fn from_event(event: &Event) -> Option<Request> {
        let data = event.data()?;
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let context = data.get("context");
        let tool = text(context.and_then(|c| c.get("tool")));
        let input = context.and_then(|c| c.get("tool_input")).and_then(input_words);
        let input = match (&tool, input) {
            (Some(_), Some(input)) => input,
            _ => text(data.get("prompt")).unwrap_or_default(),
        };
        let options = data
            .get("options")
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(|o| text(o.get("id"))).collect())
            .unwrap_or_default();
        let by_control = data
            .get("respond_via")
            .and_then(Value::as_array)
            .is_none_or(|via| via.iter().any(|v| v.as_str().map(Channel::parse) == Some(Channel::Control)));
        Some(Request {
            id: event.id().to_owned(),
            agent: event.agent().to_owned(),
            session: event.session()?.to_owned(),
            tool,
            input,
            options,
            destructive: data.get("destructive").and_then(Value::as_bool) == Some(true),
            severity: event.severity(),
            by_control,
        })
    }

    /// Why no rule may answer this request, whatever the rule.
    pub fn guarded(&self) -> Option<Skip> {
        if self.destructive {
            Some(Skip::Destructive)
        } else if self.severity >= SEVERE {
            Some(Skip::Severe(self.severity))
        } else if !self.by_control {
            Some(Skip::NotByControl)
        } else {
            None
        }
    }
}

/// A tool's input in the words a pattern is written against: the
/// command, file, URL or search pattern it names, else its JSON.
fn input_words(input: &Value) -> Option<String> {
    ["command", "file_path", "url", "pattern"]
        .iter()
        .find_map(|name| input.get(name).and_then(Value::as_str).map(str::to_owned))
        .or_else(|| (!input.is_null()).then(|| input.to_string()))
}

/// Why a rule does not answer a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// The agent graded it destructive: never answered by a rule.
    Destructive,
    /// `error` or worse: never answered by a rule.
    Severe(Severity),
    /// It is answered elsewhere than through control.
    NotByControl,
    Revoked,
    Expired,
    OtherAgent,
    OtherSession,
    OtherTool,
    OtherInput,
    /// The rule's option is not one the request offers.
    OptionNotOffered,
}

impl Skip {
    pub fn words(self) -> String {
        match self {
            Skip::Destructive => "the request is graded destructive: no rule answers it".into(),
            Skip::Severe(s) => format!("the request is of severity `{}`: no rule answers it", s.as_str()),
            Skip::NotByControl => "the request is answered in the agent's own interface".into(),
            Skip::Revoked => "the rule was revoked".into(),
            Skip::Expired => "the rule has expired".into(),
            Skip::OtherAgent => "the request is another agent's".into(),
            Skip::OtherSession => "the request is in another session".into(),
            Skip::OtherTool => "the request is about another tool".into(),
            Skip::OtherInput => "the request's input does not match the pattern".into(),
            Skip::OptionNotOffered => "the request does not offer the rule's option".into(),
        }
    }
}

impl Rule {
    pub fn state(&self, now: u64) -> State {
        if self.revoked.is_some() {
            State::Revoked
        } else if self.expires_at.is_some_and(|at| at <= now) {
            State::Expired
        } else {
            State::Active
        }
    }

    /// Whether this rule answers `request` at `now`, or why not. The
    /// request's own guards come first: they hold against every rule.
    pub fn decide(&self, request: &Request, now: u64) -> Result<(), Skip> {
        if let Some(skip) = request.guarded() {
            return Err(skip);
        }
        match self.state(now) {
            State::Revoked => return Err(Skip::Revoked),
            State::Expired => return Err(Skip::Expired),
            State::Active => {}
        }
        if self.agent != request.agent {
            return Err(Skip::OtherAgent);
        }
        if self.session.as_ref().is_some_and(|s| *s != request.session) {
            return Err(Skip::OtherSession);
        }
        if self.tool != request.tool {
            return Err(Skip::OtherTool);
        }
        if !self.matching.matches(&self.pattern, &request.input) {
            return Err(Skip::OtherInput);
        }
        if !request.options.contains(&self.option) {
            return Err(Skip::OptionNotOffered);
        }
        Ok(())
    }
}

/// The rule that answers `request` at `now`, if any: of several, the one
/// made last (the latest decision stands).
pub fn answering<'a>(rules: impl IntoIterator<Item = &'a Rule>, request: &Request, now: u64) -> Option<&'a Rule> {
    rules.into_iter().filter(|r| r.decide(request, now).is_ok()).max_by_key(|r| r.made_at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(data: Value, severity: &str) -> Event {
        let raw = json!({"aep": "0.1", "id": "req-1", "type": "attention.requested", "time": "2026-07-03T10:00:00Z",
            "source": "aep://h/agent/builder/session/s1", "agent": "builder", "session": "s1", "seq": 3,
            "severity": severity, "data": data});
        Event::parse(&raw.to_string()).unwrap()
    }

    fn bash(command: &str) -> Request {
        Request::from_event(&event(
            json!({"kind": "permission", "prompt": format!("Bash: {command}"), "respond_via": ["control"],
                "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}],
                "context": {"tool": "Bash", "tool_input": {"command": command, "description": "x"}}}),
            "info",
        ))
        .unwrap()
    }

    fn rule(matching: Matching, pattern: &str) -> Rule {
        Rule {
            id: "r1".into(),
            author: "alice".into(),
            made_at: 1_000,
            agent: "builder".into(),
            session: None,
            tool: Some("Bash".into()),
            matching,
            pattern: pattern.into(),
            option: "allow".into(),
            expires_at: Some(61_000),
            revoked: None,
            edited: None,
            answered: 0,
        }
    }

    #[test]
    fn a_request_is_read_as_its_tool_and_input_or_its_prompt() {
        let r = bash("npm test");
        assert_eq!((r.tool.as_deref(), r.input.as_str(), r.session.as_str()), (Some("Bash"), "npm test", "s1"));
        assert_eq!(r.options, ["allow", "deny"]);
        let demo = Request::from_event(&event(
            json!({"kind": "permission", "prompt": "Run `cargo test`?", "respond_via": ["control"],
                "options": [{"id": "allow", "label": "Allow"}]}),
            "info",
        ))
        .unwrap();
        assert_eq!((demo.tool, demo.input.as_str()), (None, "Run `cargo test`?"));
    }

    #[test]
    fn exact_and_prefix_patterns_match_the_input() {
        assert_eq!(rule(Matching::Exact, "npm test").decide(&bash("npm test"), 2_000), Ok(()));
        assert_eq!(rule(Matching::Exact, "npm test").decide(&bash("npm test -- -u"), 2_000), Err(Skip::OtherInput));
        assert_eq!(rule(Matching::Prefix, "npm test").decide(&bash("npm test -- -u"), 2_000), Ok(()));
        assert_eq!(rule(Matching::Prefix, "npm test").decide(&bash("npm install"), 2_000), Err(Skip::OtherInput));
    }

    #[test]
    fn agent_session_and_tool_must_be_the_rules() {
        let request = bash("npm test");
        let mut r = rule(Matching::Exact, "npm test");
        r.agent = "deployer".into();
        assert_eq!(r.decide(&request, 2_000), Err(Skip::OtherAgent));
        let mut r = rule(Matching::Exact, "npm test");
        r.session = Some("s2".into());
        assert_eq!(r.decide(&request, 2_000), Err(Skip::OtherSession));
        r.session = Some("s1".into());
        assert_eq!(r.decide(&request, 2_000), Ok(()));
        r.tool = None;
        assert_eq!(r.decide(&request, 2_000), Err(Skip::OtherTool), "a tool-less rule is for tool-less requests");
    }

    #[test]
    fn a_rule_holds_until_it_expires_or_is_revoked() {
        let mut r = rule(Matching::Exact, "npm test");
        assert_eq!(r.state(60_999), State::Active);
        assert_eq!(r.decide(&bash("npm test"), 61_000), Err(Skip::Expired));
        r.expires_at = None;
        assert_eq!(r.state(u64::MAX), State::Active, "until revoked");
        r.revoked = Some(Ended { by: "bob".into(), at: 5 });
        assert_eq!(r.decide(&bash("npm test"), 2_000), Err(Skip::Revoked));
    }

    #[test]
    fn destructive_severe_and_unoffered_requests_are_never_answered() {
        let r = rule(Matching::Prefix, "rm");
        let mut request = bash("rm -rf build/");
        assert_eq!(r.decide(&request, 2_000), Ok(()));
        request.destructive = true;
        assert_eq!(r.decide(&request, 2_000), Err(Skip::Destructive));
        request.destructive = false;
        for severity in [Severity::Error, Severity::Critical] {
            request.severity = severity;
            assert_eq!(r.decide(&request, 2_000), Err(Skip::Severe(severity)));
        }
        request.severity = Severity::Warning;
        assert_eq!(r.decide(&request, 2_000), Ok(()), "a warning may be answered");
        request.options = vec!["approve".into(), "reject".into()];
        assert_eq!(r.decide(&request, 2_000), Err(Skip::OptionNotOffered));
        request.options = vec!["allow".into()];
        request.by_control = false;
        assert_eq!(r.decide(&request, 2_000), Err(Skip::NotByControl));
    }

    #[test]
    fn the_rule_made_last_answers_when_several_match() {
        let older = rule(Matching::Prefix, "npm");
        let mut newer = rule(Matching::Exact, "npm test");
        newer.id = "r2".into();
        newer.made_at = 2_000;
        newer.option = "deny".into();
        let picked = answering([&older, &newer], &bash("npm test"), 3_000).map(|r| r.id.as_str());
        assert_eq!(picked, Some("r2"));
        assert_eq!(answering([&older, &newer], &bash("npm ci"), 3_000).map(|r| r.id.as_str()), Some("r1"));
        assert!(answering([&older, &newer], &bash("make"), 3_000).is_none());
    }

    #[test]
    fn lifetimes_read_as_people_write_them_and_are_bounded() {
        assert_eq!(Lifetime::parse("10m"), Ok(Lifetime::For(Duration::from_secs(600))));
        assert_eq!(Lifetime::parse("1h").unwrap().expires_at(1_000), Some(3_601_000));
        assert_eq!(Lifetime::parse("until-revoked").unwrap().expires_at(1_000), None);
        assert!(Lifetime::parse("0s").is_err());
        assert!(Lifetime::parse("90d").is_err());
        assert!(Lifetime::parse("soon").unwrap_err().contains("until-revoked"));
    }
}
