//! One attention card: where it comes from, what the agent says (quoted,
//! as text), how to answer, and the life of the answer once sent.

use aep_engine::UnixMs;
use leptos::prelude::*;

use super::answer::AnswerArea;
use super::command::CommandList;
use super::detail::{DestructiveNote, RequestDetail};
use super::route::Route;
use super::rule_maker::RuleMaker;
use super::steady::watch_card;
use crate::model::card::CardView;
use crate::model::clock;
use crate::model::command::Phase;
use crate::web::bridge::Console;
use crate::web::platform::{wall, wall_exactly};

/// Provided where cards sit under a heading of their own (an inbox group,
/// a session's waiting list), so their titles rank one level below it.
#[derive(Clone, Copy, Debug)]
pub struct UnderHeading;

/// Session, run and tool next to the content; the relay only when there
/// is more than one (with one, the header's chip already says it, and it
/// would be the same on every card). The agent is in the card's head.
#[component]
pub fn Provenance(card: CardView) -> impl IntoView {
    let console = expect_context::<Console>();
    let relay = card.relay.clone().unwrap_or_else(|| "\u{2014}".into());
    let several = move || console.relays.with(|r| r.len() > 1);
    let session_href = Route::Session(card.key.session.clone()).href();
    let session_words = match &card.session_label {
        Some(l) => format!("{l} ({})", card.session),
        None => card.session.clone(),
    };
    view! {
        <dl class="provenance">
            {move || several().then(|| view! { <div data-prov="relay"><dt>"Relay"</dt><dd>{relay.clone()}</dd></div> })}
            <div data-prov="session"><dt>"Session"</dt><dd><a href=session_href>{session_words}</a></dd></div>
            {card.cwd.clone().map(|d| view! { <div data-prov="cwd"><dt>"Directory"</dt><dd class="mono">{d}</dd></div> })}
            {card.run.clone().map(|r| view! { <div data-prov="run"><dt>"Run"</dt><dd class="mono">{r}</dd></div> })}
            {card.subject.clone().map(|s| view! { <div data-prov="subject"><dt>"Subject"</dt><dd class="mono">{s}</dd></div> })}
        </dl>
    }
}

/// The agent's words, set apart from the console's own.
#[component]
pub fn AgentText(card: CardView) -> impl IntoView {
    let caption = format!("{} says", card.agent);
    let prompt = card.prompt.clone();
    let synthesized = card.synthesized;
    view! {
        <figure class="agent-text" class:synthesized=synthesized>
            <figcaption>{caption}</figcaption>
            <blockquote class="prompt">
                {prompt.unwrap_or_else(|| "(no prompt was sent)".into())}
            </blockquote>
            {synthesized.then(|| view! {
                <p class="capture-note">
                    {format!(
                        "Captured at \u{201c}{}\u{201d}: this text is synthesized or structural, not the agent's own words.",
                        card.capture.as_str()
                    )}
                </p>
            })}
        </figure>
    }
}

#[component]
fn Countdown(at: UnixMs) -> impl IntoView {
    let console = expect_context::<Console>();
    let left = move || clock::countdown(console.now.get(), at);
    view! {
        <span
            class=move || { if console.now.get().0 + 15_000 >= at.0 { "expires urgent" } else { "expires" } }
            data-expires=at.0.to_string()
        >
            {move || match left() {
                Some(s) => format!("expires in {s}"),
                None => "expired".to_owned(),
            }}
        </span>
    }
}

#[component]
pub fn CardItem(card: ArcRwSignal<CardView>) -> impl IntoView {
    let console = expect_context::<Console>();
    let card = RwSignal::from(card);
    let c = card.get_untracked();
    let title_id = format!("card-title-{}", c.id);
    let raised = c.raised_at;
    let severity = c.severity.as_str();
    let steady = watch_card(format!("card-{}", c.id));
    // On a phone the card is compact (severity, agent, the prompt clamped,
    // the answer buttons); everything else is one tap away.
    let expanded = RwSignal::new(false);
    let details_id = format!("card-details-{}", c.id);
    // The state is in aria-expanded; the arrow only shows it.
    let toggle_words = move || if expanded.get() { "Details \u{25b4}" } else { "Details \u{25be}" };
    let kind_words = c.kind_words();
    // Read out by its prompt: navigating by heading finds the request, not
    // a list of "permission request". A level below the group's heading
    // when it sits under one. Leptos has no typed `aria-level`, so it is
    // set by name (written `attr:aria-level` in `view!`, the name itself
    // would reach the page and the heading would have no level).
    let level = if use_context::<UnderHeading>().is_some() { "3" } else { "2" };
    let title = view! {
        <p id=title_id.clone() class="kind" role="heading">
            {format!("{} request", c.kind_words())}
            <span class="sr-only">{format!(": {}", c.prompt.clone().unwrap_or_default())}</span>
        </p>
    }
    .attr("aria-level", level);
    view! {
        <article
            class="card"
            class:expanded=move || expanded.get()
            id=format!("card-{}", c.id)
            data-steady=move || if steady.settling() { "settling" } else { "ready" }
            tabindex="-1"
            data-request=c.id.clone()
            data-kind=c.kind.clone()
            data-severity=severity
            data-status=move || card.with(|c| c.status.as_str())
            data-busy=move || card.with(|c| c.in_flight().to_string())
            aria-labelledby=title_id.clone()
        >
            <header class="card-head">
                <span class=format!("sev sev-{severity}")>{severity}</span>
                {title}
                <button type="button" class="details-toggle"
                    aria-expanded=move || expanded.get().to_string()
                    aria-controls=details_id.clone()
                    aria-label=format!("Details of the {kind_words} request")
                    on:click=move |_| expanded.update(|x| *x = !*x)>
                    {toggle_words}
                </button>
                <p class="card-line">
                    <span class="card-agent" title=c.source.clone()>{c.agent.clone()}</span>
                    {c.project().map(|p| view! {
                        <span class="card-project" title=c.cwd.clone().unwrap_or_else(|| c.session.clone())>
                            <span class="sr-only">"in "</span>{p}
                        </span>
                    })}
                    <span class="age" title=wall_exactly(raised)>
                        {move || format!("raised {}", clock::ago(console.now.get(), raised))}
                    </span>
                    {c.expires_at.map(|at| view! { <Countdown at=at /> })}
                </p>
                <DestructiveNote card=c.clone() />
            </header>
            <div class="card-details" id=details_id>
                <Provenance card=c.clone() />
            </div>
            // What it would do, then the question right above its answers:
            // whenever the buttons are on screen, so is what they answer.
            <RequestDetail card=c.clone() />
            <AgentText card=c.clone() />
            <AnswerArea card=card expanded=expanded />
            <RuleMaker card=card />
            <CommandList commands=Signal::derive(move || card.with(|c| c.commands.clone())) />
        </article>
    }
}

/// What became of `card`, naming whoever answered by the one rule.
fn outcome_words(card: &CardView) -> impl Fn() -> String + Clone + Send + Sync + 'static {
    let console = expect_context::<Console>();
    let card = card.clone();
    move || card.outcome_words(&console.me())
}

/// A card that left the inbox: what happened to it. Listed right under
/// the history's own heading, so its title is the next level down.
#[component]
pub fn SettledCard(card: CardView) -> impl IntoView {
    let status = card.status.as_str();
    let outcome = outcome_words(&card);
    let commands = card.commands.clone();
    let when = card.settled_at();
    let head = view! {
        <header class="card-head">
            <span class=format!("sev sev-{}", card.severity.as_str())>{card.severity.as_str()}</span>
            <h2 class="kind">{format!("{} request", card.kind_words())}</h2>
            <time class="age" datetime=when.to_rfc3339() title=wall_exactly(when)>{wall(when)}</time>
        </header>
    };
    view! {
        <article class="settled" data-request=card.id.clone() data-status=status data-kind=card.kind.clone() data-overruled=(!card.overruled.is_empty()).to_string()>
            {head}
            <Provenance card=card.clone() />
            <DestructiveNote card=card.clone() />
            <RequestDetail card=card.clone() />
            <AgentText card=card.clone() />
            <p class="outcome" data-tone=card.verdict().1.token() data-outcome=card.close.as_ref().map(|c| c.how.token()).unwrap_or("answered")>{outcome}</p>
            {(!card.answer.as_ref().map(|a| a.values.is_empty()).unwrap_or(true)).then(|| {
                let values = card.answer.as_ref().map(|a| a.values.clone()).unwrap_or_default();
                view! {
                    <dl class="values">
                        {values.into_iter().map(|(k, v)| view! { <div><dt>{k}</dt><dd>{v}</dd></div> }).collect_view()}
                    </dl>
                }
            })}
            <CommandList commands=Signal::derive(move || commands.clone()) />
        </article>
    }
}

/// Where a card settled in the inbox: one line saying what was decided, by
/// whom and what came of it (read whole), what was asked under it, and
/// the commands' life folded away unless something went wrong.
#[component]
pub fn SettledRow(card: CardView) -> impl IntoView {
    let status = card.status.as_str();
    let outcome = outcome_words(&card);
    let title = outcome.clone();
    // Anything short of done stays open, and nothing is cut short: a
    // refusal is read, not unfolded.
    let trouble = !card.overruled.is_empty() || card.commands.iter().any(|c| !matches!(c.phase, Phase::Done(_)));
    let commands = card.commands.clone();
    let has_commands = !commands.is_empty();
    let session_href = Route::Session(card.key.session.clone()).href();
    view! {
        <article
            class="settled row"
            class:trouble=trouble
            data-request=card.id.clone()
            data-status=status
            data-kind=card.kind.clone()
            data-overruled=(!card.overruled.is_empty()).to_string()
        >
            <p class="row-line">
                <span class="outcome" data-tone=card.verdict().1.token() data-outcome=card.close.as_ref().map(|c| c.how.token()).unwrap_or("answered") title=title>
                    {outcome}
                </span>
            </p>
            <p class="row-what">
                <a href=session_href>{card.agent.clone()}</a>
                ": "
                <span class="row-prompt">{card.prompt.clone().unwrap_or_default()}</span>
            </p>
            {has_commands.then(|| view! {
                <details class="what-happened" open=trouble>
                    <summary>"What happened"</summary>
                    <CommandList commands=Signal::derive({
                        let commands = commands.clone();
                        move || commands.clone()
                    }) />
                </details>
            })}
        </article>
    }
}
