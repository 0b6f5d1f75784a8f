//! Settled requests, most recent first, each with its outcome.

use leptos::prelude::*;

use super::card::SettledCard;
use super::route::Route;
use crate::model::inbox::MAX_HISTORY;
use crate::web::bridge::Console;

#[component]
pub fn History() -> impl IntoView {
    let console = expect_context::<Console>();
    view! {
        <section class="history" aria-labelledby="history-title">
            <h1 id="history-title" class="view-title">"History"</h1>
            <p class="hint">
                {format!("The {MAX_HISTORY} most recently settled requests this console has seen. ")}
                <a href=Route::Audit.href() data-open="audit">"Audit: every decision the relay kept, by person and date"</a>
            </p>
            <p class="empty" hidden=move || console.history.with(|h| !h.is_empty())>"Nothing has settled yet."</p>
                <ol class="cards">
                    <For
                        each=move || console.history.get()
                        key=|c| super::key((
                            &c.id,
                            c.status,
                            c.answer.is_some(),
                            c.tool.as_ref().map(|t| t.end),
                            c.commands.iter().map(|x| (&x.id, &x.phase)).collect::<Vec<_>>(),
                        ))
                        let:c
                    >
                        <li><SettledCard card=c /></li>
                    </For>
                </ol>
        </section>
    }
}
