//! The text of every engine error. Applications and the JS API show these
//! and some compare them, so a change here is a change to the product.

use aep_engine::client::agent::{AgentError, AgentSetupError};
use aep_engine::client::hub::{HubError, UrlError};
use aep_engine::client::{ClientError, ConfigError, State};
use aep_engine::control::answer::{AnswerError, RequestError};
use aep_engine::control::sender::{CommandError, RetryError, SendError};
use aep_engine::control::target::{SeqRegression, TargetError};
use aep_engine::protocol::filter::{FilterError, FilterErrorKind};
use aep_engine::protocol::form::FieldSpecError;
use aep_engine::protocol::frame::FrameError;
use aep_engine::protocol::ids::BuildError;
use aep_engine::EventError;

fn says(error: &dyn std::error::Error, text: &str) {
    assert_eq!(error.to_string(), text);
}

fn event_error() -> EventError {
    EventError::Malformed("not an object".into())
}

fn build_error() -> BuildError {
    BuildError::ExtensionRefused { name: "aep".into(), reason: "a core attribute" }
}

#[test]
fn protocol_errors() {
    let keyed = FilterError { kind: FilterErrorKind::IllegalKey, key: Some("Bad".into()), detail: "not a name".into() };
    says(&keyed, "filter.illegal-key: `Bad`: not a name");
    let unkeyed = FilterError { kind: FilterErrorKind::NotAnObject, key: None, detail: "got an array".into() };
    says(&unkeyed, "filter.not-object: got an array");

    says(&FrameError::NotJson("EOF at 1:2".into()), "frame is not JSON: EOF at 1:2");
    says(&FrameError::NotAnObject, "frame is not a JSON object");
    says(&FrameError::NoType, "frame has no string `type`");
    says(&FrameError::Event(event_error()), "malformed event: not an object");
    let malformed = FrameError::Malformed {
        frame_type: "subscribe".into(),
        id: Some("q1".into()),
        code: "invalid-filter",
        detail: "no filter".into(),
    };
    says(&malformed, "malformed `subscribe` frame: no filter");

    says(&FieldSpecError::Malformed("not an array".into()), "malformed form fields: not an array");
    says(&FieldSpecError::SelectWithoutChoices { field: "env".into() }, "select field `env` offers no choices");
    says(&FieldSpecError::DuplicateField { field: "env".into() }, "field id `env` is used twice");

    says(&build_error(), "extension attribute `aep` refused: a core attribute");
    says(&BuildError::Invalid(event_error()), "malformed event: not an object");
}

#[test]
fn control_errors() {
    says(&AnswerError::Malformed("option is a number".into()), "malformed answer: option is a number");
    says(&AnswerError::Empty, "the answer carries none of option, text or values");
    says(&AnswerError::ValuesCombined, "a form answer (values) cannot be combined with option or text");

    says(&CommandError::NotACommand { ty: "agent.note".into() }, "`agent.note` is not a command type");
    says(&CommandError::MissingRequest, "a respond command names the request it answers in `subject`");
    says(&CommandError::BadAnswer(AnswerError::Empty), "the answer carries none of option, text or values");
    says(&CommandError::MissingScope, "a cancel command needs `scope`");
    says(&CommandError::BadScope("\"all\"".into()), "cancel scope must be \"run\" or \"session\", got \"all\"");
    says(&CommandError::RunScopeWithoutRun, "cancelling a run needs the `run` it cancels");
    says(&CommandError::BadReason, "`reason` must be a string");
    says(
        &CommandError::BadVendorType("x.acme.pause".into()),
        "`x.acme.pause` is not a vendor command type x.{vendor}.control.{verb}",
    );
    says(&CommandError::Build(build_error()), "extension attribute `aep` refused: a core attribute");

    says(&SendError::Command(CommandError::BadReason), "`reason` must be a string");
    says(&SendError::NotACommand { ty: "agent.note".into() }, "`agent.note` is not a command type");
    says(&SendError::DuplicateId("c1".into()), "command `c1` is already being followed");
    says(&RetryError::Unknown("c1".into()), "no command `c1` is being followed");
    says(&RetryError::AlreadyDecided("c1".into()), "command `c1` was already acknowledged");

    says(&SeqRegression { seq: 3, next: 7 }, "seq 3 is at or below one already assigned in this epoch (next free: 7)");
    says(&TargetError::NotACommand { ty: "agent.note".into() }, "`agent.note` is not a command");
    says(&TargetError::NotACommandType("agent.note".into()), "cannot accept `agent.note`: not a command type");
    says(&TargetError::Build(build_error()), "extension attribute `aep` refused: a core attribute");

    says(&RequestError::NotARequest { ty: "agent.note".into() }, "`agent.note` is not attention.requested");
    says(&RequestError::MissingKind, "the request has no `kind`");
    says(&RequestError::UnknownKind("vote".into()), "unknown request kind `vote`");
    says(&RequestError::BadOptions("not an array".into()), "malformed options: not an array");
    says(
        &RequestError::BadFields(FieldSpecError::DuplicateField { field: "env".into() }),
        "field id `env` is used twice",
    );
    says(&RequestError::UnknownRefusingOption("deny".into()), "refusing option `deny` is not offered");
}

#[test]
fn client_errors() {
    says(&ClientError::NotLive(State::Connecting), "the connection is not live (connecting)");
    says(&ClientError::Backpressure, "too many frames waiting to be sent");
    says(&ClientError::TooManySubscriptions, "too many subscriptions");
    says(&ClientError::RosterNotDeclared, "the relay does not answer roster requests");
    says(&ClientError::RoleCannotWatch, "an emitter connection cannot request a roster");

    says(&ConfigError::EmitterWithoutAgent, "an emitter must name its agent in hello identity");
    says(&ConfigError::UnknownRole("boss".into()), "unknown role `boss` (consumer, emitter or both)");

    says(&UrlError::Scheme(String::new()), "a relay URL needs a scheme (ws://, wss://, http:// or https://)");
    says(&UrlError::Scheme("ftp".into()), "unsupported relay URL scheme `ftp` (ws, wss, http or https)");
    says(&UrlError::NoHost, "the relay URL names no host");
    says(&UrlError::BadCharacter, "the relay URL contains spaces or control characters");

    says(&AgentError::Build(build_error()), "extension attribute `aep` refused: a core attribute");
    says(
        &AgentError::Seq(SeqRegression { seq: 1, next: 2 }),
        "seq 1 is at or below one already assigned in this epoch (next free: 2)",
    );
    says(&AgentError::Request(RequestError::MissingKind), "the request has no `kind`");
    says(&AgentError::Send(ClientError::Backpressure), "too many frames waiting to be sent");
    says(&AgentError::Target(TargetError::NotACommandType("a.b".into())), "cannot accept `a.b`: not a command type");
    says(
        &AgentSetupError::Target(TargetError::NotACommandType("a.b".into())),
        "cannot accept `a.b`: not a command type",
    );
    says(
        &AgentSetupError::Config(ConfigError::EmitterWithoutAgent),
        "an emitter must name its agent in hello identity",
    );
}

#[test]
fn hub_errors() {
    let relay = || "eu".to_owned();
    says(&HubError::NoRelays, "no relay to connect to");
    says(&HubError::TooManyRelays(17), "17 relays given; at most 16 are supported");
    says(&HubError::DuplicateLabel("eu".into()), "two relays are labelled `eu`");
    says(
        &HubError::Config { relay: relay(), error: ConfigError::EmitterWithoutAgent },
        "relay `eu`: an emitter must name its agent in hello identity",
    );
    says(&HubError::UnknownRelay("us".into()), "no relay labelled `us`");
    says(&HubError::UnknownRequest("r1".into()), "no attention request `r1` is known");
    says(
        &HubError::NotOverControl("r1".into()),
        "attention request `r1` does not take answers over control (respond_via excludes it)",
    );
    says(
        &HubError::NoRoute("s1".into()),
        "session `s1` was not seen on any relay; name the relay to send the command through",
    );
    says(
        &HubError::NotLive { relay: relay(), state: State::Closed },
        "relay `eu` is not connected (closed); the command was not sent",
    );
    says(&HubError::Backpressure { relay: relay() }, "relay `eu` is not keeping up; the command was not sent");
    says(
        &HubError::NotPermitted { relay: relay() },
        "relay `eu` lets this credential watch, not command; the command was not sent",
    );
    says(&HubError::Command(CommandError::MissingScope), "a cancel command needs `scope`");
    says(
        &HubError::NotVendorCommand("x.acme".into()),
        "`x.acme` is not a vendor command type x.{vendor}.control.{verb}",
    );
    says(&HubError::Build(build_error()), "extension attribute `aep` refused: a core attribute");
    says(&HubError::UnknownCommand("c1".into()), "no command `c1` is being followed");
    says(&HubError::Retry(RetryError::AlreadyDecided("c1".into())), "command `c1` was already acknowledged");
    says(
        &HubError::Roster { relay: relay(), error: ClientError::RosterNotDeclared },
        "relay `eu`: the relay does not answer roster requests",
    );
    says(
        &HubError::Subscribe { relay: relay(), error: ClientError::TooManySubscriptions },
        "relay `eu`: too many subscriptions",
    );
    says(&HubError::DuplicateCommand("c1".into()), "command `c1` is already being followed");
}
