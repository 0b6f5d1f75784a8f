//! The inbox: pending cards, most severe then oldest first, in pages so a
//! thousand requests still render at once; above them, what just settled.

use leptos::prelude::*;

use super::card::{CardItem, SettledCard};
use crate::web::bridge::Console;

/// Cards rendered per page.
const PAGE: usize = 40;
/// Settled cards kept above the inbox.
const RECENT_SHOWN: usize = 4;

#[component]
pub fn Inbox() -> impl IntoView {
    let console = expect_context::<Console>();
    let shown = RwSignal::new(PAGE);
    let visible = move || {
        console
            .inbox
            .with(|all| all.iter().take(shown.get()).cloned().collect::<Vec<_>>())
    };
    let total = move || console.inbox.with(Vec::len);
    view! {
        <section class="inbox" aria-labelledby="inbox-title">
            <h1 id="inbox-title" class="view-title">
                "Waiting for you"
                <span class="count">{total}</span>
            </h1>
            <Show when=move || console.recent.with(|r| !r.is_empty())>
                <section class="recent" aria-label="Just settled">
                    <h2>"Just settled"</h2>
                    <ul class="settled-list">
                        <For
                            each=move || console.recent.with(|r| r.iter().take(RECENT_SHOWN).cloned().collect::<Vec<_>>())
                            key=|c| (c.id.clone(), c.status, c.commands.len())
                            let:c
                        >
                            <li><SettledCard card=c compact=true /></li>
                        </For>
                    </ul>
                </section>
            </Show>
            <Show
                when=move || { total() > 0 }
                fallback=move || view! {
                    <p class="empty">
                        {move || if console.relays.with(|r| r.iter().any(|x| x.is_live())) {
                            "Nothing is waiting for an answer."
                        } else {
                            "Nothing to show yet: waiting for a relay connection."
                        }}
                    </p>
                }
            >
                <ol class="cards" aria-label="Pending requests">
                    <For each=visible key=|r| r.clone() let:r>
                        {move || console.card(&r).map(|c| view! { <li><CardItem card=c /></li> })}
                    </For>
                </ol>
                <Show when=move || { total() > shown.get() }>
                    <button type="button" class="more" on:click=move |_| shown.update(|s| *s += PAGE)>
                        {move || format!("Show more ({} not shown)", total() - shown.get().min(total()))}
                    </button>
                </Show>
            </Show>
        </section>
    }
}
