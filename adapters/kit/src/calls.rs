//! Tool calls announced and not yet closed, so that every `tool.requested`
//! an adapter emits is closed exactly once: by the agent's own result
//! (`tool.completed`, `tool.failed`, `tool.denied`), by a person's refusal
//! of the permission it waited on, or, when its turn or session ends
//! without either, as a call that never ran.
//!
//! How each is closed (AEP-0002 `tool.denied`):
//!
//! * a person refuses the permission: `tool.denied` with `by:
//!   "user_setting"` (the person's decision for this call; `rule` says
//!   so), caused by the command that carried the refusal;
//! * the turn or session ends with the call still open — nobody answered
//!   and the agent did not run it, or the agent stopped first:
//!   `tool.denied` with `by: "runtime"`, caused by its `tool.requested`.

use std::collections::HashMap;

use aep_engine::protocol::event::Event;
use aep_engine::protocol::ids::Draft;
use aep_engine::protocol::vocabulary::types;
use serde_json::{json, Value};

/// One announced call.
#[derive(Clone, Debug)]
struct Call {
    /// The `tool` object as `tool.requested` carried it.
    tool: Value,
    run: Option<String>,
    /// The `tool.requested` event's id.
    requested: String,
}

impl Call {
    fn name(&self) -> Option<&str> {
        self.tool.get("name").and_then(Value::as_str)
    }

    fn call_id(&self) -> Option<&str> {
        self.tool.get("call_id").and_then(Value::as_str)
    }

    fn denied(self, by: &str, rule: &str, cause: &str) -> Draft {
        Draft::new(types::TOOL_DENIED)
            .maybe_run(self.run)
            .cause(cause)
            .data(json!({ "tool": self.tool, "by": by, "rule": rule }))
    }
}

/// The open calls of each session, oldest first.
#[derive(Debug, Default)]
pub struct OpenCalls {
    sessions: HashMap<String, Vec<Call>>,
}

impl OpenCalls {
    /// Notes an event the adapter emitted: a `tool.requested` opens a call,
    /// the agent's own result closes it.
    pub fn emitted(&mut self, event: &Event) {
        let Some(session) = event.session() else { return };
        let Some(tool) = event.data_field("tool") else { return };
        match event.ty() {
            types::TOOL_REQUESTED => self.sessions.entry(session.to_owned()).or_default().push(Call {
                tool: tool.clone(),
                run: event.run().map(str::to_owned),
                requested: event.id().to_owned(),
            }),
            types::TOOL_COMPLETED | types::TOOL_FAILED | types::TOOL_DENIED => {
                let call_id = tool.get("call_id").and_then(Value::as_str);
                let name = tool.get("name").and_then(Value::as_str);
                self.take(session, call_id, name);
            }
            _ => {}
        }
    }

    /// What to emit before an event of type `ty` in `session`: a turn or
    /// the session ending closes every call still open in it.
    pub fn before(&mut self, session: &str, ty: &str) -> Vec<Draft> {
        if !matches!(ty, types::RUN_FINISHED | types::RUN_FAILED | types::SESSION_ENDED) {
            return Vec::new();
        }
        let open = self.sessions.remove(session).unwrap_or_default();
        open.into_iter()
            .map(|call| {
                let cause = call.requested.clone();
                call.denied("runtime", "never ran: its turn ended without it", &cause)
            })
            .collect()
    }

    /// A person refused, by `command`, the permission request in `session`
    /// with `subject` about the tool `name`: the call it was about is
    /// denied.
    pub fn refused(
        &mut self,
        session: &str,
        subject: Option<&str>,
        name: Option<&str>,
        command: &Event,
    ) -> Option<Draft> {
        let call = self.take(session, subject, name)?;
        let rule = format!("refused by {} from an AEP console", command.agent());
        Some(call.denied("user_setting", &rule, command.id()))
    }

    /// The open call with `call_id` (where both sides know one), else the
    /// oldest open call of the tool `name`.
    fn take(&mut self, session: &str, call_id: Option<&str>, name: Option<&str>) -> Option<Call> {
        let open = self.sessions.get_mut(session)?;
        let at = call_id
            .and_then(|id| open.iter().position(|c| c.call_id() == Some(id)))
            .or_else(|| name.and_then(|n| open.iter().position(|c| c.name() == Some(n))))?;
        let call = open.remove(at);
        if open.is_empty() {
            self.sessions.remove(session);
        }
        Some(call)
    }
}

#[cfg(test)]
mod tests {
    use aep_engine::protocol::ids::Identity;
    use aep_engine::UnixMs;

    use super::*;

    struct Emitter {
        who: Identity,
        next: u32,
    }

    impl Emitter {
        fn new(agent: &str) -> Emitter {
            Emitter { who: Identity::new(format!("aep://test/{agent}"), agent), next: 0 }
        }

        fn event(&mut self, draft: Draft) -> Event {
            self.next += 1;
            draft
                .session("s1")
                .seq(u64::from(self.next))
                .build(&self.who, format!("e{}", self.next), UnixMs(1))
                .unwrap()
        }

        fn requested(&mut self, name: &str, call_id: Option<&str>) -> Event {
            let tool = crate::mapping::tool(Some(name), call_id);
            self.event(Draft::new(types::TOOL_REQUESTED).run("r1").data(json!({ "tool": tool })))
        }
    }

    #[test]
    fn a_call_the_agent_closed_is_not_closed_again_at_the_end_of_its_turn() {
        let (mut calls, mut agent) = (OpenCalls::default(), Emitter::new("claude-code"));
        calls.emitted(&agent.requested("Bash", Some("c1")));
        let done = json!({ "tool": { "name": "Bash", "call_id": "c1" }, "status": "ok" });
        calls.emitted(&agent.event(Draft::new(types::TOOL_COMPLETED).run("r1").data(done)));
        assert!(calls.before("s1", types::RUN_FINISHED).is_empty());
    }

    #[test]
    fn a_call_still_open_when_its_turn_ends_is_denied_by_the_runtime() {
        let (mut calls, mut agent) = (OpenCalls::default(), Emitter::new("codex"));
        let requested = agent.requested("Bash", None);
        calls.emitted(&requested);
        assert!(calls.before("s1", types::PROGRESS_STATUS).is_empty(), "only an end closes");
        let closing: Vec<Event> = calls.before("s1", types::RUN_FINISHED).into_iter().map(|d| agent.event(d)).collect();
        assert_eq!(closing.len(), 1);
        let denied = &closing[0];
        assert_eq!((denied.ty(), denied.run(), denied.cause()), (types::TOOL_DENIED, Some("r1"), Some(requested.id())));
        assert_eq!(denied.data_field("by"), Some(&json!("runtime")));
        assert_eq!(denied.data_field("tool"), Some(&json!({ "name": "Bash" })));
        assert!(denied.check_payload().is_empty(), "{:?}", denied.check_payload());
        assert!(calls.before("s1", types::SESSION_ENDED).is_empty(), "closed once");
    }

    #[test]
    fn a_refusal_closes_the_call_it_was_about_by_call_id_or_else_by_tool() {
        let (mut calls, mut agent) = (OpenCalls::default(), Emitter::new("claude-code"));
        calls.emitted(&agent.requested("Bash", Some("c1")));
        calls.emitted(&agent.requested("Bash", Some("c2")));
        calls.emitted(&agent.requested("Edit", None));
        let command = Draft::new(types::CONTROL_ATTENTION_RESPOND)
            .session("s1")
            .subject("q1")
            .data(json!({ "answer": { "option": "deny" } }))
            .build(&Identity::new("aep://test/alice", "alice"), "c1", UnixMs(1))
            .unwrap();
        let denied = agent.event(calls.refused("s1", Some("c2"), Some("Bash"), &command).unwrap());
        assert_eq!(denied.data_field("tool"), Some(&json!({ "name": "Bash", "call_id": "c2" })));
        assert_eq!((denied.data_field("by"), denied.cause()), (Some(&json!("user_setting")), Some(command.id())));
        assert!(denied.data_str("rule").unwrap().contains("alice"));
        // Codex names the tool as the request's subject.
        let denied = agent.event(calls.refused("s1", Some("Edit"), Some("Edit"), &command).unwrap());
        assert_eq!(denied.data_field("tool"), Some(&json!({ "name": "Edit" })));
        assert!(calls.refused("s1", Some("Write"), Some("Write"), &command).is_none(), "no call of that tool is open");
        let left: Vec<Event> = calls.before("s1", types::SESSION_ENDED).into_iter().map(|d| agent.event(d)).collect();
        assert_eq!(left.len(), 1, "only c1 is left to close");
        assert_eq!(left[0].data_field("tool"), Some(&json!({ "name": "Bash", "call_id": "c1" })));
    }
}
