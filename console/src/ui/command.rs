//! A command's life on screen: sent, acknowledged, done, or why not, in
//! words; a retry for a silent window that resends the same command.

use leptos::prelude::*;

use crate::model::command::{CommandView, Phase};
use crate::web::bridge::Console;

#[component]
pub fn CommandRow(command: CommandView) -> impl IntoView {
    let console = expect_context::<Console>();
    let error = RwSignal::new(None::<String>);
    let id = command.id.clone();
    let retry = move |_| {
        if let Err(e) = console.retry(&id) {
            error.set(Some(e));
        }
    };
    let detail = match &command.phase {
        Phase::Rejected { detail: Some(d), .. } => Some(("The agent's stated reason: ", d.clone())),
        Phase::RelayRefused { detail: Some(d), .. } => Some(("The relay's words: ", d.clone())),
        _ => None,
    };
    let who = {
        let command = command.clone();
        move || command.who(&console.me())
    };
    let latencies = command.latencies();
    let sent = command.sent_at.map(crate::web::platform::wall).unwrap_or_default();
    let sends = command.sends;
    let retryable = command.retryable();
    view! {
        <li class="cmd" data-phase=command.phase.token() data-command=command.id.clone() data-mine=command.mine.to_string()>
            <p class="cmd-what">
                <span class="who">{who}</span>
                ": " {command.verb.clone()}
                {(!command.what.is_empty()).then(|| format!(" \u{2014} {}", command.what))}
                {command.request.clone().map(|r| view! { " to " <span class="cmd-request">{r}</span> })}
                <span class="cmd-time">{sent}</span>
            </p>
            <p class="cmd-state" role="status">{command.headline.clone()}</p>
            {command.explanation.clone().map(|e| view! { <p class="cmd-why">{e}</p> })}
            {detail.map(|(who, d)| view! { <p class="cmd-detail">{who} <q>{d}</q></p> })}
            {(!latencies.is_empty() || sends > 1).then(|| view! {
                <p class="cmd-meta">
                    {latencies}
                    {(sends > 1).then(|| format!(" \u{b7} sent {sends} times (same id)"))}
                </p>
            })}
            {retryable.then(|| view! { <button type="button" class="retry" on:click=retry>"Retry (same command)"</button> })}
            {move || error.get().map(|e| view! { <p class="field-error" role="alert">{e}</p> })}
        </li>
    }
}

#[component]
pub fn CommandList(commands: Signal<Vec<CommandView>>) -> impl IntoView {
    view! {
            <ol class="commands" aria-label="Commands" aria-live="polite" hidden=move || commands.with(Vec::is_empty)>
                <For
                    each=move || commands.get()
                    key=|c| super::key((&c.id, &c.phase, c.sends, c.ack_latency_ms, c.outcome_latency_ms))
                    let:c
                >
                    <CommandRow command=c />
                </For>
            </ol>
    }
}
