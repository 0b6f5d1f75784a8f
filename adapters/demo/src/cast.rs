//! Who the demo agents are and what they ask: plain data, read by
//! [`super::agent::Agent`]. Between them they raise every kind of
//! attention a console has to handle and honour every core command.

use aep_engine::control::answer::AttentionKind;
use aep_engine::control::sender::command::{CANCEL, PAUSE, RESPOND, RESUME};
use aep_engine::Severity;
use serde_json::{json, Value};

/// The vendor command one agent declares (AEP-0004 §5, `x.{vendor}.control.{verb}`).
pub const INSTRUCT: &str = "x.demo.control.instruct";
/// `progress.status.phase` reporting an honoured instruction.
pub const PHASE_INSTRUCTED: &str = "instructed";

/// How a raised request ends when nobody answers it over control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifetime {
    /// Open until answered (or dismissed with its run or session).
    UntilAnswered,
    /// Carries `expires_at`; `attention.timeout` when it passes.
    Expires { after_ms: u64 },
    /// `respond_via: ["oob"]`: decided elsewhere by `by`, which the agent
    /// reports as `attention.answered` (`via: "oob"`) after a while.
    OutOfBand { after_ms: (u64, u64), by: &'static str },
}

/// One attention request an agent can raise.
#[derive(Debug)]
pub struct Ask {
    pub kind: AttentionKind,
    pub prompt: &'static str,
    /// `(id, label)` pairs.
    pub options: &'static [(&'static str, &'static str)],
    /// The option unmatched typed text applies (AEP-0008).
    pub refusing: Option<&'static str>,
    /// `fields` of a form.
    pub form: Option<fn() -> Value>,
    pub lifetime: Lifetime,
    /// How much is at stake: destructive or irreversible asks are raised
    /// above routine ones, so a console can put them first.
    pub severity: Severity,
    /// What the agent reports doing once the request is settled.
    pub then: &'static str,
    /// Why approving it cannot be undone (`destructive: true` and
    /// `destructive_because`), in an adapter's words.
    pub destructive: Option<&'static str>,
    /// What it is about beyond the prompt (`data.context`, sent at capture
    /// `full`), in the shape the Claude Code and Codex adapters send.
    pub context: Option<fn() -> Value>,
}

impl Ask {
    /// A request offering `options`; unmatched typed text applies `refusing`.
    const fn choice(
        kind: AttentionKind,
        prompt: &'static str,
        options: &'static [(&'static str, &'static str)],
        refusing: &'static str,
        then: &'static str,
    ) -> Ask {
        let lifetime = Lifetime::UntilAnswered;
        Ask {
            kind,
            prompt,
            options,
            refusing: Some(refusing),
            form: None,
            lifetime,
            severity: Severity::Info,
            then,
            destructive: None,
            context: None,
        }
    }

    /// Allow or deny; text that names neither denies.
    const fn permission(prompt: &'static str, then: &'static str) -> Ask {
        Ask::choice(AttentionKind::Permission, prompt, ALLOW_DENY, "deny", then)
    }

    const fn input(prompt: &'static str, then: &'static str) -> Ask {
        let lifetime = Lifetime::UntilAnswered;
        let severity = Severity::Info;
        Ask {
            kind: AttentionKind::Input,
            prompt,
            options: &[],
            refusing: None,
            form: None,
            lifetime,
            severity,
            then,
            destructive: None,
            context: None,
        }
    }

    const fn form(prompt: &'static str, fields: fn() -> Value, then: &'static str) -> Ask {
        let lifetime = Lifetime::UntilAnswered;
        let severity = Severity::Info;
        Ask {
            kind: AttentionKind::Form,
            prompt,
            options: &[],
            refusing: None,
            form: Some(fields),
            lifetime,
            severity,
            then,
            destructive: None,
            context: None,
        }
    }

    const fn lasting(mut self, lifetime: Lifetime) -> Ask {
        self.lifetime = lifetime;
        self
    }

    const fn graded(mut self, severity: Severity) -> Ask {
        self.severity = severity;
        self
    }

    const fn destructive(mut self, because: &'static str) -> Ask {
        self.destructive = Some(because);
        self
    }

    const fn about(mut self, context: fn() -> Value) -> Ask {
        self.context = Some(context);
        self
    }
}

/// A tool call for background activity: name and a readable argument.
#[derive(Debug)]
pub struct Tool {
    pub name: &'static str,
    pub args: &'static str,
}

/// One simulated agent.
#[derive(Debug)]
pub struct Persona {
    /// Agent name (`agent`, hello identity).
    pub name: &'static str,
    /// `session.started.label`.
    pub label: &'static str,
    pub model: &'static str,
    pub cwd: &'static str,
    /// `run.started.prompt`, one per run in turn.
    pub run_prompts: &'static [&'static str],
    /// `control.accepts`.
    pub accepts: &'static [&'static str],
    /// How long the agent takes to decide a command, in ms (real pace).
    pub think_ms: (u64, u64),
    /// `Some(detail)`: answers are refused (`refused`), the agent's own
    /// call, and the request is then withdrawn.
    pub refuses_answers: Option<&'static str>,
    /// Requests kept open at once; the first `keep_open` asks are the
    /// ones raised first.
    pub keep_open: usize,
    pub asks: &'static [Ask],
    pub tools: &'static [Tool],
    /// Tool calls per run.
    pub steps: (u64, u64),
}

const ALLOW_DENY: &[(&str, &str)] = &[("allow", "Allow"), ("deny", "Deny")];
const APPROVE_REJECT: &[(&str, &str)] = &[("approve", "Approve"), ("reject", "Reject")];
const REVIEW: &[(&str, &str)] = &[("approve", "Approve"), ("request_changes", "Request changes")];

/// The release form: one field of every type AEP-0006 defines.
fn release_form() -> Value {
    json!([
        {"id": "version", "type": "string", "label": "Release tag", "required": true},
        {"id": "environment", "type": "select", "label": "Environment", "required": true,
         "choices": [{"id": "staging", "label": "Staging"}, {"id": "production", "label": "Production"},
                     {"id": "eu-sovereign", "label": "EU sovereign cloud"}]},
        {"id": "regions", "type": "select", "label": "Regions", "multi": true,
         "choices": [{"id": "us-east-1", "label": "US East (N. Virginia)"}, {"id": "eu-west-1", "label": "EU (Ireland)"},
                     {"id": "ap-southeast-2", "label": "Asia Pacific (Sydney)"}]},
        {"id": "replicas", "type": "number", "label": "Replicas", "required": true, "min": 1, "max": 20},
        {"id": "canary", "type": "boolean", "label": "Start with a 5% canary"},
        {"id": "notify", "type": "select", "label": "Announce in", "other": true,
         "choices": [{"id": "releases", "label": "#releases"}, {"id": "ops", "label": "#ops"}]}
    ])
}

/// A smaller form: retention settings for an export.
fn export_form() -> Value {
    json!([
        {"id": "format", "type": "select", "label": "Export format", "required": true,
         "choices": [{"id": "csv", "label": "CSV"}, {"id": "parquet", "label": "Parquet"}]},
        {"id": "days", "type": "number", "label": "Days of history", "min": 1, "max": 365},
        {"id": "anonymise", "type": "boolean", "label": "Anonymise customer ids", "required": true},
        {"id": "note", "type": "string", "label": "Note for the data team"}
    ])
}

pub const BUILD_BOT: Persona = Persona {
    name: "build-bot",
    label: "Fix flaky integration tests in payments-api",
    model: "claude-sonnet-4-5",
    cwd: "/home/dev/src/payments-api",
    run_prompts: &[
        "The checkout integration tests fail about one run in five. Find out why and fix it.",
        "Now make the CI job cache the cargo registry.",
    ],
    accepts: &[RESPOND, CANCEL, PAUSE, RESUME],
    think_ms: (0, 0),
    refuses_answers: None,
    keep_open: 2,
    asks: &[
        Ask::permission(
            "Write <img src=x onerror=alert(1)> and <script>alert(1)</script> into docs/sanitiser-check.html to test the docs sanitiser?",
            "Writing the sanitiser check page",
        )
        .graded(Severity::Notice),
        Ask::permission("Run `rm -rf build/` to clear stale artifacts?", "Cleaning build/ and rebuilding").graded(Severity::Warning),
        Ask::permission(
            "Run `cargo test -p payments-api -- --include-ignored`? It takes about 6 minutes.",
            "Running the full test suite",
        )
        .graded(Severity::Info),
        Ask::permission("Run `git push --force-with-lease origin fix/flaky-checkout-tests`?", "Pushing the branch").graded(Severity::Warning),
        Ask::permission(
            "Run `docker compose down -v`? This deletes the local Postgres volume.",
            "Recreating the local database",
        )
        .graded(Severity::Error),
    ],
    tools: &[
        Tool { name: "Bash", args: "cargo build -p payments-api" },
        Tool { name: "Read", args: "tests/checkout_flow.rs" },
        Tool { name: "Grep", args: "sleep\\(|tokio::time::sleep in tests/" },
        Tool { name: "Edit", args: "tests/support/clock.rs" },
        Tool { name: "Bash", args: "cargo test -p payments-api checkout -- --nocapture" },
    ],
    steps: (6, 12),
};

pub const DEPLOY_AGENT: Persona = Persona {
    name: "deploy-agent",
    label: "Release payments-api v2.14.0",
    model: "gpt-5",
    cwd: "/srv/release/payments-api",
    run_prompts: &["Cut and roll out the v2.14.0 release.", "Prepare the data export the finance team asked for."],
    accepts: &[RESPOND, CANCEL],
    think_ms: (600, 1_800),
    refuses_answers: None,
    keep_open: 2,
    asks: &[
        Ask::form(
            "Deploy payments-api: confirm the rollout settings",
            release_form,
            "Rolling out with the confirmed settings",
        )
        .graded(Severity::Warning),
        Ask::choice(
            AttentionKind::Review,
            "Review the migration plan: add nullable `refunds.reason`, then backfill 1.2M rows in batches of 10k.",
            REVIEW,
            "request_changes",
            "Applying the review outcome to the migration plan",
        )
        .graded(Severity::Notice),
        Ask::input("Paste the change ticket for this release (e.g. CHG-1234).", "Linking the change ticket"),
        Ask::form("Export settings for the finance data request", export_form, "Starting the export")
            .graded(Severity::Notice),
        Ask::permission("Roll staging back to v2.13.2 while the migration is reviewed?", "Rolling staging back")
            .graded(Severity::Warning),
    ],
    tools: &[
        Tool { name: "kubectl", args: "rollout status deploy/payments-api -n staging" },
        Tool { name: "Bash", args: "git tag -s v2.14.0" },
        Tool { name: "Read", args: "migrations/2026_11_refunds_reason.sql" },
        Tool { name: "http", args: "GET https://status.internal/api/payments" },
    ],
    steps: (5, 9),
};

pub const RESEARCH_AGENT: Persona = Persona {
    name: "research-agent",
    label: "Summarise last quarter's incident reports",
    model: "gemini-2.5-pro",
    cwd: "/home/analyst/incidents",
    run_prompts: &[
        "Summarise the Q3 incident reports into a one-page brief.",
        "List the recurring root causes across Q3 incidents.",
    ],
    accepts: &[RESPOND, PAUSE, RESUME, INSTRUCT],
    think_ms: (0, 0),
    refuses_answers: None,
    keep_open: 2,
    asks: &[
        Ask::input("Which incident tracker project should I search? (default: OPS)", "Searching the incident tracker"),
        Ask::permission(
            "Download 1.2 GB of raw logs from s3://incident-archive/2026-q3/? I will skip them if nobody answers in time.",
            "Fetching the raw logs",
        )
        .lasting(Lifetime::Expires { after_ms: 45_000 })
        .graded(Severity::Notice),
        Ask::input("Anything to leave out of the brief (customer names, internal hostnames)?", "Redacting as asked"),
    ],
    tools: &[
        Tool { name: "search", args: "project = OPS AND created >= 2026-07-01" },
        Tool { name: "fetch", args: "https://wiki.internal/incidents/INC-2291" },
        Tool { name: "Read", args: "notes/q3-timeline.md" },
        Tool { name: "Write", args: "briefs/q3-incidents.md" },
    ],
    steps: (6, 10),
};

pub const GUARDIAN: Persona = Persona {
    name: "access-guardian",
    label: "Production access broker",
    model: "policy-engine-3",
    cwd: "/etc/access-broker",
    run_prompts: &["Process pending production access requests."],
    accepts: &[RESPOND],
    think_ms: (300, 900),
    refuses_answers: Some("production access needs two approvers; raise it in #sec-approvals"),
    keep_open: 1,
    asks: &[
        Ask::choice(
            AttentionKind::Permission,
            "Grant `ci-deployer` write access to the production database for 1 hour?",
            APPROVE_REJECT,
            "reject",
            "Recording the decision",
        )
        .lasting(Lifetime::Expires { after_ms: 120_000 })
        .graded(Severity::Critical),
        Ask::choice(
            AttentionKind::Permission,
            "Rotate the Stripe API key used by payments-api now?",
            APPROVE_REJECT,
            "reject",
            "Recording the decision",
        )
        .lasting(Lifetime::Expires { after_ms: 120_000 })
        .graded(Severity::Error),
    ],
    tools: &[
        Tool { name: "iam", args: "list-pending-grants --env production" },
        Tool { name: "audit", args: "append access-log" },
    ],
    steps: (3, 6),
};

pub const CI_WATCHER: Persona = Persona {
    name: "ci-watcher",
    label: "Watching CI for PR #482",
    model: "claude-haiku-4-5",
    cwd: "/home/dev/src/payments-api",
    run_prompts: &["Watch the checks on PR #482 and report when it can merge."],
    accepts: &[RESPOND],
    think_ms: (0, 0),
    refuses_answers: None,
    keep_open: 1,
    asks: &[
        Ask::choice(
            AttentionKind::Permission,
            "Approve the production deployment in GitHub Actions (release.yml, run #1187). The decision is made in GitHub; this card is for information.",
            APPROVE_REJECT,
            "reject",
            "Deployment approved in GitHub; watching the rollout",
        )
        .lasting(Lifetime::OutOfBand { after_ms: (25_000, 50_000), by: "octocat" })
        .graded(Severity::Warning),
        Ask::choice(
            AttentionKind::Review,
            "A code owner must approve PR #482 on GitHub before it can merge.",
            REVIEW,
            "request_changes",
            "Code owner review recorded in GitHub",
        )
        .lasting(Lifetime::OutOfBand { after_ms: (25_000, 50_000), by: "payments-owners" })
        .graded(Severity::Notice),
    ],
    tools: &[
        Tool { name: "gh", args: "pr checks 482" },
        Tool { name: "gh", args: "run view 1187 --log-failed" },
    ],
    steps: (4, 8),
};

/// The long command Claude Code asks to run, twelve lines, the
/// destructive part of it well below the third.
macro_rules! reset_command {
    () => {
        "cd /home/dev/src/payments-api\n\
git stash push --include-untracked -m before-reset\n\
git fetch origin --prune\n\
git checkout main && git reset --hard origin/main\n\
git clean -fdx && rm -rf ~/.cargo/registry\n\
rm -rf target/debug/incremental\n\
cargo update -p tokio --precise 1.38.0\n\
cargo build -p payments-api --locked\n\
cargo test --locked -p payments-api checkout -- --test-threads=1\n\
git switch -c fix/checkout-retry\n\
git stash pop\n\
git status --short"
    };
}

/// Where the Claude Code session works, as its hooks say (`cwd`).
const CLAUDE_CWD: &str = "/home/dev/src/payments-api";
const RETRY_PATH: &str = "/home/dev/src/payments-api/src/checkout/retry.rs";

/// `data.context` of the long `Bash` request, as the Claude Code adapter
/// builds it from the hook's `tool_input`.
fn reset_context() -> Value {
    let description = "Start over from a clean main with a fresh dependency cache";
    json!({
        "tool": "Bash",
        "description": description,
        "command": reset_command!(),
        "tool_input": { "command": reset_command!(), "description": description },
        "cwd": CLAUDE_CWD,
    })
}

/// `data.context` of an `Edit` request, as the Claude Code adapter builds
/// it from the hook's `tool_input`.
fn retry_edit_context() -> Value {
    let old =
        "    let policy = RetryPolicy {\n        max_attempts: 3,\n        backoff: Duration::from_millis(50),\n    };";
    let new = "    let policy = RetryPolicy {\n        max_attempts: 5,\n        backoff: Duration::from_millis(200),\n        jitter: true,\n    };";
    json!({
        "tool": "Edit",
        "changes": [{ "path": RETRY_PATH, "old": old, "new": new }],
        "tool_input": { "file_path": RETRY_PATH, "old_string": old, "new_string": new },
        "cwd": CLAUDE_CWD,
    })
}

/// A Claude Code session through its adapter: its requests are shaped as
/// the adapter raises them (`Bash: …`, `Edit: …`, `context`, the reason a
/// request is destructive).
pub const CLAUDE_CODE: Persona = Persona {
    name: "claude-code",
    label: "payments-api",
    model: "claude-sonnet-4-5",
    cwd: CLAUDE_CWD,
    run_prompts: &["The checkout retry gives up too early. Fix it, then start the branch over from a clean main."],
    accepts: &[RESPOND],
    think_ms: (0, 0),
    refuses_answers: None,
    keep_open: 2,
    asks: &[
        Ask::permission(concat!("Bash: ", reset_command!()), "Resetting to a clean main")
            .graded(Severity::Warning)
            .destructive("discards work (git reset --hard); removes files recursively outside the project")
            .about(reset_context),
        Ask::permission(
            "Edit: /home/dev/src/payments-api/src/checkout/retry.rs",
            "Retrying checkout five times, with jitter",
        )
        .about(retry_edit_context),
    ],
    tools: &[
        Tool { name: "Read", args: "src/checkout/retry.rs" },
        Tool { name: "Grep", args: "max_attempts in src/" },
        Tool { name: "Bash", args: "cargo test -p payments-api checkout" },
    ],
    steps: (3, 6),
};

/// Every demo agent, in start order.
pub const CAST: [&Persona; 6] = [&BUILD_BOT, &DEPLOY_AGENT, &RESEARCH_AGENT, &GUARDIAN, &CI_WATCHER, &CLAUDE_CODE];

#[cfg(test)]
mod tests {
    use super::*;
    use aep_engine::protocol::event::is_command_type;
    use aep_engine::protocol::form::parse_fields;

    #[test]
    fn the_cast_covers_every_kind_and_declares_real_commands() {
        let asks: Vec<&Ask> = CAST.iter().flat_map(|p| p.asks.iter()).collect();
        for kind in [AttentionKind::Permission, AttentionKind::Input, AttentionKind::Form, AttentionKind::Review] {
            assert!(asks.iter().any(|a| a.kind == kind), "{kind:?}");
        }
        assert!(asks.iter().any(|a| matches!(a.lifetime, Lifetime::Expires { .. })));
        assert!(asks.iter().any(|a| matches!(a.lifetime, Lifetime::OutOfBand { .. })));
        assert!(asks.iter().any(
            |a| a.prompt.contains("<img src=x onerror=alert(1)>") && a.prompt.contains("<script>alert(1)</script>")
        ));
        for p in CAST {
            assert!(p.accepts.iter().all(|t| is_command_type(t)), "{}", p.name);
            assert!(p.keep_open >= 1 && !p.asks.is_empty() && !p.tools.is_empty() && !p.run_prompts.is_empty());
            assert!(p.think_ms.1 < 5_000, "decisions stay well inside the ack window");
            for a in p.asks {
                if let Some(r) = a.refusing {
                    assert!(a.options.iter().any(|(id, _)| *id == r), "{}", a.prompt);
                }
                assert_eq!(a.form.is_some(), a.kind == AttentionKind::Form);
            }
        }
    }

    #[test]
    fn destructive_and_irreversible_asks_carry_a_severity_to_match() {
        let asks: Vec<&Ask> = CAST.iter().flat_map(|p| p.asks.iter()).collect();
        let of = |needle: &str| {
            asks.iter().find(|a| a.prompt.contains(needle)).unwrap_or_else(|| panic!("no ask about {needle}")).severity
        };
        assert_eq!(of("write access to the production database"), Severity::Critical);
        assert_eq!(of("docker compose down -v"), Severity::Error);
        assert_eq!(of("Rotate the Stripe API key"), Severity::Error);
        assert_eq!(of("rm -rf build/"), Severity::Warning);
        assert_eq!(of("git push --force-with-lease"), Severity::Warning);
        assert_eq!(of("production deployment in GitHub Actions"), Severity::Warning);
        assert_eq!(of("confirm the rollout settings"), Severity::Warning);
        assert_eq!(of("Which incident tracker project"), Severity::Info);
        // Every level a console has to tell apart is in use.
        for level in [Severity::Info, Severity::Notice, Severity::Warning, Severity::Error, Severity::Critical] {
            assert!(asks.iter().any(|a| a.severity == level), "{level:?}");
        }
    }

    #[test]
    fn claude_code_asks_as_its_adapter_does_with_a_long_destructive_command_and_an_edit() {
        use aep_engine::protocol::request_context::RequestContext;
        let context = |a: &Ask| {
            let data = json!({ "context": (a.context.expect("a context"))() });
            RequestContext::of(data.as_object().unwrap()).unwrap().unwrap()
        };
        let bash = &CLAUDE_CODE.asks[0];
        let c = context(bash);
        let command = c.command.as_deref().unwrap();
        assert_eq!(command.lines().count(), 12);
        assert_eq!(bash.prompt, format!("Bash: {command}"), "the adapter's prompt for it");
        assert!(
            command.lines().skip(3).any(|l| l.contains("rm -rf ~/.cargo/registry")),
            "the danger is below the third line"
        );
        assert!(c.description.is_some() && bash.destructive.is_some() && bash.severity == Severity::Warning);
        let edit = &CLAUDE_CODE.asks[1];
        let c = context(edit);
        assert_eq!(edit.prompt, format!("Edit: {}", c.changes[0].path));
        assert!(c.changes[0].old.is_some() && c.changes[0].new.is_some());
        assert_eq!(edit.destructive, None);
    }

    #[test]
    fn the_release_form_has_every_field_type() {
        let fields = parse_fields(&release_form()).unwrap();
        let has = |f: &dyn Fn(&aep_engine::protocol::form::FieldSpec) -> bool| fields.iter().any(f);
        use aep_engine::protocol::form::FieldType::*;
        assert!(has(&|f| f.ty == String));
        assert!(has(&|f| f.ty == Number && f.min.is_some() && f.max.is_some()));
        assert!(has(&|f| f.ty == Boolean));
        assert!(has(&|f| f.ty == Select && !f.multi && !f.other));
        assert!(has(&|f| f.ty == Select && f.multi));
        assert!(has(&|f| f.ty == Select && f.other));
        parse_fields(&export_form()).unwrap();
    }
}
