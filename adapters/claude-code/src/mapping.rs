//! Claude Code's hooks as AEP events (AEP-0002 Annex A.1), pure: a hook
//! and the adapter's memory of each session in, the events to emit (and
//! whether the hook is held for a person's answer) out.
//!
//! The table, and where it deviates:
//!
//! | hook | AEP |
//! |---|---|
//! | first hook of a session, or `SessionStart` | `session.started` |
//! | `SessionEnd` | `session.ended` |
//! | `UserPromptSubmit` (one turn) | `run.started`, run id = `prompt_id` |
//! | `Stop` / `StopFailure` | `run.finished` / `run.failed` |
//! | `PreToolUse` | `tool.requested` |
//! | `PostToolUse` / `PostToolUseFailure` | `tool.completed` / `tool.failed` |
//! | `PermissionDenied` | `tool.denied` |
//! | `PermissionRequest` | `attention.requested` (permission), held |
//! | `Elicitation` | `attention.requested` (form, AEP-0006), held |
//! | `Notification` | `progress.status` |
//! | `SubagentStart` / `SubagentStop` | `delegation.subagent.started` / `.stopped` |
//! | `PostCompact` | `session.compacted` (`PreCompact`: nothing) |
//! | `TaskCreated` / `TaskCompleted` | `progress.task.planned` / `.completed` |
//! | `TeammateIdle` | `agent.idle` |
//! | any other | `x.claude-code.session.<snake_case>` |
//!
//! Deviations: Claude Code calls `SessionStart` on command hooks only, so
//! a session opened over HTTP hooks starts at its first hook. Every
//! `Notification` is a `progress.status` (with its type as `phase`): the
//! permission prompt it announces is already a held, answerable
//! `attention.requested`, and a second, unanswerable card for the same
//! prompt would be noise.

use aep_adapter_kit::grade::permission_severity;
use aep_adapter_kit::mapping::{add_project, as_object, cut, run_started, session_ended, Mapping, Sessions};
use aep_adapter_kit::permission;
use aep_engine::control::answer::Answer;
use aep_engine::protocol::event::Event;
use aep_engine::protocol::ids::Draft;
use aep_engine::protocol::vocabulary::types;
use serde_json::{json, Map, Value};

use crate::hook::{Decision, HookInput};
use crate::remember::Remember;

/// The agent name and vendor prefix the adapter emits under.
pub const AGENT: &str = "claude-code";
pub use aep_adapter_kit::mapping::{snake_case, Emission, MAX_SESSIONS};
pub use aep_adapter_kit::permission::{ALLOW, DENY};
/// A tool's input shown in a prompt is cut at this many characters.
const PROMPT_INPUT_CHARS: usize = 600;

/// What to do with one hook.
pub type Plan = aep_adapter_kit::mapping::Plan<AskKind>;

/// What a held request returns to Claude Code.
#[derive(Clone, Debug, PartialEq)]
pub enum AskKind {
    /// A permission, with the decisions it offers to remember.
    Permission {
        remember: Vec<Remember>,
    },
    Elicitation,
}

#[derive(Clone, Debug, Default)]
struct SessionMemory {
    run: Option<String>,
    runs: u64,
    /// The latest `PreToolUse`: the tool, its input and its call id. The
    /// permission Claude Code then asks for is about that call.
    asking: Option<(String, Option<Value>, String)>,
}

/// The adapter's memory of the sessions it has seen.
#[derive(Debug, Default)]
pub struct Mapper {
    sessions: Sessions<SessionMemory>,
    /// For runs Claude Code gives no id.
    minted: u64,
}

impl Mapper {
    pub fn new() -> Mapper {
        Mapper::default()
    }

    /// The run open in `session`, if any.
    pub fn run_of(&self, session: &str) -> Option<&str> {
        self.sessions.get(session).and_then(|s| s.run.as_deref())
    }

    pub fn plan(&mut self, hook: &HookInput) -> Plan {
        let Some(session) = hook.session_id.clone().filter(|s| !s.is_empty()) else {
            return Plan::Unreadable(format!("{} has no session_id", hook.hook_event_name));
        };
        let name = hook.hook_event_name.as_str();
        let mut out = Vec::new();
        let fresh = !self.sessions.contains(&session);
        if fresh && name != "SessionEnd" {
            self.sessions.remember(&session);
            out.push(emission(&session, Draft::new(types::SESSION_STARTED).data(session_started(hook))));
            if name == "SessionStart" {
                return Plan::Observe(out);
            }
        }
        self.sessions.touch(&session);
        let run = self.run_of(&session).map(str::to_owned);
        let tool = || tool_of(hook);
        let in_run = |draft: Draft| draft.maybe_run(run.clone());
        let draft = match name {
            "SessionStart" => Draft::new(types::SESSION_STARTED).data(session_started(hook)),
            "SessionEnd" => session_ended(self.sessions.remove(&session).map_or(0, |s| s.runs)),
            "UserPromptSubmit" => {
                let id = hook.prompt_id.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| self.mint_run());
                let memory = self.sessions.entry(&session);
                memory.run = Some(id.clone());
                memory.runs += 1;
                run_started(id, hook.prompt.as_deref())
            }
            "Stop" | "StopFailure" => {
                let Some(run) = self.sessions.get_mut(&session).and_then(|s| s.run.take()) else {
                    return Plan::Observe(out);
                };
                if name == "Stop" {
                    let mut data = json!({});
                    if let Some(m) = hook.text("last_assistant_message") {
                        data["summary"] = m.into();
                    }
                    Draft::new(types::RUN_FINISHED).run(run).data(data)
                } else {
                    let reason = hook.text("error").or(hook.text("reason")).unwrap_or("error");
                    Draft::new(types::RUN_FAILED).run(run).data(json!({ "reason": reason }))
                }
            }
            "PreToolUse" => {
                if let (Some(memory), Some(call)) = (self.sessions.get_mut(&session), &hook.tool_use_id) {
                    let name = hook.tool_name.clone().unwrap_or_default();
                    memory.asking = Some((name, hook.tool_input.clone(), call.clone()));
                }
                let mut data = json!({ "tool": tool() });
                if let Some(input) = &hook.tool_input {
                    data["args"] = as_object(input);
                }
                in_run(Draft::new(types::TOOL_REQUESTED)).data(data)
            }
            "PostToolUse" => {
                let mut data = json!({ "tool": tool(), "status": "ok" });
                if let Some(ms) = hook.duration_ms {
                    data["duration_ms"] = ms.into();
                }
                if let Some(result) = &hook.tool_response {
                    data["result"] = result.clone();
                }
                in_run(Draft::new(types::TOOL_COMPLETED)).data(data)
            }
            "PostToolUseFailure" => {
                let message = hook.text("error").unwrap_or("the tool failed");
                let data = json!({ "tool": tool(), "error": { "message": message } });
                in_run(Draft::new(types::TOOL_FAILED)).data(data)
            }
            "PermissionDenied" => {
                in_run(Draft::new(types::TOOL_DENIED)).data(json!({ "tool": tool(), "by": "policy" }))
            }
            "PermissionRequest" => {
                let mut asked = permission_request(hook);
                let destructive = asked.destructive_because.is_some();
                let remember = if destructive { Vec::new() } else { remember_offers(hook) };
                offer_remembering(&mut asked.data, &remember);
                let mut request = in_run(Draft::new(types::ATTENTION_REQUESTED))
                    .data(asked.data)
                    .severity(permission_severity(destructive));
                // About which tool call: its `tool.completed` (or `.failed`)
                // names the same call id, so a console can say how it ended.
                if let Some(call) = self.call_asked_about(&session, hook) {
                    request = request.subject(call);
                }
                return Plan::Ask { before: out, session, request, kind: AskKind::Permission { remember } };
            }
            "Elicitation" => {
                let data = match crate::form::elicitation_request(hook) {
                    Ok(data) => data,
                    Err(e) => return Plan::Unreadable(e),
                };
                let request = in_run(Draft::new(types::ATTENTION_REQUESTED)).data(data);
                return Plan::Ask { before: out, session, request, kind: AskKind::Elicitation };
            }
            "Notification" => {
                let mut data = json!({});
                if let Some(m) = hook.text("message") {
                    data["message"] = m.into();
                }
                if let Some(t) = hook.text("notification_type") {
                    data["phase"] = t.into();
                }
                in_run(Draft::new(types::PROGRESS_STATUS)).data(data)
            }
            "SubagentStart" | "SubagentStop" => {
                let mut data = Map::new();
                if let Some(id) = hook.text("agent_id") {
                    data.insert("child".into(), json!({ "agent": id }));
                }
                if let Some(t) = hook.text("agent_type") {
                    data.insert("agent_type".into(), t.into());
                }
                let ty = if name == "SubagentStart" {
                    types::DELEGATION_SUBAGENT_STARTED
                } else {
                    types::DELEGATION_SUBAGENT_STOPPED
                };
                in_run(Draft::new(ty)).data(Value::Object(data))
            }
            "PreCompact" => return Plan::Observe(out),
            "PostCompact" => {
                let mut data = json!({});
                if let Some(t) = hook.text("trigger") {
                    data["trigger"] = t.into();
                }
                Draft::new(types::SESSION_COMPACTED).data(data)
            }
            "TaskCreated" | "TaskCompleted" => {
                let mut task = Map::new();
                for key in ["task_id", "task_subject"] {
                    if let Some(v) = hook.text(key) {
                        task.insert(key.trim_start_matches("task_").into(), v.into());
                    }
                }
                let ty =
                    if name == "TaskCreated" { types::PROGRESS_TASK_PLANNED } else { types::PROGRESS_TASK_COMPLETED };
                in_run(Draft::new(ty)).data(json!({ "task": task }))
            }
            "TeammateIdle" => {
                out.push(Emission { session: None, draft: Draft::new(types::AGENT_IDLE).data(json!({})) });
                return Plan::Observe(out);
            }
            other => in_run(Draft::new(format!("x.{AGENT}.session.{}", snake_case(other)))).data(json!({})),
        };
        out.push(emission(&session, draft));
        Plan::Observe(out)
    }

    /// The tool call a `PermissionRequest` is about: its own `tool_use_id`,
    /// else the latest `PreToolUse` of the session for the same tool and
    /// input.
    fn call_asked_about(&self, session: &str, hook: &HookInput) -> Option<String> {
        if let Some(id) = hook.tool_use_id.clone().filter(|id| !id.is_empty()) {
            return Some(id);
        }
        let (name, input, call) = self.sessions.get(session)?.asking.as_ref()?;
        (Some(name.as_str()) == hook.tool_name.as_deref() && input.as_ref() == hook.tool_input.as_ref())
            .then(|| call.clone())
    }

    fn mint_run(&mut self) -> String {
        self.minted += 1;
        format!("run-{}", self.minted)
    }
}

impl Mapping for Mapper {
    type Input = HookInput;
    type Ask = AskKind;
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

    fn refusing(kind: &AskKind) -> Option<&'static str> {
        matches!(kind, AskKind::Permission { .. }).then_some(DENY)
    }

    fn answered(kind: &AskKind, answer: &Answer, by: &str) -> Value {
        match kind {
            AskKind::Permission { remember } => match remembered(remember, answer) {
                Some(update) => Decision::AllowAndRemember { update: update.clone() }.to_hook_output(),
                None => crate::daemon::permission_output(answer, by),
            },
            AskKind::Elicitation => match answer {
                Answer::Values { map } => crate::form::elicitation_output(Some(map)),
                _ => crate::form::elicitation_output(None),
            },
        }
    }

    fn refuses(kind: &AskKind, answer: &Answer) -> bool {
        match kind {
            AskKind::Permission { remember } => {
                remembered(remember, answer).is_none() && Decision::refuses(answer, ALLOW)
            }
            AskKind::Elicitation => false,
        }
    }

    /// A form's prompt below `redacted` is said structurally.
    fn gate(event: Event) -> Event {
        crate::form::structural_prompt(&event)
    }
}

/// The update a "don't ask again" option returns, when `answer` chose one.
fn remembered<'a>(remember: &'a [Remember], answer: &Answer) -> Option<&'a Value> {
    match answer {
        Answer::Option { id, .. } => crate::remember::chosen(remember, id).map(|r| &r.update),
        _ => None,
    }
}

/// Each offer to remember as an option between Allow and Deny.
fn offer_remembering(data: &mut Value, remember: &[Remember]) {
    if let Some(options) = data.get_mut("options").and_then(Value::as_array_mut) {
        let at = options.len().min(1);
        options.splice(at..at, remember.iter().map(|r| json!({ "id": r.id, "label": r.label })));
    }
}

/// What the permission request offers to remember ([`crate::remember`]).
fn remember_offers(hook: &HookInput) -> Vec<Remember> {
    let project = hook.cwd.as_deref().and_then(|c| std::path::Path::new(c).file_name()).and_then(|n| n.to_str());
    crate::remember::offers(
        hook.tool_name.as_deref().unwrap_or_default(),
        hook.tool_input.as_ref(),
        hook.rest.get("permission_suggestions"),
        project,
    )
}

fn emission(session: &str, draft: Draft) -> Emission {
    Emission::in_session(session, draft)
}

/// The session's `cwd`, and its folder's name as the label a person knows
/// it by (a session id is a UUID).
fn session_started(hook: &HookInput) -> Value {
    let mut data = json!({ "client": { "name": AGENT } });
    add_project(&mut data, hook.cwd.as_deref());
    data
}

fn tool_of(hook: &HookInput) -> Value {
    aep_adapter_kit::mapping::tool(hook.tool_name.as_deref(), hook.tool_use_id.as_deref())
}

/// A permission request: the tool and exactly what it would do, so a
/// person can decide from the prompt alone; what it is about in
/// `context`; marked destructive (with why) when approving it cannot be
/// undone.
fn permission_request(hook: &HookInput) -> permission::Asked {
    let prompt = permission_prompt(hook.tool_name.as_deref().unwrap_or("a tool"), hook.tool_input.as_ref());
    permission::request(hook.tool_name.as_deref(), hook.tool_input.as_ref(), hook.cwd.as_deref(), prompt)
}

/// `Bash: rm -rf build/`, `Write: src/main.rs`, or the tool's input.
pub fn permission_prompt(tool: &str, input: Option<&Value>) -> String {
    let field = |name: &str| input.and_then(|i| i.get(name)).and_then(Value::as_str);
    let what = field("command")
        .or_else(|| field("file_path"))
        .or_else(|| field("url"))
        .or_else(|| field("pattern"))
        .map(str::to_owned)
        .or_else(|| input.map(Value::to_string))
        .unwrap_or_default();
    let what = cut(&what, PROMPT_INPUT_CHARS);
    if what.is_empty() {
        format!("Allow {tool}?")
    } else {
        format!("{tool}: {what}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aep_engine::Severity;

    fn hook(v: Value) -> HookInput {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_bash_prompt_names_the_tool_and_the_exact_command() {
        let input = json!({ "command": "rm -rf build/", "description": "clean" });
        assert_eq!(permission_prompt("Bash", Some(&input)), "Bash: rm -rf build/");
    }

    #[test]
    fn a_destructive_permission_is_a_warning_marked_destructive_and_a_plain_one_is_not() {
        let mut m = Mapper::new();
        let ask = |m: &mut Mapper, input: Value| {
            let h = hook(json!({"hook_event_name": "PermissionRequest", "session_id": "s1", "cwd": "/work/app",
                "tool_name": "Bash", "tool_input": input}));
            let Plan::Ask { request, .. } = m.plan(&h) else { panic!() };
            let who = aep_engine::protocol::ids::Identity::new("aep://h/agent/claude-code", AGENT);
            let e =
                request.session("s1").seq(9).build(&who, "01J0000000000000000000000A", aep_engine::UnixMs(0)).unwrap();
            (e.severity(), e.data_field("destructive").cloned(), e.data_field("destructive_because").cloned())
        };
        let (severity, destructive, why) = ask(&mut m, json!({ "command": "rm -rf build/" }));
        assert_eq!(
            (severity, destructive, why),
            (Severity::Warning, Some(json!(true)), Some(json!("removes files recursively")))
        );
        let (severity, destructive, _) = ask(&mut m, json!({ "command": "ls -la" }));
        assert_eq!((severity, destructive), (Severity::Notice, None));
    }

    /// The `attention.requested` a `PermissionRequest` for `tool` with
    /// `input` becomes, at capture `full`.
    fn asked(tool: &str, input: Value) -> aep_engine::protocol::event::Event {
        let h = hook(json!({"hook_event_name": "PermissionRequest", "session_id": "s1", "cwd": "/home/dev/src/shop",
            "tool_name": tool, "tool_input": input}));
        let Plan::Ask { request, .. } = Mapper::new().plan(&h) else { panic!() };
        let who = aep_engine::protocol::ids::Identity::new("aep://h/agent/claude-code", AGENT);
        request.session("s1").seq(9).build(&who, "01J0000000000000000000000A", aep_engine::UnixMs(0)).unwrap()
    }

    #[test]
    fn a_bash_request_carries_the_whole_command_its_description_and_every_reason() {
        let command = (1..=12).map(|i| format!("step-{i} --flag")).collect::<Vec<_>>().join(" &&\n")
            + " && git reset --hard && rm -rf ~/.cargo/registry";
        let e = asked("Bash", json!({ "command": command, "description": "Start over from a clean main" }));
        let context = e.data_field("context").unwrap();
        assert_eq!(context["command"], json!(command), "whole, not cut as the prompt is");
        assert_eq!(context["description"], json!("Start over from a clean main"));
        assert_eq!(context["tool"], json!("Bash"));
        assert_eq!(
            e.data_field("destructive_because"),
            Some(&json!("discards work (git reset --hard); removes files recursively outside the project"))
        );
    }

    #[test]
    fn an_edit_request_carries_its_change_and_a_write_its_content() {
        let e = asked(
            "Edit",
            json!({ "file_path": "/home/dev/src/shop/src/retry.rs", "old_string": "let tries = 3;", "new_string": "let tries = 5;" }),
        );
        assert_eq!(e.data_field("prompt"), Some(&json!("Edit: /home/dev/src/shop/src/retry.rs")));
        assert_eq!(
            e.data_field("context").unwrap()["changes"],
            json!([{ "path": "/home/dev/src/shop/src/retry.rs", "old": "let tries = 3;", "new": "let tries = 5;" }])
        );
        assert_eq!(e.data_field("destructive"), None);
        let w = asked("Write", json!({ "file_path": "notes.md", "content": "a\nb" }));
        assert_eq!(w.data_field("context").unwrap()["changes"], json!([{ "path": "notes.md", "new": "a\nb" }]));
    }

    #[test]
    fn a_permission_names_the_tool_call_it_is_about() {
        let mut m = Mapper::new();
        let input = json!({ "command": "rm -rf build/" });
        let pre = hook(
            json!({"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "Bash", "tool_input": input, "tool_use_id": "toolu_1"}),
        );
        assert!(matches!(m.plan(&pre), Plan::Observe(_)));
        let ask = |m: &mut Mapper, input: Value| {
            let h = hook(
                json!({"hook_event_name": "PermissionRequest", "session_id": "s1", "tool_name": "Bash", "tool_input": input}),
            );
            let Plan::Ask { request, .. } = m.plan(&h) else { panic!() };
            let who = aep_engine::protocol::ids::Identity::new("aep://h/agent/claude-code", AGENT);
            let e =
                request.session("s1").seq(9).build(&who, "01J0000000000000000000000A", aep_engine::UnixMs(0)).unwrap();
            e.subject().map(str::to_owned)
        };
        assert_eq!(ask(&mut m, input.clone()).as_deref(), Some("toolu_1"));
        assert_eq!(ask(&mut m, json!({ "command": "ls" })), None, "another call's input: not that call");
    }

    #[test]
    fn a_turn_is_a_run_and_its_tools_belong_to_it() {
        let mut m = Mapper::new();
        let Plan::Observe(first) = m.plan(&hook(json!({"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt_id": "p1", "prompt": "hi", "cwd": "/w"}))) else { panic!() };
        let types: Vec<_> = first.iter().map(|e| e.draft.ty().to_owned()).collect();
        assert_eq!(types, ["session.started", "run.started"]);
        assert_eq!(m.run_of("s1"), Some("p1"));
        let Plan::Ask { request, session, .. } = m.plan(&hook(json!({"hook_event_name": "PermissionRequest", "session_id": "s1", "tool_name": "Bash", "tool_input": {"command": "ls"}}))) else { panic!() };
        assert_eq!(session, "s1");
        assert_eq!(request.ty(), "attention.requested");
        let Plan::Observe(stop) = m.plan(&hook(json!({"hook_event_name": "Stop", "session_id": "s1"}))) else {
            panic!()
        };
        assert_eq!(stop[0].draft.ty(), "run.finished");
        assert_eq!(m.run_of("s1"), None);
    }
}
