//! The Audit view's model: the filter a person sets, the query it makes
//! on the relay's `/audit`, and the rows the relay answers, in words.

use aep_engine::protocol::vocabulary::CommandVerb;
use serde_json::Value;

/// What the person filters by. Times are ms since the epoch, already
/// turned from the person's local dates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub who: String,
    pub agent: String,
    pub verb: String,
    pub outcome: String,
    pub from: Option<u64>,
    pub to: Option<u64>,
}

/// What a command did, in the Audit view's words (the commands a person
/// can filter by are every [`CommandVerb`]).
pub fn verb_words(verb: CommandVerb) -> &'static str {
    match verb {
        CommandVerb::AttentionRespond => "answered",
        CommandVerb::Cancel => "cancelled",
        CommandVerb::Pause => "paused",
        CommandVerb::Resume => "resumed",
    }
}

/// Results a person can filter by, with their words (the rows themselves
/// carry the relay's words for what came of each command).
pub const OUTCOMES: [(&str, &str); 6] = [
    ("attention.resolved", "resolved"),
    ("accepted", "accepted"),
    ("rejected", "rejected by the agent"),
    ("refused", "refused by the relay"),
    ("pending", "no answer from the agent"),
    ("run.cancelled", "run cancelled"),
];

impl Filter {
    /// The query string for `/audit` in `format` (`json`, `csv`, `jsonl`).
    pub fn query(&self, format: &str) -> String {
        let mut pairs: Vec<(&str, String)> = vec![("format", format.to_owned())];
        for (name, value) in
            [("principal", &self.who), ("agent", &self.agent), ("verb", &self.verb), ("outcome", &self.outcome)]
        {
            let value = value.trim();
            if !value.is_empty() {
                pairs.push((name, value.to_owned()));
            }
        }
        if let Some(from) = self.from {
            pairs.push(("from", from.to_string()));
        }
        if let Some(to) = self.to {
            pairs.push(("to", to.to_string()));
        }
        pairs.push(("limit", "200".to_owned()));
        pairs
            .iter()
            .map(|(k, v)| {
                format!("{k}={}", percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC))
            })
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// One decision as the Audit view shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Row {
    pub at: u64,
    pub who: String,
    pub agent: String,
    pub session: String,
    pub label: String,
    pub verb: String,
    pub command: String,
    pub prompt: String,
    pub answer: String,
    pub ack: String,
    pub outcome: String,
    pub latency_ms: Option<u64>,
    pub result: String,
    /// The standing rule that answered on `who`'s behalf, when no person did.
    pub rule: Option<ByRule>,
}

/// A standing rule that sent a command: its id, its author and when it
/// was made (ms since the epoch).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ByRule {
    pub id: String,
    pub author: String,
    pub made_at: u64,
}

impl Row {
    fn from_json(v: &Value) -> Row {
        let text = |name: &str| v.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
        Row {
            at: v.get("at").and_then(Value::as_u64).unwrap_or_default(),
            who: text("who"),
            agent: text("agent"),
            session: text("session"),
            label: text("label"),
            verb: text("verb"),
            command: text("command"),
            prompt: text("prompt"),
            answer: text("answer"),
            ack: text("ack"),
            outcome: text("outcome"),
            latency_ms: v.get("latency_ms").and_then(Value::as_u64),
            result: text("result"),
            rule: v.get("rule").filter(|r| r.is_object()).map(|r| ByRule {
                id: r.get("id").and_then(Value::as_str).unwrap_or_default().to_owned(),
                author: r.get("author").and_then(Value::as_str).unwrap_or_default().to_owned(),
                made_at: r.get("made_at").and_then(Value::as_u64).unwrap_or_default(),
            }),
        }
    }

    /// What was asked, for the collapsed row: the request's prompt, else
    /// the command and where it went (`cancelled in build box`).
    pub fn request(&self) -> String {
        if !self.prompt.is_empty() {
            return self.prompt.clone();
        }
        let place = if self.label.is_empty() { &self.session } else { &self.label };
        match CommandVerb::parse(&self.verb) {
            Some(v) => format!("{} in {place}", verb_words(v)),
            None => format!("{} in {place}", self.verb),
        }
    }

    /// "answered by rule R (made by alice at 14:02)", `made` the rule's
    /// making time in the person's words; `None` for a person's answer.
    pub fn by_rule(&self, made: impl Fn(u64) -> String) -> Option<String> {
        let rule = self.rule.as_ref()?;
        Some(super::rules::answered_by(&rule.id, &rule.author, &made(rule.made_at)))
    }

    /// What was done, in a word: `answered allow`, `cancelled`.
    pub fn action(&self) -> String {
        let verb: &str = match CommandVerb::parse(&self.verb) {
            Some(v) => verb_words(v),
            None => &self.verb,
        };
        if self.answer.is_empty() {
            verb.to_owned()
        } else {
            format!("{verb} \u{201c}{}\u{201d}", self.answer)
        }
    }

    /// What the agent did, in the relay's words (the CSV's `result` column
    /// says the same).
    pub fn result_words(&self) -> String {
        if self.result.is_empty() {
            "no answer from the agent".to_owned()
        } else {
            self.result.clone()
        }
    }
}

/// The relay's `format=json` answer as rows; an error in words.
pub fn rows(body: &str) -> Result<Vec<Row>, String> {
    let value: Value = serde_json::from_str(body).map_err(|_| "the relay's answer is not an audit list".to_owned())?;
    let list = value.as_array().ok_or("the relay's answer is not an audit list")?;
    Ok(list.iter().map(Row::from_json).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_becomes_a_query_with_only_what_was_set() {
        let f = Filter { who: " bob ".into(), verb: "control.cancel".into(), from: Some(5), ..Filter::default() };
        assert_eq!(f.query("csv"), "format=csv&principal=bob&verb=control%2Ecancel&from=5&limit=200");
        let f = Filter { who: "a&b=c".into(), ..Filter::default() };
        assert!(f.query("json").contains("principal=a%26b%3Dc"));
    }

    #[test]
    fn rows_name_the_request_the_answer_and_what_the_agent_did() {
        let body = r#"[{"at":1,"who":"alice","agent":"access-guardian","verb":"control.attention.respond","prompt":"Bash: rm -rf build/",
                        "answer":"approve","outcome":"attention.resolved","result":"the agent refused: two approvers needed; then the agent withdrew the request","latency_ms":40},
                       {"at":0,"who":"bob","verb":"control.pause","label":"build box","session":"s1","answer":"","outcome":"progress.status","result":"the agent paused"},
                       {"at":0,"who":"bob","verb":"control.cancel","session":"s2","result":""}]"#;
        let rows = rows(body).unwrap();
        assert_eq!(rows[0].request(), "Bash: rm -rf build/");
        assert_eq!(rows[0].action(), "answered \u{201c}approve\u{201d}");
        assert_eq!(
            rows[0].result_words(),
            "the agent refused: two approvers needed; then the agent withdrew the request"
        );
        assert_eq!(rows[0].latency_ms, Some(40));
        assert_eq!(rows[1].request(), "paused in build box");
        assert_eq!(rows[1].result_words(), "the agent paused");
        assert_eq!(rows[2].request(), "cancelled in s2");
        assert_eq!(rows[2].result_words(), "no answer from the agent");
        assert!(super::rows("{\"error\":1}").is_err());
        assert_eq!(rows[0].by_rule(|_| String::new()), None, "a person's answer");
    }

    #[test]
    fn a_rows_rule_is_named_with_its_author_and_time() {
        let body = r#"[{"at":1,"who":"alice","verb":"control.attention.respond","answer":"allow",
                        "rule":{"id":"r-1","author":"alice","made_at":60000}},{"at":0,"who":"bob","rule":null}]"#;
        let rows = rows(body).unwrap();
        let made = |ms: u64| format!("{}:00", ms / 60_000);
        assert_eq!(rows[0].by_rule(made).as_deref(), Some("answered by rule r-1 (made by alice at 1:00)"));
        assert_eq!(rows[1].rule, None);
    }
}
