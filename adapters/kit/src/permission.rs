//! A permission request's payload as every adapter on the kit raises it:
//! the prompt, Allow and Deny, and what a person needs to decide from a
//! phone without the terminal: the command whole, the files the tool
//! would change, the agent's own explanation
//! ([`RequestContext`](aep_engine::protocol::request_context::RequestContext)
//! in `context`), and why approving it cannot be undone
//! (`destructive_because`, from [`crate::grade`]).
//!
//! Tool inputs are read as the agents send them: Claude Code's `Bash`,
//! `Edit`, `MultiEdit`, `Write` and `NotebookEdit`, and Codex's `Bash` and
//! `apply_patch` (its patch envelope, [`patch`]).

use aep_engine::protocol::request_context::{FileChange, RequestContext, CONTEXT, DESTRUCTIVE_BECAUSE};
use serde_json::{json, Value};

/// The option that allows, and the one that refuses (AEP-0008: unmatched
/// typed text applies it, with the text as the reason).
pub const ALLOW: &str = "allow";
pub const DENY: &str = "deny";

/// An `attention.requested` payload for a tool's permission.
#[derive(Clone, Debug, PartialEq)]
pub struct Asked {
    pub data: Value,
    /// Why approving it cannot be undone, when it cannot: the request is
    /// then raised at `warning`.
    pub destructive_because: Option<String>,
}

/// The payload asking whether `tool` may run with `input` in `cwd`;
/// `prompt` is the adapter's own sentence for it.
pub fn request(tool: Option<&str>, input: Option<&Value>, cwd: Option<&str>, prompt: String) -> Asked {
    let name = tool.unwrap_or("a tool");
    let because = crate::grade::destructive(tool.unwrap_or_default(), input, cwd);
    let mut context = serde_json::to_value(context_of(tool.unwrap_or_default(), input)).expect("plain data");
    context["tool"] = name.into();
    if let Some(input) = input {
        context["tool_input"] = input.clone();
    }
    if let Some(cwd) = cwd {
        context["cwd"] = cwd.into();
    }
    let mut data = json!({
        "kind": "permission",
        "prompt": prompt,
        "options": [{ "id": ALLOW, "label": "Allow" }, { "id": DENY, "label": "Deny" }],
        "respond_via": ["control"],
        CONTEXT: context,
    });
    if let Some(why) = &because {
        data["destructive"] = true.into();
        data[DESTRUCTIVE_BECAUSE] = why.as_str().into();
    }
    Asked { data, destructive_because: because }
}

/// What `tool` with `input` is about, in the shape a console reads.
pub fn context_of(tool: &str, input: Option<&Value>) -> RequestContext {
    let text = |name: &str| input.and_then(|i| i.get(name)).and_then(Value::as_str).map(str::to_owned);
    let description = text("description").filter(|d| !d.trim().is_empty());
    let mut context = RequestContext { description, ..RequestContext::default() };
    match tool {
        "Edit" => context.changes = text("file_path").map(|path| edit(path, input)).into_iter().collect(),
        "MultiEdit" => {
            let path = text("file_path").unwrap_or_default();
            let edits = input.and_then(|i| i.get("edits")).and_then(Value::as_array);
            context.changes = edits.into_iter().flatten().map(|e| edit(path.clone(), Some(e))).collect();
        }
        "Write" => {
            context.changes = text("file_path")
                .map(|path| FileChange { path, new: text("content"), ..FileChange::default() })
                .into_iter()
                .collect();
        }
        "NotebookEdit" => {
            context.changes = text("notebook_path")
                .map(|path| FileChange { path, new: text("new_source"), ..FileChange::default() })
                .into_iter()
                .collect();
        }
        _ => {
            let body = text("command").or_else(|| text("patch")).or_else(|| text("input"));
            match body.as_deref().and_then(patch::changes) {
                Some(changes) => context.changes = changes,
                None => context.command = text("command"),
            }
        }
    }
    context
}

/// One `old_string` → `new_string` edit of `path`.
fn edit(path: String, input: Option<&Value>) -> FileChange {
    let text = |name: &str| input.and_then(|i| i.get(name)).and_then(Value::as_str).map(str::to_owned);
    FileChange { path, old: text("old_string"), new: text("new_string"), ..FileChange::default() }
}

/// Codex's patch envelope (`*** Begin Patch` … `*** End Patch`) read
/// into the files it changes.
pub mod patch {
    use aep_engine::protocol::request_context::FileChange;

    /// The files `text` changes, or `None` when it is not a patch.
    pub fn changes(text: &str) -> Option<Vec<FileChange>> {
        let mut lines = text.lines().map(|l| l.strip_suffix('\r').unwrap_or(l));
        if lines.by_ref().find(|l| !l.trim().is_empty())?.trim() != "*** Begin Patch" {
            return None;
        }
        let mut out: Vec<FileChange> = Vec::new();
        let mut body: Vec<&str> = Vec::new();
        let mut adding = false;
        let finish = |out: &mut Vec<FileChange>, body: &mut Vec<&str>, adding: bool| {
            if let Some(last) = out.last_mut() {
                if adding {
                    let content: Vec<&str> = body.iter().map(|l| l.strip_prefix('+').unwrap_or(*l)).collect();
                    last.new = Some(content.join("\n"));
                } else if !body.is_empty() {
                    last.diff = Some(body.join("\n"));
                }
            }
            body.clear();
        };
        for line in lines {
            let header = |name: &str| line.strip_prefix(name).map(|p| p.trim().to_owned());
            if line.trim() == "*** End Patch" {
                break;
            } else if let Some(path) = header("*** Add File: ") {
                finish(&mut out, &mut body, adding);
                out.push(FileChange { path, new: Some(String::new()), ..FileChange::default() });
                adding = true;
            } else if let Some(path) = header("*** Update File: ") {
                finish(&mut out, &mut body, adding);
                out.push(FileChange { path, ..FileChange::default() });
                adding = false;
            } else if let Some(path) = header("*** Delete File: ") {
                finish(&mut out, &mut body, adding);
                out.push(FileChange { path, deleted: true, ..FileChange::default() });
                adding = false;
            } else if let Some(to) = header("*** Move to: ") {
                if let Some(last) = out.last_mut() {
                    last.move_to = Some(to);
                }
            } else if line.trim() != "*** End of File" && !out.is_empty() {
                body.push(line);
            }
        }
        finish(&mut out, &mut body, adding);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bash_request_carries_the_command_whole_and_its_description() {
        let command = "git fetch origin\n&& git checkout main && git reset --hard origin/main";
        let c = context_of("Bash", Some(&json!({ "command": command, "description": "Start over from main" })));
        assert_eq!(c.command.as_deref(), Some(command));
        assert_eq!(c.description.as_deref(), Some("Start over from main"));
        assert!(c.changes.is_empty());
    }

    #[test]
    fn an_edit_names_the_file_and_the_text_replaced() {
        let c = context_of(
            "Edit",
            Some(&json!({ "file_path": "src/retry.rs", "old_string": "let n = 3;", "new_string": "let n = 5;" })),
        );
        assert_eq!(
            c.changes,
            [FileChange {
                path: "src/retry.rs".into(),
                old: Some("let n = 3;".into()),
                new: Some("let n = 5;".into()),
                ..FileChange::default()
            }]
        );
        assert!(c.command.is_none());
    }

    #[test]
    fn multi_edit_write_and_notebook_edit_each_name_their_changes() {
        let multi = context_of(
            "MultiEdit",
            Some(&json!({ "file_path": "a.rs", "edits": [
                { "old_string": "a", "new_string": "b" }, { "old_string": "c", "new_string": "d" }
            ] })),
        );
        let olds: Vec<_> = multi.changes.iter().map(|c| (c.path.as_str(), c.old.as_deref())).collect();
        assert_eq!(olds, [("a.rs", Some("a")), ("a.rs", Some("c"))]);
        let write = context_of("Write", Some(&json!({ "file_path": "new.md", "content": "# Title\n" })));
        assert_eq!((write.changes[0].old.as_deref(), write.changes[0].new.as_deref()), (None, Some("# Title\n")));
        let nb = context_of("NotebookEdit", Some(&json!({ "notebook_path": "n.ipynb", "new_source": "print(1)" })));
        assert_eq!(nb.changes[0].path, "n.ipynb");
    }

    #[test]
    fn a_codex_patch_is_read_into_its_files() {
        let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@ fn main\n-    old();\n+    new();\n*** Add File: docs/a.md\n+hello\n+world\n*** Delete File: tmp.txt\n*** Update File: b.rs\n*** Move to: c.rs\n@@\n-x\n+y\n*** End of File\n*** End Patch\n";
        let c = context_of("apply_patch", Some(&json!({ "command": patch })));
        assert!(c.command.is_none(), "a patch is not a shell command");
        let paths: Vec<_> = c.changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["src/lib.rs", "docs/a.md", "tmp.txt", "b.rs"]);
        assert_eq!(c.changes[0].diff.as_deref(), Some("@@ fn main\n-    old();\n+    new();"));
        assert_eq!(c.changes[1].new.as_deref(), Some("hello\nworld"));
        assert!(c.changes[2].deleted);
        assert_eq!(c.changes[3].move_to.as_deref(), Some("c.rs"));
        assert_eq!(c.changes[3].diff.as_deref(), Some("@@\n-x\n+y"));
        assert_eq!(patch::changes("ls -la"), None);
    }

    #[test]
    fn a_destructive_request_says_why_beside_destructive_at_warning() {
        let asked = request(Some("Bash"), Some(&json!({ "command": "rm -rf build/" })), Some("/w"), "Bash: rm".into());
        assert_eq!(asked.destructive_because.as_deref(), Some("removes files recursively"));
        assert_eq!(asked.data["destructive"], json!(true));
        assert_eq!(asked.data["destructive_because"], json!("removes files recursively"));
        assert_eq!(asked.data["context"]["command"], json!("rm -rf build/"));
        assert_eq!(asked.data["context"]["cwd"], json!("/w"));
        let plain = request(Some("Bash"), Some(&json!({ "command": "ls" })), None, "Bash: ls".into());
        assert_eq!((plain.destructive_because, plain.data.get("destructive_because")), (None, None));
    }
}
