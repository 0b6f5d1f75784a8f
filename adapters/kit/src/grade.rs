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
//! * a file tool (`Write`, `Edit`, `MultiEdit`, `NotebookEdit`, Codex's
//!   `apply_patch`) writes outside the project: a path it changes,
//!   resolved against the session's working directory, is not under that
//!   directory.
//!
//! A recursive removal says whether it reaches outside the project (a
//! target that is absolute and not under the working directory, under
//! `~` or `$HOME`, or climbing out with `..`).
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

/// Why a request is destructive, in a few words for the card: every
/// reason it has, in the order the command does them.
pub fn destructive(tool: &str, input: Option<&Value>, cwd: Option<&str>) -> Option<String> {
    let field = |name: &str| input.and_then(|i| i.get(name)).and_then(Value::as_str);
    let writes_outside = |leaves: bool| leaves.then(|| WRITES_OUTSIDE.to_owned());
    match tool {
        "Bash" => field("command").and_then(|c| destructive_command(c, cwd)),
        "Write" | "Edit" | "MultiEdit" => writes_outside(outside(field("file_path")?, cwd?)),
        "NotebookEdit" => writes_outside(outside(field("notebook_path")?, cwd?)),
        "apply_patch" => {
            let cwd = cwd?;
            let changes = crate::permission::patch::changes(field("command").or_else(|| field("patch"))?)?;
            let mut paths = changes.iter().flat_map(|c| std::iter::once(&c.path).chain(c.move_to.as_ref()));
            writes_outside(paths.any(|p| outside(p, cwd)))
        }
        _ => None,
    }
}

const WRITES_OUTSIDE: &str = "writes outside the project";
const REMOVES: &str = "removes files recursively";
const REMOVES_OUTSIDE: &str = "removes files recursively outside the project";

/// Every destructive thing a shell command run in `cwd` does, once each,
/// joined: `discards work (git reset --hard); removes files recursively
/// outside the project`.
pub fn destructive_command(command: &str, cwd: Option<&str>) -> Option<String> {
    let words: Vec<String> = shlex::Shlex::new(&lines_as_commands(command)).collect();
    let mut reasons: Vec<&str> = Vec::new();
    for why in
        simple_commands(&words).into_iter().filter_map(|simple| destructive_words(simple, cwd)).chain(sql(&words))
    {
        if !reasons.contains(&why) {
            reasons.push(why);
        }
    }
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// `command` with each line break that ends a command (not quoted, not
/// escaped) written as `;`, as the shell reads it.
fn lines_as_commands(command: &str) -> String {
    let (mut quote, mut escaped) = (None, false);
    command
        .chars()
        .map(|c| {
            let out = match (c, quote) {
                ('\n', None) if !escaped => ';',
                _ => c,
            };
            match (c, quote) {
                _ if escaped => escaped = false,
                ('\\', q) if q != Some('\'') => escaped = true,
                ('\'' | '"', None) => quote = Some(c),
                (c, Some(q)) if c == q => quote = None,
                _ => {}
            }
            out
        })
        .collect()
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

fn destructive_words(words: Vec<&str>, cwd: Option<&str>) -> Option<&'static str> {
    let program = |w: &str| w.rsplit('/').next().unwrap_or(w).to_owned();
    // `rm` anywhere in it: after `sudo`, `xargs`, `find … -exec`, `env`.
    if let Some(at) = words.iter().position(|w| program(w) == "rm") {
        let args = &words[at + 1..];
        let recursive = args
            .iter()
            .any(|w| *w == "--recursive" || (w.starts_with('-') && !w.starts_with("--") && w.contains(['r', 'R'])));
        if recursive {
            let leaves = args.iter().filter(|w| !w.starts_with('-')).any(|target| leaves_project(target, cwd));
            return Some(if leaves { REMOVES_OUTSIDE } else { REMOVES });
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

/// Whether a removal's `target` reaches outside the project in `cwd`: a
/// home path always does; a path is resolved against `cwd` when known,
/// and without one only an absolute path or a climb out counts.
fn leaves_project(target: &str, cwd: Option<&str>) -> bool {
    if target == "~" || target.starts_with("~/") || target.starts_with("$HOME") || target.starts_with("${HOME}") {
        return true;
    }
    match cwd {
        Some(cwd) => outside(target, cwd),
        None => Path::new(target).is_absolute() || target.split('/').next() == Some(".."),
    }
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

    fn bash(command: &str) -> Option<String> {
        destructive("Bash", Some(&json!({ "command": command })), Some("/work/app"))
    }

    #[test]
    fn recursive_removal_is_destructive_however_it_is_spelt() {
        for c in [
            "rm -rf build/",
            "rm -r build",
            "rm -fR build",
            "rm --recursive build",
            "cd /tmp && rm -rf x",
            "find . -name '*.o' -exec rm -rf {} +",
            "ls | xargs /bin/rm -r",
            "make clean;rm -rf dist",
        ] {
            assert_eq!(bash(c).as_deref(), Some(REMOVES), "{c}");
        }
        for c in ["rm build.log", "rm -f build.log", "echo 'rm -rf /'", "grep -r rm src/"] {
            assert_eq!(bash(c).as_deref(), None, "{c}");
        }
    }

    #[test]
    fn a_recursive_removal_says_when_it_reaches_outside_the_project() {
        for c in [
            "sudo rm -rf /var/lib/app",
            "git clean -fdx && rm -rf ~/.cargo/registry",
            "rm -r $HOME/cache",
            "rm -rf ../other",
            "rm -rf build /work/application",
        ] {
            assert_eq!(bash(c).as_deref(), Some(REMOVES_OUTSIDE), "{c}");
        }
        assert_eq!(bash("rm -rf /work/app/target ./dist").as_deref(), Some(REMOVES));
        assert_eq!(
            bash("git fetch\ngit reset --hard").as_deref(),
            Some("discards work (git reset --hard)"),
            "a line is a command"
        );
        assert_eq!(bash("echo 'a\nrm -rf x'"), None, "a quoted line break is no command's end");
        assert_eq!(
            bash("git checkout main && git reset --hard origin/main\n&& git clean -fdx && rm -rf ~/.cargo/registry")
                .as_deref(),
            Some("discards work (git reset --hard); removes files recursively outside the project"),
            "every reason, in the command's order"
        );
        assert_eq!(destructive_command("rm -rf /tmp/x", None).as_deref(), Some(REMOVES_OUTSIDE));
        assert_eq!(destructive_command("rm -rf target", None).as_deref(), Some(REMOVES));
    }

    #[test]
    fn a_patch_writing_outside_the_project_is_destructive() {
        let patch = |body: &str| {
            destructive(
                "apply_patch",
                Some(&json!({ "command": format!("*** Begin Patch\n{body}\n*** End Patch") })),
                Some("/work/app"),
            )
        };
        assert_eq!(patch("*** Add File: /etc/cron.d/job\n+x").as_deref(), Some(WRITES_OUTSIDE));
        assert_eq!(
            patch("*** Update File: src/a.rs\n*** Move to: ../elsewhere.rs\n@@\n-x\n+y").as_deref(),
            Some(WRITES_OUTSIDE)
        );
        assert_eq!(patch("*** Update File: src/a.rs\n@@\n-x\n+y").as_deref(), None);
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
            assert_eq!(bash(c).as_deref(), Some("force-pushes"), "{c}");
        }
        assert_eq!(bash("git reset --hard HEAD~3").as_deref(), Some("discards work (git reset --hard)"));
        for c in ["git push", "git push origin main", "git reset HEAD~1", "git status --force"] {
            assert_eq!(bash(c).as_deref(), None, "{c}");
        }
    }

    #[test]
    fn dropping_or_emptying_data_is_destructive_in_any_case_and_quoting() {
        assert_eq!(bash(r#"psql -c "DROP TABLE users;""#).as_deref(), Some("drops data"));
        assert_eq!(bash("sqlite3 app.db 'drop database prod'").as_deref(), Some("drops data"));
        assert_eq!(bash(r#"mysql -e "TRUNCATE orders""#).as_deref(), Some("empties data"));
        assert_eq!(bash("echo drop it").as_deref(), None);
        assert_eq!(bash("psql -c 'SELECT 1'").as_deref(), None);
    }

    #[test]
    fn writes_outside_the_project_are_destructive() {
        let write =
            |path: &str| destructive("Write", Some(&json!({ "file_path": path, "content": "x" })), Some("/work/app"));
        assert_eq!(write("/etc/hosts").as_deref(), Some("writes outside the project"));
        assert_eq!(write("/work/app/../other/x").as_deref(), Some("writes outside the project"));
        assert_eq!(write("../secrets.env").as_deref(), Some("writes outside the project"));
        assert_eq!(
            write("/work/application/x").as_deref(),
            Some("writes outside the project"),
            "a sibling with a longer name"
        );
        assert_eq!(write("/work/app/src/main.rs").as_deref(), None);
        assert_eq!(write("src/./main.rs").as_deref(), None);
        let edit = destructive("Edit", Some(&json!({ "file_path": "/home/u/.bashrc" })), Some("/work/app"));
        assert_eq!(edit.as_deref(), Some("writes outside the project"));
        assert_eq!(destructive("Write", Some(&json!({ "file_path": "/etc/x" })), None), None, "no project known");
        assert_eq!(destructive("Read", Some(&json!({ "file_path": "/etc/x" })), Some("/work/app")), None);
    }
}
