//! The inbox: pending cards, most severe, soonest-expiring, oldest first,
//! in pages so a thousand requests still render at once. A card answered
//! (or settled while in view) folds into a one-line row in its own place,
//! so the confirmation is where the person acted. The list can be kept to
//! one agent, session or kind, and grouped by any of them.

use leptos::prelude::*;

use super::card::{CardItem, SettledRow, UnderHeading};
use crate::model::card::Answering;
use crate::model::inbox::{self, Facet, Filter, Grouping, Row, Waiting};
use crate::model::status;
use crate::web::bridge::Console;

/// Cards rendered per page.
const PAGE: usize = 40;
/// Cards drawn with the first requests: about a screenful, so the first
/// card does not wait for a page of them. The rest of the page follows a
/// screenful at a time while the page is idle (see [`Drawn`]).
const SCREENFUL: usize = 6;
/// The longest a screenful waits for the page to be idle.
const DRAW_WAIT_MS: u32 = 1_000;

/// How many waiting cards the inbox draws for now: a screenful when the
/// console opens, raised while the page is idle until it no longer
/// limits. Kept by the shell, so going to another view and back draws
/// the whole page at once (and opens where it was left).
#[derive(Clone, Copy)]
pub struct Drawn(RwSignal<usize>);

impl Drawn {
    pub fn provide() {
        provide_context(Drawn(RwSignal::new(SCREENFUL)));
    }

    /// Draws one more screenful once the page is idle, while there are
    /// cards to draw; `usize::MAX` once the page is drawn.
    fn grow_when_idle(self, waiting: bool) {
        let now = self.0.get();
        if now == usize::MAX || !waiting {
            return;
        }
        crate::web::platform::when_idle(DRAW_WAIT_MS, move || {
            let _ = self.0.try_update(|d| *d = if *d + SCREENFUL >= PAGE { usize::MAX } else { *d + SCREENFUL });
        });
    }
}

/// Requests held behind "N new", for the pill in the tab bar: it sits in
/// a place of its own there, over nothing (a pill floating over the list
/// covered the tabs or a card's top). Tapping it brings them in.
#[derive(Clone, Copy)]
pub struct NewAbove {
    pub held: RwSignal<usize>,
    /// Bumped by a tap on the pill.
    pub bring_in: RwSignal<u64>,
}

impl NewAbove {
    pub fn provide() {
        provide_context(NewAbove { held: RwSignal::new(0), bring_in: RwSignal::new(0) });
    }
}

/// The pill: how many requests wait above what is shown, and a tap to
/// bring them in (and go to the top, where they are).
#[component]
pub fn NewAbovePill() -> impl IntoView {
    let new = expect_context::<NewAbove>();
    view! {
        <button type="button" class="new-above" hidden=move || new.held.get() == 0
            on:click=move |_| {
                new.bring_in.update(|n| *n += 1);
                crate::web::platform::window().scroll_to_with_x_and_y(0.0, 0.0);
            }>
            {move || format!("\u{2191} {} new", new.held.get())}
            <span class="sr-only">{move || format!(" {} \u{2014} show", if new.held.get() == 1 { "request" } else { "requests" })}</span>
        </button>
    }
}

/// One filter's select: "All …" and each value with its count (a value
/// chosen earlier is among them, with 0, after its last request went).
#[component]
fn FacetSelect(
    id: &'static str,
    label: &'static str,
    all: &'static str,
    facets: Signal<Vec<Facet>>,
    value: Signal<Option<String>>,
    set: impl Fn(Option<String>) + 'static,
) -> impl IntoView {
    let options = move || facets.get();
    view! {
        <div>
            <label for=id class="sr-only">{label}</label>
            <select id=id on:change=move |ev| {
                let v = event_target_value(&ev);
                set(Some(v).filter(|v| !v.is_empty()));
            }>
                <option value="" selected=move || value.with(Option::is_none)>{all}</option>
                <For each=options key=|f| super::key((&f.value, f.count, &f.label)) let:f>
                    {
                        let v = f.value.clone();
                        view! {
                            <option value=f.value.clone() selected=move || value.with(|x| x.as_deref() == Some(v.as_str()))>
                                {format!("{} ({})", f.label, f.count)}
                            </option>
                        }
                    }
                </For>
            </select>
        </div>
    }
}

#[component]
fn InboxTools(
    facets: Memo<inbox::Facets>,
    shown: Signal<usize>,
    total: Signal<usize>,
    open: Signal<bool>,
) -> impl IntoView {
    let console = expect_context::<Console>();
    let filter = console.filter;
    let field = move |f: fn(&Filter) -> Option<String>| Signal::derive(move || filter.with(f));
    view! {
        <div class="inbox-tools" class:open=open id="inbox-tools" role="group" aria-label="Filter and group the requests">
            <FacetSelect id="filter-agent" label="Agent" all="All agents"
                facets=Signal::derive(move || facets.with(|f| f.agents.clone()))
                value=field(|f| f.agent.clone())
                set=move |v| filter.update(|f| f.agent = v) />
            <FacetSelect id="filter-session" label="Session" all="All sessions"
                facets=Signal::derive(move || facets.with(|f| f.sessions.clone()))
                value=field(|f| f.session.clone())
                set=move |v| filter.update(|f| f.session = v) />
            <FacetSelect id="filter-kind" label="Kind" all="All kinds"
                facets=Signal::derive(move || facets.with(|f| f.kinds.clone()))
                value=field(|f| f.kind.clone())
                set=move |v| filter.update(|f| f.kind = v) />
            <div>
                <label for="inbox-group" class="sr-only">"Group"</label>
                <select id="inbox-group" on:change=move |ev| console.grouping.set(Grouping::from_token(&event_target_value(&ev)))>
                    {Grouping::ALL.into_iter().map(|g| view! {
                        <option value=g.token() selected=move || console.grouping.get() == g>{g.words()}</option>
                    }).collect_view()}
                </select>
            </div>
        </div>
            <p class="filter-note" role="status" hidden=move || !filter.with(Filter::is_active)>
                <span>{move || format!("Showing {} of {} waiting", shown.get(), total.get())}</span>
                <button type="button" class="quiet" on:click=move |_| filter.set(Filter::default())>"Show all"</button>
            </p>
    }
}

#[component]
fn RowItem(row: Row) -> impl IntoView {
    let console = expect_context::<Console>();
    match row {
        Row::Waiting(w) => {
            let r = w.key;
            view! { {move || console.card(&r).map(|c| view! { <li><CardItem card=c /></li> })} }.into_any()
        }
        Row::Settled(c) => view! { <li class="settled-slot"><SettledRow card=c /></li> }.into_any(),
    }
}

#[component]
pub fn Inbox() -> impl IntoView {
    let console = expect_context::<Console>();
    let shown = RwSignal::new(PAGE);
    let drawn = expect_context::<Drawn>();
    let facets = Memo::new(move |_| console.filter.with(|f| console.rows.with(|r| inbox::facets(r, f))));
    // What is drawn: requests arriving above what is shown wait behind
    // "N new" (see `inbox::Arrivals`), so nothing on screen moves.
    let arrivals = StoredValue::new_local(inbox::Arrivals::default());
    let new_above = expect_context::<NewAbove>();
    let brought = StoredValue::new(new_above.bring_in.get_untracked());
    // Only what this console can answer is in the list; the rest waits
    // in a quieter place below it.
    let answerable = |r: &Row| match r {
        Row::Waiting(w) => w.answerable && !w.unreachable,
        Row::Settled(c) => !matches!(c.answering, Answering::Elsewhere(_) | Answering::Unknown),
    };
    let placed = Memo::new(move |_| {
        let tapped = new_above.bring_in.get();
        let live = console.relays.with(|r| r.iter().any(|r| r.is_live()));
        console
            .rows
            .with(|rows| {
                let rows: Vec<Row> = rows.iter().filter(|r| answerable(r)).cloned().collect();
                arrivals.try_update_value(|a| {
                    if brought.get_value() != tapped {
                        brought.set_value(tapped);
                        a.show_all(&rows);
                    }
                    a.place(&rows, live, crate::web::platform::perf_now() as u64)
                })
            })
            .unwrap_or_default()
    });
    Effect::new(move |_| {
        let held = placed.with(|p| p.held);
        if new_above.held.get_untracked() != held {
            new_above.held.set(held);
        }
    });
    on_cleanup(move || new_above.held.set(0));
    // The rows the filter keeps, up to the `shown`-th waiting card.
    let kept = Memo::new(move |_| {
        console.filter.with(|f| {
            placed.with(|p| {
                let all = &p.rows;
                let limit = shown.get().min(drawn.0.get());
                let mut waiting = 0;
                all.iter()
                    .filter(|r| f.admits(r))
                    .take_while(|r| {
                        if matches!(r, Row::Waiting(_)) {
                            waiting += 1;
                        }
                        waiting <= limit
                    })
                    .cloned()
                    .collect::<Vec<_>>()
            })
        })
    });
    let groups = Memo::new(move |_| kept.with(|rows| inbox::arrange(rows, &Filter::default(), console.grouping.get())));
    let total = Signal::derive(move || console.inbox.with(Vec::len));
    let matching = Signal::derive(move || {
        console.filter.with(|f| {
            console
                .rows
                .with(|all| all.iter().filter(|r| answerable(r) && matches!(r, Row::Waiting(_)) && f.admits(r)).count())
        })
    });
    // Memos, so the list is drawn again only when these change, not with
    // every row.
    let has_rows = Memo::new(move |_| console.rows.with(|r| !r.is_empty()));
    let by_group = Memo::new(move |_| console.grouping.get() != Grouping::None);
    let tools = Memo::new(move |_| has_rows.get() || console.filter.with(Filter::is_active) || by_group.get());
    let filters_open = RwSignal::new(false);
    Effect::new(move |_| drawn.grow_when_idle(has_rows.get()));
    let group_rows = move |key: String| {
        move || groups.with(|gs| gs.iter().find(|g| g.key == key).map(|g| g.rows.clone()).unwrap_or_default())
    };
    view! {
        <section class="inbox" aria-labelledby="inbox-title">
            <div class="inbox-head">
                <h1 id="inbox-title" class="view-title">
                    "Waiting for you"
                    // Counted only when a relay is reached: a refused token or
                    // an offline device knows of nothing waiting, not of none.
                    {move || console.relays.with(|r| r.iter().any(|r| r.is_live()))
                        .then(|| view! { <span class="count">{total}</span> })}
                </h1>
                // On a phone the filters fold behind this one control, so
                // the requests come first.
                {move || tools.get().then(|| view! {
                    <button type="button" class="quiet filters-toggle" aria-controls="inbox-tools"
                        aria-expanded=move || filters_open.get().to_string()
                        on:click=move |_| filters_open.update(|o| *o = !*o)>
                        {move || match console.filter.with(Filter::active_count) + usize::from(console.grouping.get() != Grouping::None) {
                            0 => "Filters".to_owned(),
                            n => format!("Filters ({n})"),
                        }}
                    </button>
                })}
            </div>
            {move || {
                let reach = console.relays.with(|r| status::reach(r, console.online.get()));
                (total.get() == 0).then(|| reach.empty_inbox()).flatten().map(|words| view! { <p class="empty">{words}</p> })
            }}
            // Shown with the list, not only above two cards: a bar that came and
            // went with the count would move every card under a finger.
            {move || tools.get().then(|| view! { <InboxTools facets=facets shown=matching total=total open=filters_open.into() /> })}
            {move || match (has_rows.get(), by_group.get()) {
                (false, _) => ().into_any(),
                (true, false) => view! {
                    <ol class="cards" aria-label="Pending requests">
                        <For each=group_rows(String::new()) key=row_key let:row>
                            <RowItem row=row />
                        </For>
                    </ol>
                }
                .into_any(),
                (true, true) => view! {
                    <For each=move || groups.with(|gs| gs.iter().map(|g| (g.key.clone(), g.title.clone())).collect::<Vec<_>>())
                        key=|g| super::key(g) let:g>
                        {
                            let (key, title) = g;
                            provide_context(UnderHeading);
                            let rows = group_rows(key.clone());
                            let count = {
                                let key = key.clone();
                                move || groups.with(|gs| gs.iter().find(|g| g.key == key)
                                    .map_or(0, |g| g.rows.iter().filter(|r| matches!(r, Row::Waiting(_))).count()))
                            };
                            view! {
                                <section class="inbox-group" data-group=key.clone()>
                                    <h2>{if title.is_empty() { "(none)".to_owned() } else { title.clone() }} <span class="count">{count}</span></h2>
                                    <ol class="cards" aria-label=format!("Requests: {title}")>
                                        <For each=rows key=row_key let:row>
                                            <RowItem row=row />
                                        </For>
                                    </ol>
                                </section>
                            }
                        }
                    </For>
                }
                .into_any(),
            }}
            // Hidden while the page is still being drawn: it would move
            // down under a finger with every screenful.
            <button type="button" class="more"
                hidden=move || matching.get() <= shown.get() || drawn.0.get() < shown.get()
                on:click=move |_| shown.update(|s| *s += PAGE)>
                {move || format!("Show more ({} not shown)", matching.get() - shown.get().min(matching.get()))}
            </button>
            <Aside kind=Aside::Unreachable />
            <Aside kind=Aside::Elsewhere />
        </section>
    }
}

/// The quieter lists below the inbox, of requests nobody can answer from
/// here: listed one line each, not counted as waiting for you.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Aside {
    /// Their agent is not connected: an answer could not reach it now.
    Unreachable,
    /// Their answer travels another way, or the request itself was not seen.
    Elsewhere,
}

impl Aside {
    fn holds(self, w: &Waiting) -> bool {
        match self {
            Aside::Unreachable => w.answerable && w.unreachable,
            Aside::Elsewhere => !w.answerable,
        }
    }

    /// Its class, heading and hint.
    fn words(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Aside::Unreachable => (
                "unreachable-list",
                "Agent not connected ",
                "No relay lists these agents now, so an answer cannot reach them. They move up if their agent comes back.",
            ),
            Aside::Elsewhere => ("elsewhere-list", "Answered elsewhere ", "For information: answered in the agent's own interface."),
        }
    }
}

#[component]
fn Aside(kind: Aside) -> impl IntoView {
    let console = expect_context::<Console>();
    let (class, title, hint) = kind.words();
    let title_id = format!("{class}-title");
    let others = move || {
        console.rows.with(|rows| {
            rows.iter()
                .filter_map(|r| match r {
                    Row::Waiting(w) if kind.holds(w) => Some(w.clone()),
                    _ => None,
                })
                .collect::<Vec<_>>()
        })
    };
    view! {
        {move || {
            let others = others();
            (!others.is_empty()).then(|| view! {
                <section class=format!("aside-list {class}") aria-labelledby=title_id.clone()>
                    <h2 id=title_id.clone()>{title} <span class="count">{others.len()}</span></h2>
                    <p class="hint">{hint}</p>
                    <AsideRows others=others />
                </section>
            })
        }}
    }
}

#[component]
fn AsideRows(others: Vec<Waiting>) -> impl IntoView {
    view! {
            <ul>
                {others.into_iter().map(|w| view! {
                    <li class="info-row" data-request=w.key.request.to_string()>
                        <a href=super::route::Route::Session(w.key.session.clone()).href()>{w.agent}</a>
                        ": "
                        {w.prompt.unwrap_or_else(|| "(the request itself was not seen)".into())}
                    </li>
                }).collect_view()}
            </ul>
    }
}

/// A waiting card keeps its element while it waits; a row is redrawn when
/// what it says changes.
fn row_key(row: &Row) -> String {
    match row {
        Row::Waiting(_) => format!("w|{}", row.request()),
        Row::Settled(c) => {
            let phases: Vec<&str> = c.commands.iter().map(|x| x.phase.token()).collect();
            format!(
                "s|{}|{:?}|{}|{}|{:?}",
                c.id,
                c.status,
                phases.join(","),
                c.overruled.len(),
                c.tool.as_ref().map(|t| t.end)
            )
        }
    }
}
