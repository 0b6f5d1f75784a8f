//! The TypeScript declarations of everything that is data (views, options,
//! arguments, error codes, states) are generated from their Rust types
//! (`tsify`), and the registry's closed sets from the engine's enums: the
//! package's `.d.ts` holds them between two markers, and the first test
//! fails when that region differs from what the types say now.
//! `AEP_WRITE_DECLARATIONS=1 cargo test -p aep-client --test declarations`
//! rewrites the region. The second keeps what is written by hand outside
//! it small, each block saying why it is not generated.

use std::fs;
use std::path::Path;

use aep_client::error::{AepErrorCode, NackKind};
use aep_client::input::{
    self, AepAgentOptions, AepClientOptions, CancelArgs, ControlTargetOptions, EventDraft, RelayOptions, Resume,
    StoreLimits, VendorArgs,
};
use aep_client::view::*;
use aep_engine::control::sender::CancelScope;
use aep_engine::protocol::vocabulary::{Capture, CommandVerb, NackReason, Severity};
use aep_engine::store::{CardStatus, SessionState};
use strum::VariantNames;
use tsify::Tsify;

const DTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/npm/aep-client.d.ts");
const BEGIN: &str = "// BEGIN names, views and inputs generated from the engine, src/view.rs and src/input.rs \
                     (tests/declarations.rs); do not edit by hand.\n";
const END: &str = "// END names, views and inputs generated from the engine, src/view.rs and src/input.rs.\n";

/// Every set, view and input, in the order the declarations list them.
const VIEWS: &[&str] = &[
    Choice::DECL,
    FieldType::DECL,
    FieldSpec::DECL,
    Accepted::DECL,
    Evicted::DECL,
    CloseHow::DECL,
    RunState::DECL,
    ChainStatus::DECL,
    AckDecision::DECL,
    OutcomeLink::DECL,
    ViolationOrigin::DECL,
    CommandState::DECL,
    ConnectionState::DECL,
    CommandChange::DECL,
    AepErrorCode::DECL,
    NackKind::DECL,
    SessionKey::DECL,
    Position::DECL,
    Card::DECL,
    EvictedCard::DECL,
    RoutedHop::DECL,
    CardAnswer::DECL,
    CardClose::DECL,
    SessionSummary::DECL,
    EvictedSession::DECL,
    RunView::DECL,
    RunEnd::DECL,
    CommandChain::DECL,
    CommandIssued::DECL,
    CommandAck::DECL,
    CommandOutcome::DECL,
    SessionDetail::DECL,
    SessionStart::DECL,
    SessionEnd::DECL,
    CommandView::DECL,
    CommandUpdate::DECL,
    RelayStatus::DECL,
    RelayError::DECL,
    ReplayExhausted::DECL,
    AgentStatus::DECL,
    Violation::DECL,
    RosterEntry::DECL,
    RosterControl::DECL,
    Projection::DECL,
    Counts::DECL,
    Rejected::DECL,
    RejectedLine::DECL,
    Evictions::DECL,
    SessionPosition::DECL,
    EventViolation::DECL,
    EventValidation::DECL,
    FilterError::DECL,
    FilterValidation::DECL,
    AnswerRule::DECL,
    TargetAction::DECL,
    Received::DECL,
    input::Recipient::DECL,
    CancelArgs::DECL,
    VendorArgs::DECL,
    StoreLimits::DECL,
    RelayOptions::DECL,
    Resume::DECL,
    AepClientOptions::DECL,
    ControlTargetOptions::DECL,
    AepAgentOptions::DECL,
    EventDraft::DECL,
];

/// `export type Name = 'a' | 'b';`, with its doc comment.
fn union<'a>(name: &str, doc: &str, members: impl IntoIterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = members.into_iter().map(|m| format!("'{m}'")).collect();
    format!("/** {doc} */\nexport type {name} = {};\n", quoted.join(" | "))
}

/// The closed sets, as string-literal unions.
fn unions() -> Vec<String> {
    vec![
        union("Severity", "AEP-0001 §8.1, lowest first.", Severity::ALL.map(Severity::as_str)),
        union("Capture", "AEP-0001 §8.2, least content first.", Capture::ALL.map(Capture::as_str)),
        union(
            "NackReason",
            "A registered `control.rejected` reason (AEP-0004 §3).",
            NackReason::ALL.map(NackReason::as_str),
        ),
        union("CoreCommandType", "The core command types (AEP-0004 §2).", CommandVerb::ALL.map(CommandVerb::as_str)),
        union("CardStatus", "Where a card stands.", CardStatus::VARIANTS.iter().copied()),
        union("SessionState", "Where a session stands.", SessionState::VARIANTS.iter().copied()),
        union("CancelScope", "What a `control.cancel` stops.", CancelScope::VARIANTS.iter().copied()),
    ]
}

fn generated() -> String {
    let mut out = String::from(BEGIN);
    for decl in unions() {
        out.push('\n');
        out.push_str(&decl);
    }
    for decl in VIEWS {
        out.push('\n');
        // Two-space indentation, as in the rest of the file.
        for line in decl.lines() {
            let depth = line.len() - line.trim_start_matches("    ").len();
            out.push_str(&"  ".repeat(depth / 4));
            out.push_str(line.trim_start_matches("    "));
            out.push('\n');
        }
    }
    out.push('\n');
    out.push_str(END);
    out
}

#[test]
fn the_package_declares_every_view_as_its_rust_type_says() {
    let text = fs::read_to_string(DTS).unwrap_or_else(|e| panic!("cannot read {DTS}: {e}"));
    let start = text.find(BEGIN).expect("the .d.ts has no generated views region");
    let end = text.find(END).expect("the generated views region is not closed") + END.len();
    let want = generated();
    if text[start..end] == want {
        return;
    }
    if std::env::var_os("AEP_WRITE_DECLARATIONS").is_some() {
        let rewritten = format!("{}{}{}", &text[..start], want, &text[end..]);
        fs::write(Path::new(DTS), rewritten).unwrap();
        return;
    }
    let have: Vec<&str> = text[start..end].lines().collect();
    let line = want.lines().zip(have.iter()).position(|(a, b)| a != *b).unwrap_or(have.len().min(want.lines().count()));
    panic!(
        "the views in {DTS} drifted from src/view.rs at line {} of the region:\n  declared: {:?}\n  the type: {:?}\n\
         rerun with AEP_WRITE_DECLARATIONS=1 to regenerate",
        line + 1,
        have.get(line),
        want.lines().nth(line)
    );
}

/// Outside the markers is only what the Rust types cannot declare (the
/// loader, classes with overloads, function types, open-ended JSON); kept
/// under this many lines so that the types stay the source of the rest.
const HAND_KEPT_LIMIT: usize = 150;

#[test]
fn what_is_kept_by_hand_is_small_and_says_why() {
    let text = fs::read_to_string(DTS).unwrap_or_else(|e| panic!("cannot read {DTS}: {e}"));
    let start = text.find(BEGIN).expect("the .d.ts has no generated views region");
    let end = text.find(END).expect("the generated views region is not closed") + END.len();
    let (before, after) = (&text[..start], &text[end..]);
    let lines = before.lines().count() + after.lines().count();
    assert!(
        lines < HAND_KEPT_LIMIT,
        "{DTS} keeps {lines} lines by hand (limit {HAND_KEPT_LIMIT}): declare data from its Rust type instead"
    );
    // Blocks are separated by blank lines; the file's own header aside,
    // each opens with the reason it is not generated.
    let blocks =
        [before, after].into_iter().flat_map(|part| part.split("\n\n")).map(str::trim).filter(|b| !b.is_empty());
    for block in blocks.skip(1) {
        assert!(block.starts_with("// Hand-kept: "), "a hand-kept block says why it is not generated:\n{block}");
    }
}
