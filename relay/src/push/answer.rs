//! Answering from a notification: a verified capability becomes a
//! `control.attention.respond` sent under its principal's name through the
//! relay's ordinary command path, and the agent's ack comes back.

use std::sync::Arc;

use aep_engine::control::ack::{self, Decision};
use aep_engine::protocol::frame::Role;
use aep_engine::protocol::ids::{ulid, Draft, Identity};
use aep_engine::protocol::vocabulary::CommandVerb;
use aep_engine::{Capture, Event};
use serde_json::{json, Value};

use super::capability::Refused;
use super::sender::now_ms;
use super::Push;
use crate::auth::Access;
use crate::refusal::refuse;
pub use crate::refusal::Refusal;
use crate::switchboard::{Peer, Switchboard};

/// What `POST /push/answer` takes.
#[derive(Debug, serde::Deserialize)]
pub struct Answer {
    pub capability: String,
    pub option: String,
    /// The request the notification shows; when given it must be the one
    /// the capability is for.
    #[serde(default)]
    pub request: Option<String>,
}

impl From<Refused> for Refusal {
    fn from(r: Refused) -> Refusal {
        let detail = match r {
            Refused::Invalid => "the capability is not one this relay issued, or it was altered",
            Refused::Expired => "the capability has expired; answer from the console",
            Refused::Replayed => "the capability was already used",
        };
        refuse(if r == Refused::Replayed { 409 } else { 403 }, r.code(), detail)
    }
}

/// Checks `answer` and, when every check passes, sends the command and
/// waits for the agent's ack: `{"ack": "accepted" | "rejected" |
/// "timeout", ...}`. A command the relay could not route (the agent is
/// not connected) is `503 not-routed`, and the capability stays usable.
pub async fn answer(push: &Push, switchboard: &Arc<Switchboard>, answer: Answer) -> Result<Value, Refusal> {
    let now = now_ms();
    let grant = push.capabilities.verify(&answer.capability, now.0 / 1000)?;
    if answer.request.as_ref().is_some_and(|r| *r != grant.request) {
        return Err(refuse(403, "capability-foreign", "the capability answers another request"));
    }
    if !grant.options.contains(&answer.option) {
        return Err(refuse(400, "option-not-offered", format!("`{}` is not an option of this request", answer.option)));
    }
    let Some(principal) = push.principal(&grant.principal).filter(|p| p.roles.operator) else {
        return Err(refuse(403, "principal-revoked", format!("`{}` may no longer answer requests", grant.principal)));
    };
    if push.requests.open(&grant.request, now).is_none_or(|r| r.session != grant.session) {
        return Err(refuse(409, "request-settled", "the request is no longer open"));
    }
    push.capabilities.spend(&grant, now.0 / 1000)?;

    let who = Identity::new(format!("aep://relay/agent/{}", principal.name), principal.name.to_string());
    let command = Draft::new(CommandVerb::AttentionRespond.as_str())
        .session(&grant.session)
        .subject(&grant.request)
        .capture(Capture::Metadata)
        .data(json!({"answer": {"option": answer.option}}))
        .build(&who, ulid(now, rand::random()), now)
        .map_err(|e| refuse(500, "internal", format!("command not built: {e}")))?;
    let acked = push.await_ack(command.id());
    let peer = Peer {
        role: Some(Role::Consumer),
        agent: Some(principal.name.to_string()),
        instance: None,
        control: None,
        emits: None,
    };
    let (conn, _) = switchboard.attach_socket(Access::authenticated(principal), peer, String::new());
    let routed = switchboard.route(conn, command.clone());
    switchboard.detach(conn);
    if let Err(refusal) = routed {
        // Nothing reached the agent: the notification may try again.
        push.forget_ack(command.id());
        push.capabilities.release(&grant);
        let detail = format!("{}: {}", refusal.code, refusal.detail.unwrap_or_default());
        return Err(refuse(503, "not-routed", detail));
    }
    Ok(outcome(&command, tokio::time::timeout(push.config.ack_timeout, acked).await.ok().and_then(Result::ok), push))
}

fn outcome(command: &Event, ack_event: Option<Event>, push: &Push) -> Value {
    let Some(event) = ack_event else {
        push.forget_ack(command.id());
        return json!({"ack": "timeout", "command": command.id()});
    };
    match ack::parse(&event) {
        Some(a) if a.decision == Decision::Accepted => json!({"ack": "accepted", "command": command.id()}),
        _ => {
            let reason = event.data().and_then(|d| d.get("reason")).cloned().unwrap_or(Value::Null);
            json!({"ack": "rejected", "command": command.id(), "reason": reason})
        }
    }
}
