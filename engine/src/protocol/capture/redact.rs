//! The AEP-0003 §9.4 redaction pipeline: what `redacted`-gated free text
//! must pass before an event may declare `capture: redacted`.
//!
//! The rules run in the order the spec gives, so a credential that also
//! looks like PII is reported as a secret: (a) secrets and credentials,
//! (b) the operator's configured secrets, (c) home directories, (d) PII.
//! The spec's list is a floor; where the adversarial corpus asks for more
//! (vendor token shapes, JSON-quoted assignments, any user's home) the
//! pipeline redacts more. Object keys are structure and are kept; a value
//! under a credential-named key goes whatever it looks like.

use regex::{Captures, Regex};
use serde_json::{Map, Value};

/// What replaces a secret or credential.
const SECRET: &str = "[REDACTED:secret]";
/// What replaces an email address or phone number.
const PII: &str = "[REDACTED:pii]";

/// The operator's settings for the pipeline. The engine reads nothing
/// from its environment: the adapter resolves these and passes them in.
#[derive(Clone, Debug)]
pub struct RedactOptions {
    /// Values the operator lists as secret (rule b), e.g. the values of the
    /// environment variables or config keys named in the adapter's config.
    pub secret_values: Vec<String>,
    /// Extra key names whose values are secret wherever they are assigned
    /// (`NAME=value`, `"NAME": "value"`, an object member `NAME`), on top
    /// of the credential names the pipeline always knows.
    pub secret_names: Vec<String>,
    /// The user's home directory, replaced by `~` (rule c). Other users'
    /// `/home/*` and `/Users/*` directories are replaced without it.
    pub home: Option<String>,
    /// Emails and phone numbers (rule d): on by default, operator-disableable.
    pub pii: bool,
}

impl Default for RedactOptions {
    fn default() -> Self {
        RedactOptions { secret_values: Vec::new(), secret_names: Vec::new(), home: None, pii: true }
    }
}

/// The compiled pipeline. Build it once per adapter: compiling the
/// patterns costs far more than running them.
#[derive(Clone, Debug)]
pub struct Redactor {
    options: RedactOptions,
    pem: Regex,
    assignment: Regex,
    url_password: Regex,
    bearer: Regex,
    token: Regex,
    other_home: Regex,
    email: Regex,
    phone: Regex,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new(RedactOptions::default())
    }
}

impl Redactor {
    pub fn new(mut options: RedactOptions) -> Redactor {
        // Longest first, so a value containing another is replaced whole;
        // an empty value would match everywhere.
        options.secret_values.retain(|v| !v.is_empty());
        options.secret_values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        if let Some(home) = &options.home {
            let trimmed = home.trim_end_matches(['/', '\\']);
            options.home = (!trimmed.is_empty()).then(|| trimmed.to_owned());
        }
        let re = |pattern: &str| Regex::new(pattern).expect("the redaction patterns are valid");
        Redactor {
            options,
            // An unterminated block (truncated output) goes to the end.
            pem: re(r"-----BEGIN [A-Z0-9 ]+-----(?s:.*?-----END [A-Z0-9 ]+-----|.*)"),
            // A name, then `=` or `:` (possibly after the name's closing
            // quote), or whitespace after a `--flag`.
            assignment: re(r#"([A-Za-z0-9_.-]+)(\\?["']?\s*[=:]\s*|[ \t]+)"#),
            url_password: re(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:)[^/\s@]+@"),
            bearer: re(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/-]+=*)"),
            token: re(concat!(
                r"AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}",
                r"|eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*",
                r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}",
                r"|\bglpat-[A-Za-z0-9_-]{20,}|\bxox[abposr]-[A-Za-z0-9-]{10,}",
                r"|\bsk-[A-Za-z0-9_-]{20,}|\b[rs]k_(?:live|test)_[A-Za-z0-9]{10,}",
                r"|\bAIza[0-9A-Za-z_-]{35}",
            )),
            // A path's start: not inside a word or another path, except
            // after `file://`.
            other_home: re(concat!(
                r#"(^|[^A-Za-z0-9_.~/-]|file://)/(?:home|Users)/[^/\\\s"'`:;,)\]}]+"#,
                r#"|(^|[^A-Za-z0-9_.~\\-])(?i:[A-Z]:\\Users\\)[^\\/\s"'`:;,)\]}]+"#,
            )),
            email: re(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
            phone: re(concat!(
                r"\+\d{1,3}(?:[ .-]?(?:\(\d{1,4}\)|\d{1,4})){2,6}",
                r"|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}|\b\d{3}-\d{3}-\d{4}\b|\b\d{3}\.\d{3}\.\d{4}\b",
            )),
        }
    }

    /// Runs the pipeline over free text.
    pub fn redact_text(&self, text: &str) -> String {
        let text = self.secrets(text);
        let text = self.configured(text);
        let text = self.homes(text);
        if self.options.pii {
            self.pii(&text)
        } else {
            text
        }
    }

    /// Runs the pipeline over every string of a JSON value. Keys are kept;
    /// the value of a credential-named member is replaced whole (numbers
    /// and nested objects too), except `null` and booleans, which hold no
    /// secret.
    pub fn redact_value(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.redact_text(s)),
            Value::Array(list) => Value::Array(list.iter().map(|v| self.redact_value(v)).collect()),
            Value::Object(members) => {
                let mut out = Map::new();
                for (name, v) in members {
                    let v = match v {
                        Value::Null | Value::Bool(_) => v.clone(),
                        _ if self.is_secret_name(name) => Value::from(SECRET),
                        _ => self.redact_value(v),
                    };
                    out.insert(name.clone(), v);
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }

    /// Rule (a).
    fn secrets(&self, text: &str) -> String {
        let text = self.pem.replace_all(text, SECRET);
        let text = self.assignments(&text);
        let text = self.url_password.replace_all(&text, format!("${{1}}{SECRET}@").as_str());
        let text = self.bearer.replace_all(&text, |c: &Captures| {
            // The spec's `Bearer ` takes any token; other spellings only a
            // token-shaped one, so "the bearer of good news" stays.
            if c[1].starts_with("Bearer") || token_shaped(&c[2]) {
                format!("{}{SECRET}", &c[1])
            } else {
                c[0].to_owned()
            }
        });
        self.token.replace_all(&text, SECRET).into_owned()
    }

    /// `name=value`, `name: value`, `"name": "value"` and `--name value`
    /// where the name is a credential's: the value goes, the name, the
    /// separator and any quotes around the value stay.
    fn assignments(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        while let Some(c) = self.assignment.captures_at(text, at) {
            let (name, separator) = (&c[1], c.get(2).expect("the separator always takes part"));
            let named = if separator.as_str().contains(['=', ':']) { Some(name) } else { name.strip_prefix('-') };
            if !named.is_some_and(|n| self.is_secret_name(n)) {
                // Only the name is consumed, so `a=password=x` still finds
                // its second assignment.
                out.push_str(&text[at..separator.start()]);
                at = separator.start();
                continue;
            }
            out.push_str(&text[at..separator.end()]);
            at = separator.end();
            let (kept, value) = split_value(&text[at..]);
            out.push_str(kept);
            if !value.is_empty() {
                out.push_str(SECRET);
            }
            at += kept.len() + value.len();
        }
        out.push_str(&text[at..]);
        out
    }

    /// Rule (b).
    fn configured(&self, text: String) -> String {
        self.options.secret_values.iter().fold(text, |text, secret| {
            if text.contains(secret.as_str()) {
                text.replace(secret.as_str(), SECRET)
            } else {
                text
            }
        })
    }

    /// Rule (c): the configured home on a path boundary, then any user's.
    fn homes(&self, text: String) -> String {
        let text = match &self.options.home {
            Some(home) => replace_home(&text, home),
            None => text,
        };
        self.other_home
            .replace_all(&text, |c: &Captures| {
                let before = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
                format!("{before}~")
            })
            .into_owned()
    }

    /// Rule (d).
    fn pii(&self, text: &str) -> String {
        let text = self.email.replace_all(text, PII);
        self.phone
            .replace_all(&text, |c: &Captures| {
                let digits = c[0].bytes().filter(u8::is_ascii_digit).count();
                if (7..=15).contains(&digits) {
                    PII.to_owned()
                } else {
                    c[0].to_owned()
                }
            })
            .into_owned()
    }

    /// Whether a key or assigned name holds a credential.
    fn is_secret_name(&self, name: &str) -> bool {
        is_credential_name(name) || self.options.secret_names.iter().any(|n| n.eq_ignore_ascii_case(name))
    }
}

/// Names ending in one of these (case, `_`, `-` and `.` ignored) hold
/// credentials. The spec's floor is `password|passwd|secret|api[_-]?key|token`
/// as a suffix of the name; the rest is hardening. `tokens` (a count)
/// does not end in `token`.
const CREDENTIAL_SUFFIXES: [&str; 13] = [
    "password",
    "passwd",
    "passphrase",
    "secret",
    "secrets",
    "apikey",
    "token",
    "credential",
    "credentials",
    "authorization",
    "privatekey",
    "accesskey",
    "cookie",
];

fn is_credential_name(name: &str) -> bool {
    let squashed: String = name.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect();
    CREDENTIAL_SUFFIXES.iter().any(|s| squashed.ends_with(s))
}

/// Splits an assigned value off the text that follows its separator:
/// `(kept, value)` where `kept` is an opening quote or an auth scheme
/// (`Basic `, `Bearer `) that stays. A quoted value ends at its closing
/// quote; an unquoted one at whitespace, as the spec's `\S+`.
fn split_value(rest: &str) -> (&str, &str) {
    for quote in ["\\\"", "\"", "'"] {
        if let Some(inner) = rest.strip_prefix(quote) {
            if let Some(end) = find_closing(inner, quote) {
                return (&rest[..quote.len()], &inner[..end]);
            }
        }
    }
    let word_end = |s: &str| s.find(char::is_whitespace).unwrap_or(s.len());
    let first = &rest[..word_end(rest)];
    let is_scheme = ["basic", "bearer", "digest", "token"].iter().any(|s| first.eq_ignore_ascii_case(s));
    if is_scheme {
        let after = &rest[first.len()..];
        let gap = after.len() - after.trim_start_matches([' ', '\t']).len();
        if gap > 0 {
            let credential = &after[gap..];
            let credential = &credential[..word_end(credential)];
            if !credential.is_empty() {
                return (&rest[..first.len() + gap], credential);
            }
        }
    }
    ("", first)
}

/// The closing `quote` of a quoted value, skipping escaped characters.
fn find_closing(inner: &str, quote: &str) -> Option<usize> {
    let bytes = inner.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if inner[i..].starts_with(quote) {
            return Some(i);
        }
        i += if bytes[i] == b'\\' && quote.len() == 1 { 2 } else { 1 };
    }
    None
}

/// A word that looks like a credential rather than prose: long, or with
/// digits or token punctuation in it.
fn token_shaped(word: &str) -> bool {
    let marked = word.bytes().any(|b| b.is_ascii_digit() || b"-._~+/=".contains(&b));
    word.len() >= 20 || (word.len() >= 8 && marked)
}

/// Replaces `home` where it is a whole path prefix: followed by a path
/// separator or anything that cannot continue a directory name.
fn replace_home(text: &str, home: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(home) {
        let after = &rest[i + home.len()..];
        let boundary = after.chars().next().is_none_or(|c| !(c.is_alphanumeric() || "_.-".contains(c)));
        out.push_str(&rest[..i]);
        out.push_str(if boundary { "~" } else { home });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redact(text: &str) -> String {
        Redactor::default().redact_text(text)
    }

    #[test]
    fn assignments_keep_name_separator_and_quotes() {
        assert_eq!(redact(r#"{"token": "a b", "n": 1}"#), r#"{"token": "[REDACTED:secret]", "n": 1}"#);
        assert_eq!(redact("DB_PASSWORD=x y"), "DB_PASSWORD=[REDACTED:secret] y");
        assert_eq!(redact("Authorization: Basic dXNlcjpwYXNz"), "Authorization: Basic [REDACTED:secret]");
        assert_eq!(redact("run --token abc123 --verbose"), "run --token [REDACTED:secret] --verbose");
        assert_eq!(redact("a=password=x"), "a=password=[REDACTED:secret]");
        assert_eq!(redact(r#"{\"secret\": \"v\"}"#), r#"{\"secret\": \"[REDACTED:secret]\"}"#);
    }

    #[test]
    fn counts_and_prose_are_not_credentials() {
        for text in ["max_tokens=4096", "used 1200 tokens: 42 cached", "the author: Jane", "token", "password="] {
            assert_eq!(redact(text), text);
        }
    }

    #[test]
    fn url_passwords_go_but_not_the_host() {
        assert_eq!(
            redact("git clone https://me:hunter2@git.test/r"),
            "git clone https://me:[REDACTED:secret]@git.test/r"
        );
    }

    #[test]
    fn homes_on_path_boundaries_only() {
        let r = Redactor::new(RedactOptions { home: Some("/srv/op/".into()), ..RedactOptions::default() });
        assert_eq!(r.redact_text("cd /srv/op && ls /srv/op/a /srv/opx"), "cd ~ && ls ~/a /srv/opx");
        assert_eq!(r.redact_text("PATH=/home/a/bin:/home/b/bin"), "PATH=~/bin:~/bin");
        assert_eq!(r.redact_text("open file:///Users/bob/x"), "open file://~/x");
        assert_eq!(r.redact_text(r"dir C:\Users\bob\x"), r"dir ~\x");
        assert_eq!(r.redact_text("https://example.test/home/alice"), "https://example.test/home/alice");
    }

    #[test]
    fn configured_values_longest_first() {
        let r = Redactor::new(RedactOptions {
            secret_values: vec!["abc".into(), String::new(), "abcdef".into()],
            secret_names: vec!["DEPLOY_KEY".into()],
            ..RedactOptions::default()
        });
        assert_eq!(r.redact_text("abcdef abc"), "[REDACTED:secret] [REDACTED:secret]");
        assert_eq!(r.redact_text("deploy_key=zzz"), "deploy_key=[REDACTED:secret]");
        assert_eq!(r.redact_value(&json!({"DEPLOY_KEY": 7})), json!({"DEPLOY_KEY": SECRET}));
    }

    #[test]
    fn the_pipeline_is_idempotent() {
        let text = "password=foo@bar.com Bearer abc /home/x/y call +44 20 7946 0958 AKIAIOSFODNN7EXAMPLE";
        let once = redact(text);
        assert_eq!(redact(&once), once);
        assert_eq!(
            once,
            "password=[REDACTED:secret] Bearer [REDACTED:secret] ~/y call [REDACTED:pii] [REDACTED:secret]"
        );
    }
}
