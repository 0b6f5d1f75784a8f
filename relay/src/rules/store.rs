//! The rules on disk: `rules.json` in `--data-dir`, written whole (a
//! temporary file renamed over the old one) on every change, so a restart
//! finds every rule as it was, revocations and expiries included.

use std::path::Path;

use super::rule::{Rule, State};
use crate::files;

pub const RULES_FILE: &str = "rules.json";

/// How long an ended (expired or revoked) rule is still listed.
const ENDED_KEPT_MS: u64 = 24 * 3600 * 1000;

#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    rules: Vec<Rule>,
}

/// The rules kept in `dir` (none when there is no file yet).
pub fn load(dir: &Path) -> Result<Vec<Rule>, String> {
    let path = dir.join(RULES_FILE);
    let Some(text) = files::read(&path)? else { return Ok(Vec::new()) };
    let saved: Saved = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a rules file this relay wrote: {e}", path.display()))?;
    Ok(saved.rules)
}

pub fn save(dir: &Path, rules: &[Rule]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let text = serde_json::to_vec_pretty(&serde_json::json!({ "rules": rules })).map_err(|e| e.to_string())?;
    files::write_private(&dir.join(RULES_FILE), &text)
}

/// Forgets rules that ended more than a day ago.
pub fn prune(rules: &mut Vec<Rule>, now: u64) {
    rules.retain(|r| {
        let ended = match r.state(now) {
            State::Active => return true,
            State::Revoked => r.revoked.as_ref().map_or(now, |e| e.at),
            State::Expired => r.expires_at.unwrap_or(now),
        };
        now.saturating_sub(ended) < ENDED_KEPT_MS
    });
}

#[cfg(test)]
mod tests {
    use super::super::rule::{Ended, Matching};
    use super::*;

    fn rule(id: &str, expires_at: Option<u64>) -> Rule {
        Rule {
            id: id.into(),
            author: "alice".into(),
            made_at: 0,
            agent: "a".into(),
            session: None,
            tool: None,
            matching: Matching::Exact,
            pattern: "p".into(),
            option: "allow".into(),
            expires_at,
            revoked: None,
            edited: None,
            answered: 2,
        }
    }

    #[test]
    fn rules_are_kept_whole_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_empty(), "no file yet");
        let mut revoked = rule("r2", None);
        revoked.revoked = Some(Ended { by: "bob".into(), at: 9 });
        let rules = vec![rule("r1", Some(5)), revoked];
        save(dir.path(), &rules).unwrap();
        assert_eq!(load(dir.path()).unwrap(), rules);
        std::fs::write(dir.path().join(RULES_FILE), "{").unwrap();
        assert!(load(dir.path()).unwrap_err().contains("rules.json"));
    }

    #[test]
    fn rules_that_ended_a_day_ago_are_forgotten() {
        let day = ENDED_KEPT_MS;
        let mut rules = vec![rule("active", None), rule("expired-now", Some(day)), rule("expired-long-ago", Some(1))];
        prune(&mut rules, day + 2);
        let left: Vec<&str> = rules.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(left, ["active", "expired-now"]);
    }
}
