//! Session lanes: who is working on what, and whether anything waits.

use leptos::prelude::*;

use super::route::Route;
use crate::model::session::{Lane, NoCommands};
use crate::model::{clock, words};
use crate::web::bridge::Console;

#[component]
pub fn LaneSummary(lane: Lane) -> impl IntoView {
    let console = expect_context::<Console>();
    let href = Route::Session(lane.key.clone()).href();
    let (finished, failed, cancelled) = lane.terminals();
    let updated = lane.updated_at;
    let title = lane.label.clone().unwrap_or_else(|| lane.name.clone());
    // Only the agent's absence is said per lane: a device offline or without
    // a live relay is said once, by the banner.
    // An open session whose agent is gone says so in its state too, rather
    // than "active".
    let away = {
        let lane = lane.clone();
        Memo::new(move |_| {
            let live = console.relays.with(|r| r.iter().any(|r| r.is_live()));
            lane.no_commands(live, console.online.get())
                .filter(|(why, _)| *why == NoCommands::AgentAway)
                .map(|(_, words)| words)
        })
    };
    let agent_away =
        move || away.get().map(|words| view! { <p class="hint offline-agent" data-controls="none">{words}</p> });
    let state = lane.state.token();
    let shown_state = move || if away.with(Option::is_some) { ("away", "not connected") } else { (state, state) };
    view! {
        <article class="lane" data-session=lane.name.clone() data-state=lane.state.token() data-agent=lane.agent.clone()
            data-started=lane.started_at.0.to_string()>
            <header class="lane-head">
                <a class="lane-title" href=href>
                    <span class="agent">{lane.agent.clone()}</span>
                    <span class="lane-label">{title}</span>
                </a>
                <span class=move || format!("state state-{}", shown_state().0)>{move || shown_state().1}</span>
                {(lane.pending > 0).then(|| view! {
                    <span class="pending" data-pending=lane.pending.to_string()>{format!("{} waiting", lane.pending)}</span>
                })}
            </header>
            <p class="lane-meta">
                <span class="mono">{lane.name.clone()}</span>
                {lane.relay.clone().map(|r| format!(" \u{b7} via {r}"))}
                {format!(" \u{b7} {}", words::count(lane.events, "event", "events"))}
                {move || format!(" \u{b7} updated {}", clock::ago(console.now.get(), updated))}
            </p>
            <p class="lane-runs">
                {lane.doing()}
                {format!(" \u{b7} {}", words::runs_summary(lane.runs.len(), finished, failed, cancelled))}
            </p>
            {agent_away}
        </article>
    }
}

#[component]
pub fn Sessions() -> impl IntoView {
    let console = expect_context::<Console>();
    view! {
        <section class="sessions" aria-labelledby="sessions-title">
            <h1 id="sessions-title" class="view-title">"Sessions"</h1>
            <p class="hint">"In the order they started: new sessions join at the end, and nothing moves."</p>
            <p class="empty" hidden=move || console.lanes.with(|l| !l.is_empty())>"No sessions seen yet."</p>
                <ol class="lanes">
                    <For each=move || console.lanes.get() key=|l| super::key((&l.key, l.state, l.pending, l.events, &l.verbs, l.updated_at.0, l.runs.len())) let:l>
                        <li><LaneSummary lane=l /></li>
                    </For>
                </ol>
        </section>
    }
}
