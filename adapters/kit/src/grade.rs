//! How much a permission request can destroy, so a console asks for a
//! deliberate second step before allowing what cannot be undone.
//!
//! The rule (the README says it too): a request is destructive, at
//! severity `warning` with `destructive: true`, when
//!
//! * a shell command (`Bash`) removes recursively (`rm` with `-r`, `-R` or
//!   `--recursive`, alone or among other flags), force-pushes (`git push`
//!   with `--force`, `-f`, `--force-with-lease` or a `+` refspec), resets a
//!   work tree (`git reset --hard`), or drops or empties data (`DROP
//!   TABLE|DATABASE|SCHEMA|…`, `TRUNCATE`, in any case, quoted or not);
//! * a file tool (`Write`, `Edit`, `MultiEdit`, `NotebookEdit`) writes
//!   outside the project: its path, resolved against the session's working
//!   directory, is not under that directory.
//!
//! Any other permission request is a `notice`: a person must answer it,
//! and AEP-0002 recommends at least `notice` for that. The rule reads the
//! command as the shell would split it into words (quotes honoured); it
//! does not run or expand anything, so a command built at run time (a
//! variable holding `rm -rf`) is not caught.

use std::path::{Component, Path, PathBuf};

use aep_engine::Severity;
use serde_json::Value;

/// The severity of a permission request, `destructive` or not.
pub fn permission_severity(destructive: bool) -> Severity {
    if destructive {
        Severity::Warning
    } else {
        Severity::Notice
    }
}

/// Why a request is destructive, in a few words for the card.
pub fn destructive(tool: &str, input: Option<&Value>, cwd: Option<&str>) -> Option<&'static str> {
    let field = |name: &str| input.and_then(|i| i.get(name)).and_then(Value::as_str);
    match tool {
        "Bash" => field("command").and_then(destructive_command),
        "Write" | "Edit" | "MultiEdit" => outside(field("file_path")?, cwd?).then_some("writes outside the project"),
        "NotebookEdit" => outside(field("notebook_path")?, cwd?).then_some("writes outside the project"),
        _ => None,
    }
}

/// The first destructive thing a shell command does, if any.
pub fn destructive_command(command: &str) -> Option<&'static str> {
    let words: Vec<String> = shlex::Shlex::new(command).collect();
    for simple in simple_commands(&words) {
        if let Some(why) = destructive_words(simple) {
            return Some(why);
        }
    }
    sql(&words)
}

/// Splits words at the shell's command separators (`;`, `&&`, `||`, `|`,
/// `&`, also when stuck to a word, as in `make;rm -rf x`): each piece is
/// one simple command.
fn simple_commands(words: &[String]) -> Vec<Vec<&str>> {
    let mut out = vec![Vec::new()];
    for w in words {
        let mut pieces = w.split([';', '&', '|']).peekable();
        while let Some(piece) = pieces.next() {
            if !piece.is_empty() {
                out.last_mut().expect("never empty").push(piece);
            }
            if pieces.peek().is_some() {
                out.push(Vec::new());
            }
        }
    }
    out
}

fn destructive_words(words: Vec<&str>) -> Option<&'static str> {
    let program = |w: &str| w.rsplit('/').next().unwrap_or(w).to_owned();
    // `rm` anywhere in it: after `sudo`, `xargs`, `find … -exec`, `env`.
    if let Some(at) = words.iter().position(|w| program(w) == "rm") {
        let recursive = words[at + 1..]
            .iter()
            .any(|w| *w == "--recursive" || (w.starts_with('-') && !w.starts_with("--") && w.contains(['r', 'R'])));
        if recursive {
            return Some("removes recursively");
        }
    }
    if let Some(at) = words.iter().position(|w| program(w) == "git") {
        let rest = &words[at + 1..];
        // The verb: the first word that is neither an option nor the value
        // of `-C`/`-c`.
        let mut verb = None;
        let mut i = 0;
        while i < rest.len() {
            match rest[i] {
                "-C" | "-c" => i += 2,
                w if w.starts_with('-') => i += 1,
                _ => {
                    verb = Some(i);
                    break;
                }
            }
        }
        match verb.map(|v| (rest[v], &rest[v + 1..])) {
            Some(("push", args)) => {
                let forced = args.iter().any(|w| {
                    *w == "--force"
                        || *w == "-f"
                        || w.starts_with("--force-with-lease")
                        || w.starts_with('+')
                        || (w.starts_with('-') && !w.starts_with("--") && w.contains('f'))
                });
                if forced {
                    return Some("force-pushes");
                }
            }
            Some(("reset", args)) if args.contains(&"--hard") => return Some("discards work (git reset --hard)"),
            _ => {}
        }
    }
    None
}

/// `DROP TABLE …` and the like, or `TRUNCATE`, wherever they appear (a
/// `psql -c "…"` argument, a heredoc).
fn sql(words: &[String]) -> Option<&'static str> {
    const DROPPED: &[&str] =
        &["TABLE", "DATABASE", "SCHEMA", "VIEW", "INDEX", "COLUMN", "COLLECTION", "KEYSPACE", "USER", "ROLE"];
    let tokens: Vec<String> = words
        .iter()
        .flat_map(|w| w.split(|c: char| !c.is_ascii_alphanumeric() && c != '_'))
        .filter(|t| !t.is_empty())
        .map(str::to_ascii_uppercase)
        .collect();
    tokens.iter().enumerate().find_map(|(i, t)| match t.as_str() {
        "DROP" if tokens.get(i + 1).is_some_and(|n| DROPPED.contains(&n.as_str())) => Some("drops data"),
        "TRUNCATE" => Some("empties data"),
        _ => None,
    })
}

/// Whether `path` (absolute, or relative to `cwd`) leaves `cwd`, read
/// lexically (`..` steps out, nothing is looked up on disk).
fn outside(path: &str, cwd: &str) -> bool {
    let root = normal(Path::new(cwd));
    let target = if Path::new(path).is_absolute() { normal(Path::new(path)) } else { normal(&root.join(path)) };
    !target.starts_with(&root)
}

fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bash(command: &str) -> Option<&'static str> {
        destructive("Bash", Some(&json!({ "command": command })), Some("/work/app"))
    }

    #[test]
    fn recursive_removal_is_destructive_however_it_is_spelt() {
        for c in [
            "rm -rf build/",
            "rm -r build",
            "rm -fR build",
            "rm --recursive build",
            "sudo rm -rf /var/lib/app",
            "cd /tmp && rm -rf x",
            "find . -name '*.o' -exec rm -rf {} +",
            "ls | xargs /bin/rm -r",
            "make clean;rm -rf dist",
        ] {
            assert_eq!(bash(c), Some("removes recursively"), "{c}");
        }
        for c in ["rm build.log", "rm -f build.log", "echo 'rm -rf /'", "grep -r rm src/"] {
            assert_eq!(bash(c), None, "{c}");
        }
    }

    #[test]
    fn force_pushes_and_hard_resets_are_destructive() {
        for c in [
            "git push --force",
            "git push -f origin main",
            "git push --force-with-lease",
            "git push origin +main",
            "git -C repo push -fu origin x",
        ] {
            assert_eq!(bash(c), Some("force-pushes"), "{c}");
        }
        assert_eq!(bash("git reset --hard HEAD~3"), Some("discards work (git reset --hard)"));
        for c in ["git push", "git push origin main", "git reset HEAD~1", "git status --force"] {
            assert_eq!(bash(c), None, "{c}");
        }
    }

    #[test]
    fn dropping_or_emptying_data_is_destructive_in_any_case_and_quoting() {
        assert_eq!(bash(r#"psql -c "DROP TABLE users;""#), Some("drops data"));
        assert_eq!(bash("sqlite3 app.db 'drop database prod'"), Some("drops data"));
        assert_eq!(bash(r#"mysql -e "TRUNCATE orders""#), Some("empties data"));
        assert_eq!(bash("echo drop it"), None);
        assert_eq!(bash("psql -c 'SELECT 1'"), None);
    }

    #[test]
    fn writes_outside_the_project_are_destructive() {
        let write =
            |path: &str| destructive("Write", Some(&json!({ "file_path": path, "content": "x" })), Some("/work/app"));
        assert_eq!(write("/etc/hosts"), Some("writes outside the project"));
        assert_eq!(write("/work/app/../other/x"), Some("writes outside the project"));
        assert_eq!(write("../secrets.env"), Some("writes outside the project"));
        assert_eq!(write("/work/application/x"), Some("writes outside the project"), "a sibling with a longer name");
        assert_eq!(write("/work/app/src/main.rs"), None);
        assert_eq!(write("src/./main.rs"), None);
        let edit = destructive("Edit", Some(&json!({ "file_path": "/home/u/.bashrc" })), Some("/work/app"));
        assert_eq!(edit, Some("writes outside the project"));
        assert_eq!(destructive("Write", Some(&json!({ "file_path": "/etc/x" })), None), None, "no project known");
        assert_eq!(destructive("Read", Some(&json!({ "file_path": "/etc/x" })), Some("/work/app")), None);
    }
}
