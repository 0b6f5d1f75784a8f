//! The inbox: pending cards, most severe, soonest-expiring, oldest first,
//! in pages so a thousand requests still render at once. A card answered
//! (or settled while in view) folds into a one-line row in its own place,
//! so the confirmation is where the person acted.

use leptos::prelude::*;

use super::card::{CardItem, SettledRow};
use crate::model::status;
use crate::web::bridge::{Console, Row};

/// Cards rendered per page.
const PAGE: usize = 40;

#[component]
pub fn Inbox() -> impl IntoView {
    let console = expect_context::<Console>();
    let shown = RwSignal::new(PAGE);
    // Rows up to the `shown`-th waiting card, with the rows between them.
    let visible = move || {
        console.rows.with(|all| {
            let limit = shown.get();
            let mut waiting = 0;
            all.iter()
                .take_while(|r| {
                    if matches!(r, Row::Waiting(_)) {
                        waiting += 1;
                    }
                    waiting <= limit
                })
                .cloned()
                .collect::<Vec<_>>()
        })
    };
    let total = move || console.inbox.with(Vec::len);
    let any_rows = move || console.rows.with(|r| !r.is_empty());
    view! {
        <section class="inbox" aria-labelledby="inbox-title">
            <h1 id="inbox-title" class="view-title">
                "Waiting for you"
                <span class="count">{total}</span>
            </h1>
            {move || {
                let reach = console.relays.with(|r| status::reach(r, console.online.get()));
                (total() == 0).then(|| reach.empty_inbox()).flatten().map(|words| view! { <p class="empty">{words}</p> })
            }}
            <Show when=any_rows>
                <ol class="cards" aria-label="Pending requests">
                    <For
                        each=visible
                        key=row_key
                        let:row
                    >
                        {match row {
                            Row::Waiting(r) => {
                                view! { {move || console.card(&r).map(|c| view! { <li><CardItem card=c /></li> })} }.into_any()
                            }
                            Row::Settled(c) => view! { <li class="settled-slot"><SettledRow card=c /></li> }.into_any(),
                        }}
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

/// A waiting card keeps its element while it waits; a row is redrawn when
/// what it says changes.
fn row_key(row: &Row) -> String {
    match row {
        Row::Waiting(r) => format!("w|{}", r.request),
        Row::Settled(c) => {
            let phases: Vec<&str> = c.commands.iter().map(|x| x.phase.token()).collect();
            format!("s|{}|{:?}|{}|{}", c.id, c.status, phases.join(","), c.overruled.len())
        }
    }
}
