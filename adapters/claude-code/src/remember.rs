//! "Allow, and don't ask again": the permission updates a request can be
//! allowed with, so that Claude Code itself remembers the decision exactly
//! as its own prompt would have it remember (a rule in the project's
//! `.claude/settings.local.json`, a mode or a directory for the session).
//!
//! Each becomes an extra option of the request, in plain words. They come
//! from the hook's `permission_suggestions`, Claude Code's own offer. For a
//! `Bash` call it offers no rule for, the adapter makes the rules the
//! terminal's "don't ask again for … in this project" makes: the exact
//! command and, where the command's first words cannot run anything else,
//! those words as a prefix, kept in the project's local settings. A prefix
//! rule never covers a redirection or a second command (Claude Code asks
//! again), so one is offered only for a command with neither.
//!
//! Nothing is offered for a destructive request: "don't ask again" for a
//! `rm -rf` is not a decision to make from one card.

use serde_json::{json, Value};

/// The option ids of the offers, `allow-remember-1`, `allow-remember-2`, …: read as
/// granting by a console (AEP option ids that start with `allow`).
const ID_PREFIX: &str = "allow-remember-";
/// Offers on one card at most: more is noise.
const MOST: usize = 3;
/// Characters a shell treats as more than words: a command holding any of
/// them gets no prefix rule.
const SHELL_SYNTAX: &[char] =
    &['|', '&', ';', '<', '>', '$', '`', '(', ')', '\n', '*', '?', '[', '{', '~', '\\', '"', '\''];
/// Commands whose next words are code or another command: their prefix
/// would allow anything.
const RUNNERS: &[&str] = &[
    "bash", "sh", "zsh", "fish", "dash", "env", "sudo", "doas", "xargs", "eval", "exec", "nohup", "time", "timeout",
    "nice", "watch", "find", "python", "python3", "node", "deno", "bun", "perl", "ruby", "php", "npx", "bunx", "rm",
    "ssh", "docker", "kubectl", "git",
];

/// One offer: an option of the request, and the update it returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Remember {
    pub id: String,
    pub label: String,
    /// One entry of the decision's `updatedPermissions`.
    pub update: Value,
}

/// What the request for `tool` with `input` in project `project` offers,
/// from Claude Code's `suggestions` and, for a shell command, the
/// adapter's own rules.
pub fn offers(tool: &str, input: Option<&Value>, suggestions: Option<&Value>, project: Option<&str>) -> Vec<Remember> {
    let suggested: Vec<&Value> = suggestions.and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default();
    let rules_for_tool = suggested.iter().any(|s| {
        s["type"] == "addRules" && s["rules"].as_array().is_some_and(|r| r.iter().any(|r| r["toolName"] == tool))
    });
    // The command's own rules first: what a person most often means.
    let command = input.and_then(|i| i.get("command")).and_then(Value::as_str);
    let own = match command {
        Some(command) if tool == "Bash" && !rules_for_tool => own_rules(command),
        _ => Vec::new(),
    };
    let own = own.into_iter().map(|content| local_rule(tool, &content));
    own.chain(suggested.into_iter().cloned())
        .filter_map(|update| Some((words(&update, project)?, update)))
        .take(MOST)
        .enumerate()
        .map(|(i, (label, update))| Remember { id: format!("{ID_PREFIX}{}", i + 1), label, update })
        .collect()
}

/// The offer an option id names.
pub fn chosen<'a>(offers: &'a [Remember], option: &str) -> Option<&'a Remember> {
    offers.iter().find(|r| r.id == option)
}

/// An allow rule for `tool` with `content`, kept in the project's local
/// settings (this machine, this project), as the terminal's prompt keeps it.
fn local_rule(tool: &str, content: &str) -> Value {
    json!({
        "type": "addRules",
        "rules": [{ "toolName": tool, "ruleContent": content }],
        "behavior": "allow",
        "destination": "localSettings",
    })
}

/// The rules the adapter makes for a shell command: the exact command, and
/// its first two words as a prefix where that is safe.
fn own_rules(command: &str) -> Vec<String> {
    let command = command.trim();
    if command.is_empty() || command.contains('\n') {
        return Vec::new();
    }
    let mut rules = vec![command.to_owned()];
    let words: Vec<&str> = command.split_whitespace().collect();
    let plain = !command.contains(SHELL_SYNTAX);
    if plain && words.len() > 2 && !RUNNERS.contains(&words[0]) && !words[1].starts_with('-') {
        rules.push(format!("{} {}:*", words[0], words[1]));
    }
    rules
}

/// A suggestion in plain words, as the option's label; `None` for one the
/// adapter does not offer (a deny or ask rule, a removal, a mode other
/// than accepting edits).
fn words(update: &Value, project: Option<&str>) -> Option<String> {
    let place = place(update["destination"].as_str()?, project)?;
    match update["type"].as_str()? {
        "addRules" if update["behavior"] == "allow" => {
            let rules: Vec<String> = update["rules"].as_array()?.iter().map(rule_words).collect::<Option<_>>()?;
            (!rules.is_empty()).then(|| format!("Allow, and don't ask again for {} {place}", rules.join(" or ")))
        }
        "setMode" if update["mode"] == "acceptEdits" => {
            Some(format!("Allow, and accept file edits without asking {place}"))
        }
        "addDirectories" => {
            let dirs: Vec<&str> = update["directories"].as_array()?.iter().filter_map(Value::as_str).collect();
            (!dirs.is_empty()).then(|| format!("Allow, and let it work in `{}` {place}", dirs.join("`, `")))
        }
        _ => None,
    }
}

/// `npm test:*` → "commands starting `npm test`"; `touch a.txt` →
/// "`touch a.txt`"; a tool with no content → "any Edit".
fn rule_words(rule: &Value) -> Option<String> {
    let tool = rule["toolName"].as_str()?;
    Some(match rule["ruleContent"].as_str() {
        None | Some("") => format!("any {tool}"),
        Some(content) => match content.strip_suffix(":*") {
            Some(prefix) if tool == "Bash" => format!("commands starting `{prefix}`"),
            _ if tool == "Bash" => format!("`{content}`"),
            _ => format!("{tool} of `{content}`"),
        },
    })
}

/// Where a decision is kept, in words.
fn place(destination: &str, project: Option<&str>) -> Option<String> {
    let project = project.map_or_else(|| "this project".to_owned(), |p| p.to_owned());
    Some(match destination {
        "session" => "for the rest of this session".to_owned(),
        "localSettings" => format!("in {project}"),
        "projectSettings" => format!("in {project}, for everyone on it"),
        "userSettings" => "in every project".to_owned(),
        "cliArg" => "for this run".to_owned(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(offers: &[Remember]) -> Vec<&str> {
        offers.iter().map(|r| r.label.as_str()).collect()
    }

    #[test]
    fn a_plain_command_gets_its_exact_rule_and_a_prefix_in_the_projects_local_settings() {
        let input = json!({ "command": "npm test -- --watch=false" });
        let offers = offers("Bash", Some(&input), None, Some("payments-api"));
        assert_eq!(
            labels(&offers),
            [
                "Allow, and don't ask again for `npm test -- --watch=false` in payments-api",
                "Allow, and don't ask again for commands starting `npm test` in payments-api",
            ]
        );
        assert_eq!(offers[0].id, "allow-remember-1");
        assert_eq!(
            offers[0].update,
            json!({ "type": "addRules", "rules": [{ "toolName": "Bash", "ruleContent": "npm test -- --watch=false" }],
                "behavior": "allow", "destination": "localSettings" })
        );
        assert_eq!(offers[1].update["rules"][0]["ruleContent"], "npm test:*");
    }

    #[test]
    fn no_prefix_where_the_words_after_it_could_run_anything_else() {
        for command in [
            "touch proof.txt",
            "echo hi > out.txt",
            "make && make install",
            "bash -c 'echo x'",
            "git push origin main",
            "ls -la src",
        ] {
            let offers = offers("Bash", Some(&json!({ "command": command })), None, None);
            assert_eq!(offers.len(), 1, "{command}: only the exact command");
            assert_eq!(offers[0].update["rules"][0]["ruleContent"], command);
        }
        assert!(offers("Bash", Some(&json!({ "command": "a\nb" })), None, None).is_empty());
    }

    #[test]
    fn claude_codes_own_suggestions_are_offered_in_words_and_returned_as_they_came() {
        let suggestions = json!([
            { "type": "addDirectories", "directories": ["/srv/data"], "destination": "session" },
            { "type": "setMode", "mode": "acceptEdits", "destination": "session" },
            { "type": "setMode", "mode": "bypassPermissions", "destination": "session" },
            { "type": "addRules", "rules": [{ "toolName": "Bash", "ruleContent": "cargo test:*" }], "behavior": "allow", "destination": "projectSettings" },
            { "type": "addRules", "rules": [{ "toolName": "Bash" }], "behavior": "deny", "destination": "session" },
        ]);
        let input = json!({ "command": "cargo test --workspace" });
        let offers = offers("Bash", Some(&input), Some(&suggestions), Some("shop"));
        assert_eq!(
            labels(&offers),
            [
                "Allow, and let it work in `/srv/data` for the rest of this session",
                "Allow, and accept file edits without asking for the rest of this session",
                "Allow, and don't ask again for commands starting `cargo test` in shop, for everyone on it",
            ]
        );
        assert_eq!(offers[2].update, suggestions[3]);
    }

    #[test]
    fn without_a_rule_for_the_tool_among_the_suggestions_the_adapter_adds_its_own() {
        let suggestions = json!([{ "type": "setMode", "mode": "acceptEdits", "destination": "session" }]);
        let offers = offers("Bash", Some(&json!({ "command": "touch proof.txt" })), Some(&suggestions), Some("p"));
        assert_eq!(
            labels(&offers),
            [
                "Allow, and don't ask again for `touch proof.txt` in p",
                "Allow, and accept file edits without asking for the rest of this session"
            ]
        );
        assert_eq!(chosen(&offers, "allow-remember-1").unwrap().update["destination"], "localSettings");
        assert!(chosen(&offers, "allow").is_none());
    }
}
