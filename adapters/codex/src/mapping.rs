//! Codex's hooks as AEP events (AEP-0002 Annex A.2 and its pins,
//! `conformance/fixtures/mappings/codex.json`), pure: a hook and the
//! adapter's memory of each thread in, the events to emit (and whether
//! the hook is held for a person's answer) out. A Codex thread is an AEP
//! session (`session_id`), a turn an AEP run (`turn_id`).
//!
//! | hook | AEP |
//! |---|---|
//! | `SessionStart` (or a thread's first hook) | `session.started` |
//! | `UserPromptSubmit` | `run.started`, run id = `turn_id` |
//! | `Stop` | `run.finished` |
//! | `PreToolUse` | `tool.requested`, subject the tool |
//! | `PostToolUse` | `tool.completed`, subject the tool |
//! | `PermissionRequest` | `attention.requested` (permission), held |
//! | `SubagentStart` / `SubagentStop` | `delegation.subagent.started` / `.stopped`, subject the subagent |
//! | `PostCompact` | `session.compacted` (`PreCompact`: nothing) |
//! | `SessionEnd` | `session.ended` |
//! | any other | `x.codex.session.<snake_case>` |
//!
//! Codex has no tool-failure hook: a command that exits non-zero is a
//! `tool.completed` too. A permission request is graded by the kit's rule
//! (`aep_adapter_kit::grade`), as Claude Code's are: Codex names its shell
//! tool `Bash`, so a `rm -rf` or a force-push is a `warning` marked
//! `destructive`, which a console confirms with a second tap. `SessionEnd` is past the annex's ten hooks (the
//! CLI has it, on some paths only): mapped as for Claude Code.

use aep_adapter_kit::decision::Decision;
use aep_adapter_kit::grade::permission_severity;
use aep_adapter_kit::mapping::{
    add_project, as_object, cut, run_started, session_ended, snake_case, Emission, Mapping, Sessions,
};
use aep_adapter_kit::permission;
use aep_engine::control::answer::Answer;
use aep_engine::protocol::ids::Draft;
use aep_engine::protocol::vocabulary::types;
use serde_json::{json, Value};

use crate::hook::HookInput;

/// The agent name and vendor prefix the adapter emits under.
pub const AGENT: &str = "codex";
pub use aep_adapter_kit::permission::{ALLOW, DENY};
/// A tool's input shown in a prompt is cut at this many characters.
const PROMPT_INPUT_CHARS: usize = 600;

/// Codex holds one kind of request: a permission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Permission;

pub type Plan = aep_adapter_kit::mapping::Plan<Permission>;

#[derive(Clone, Debug, Default)]
struct Thread {
    run: Option<String>,
    runs: u64,
}

/// The adapter's memory of the threads it has seen.
#[derive(Debug, Default)]
pub struct Mapper {
    threads: Sessions<Thread>,
    /// For turns Codex gives no id.
    minted: u64,
}

impl Mapper {
    pub fn new() -> Mapper {
        Mapper::default()
    }

    pub fn plan(&mut self, hook: &HookInput) -> Plan {
        let Some(session) = hook.session_id.clone().filter(|s| !s.is_empty()) else {
            return Plan::Unreadable(format!("{} has no session_id", hook.hook_event_name));
        };
        let name = hook.hook_event_name.as_str();
        let mut out = Vec::new();
        if !self.threads.contains(&session) && name != "SessionEnd" {
            self.threads.remember(&session);
            out.push(Emission::in_session(&session, Draft::new(types::SESSION_STARTED).data(session_started(hook))));
            if name == "SessionStart" {
                return Plan::Observe(out);
            }
        }
        self.threads.touch(&session);
        let run = hook.turn_id.clone().filter(|t| !t.is_empty()).or_else(|| self.run_of(&session).map(str::to_owned));
        let in_run = |draft: Draft| draft.maybe_run(run.clone());
        let tool = || hook.tool_name.clone().unwrap_or_else(|| "unknown".into());
        let draft = match name {
            "SessionStart" => Draft::new(types::SESSION_STARTED).data(session_started(hook)),
            "SessionEnd" => session_ended(self.threads.remove(&session).map_or(0, |t| t.runs)),
            "UserPromptSubmit" => {
                let id = hook.turn_id.clone().filter(|t| !t.is_empty()).unwrap_or_else(|| self.mint_run());
                let thread = self.threads.entry(&session);
                thread.run = Some(id.clone());
                thread.runs += 1;
                run_started(id, hook.prompt.as_deref())
            }
            "Stop" => {
                let open = self.threads.get_mut(&session).and_then(|t| t.run.take());
                let Some(run) = run.or(open) else { return Plan::Observe(out) };
                let mut data = json!({});
                if let Some(m) = hook.text("last_assistant_message") {
                    data["summary"] = m.into();
                }
                Draft::new(types::RUN_FINISHED).run(run).data(data)
            }
            "PreToolUse" => {
                let mut data = json!({ "tool": tool_of(hook) });
                if let Some(input) = &hook.tool_input {
                    data["args"] = as_object(input);
                }
                in_run(Draft::new(types::TOOL_REQUESTED)).subject(tool()).data(data)
            }
            "PostToolUse" => {
                let mut data = json!({ "tool": tool_of(hook) });
                if let Some(result) = &hook.tool_response {
                    data["result"] = result.clone();
                }
                in_run(Draft::new(types::TOOL_COMPLETED)).subject(tool()).data(data)
            }
            "PermissionRequest" => {
                let asked = permission_request(hook);
                let destructive = asked.destructive_because.is_some();
                let request = in_run(Draft::new(types::ATTENTION_REQUESTED))
                    .subject(tool())
                    .data(asked.data)
                    .severity(permission_severity(destructive));
                return Plan::Ask { before: out, session, request, kind: Permission };
            }
            "SubagentStart" | "SubagentStop" => {
                let mut data = json!({});
                if let Some(t) = hook.text("agent_type") {
                    data["agent_type"] = t.into();
                }
                let ty = if name == "SubagentStart" {
                    types::DELEGATION_SUBAGENT_STARTED
                } else {
                    types::DELEGATION_SUBAGENT_STOPPED
                };
                let draft = in_run(Draft::new(ty)).data(data);
                match hook.text("agent_id") {
                    Some(id) => draft.subject(id.to_owned()),
                    None => draft,
                }
            }
            // `session.compacted` once, at `PostCompact`.
            "PreCompact" => return Plan::Observe(out),
            "PostCompact" => {
                let mut data = json!({});
                if let Some(t) = hook.text("trigger") {
                    data["trigger"] = t.into();
                }
                Draft::new(types::SESSION_COMPACTED).data(data)
            }
            other => in_run(Draft::new(format!("x.{AGENT}.session.{}", snake_case(other)))).data(json!({})),
        };
        out.push(Emission::in_session(&session, draft));
        Plan::Observe(out)
    }

    /// The turn open in `session`, if any.
    pub fn run_of(&self, session: &str) -> Option<&str> {
        self.threads.get(session).and_then(|t| t.run.as_deref())
    }

    fn mint_run(&mut self) -> String {
        self.minted += 1;
        format!("run-{}", self.minted)
    }
}

impl Mapping for Mapper {
    type Input = HookInput;
    type Ask = Permission;
    const AGENT: &'static str = AGENT;

    fn hook_name(input: &HookInput) -> &str {
        &input.hook_event_name
    }

    fn plan(&mut self, input: &HookInput) -> Plan {
        Mapper::plan(self, input)
    }

    fn run_of(&self, session: &str) -> Option<&str> {
        Mapper::run_of(self, session)
    }

    fn refusing(_: &Permission) -> Option<&'static str> {
        Some(DENY)
    }

    fn answered(_: &Permission, answer: &Answer, by: &str) -> Value {
        Decision::of(answer, by, ALLOW).to_hook_output()
    }

    fn refuses(_: &Permission, answer: &Answer) -> bool {
        Decision::refuses(answer, ALLOW)
    }
}

/// The client, what started the thread and on which model; the working
/// directory and its folder's name as the label a person knows it by.
fn session_started(hook: &HookInput) -> Value {
    let mut data = json!({ "client": { "name": AGENT } });
    if let Some(source) = hook.text("source") {
        data["trigger"] = source.into();
    }
    if let Some(model) = &hook.model {
        data["gen_ai.request.model"] = model.as_str().into();
    }
    add_project(&mut data, hook.cwd.as_deref());
    data
}

fn tool_of(hook: &HookInput) -> Value {
    aep_adapter_kit::mapping::tool(hook.tool_name.as_deref(), hook.tool_use_id.as_deref())
}

/// A permission request: the tool and exactly what it would do, so a
/// person can decide from the prompt alone; what it is about in
/// `context` (the command, or the files a patch changes, and Codex's
/// reason); marked destructive (with why) when approving it cannot be
/// undone.
fn permission_request(hook: &HookInput) -> permission::Asked {
    let prompt = permission_prompt(hook.tool_name.as_deref().unwrap_or("a tool"), hook.tool_input.as_ref());
    permission::request(hook.tool_name.as_deref(), hook.tool_input.as_ref(), hook.cwd.as_deref(), prompt)
}

/// `Permission requested: shell — rm -rf build (clean build dir)`: the
/// tool, its command (or its input), and why, where Codex says.
pub fn permission_prompt(tool: &str, input: Option<&Value>) -> String {
    let field = |name: &str| input.and_then(|i| i.get(name)).and_then(Value::as_str);
    let what = field("command").map(str::to_owned).or_else(|| input.map(Value::to_string)).unwrap_or_default();
    let mut prompt = format!("Permission requested: {tool}");
    if !what.is_empty() {
        prompt.push_str(" — ");
        prompt.push_str(&cut(&what, PROMPT_INPUT_CHARS));
    }
    if let Some(why) = field("description").filter(|d| !d.is_empty()) {
        prompt.push_str(&format!(" ({})", cut(why, PROMPT_INPUT_CHARS)));
    }
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;
    use aep_engine::Severity;

    fn hook(v: Value) -> HookInput {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_turn_is_a_run_and_a_permission_in_it_is_held() {
        let mut m = Mapper::new();
        let Plan::Observe(first) = m.plan(&hook(
            json!({"hook_event_name": "UserPromptSubmit", "session_id": "t1", "turn_id": "u1", "prompt": "hi"}),
        )) else {
            panic!()
        };
        let types: Vec<_> = first.iter().map(|e| e.draft.ty().to_owned()).collect();
        assert_eq!(types, ["session.started", "run.started"]);
        assert_eq!(m.run_of("t1"), Some("u1"));
        let asked = hook(
            json!({"hook_event_name": "PermissionRequest", "session_id": "t1", "turn_id": "u1", "tool_name": "Bash",
            "tool_input": {"command": "touch x", "description": "make x"}}),
        );
        let Plan::Ask { request, session, .. } = m.plan(&asked) else { panic!() };
        assert_eq!((session.as_str(), request.ty()), ("t1", "attention.requested"));
        let Plan::Observe(stop) =
            m.plan(&hook(json!({"hook_event_name": "Stop", "session_id": "t1", "turn_id": "u1"})))
        else {
            panic!()
        };
        assert_eq!(stop[0].draft.ty(), "run.finished");
        assert_eq!(m.run_of("t1"), None);
    }

    #[test]
    fn a_recursive_removal_is_a_warning_marked_destructive_and_a_plain_command_is_not() {
        let ask = |command: &str| {
            let h = hook(
                json!({"hook_event_name": "PermissionRequest", "session_id": "t1", "turn_id": "u1", "cwd": "/work/app",
                "tool_name": "Bash", "tool_input": {"command": command}}),
            );
            let Plan::Ask { request, .. } = Mapper::new().plan(&h) else { panic!() };
            let who = aep_engine::protocol::ids::Identity::new("aep://h/agent/codex", AGENT);
            let e =
                request.session("t1").seq(9).build(&who, "01J0000000000000000000000A", aep_engine::UnixMs(0)).unwrap();
            (e.severity(), e.data_field("destructive").cloned())
        };
        assert_eq!(ask("rm -rf build/"), (Severity::Warning, Some(json!(true))));
        assert_eq!(ask("ls -la"), (Severity::Notice, None));
    }

    /// The `attention.requested` a `PermissionRequest` for `tool` with
    /// `input` becomes, at capture `full`.
    fn asked(tool: &str, input: Value) -> aep_engine::protocol::event::Event {
        let h = hook(json!({"hook_event_name": "PermissionRequest", "session_id": "t1", "turn_id": "u1",
            "cwd": "/work/app", "tool_name": tool, "tool_input": input}));
        let Plan::Ask { request, .. } = Mapper::new().plan(&h) else { panic!() };
        let who = aep_engine::protocol::ids::Identity::new("aep://h/agent/codex", AGENT);
        request.session("t1").seq(9).build(&who, "01J0000000000000000000000A", aep_engine::UnixMs(0)).unwrap()
    }

    #[test]
    fn a_command_request_carries_the_command_and_codex_s_reason_as_claude_code_s_does() {
        let e = asked("Bash", json!({"command": "git reset --hard", "description": "start over"}));
        let context = e.data_field("context").unwrap();
        assert_eq!((&context["command"], &context["description"]), (&json!("git reset --hard"), &json!("start over")));
        assert_eq!(e.data_field("destructive_because"), Some(&json!("discards work (git reset --hard)")));
    }

    #[test]
    fn a_patch_request_carries_each_file_s_change() {
        let patch = "*** Begin Patch\n*** Update File: src/retry.rs\n@@ fn tries\n-    3\n+    5\n*** Add File: /etc/app.conf\n+on\n*** End Patch";
        let e = asked("apply_patch", json!({ "command": patch }));
        assert_eq!(
            e.data_field("context").unwrap()["changes"],
            json!([
                { "path": "src/retry.rs", "diff": "@@ fn tries\n-    3\n+    5" },
                { "path": "/etc/app.conf", "new": "on" }
            ])
        );
        assert!(e.data_field("context").unwrap().get("command").is_none(), "a patch is not shown as a command");
        assert_eq!(e.data_field("destructive_because"), Some(&json!("writes outside the project")));
        assert_eq!(e.severity(), Severity::Warning);
    }

    #[test]
    fn a_prompt_without_a_description_names_the_tool_and_the_command() {
        assert_eq!(permission_prompt("Bash", Some(&json!({"command": "ls"}))), "Permission requested: Bash — ls");
    }

    #[test]
    fn typed_words_deny_with_the_words_and_the_allow_option_allows() {
        let typed = Mapper::answered(&Permission, &Answer::Text { text: "not now".into() }, "phone");
        assert_eq!(typed["hookSpecificOutput"]["decision"], json!({"behavior": "deny", "message": "not now"}));
        let allow = Mapper::answered(&Permission, &Answer::option(ALLOW), "phone");
        assert_eq!(allow["hookSpecificOutput"]["decision"], json!({"behavior": "allow"}));
    }
}
