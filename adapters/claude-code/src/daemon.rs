//! The adapter's one long-lived agent (the kit's), reading Claude Code's
//! hooks through [`Mapper`]: a permission request is held until a person
//! answers it over the relay or the adapter's own timeout passes.

use aep_adapter_kit::daemon;
use aep_engine::control::answer::Answer;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::hook::{Decision, HookInput};
use crate::mapping::{Mapper, ALLOW};

pub use aep_adapter_kit::daemon::{Options, Status, ACCEPTS, ACK_WINDOW_MS};

/// One Claude Code hook, and where its answer goes.
pub type HookCall = daemon::HookCall<HookInput>;

/// Runs the agent until `calls` closes.
pub async fn run(options: Options, calls: mpsc::UnboundedReceiver<HookCall>, status: watch::Sender<Status>) {
    daemon::run(options, Mapper::new(), calls, status).await
}

/// The decision an applied answer makes: `allow` allows; `deny` denies,
/// with the person's words (AEP-0008's refusing text) as what the model
/// reads, or a plain statement of who refused.
pub fn decision(answer: &Answer, by: &str) -> Decision {
    Decision::of(answer, by, ALLOW)
}

/// The hook's answer once `answer` is applied to a held permission.
pub(crate) fn permission_output(answer: &Answer, by: &str) -> Value {
    decision(answer, by).to_hook_output()
}
