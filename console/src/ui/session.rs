//! One session: its controls (only the verbs its agent declared), the
//! requests waiting in it, its timeline with navigable causes, and the
//! command audit chain.

use aep_engine::protocol::vocabulary::EventType;
use aep_engine::store::SessionKey;
use leptos::context::Provider;
use leptos::ev::SubmitEvent;
use leptos::prelude::*;
use serde_json::{Map, Value};
use wasm_bindgen::JsCast;

use super::card::{CardItem, UnderHeading};
use super::command::CommandRow;
use super::route::Route;
use crate::model::command::CommandView;
use crate::model::session::{Lane, LaneState, NoCommands};
use crate::model::timeline::{self, position_words, Category, Item, Row};
use crate::model::words;
use crate::web::bridge::{Console, SessionDetail};

/// Scrolls to and focuses a timeline event, briefly marking it.
fn jump(id: &str) {
    let Some(el) = document().get_element_by_id(&format!("ev-{id}")) else {
        return;
    };
    // An event folded into a tool call's row: unfold it first.
    if let Some(d) = el.closest("details").ok().flatten() {
        let _ = d.set_attribute("open", "");
    }
    let el: web_sys::HtmlElement = el.unchecked_into();
    let opts = web_sys::ScrollIntoViewOptions::new();
    opts.set_block(web_sys::ScrollLogicalPosition::Center);
    el.scroll_into_view_with_scroll_into_view_options(&opts);
    let _ = el.focus();
    let _ = el.class_list().add_1("jumped");
    let el2 = el.clone();
    crate::web::platform::after(2_000, move || {
        let _ = el2.class_list().remove_1("jumped");
    });
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Confirm {
    CancelRun(String),
    CancelSession,
}

/// `revision`: the session's ([`Console::revision`]), which moves when a
/// command sent here moves on.
#[component]
fn Controls(lane: Signal<Option<Lane>>, revision: Signal<u64>) -> impl IntoView {
    let console = expect_context::<Console>();
    let confirm = RwSignal::new(None::<Confirm>);
    let reason = RwSignal::new(String::new());
    let last = RwSignal::new(None::<String>);
    let error = RwSignal::new(None::<String>);
    let last_view = Memo::new(move |_| {
        revision.track();
        console.now.track();
        last.get().and_then(|id| console.command(&id))
    });
    let done = move |r: Result<String, String>| match r {
        Ok(id) => {
            last.set(Some(id));
            error.set(None);
            confirm.set(None);
            reason.set(String::new());
        }
        Err(e) => error.set(Some(e)),
    };
    let run_cancel = move |_| {
        let (Some(l), Some(c)) = (lane.get_untracked(), confirm.get_untracked()) else {
            return;
        };
        let why = Some(reason.get_untracked()).filter(|r| !r.trim().is_empty());
        let r = match c {
            Confirm::CancelRun(run) => console.cancel(&l, Some(&run), why),
            Confirm::CancelSession => console.cancel(&l, None, why),
        };
        done(r);
    };
    // The question takes the focus when it opens (its reason field), and
    // gives it back to the button that asked when it closes.
    let opener = StoredValue::new(None::<&'static str>);
    Effect::new(move |was_open: Option<bool>| {
        let open = confirm.with(Option::is_some);
        if open && was_open != Some(true) {
            opener.set_value(confirm.with_untracked(|c| match c {
                Some(Confirm::CancelRun(_)) => Some("cancel-run"),
                Some(Confirm::CancelSession) => Some("cancel-session"),
                None => None,
            }));
            // The safe answer, not the reason box: on a phone its keyboard
            // would cover the buttons.
            request_animation_frame(|| {
                focus_selector("button[data-confirm=\"no\"]");
            });
        } else if !open && was_open == Some(true) {
            if let Some(verb) = opener.get_value() {
                // The run may be gone with its button: the session's, then the page.
                request_animation_frame(move || {
                    let _ = focus_selector(&format!("button[data-verb=\"{verb}\"]"))
                        || focus_selector("button[data-verb=\"cancel-session\"]");
                });
                refocus(CONTROLS, 25);
            }
        }
        open
    });
    view! {
        <section class="controls" aria-label="Session controls">
            {move || {
                let Some(l) = lane.get() else { return ().into_any() };
                let live = console.relays.with(|r| r.iter().any(|r| r.is_live()));
                match l.no_commands(live, console.online.get()) {
                    Some((why, words)) => {
                        let class = match why {
                            NoCommands::Offline | NoCommands::AgentAway => "hint offline-agent",
                            NoCommands::Ambiguous => "hint ambiguous",
                            NoCommands::Ended | NoCommands::ReadOnly => "hint",
                        };
                        view! { <p class=class data-controls=why.token()>{words}</p> }.into_any()
                    }
                    None => view! { <ControlButtons lane=l confirm=confirm done=done /> }.into_any(),
                }
            }}
            {move || confirm.with(Option::is_some).then(|| view! { <CancelQuestion confirm=confirm reason=reason on_yes=run_cancel /> })}
            {move || error.get().map(|e| view! { <p class="send-error" role="alert">{e}</p> })}
            {move || last_view.get().map(|c| view! { <ol class="commands last-command"><CommandRow command=c /></ol> })}
        </section>
    }
}

/// The verbs the session's agent declared, each a button; cancelling asks first.
#[component]
fn ControlButtons(
    lane: Lane,
    confirm: RwSignal<Option<Confirm>>,
    done: impl Fn(Result<String, String>) + Copy + 'static,
) -> impl IntoView {
    let console = expect_context::<Console>();
    let l = lane;
    let open = l.open_run().map(|r| r.name.clone());
    let (l1, l2) = (l.clone(), l.clone());
    view! {
        <div class="control-buttons">
            {(l.verbs.cancel && open.is_some()).then(|| {
                let run = open.clone().unwrap_or_default();
                view! {
                    <button type="button" class="danger" data-verb="cancel-run"
                        on:click=move |_| confirm.set(Some(Confirm::CancelRun(run.clone())))>
                        "Cancel run\u{2026}"
                    </button>
                }
            })}
            {l.verbs.cancel.then(|| view! {
                <button type="button" class="danger" data-verb="cancel-session"
                    on:click=move |_| confirm.set(Some(Confirm::CancelSession))>
                    "Cancel session\u{2026}"
                </button>
            })}
            {(l.verbs.pause && l.state == LaneState::Active).then(|| view! {
                <button type="button" data-verb="pause" on:click=move |_| { done(console.pause(&l1)); refocus(CONTROLS, 25); }>"Pause"</button>
            })}
            {(l.verbs.resume && l.state == LaneState::Paused).then(|| view! {
                <button type="button" data-verb="resume" on:click=move |_| { done(console.resume(&l2)); refocus(CONTROLS, 25); }>"Resume"</button>
            })}
        </div>
        {(!l.verbs.cancel && !l.verbs.pause && !l.verbs.resume).then(|| view! {
            <p class="hint">"Its agent declared no session commands (cancel, pause or resume)."</p>
        })}
    }
}

/// "Cancel run …?" with an optional reason; the safe answer keeps going.
#[component]
fn CancelQuestion(
    confirm: RwSignal<Option<Confirm>>,
    reason: RwSignal<String>,
    on_yes: impl Fn(leptos::ev::MouseEvent) + 'static,
) -> impl IntoView {
    view! {
        <div class="confirm" role="alertdialog" aria-labelledby="confirm-title">
            <p id="confirm-title">
                {move || match confirm.get() {
                    Some(Confirm::CancelRun(r)) => format!("Cancel run {r}? The agent stops the work in progress."),
                    Some(Confirm::CancelSession) => "Cancel the whole session? The agent ends it.".to_owned(),
                    None => String::new(),
                }}
            </p>
            <label for="cancel-reason">"Reason (optional, sent to the agent)"</label>
            <input id="cancel-reason" type="text" autocomplete="off"
                prop:value=move || reason.get()
                on:input=move |ev| reason.set(event_target_value(&ev)) />
            <div class="control-buttons">
                <button type="button" class="danger" data-confirm="yes" on:click=on_yes>
                    {move || match confirm.get() {
                        Some(Confirm::CancelRun(_)) => "Yes, cancel the run",
                        _ => "Yes, cancel the session",
                    }}
                </button>
                <button type="button" data-confirm="no" on:click=move |_| confirm.set(None)>"Keep going"</button>
            </div>
        </div>
    }
}

#[component]
fn VendorForm(lane: Signal<Option<Lane>>, revision: Signal<u64>, ty: String) -> impl IntoView {
    let console = expect_context::<Console>();
    let mode = RwSignal::new("text".to_owned());
    let body = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let last = RwSignal::new(None::<String>);
    let last_view = Memo::new(move |_| {
        revision.track();
        console.now.track();
        last.get().and_then(|id| console.command(&id))
    });
    let slug: String = ty.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let ty_send = ty.clone();
    let submit = move |ev: SubmitEvent| {
        ev.prevent_default();
        let Some(l) = lane.get_untracked() else {
            return;
        };
        let text = body.get_untracked();
        let data = if mode.get_untracked() == "json" {
            match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(m)) => m,
                Ok(_) => {
                    return error.set(Some("The JSON payload must be an object, like {\"text\": \"\u{2026}\"}.".into()))
                }
                Err(e) => return error.set(Some(format!("Not valid JSON: {e}"))),
            }
        } else {
            if text.trim().is_empty() {
                return error.set(Some("Type the text to send first.".into()));
            }
            let mut m = Map::new();
            m.insert("text".into(), Value::String(text));
            m
        };
        match console.vendor(&l, &ty_send, data) {
            Ok(id) => {
                last.set(Some(id));
                error.set(None);
                body.set(String::new());
            }
            Err(e) => error.set(Some(e)),
        }
    };
    let area_id = format!("vendor-{slug}");
    view! {
        <form class="vendor" data-verb=ty.clone() on:submit=submit>
            <h3>{words::verb(&ty)} " " <span class="mono type">{ty.clone()}</span></h3>
            <div class="mode" role="radiogroup" aria-label="Payload format">
                <label class="check">
                    <input type="radio" name=format!("mode-{slug}") value="text"
                        prop:checked=move || mode.get() == "text" on:change=move |_| mode.set("text".into()) />
                    "Text"
                </label>
                <label class="check">
                    <input type="radio" name=format!("mode-{slug}") value="json"
                        prop:checked=move || mode.get() == "json" on:change=move |_| mode.set("json".into()) />
                    "JSON object"
                </label>
            </div>
            <label for=area_id.clone()>
                {move || if mode.get() == "json" { "Payload (sent as data)" } else { "Text (sent as data.text)" }}
            </label>
            <textarea id=area_id rows="3" spellcheck="false"
                prop:value=move || body.get() on:input=move |ev| body.set(event_target_value(&ev))></textarea>
            <button type="submit">{format!("Send {}", words::verb(&ty))}</button>
            {move || error.get().map(|e| view! { <p class="send-error" role="alert">{e}</p> })}
            {move || last_view.get().map(|c| view! { <ol class="commands last-command"><CommandRow command=c /></ol> })}
        </form>
    }
}

/// A tool call and its result, folded to one line that says how it went.
#[component]
fn ToolCallRow(call: Item, result: Option<Item>) -> impl IntoView {
    let newest = result.clone().unwrap_or_else(|| call.clone());
    let when = newest.at.map(crate::web::platform::wall).unwrap_or_default();
    let outcome = match result.as_ref().map(Item::core) {
        Some(Some(EventType::ToolFailed)) => "\u{2192} failed",
        Some(Some(EventType::ToolDenied)) => "\u{2192} denied",
        Some(_) => "\u{2192} done",
        None => "running",
    };
    let result_type = result.as_ref().map(|r| r.ty.clone());
    view! {
        <li class="event tool-pair" data-category="tool" data-at=newest.at.map(|t| t.0.to_string())
            data-result=result_type>
            <details>
                <summary>
                    <span class="ev-when">{when}</span>
                    <span class="ev-type mono">"tool call"</span>
                    <span class="pair-result">{outcome}</span>
                    <span class="ev-summary">{call.summary.clone()}</span>
                </summary>
                <ol class="pair-events">
                    <TimelineRow item=call />
                    {result.map(|r| view! { <TimelineRow item=r /> })}
                </ol>
            </details>
        </li>
    }
}

#[component]
fn TimelineEntry(row: Row) -> impl IntoView {
    match row {
        Row::Event(item) => view! { <TimelineRow item=item /> }.into_any(),
        Row::ToolCall { call, result } => view! { <ToolCallRow call=call result=result /> }.into_any(),
    }
}

fn entry_key(row: &Row) -> String {
    match row {
        Row::Event(i) => format!("e|{}|{:?}", i.id, i.cause),
        Row::ToolCall { call, .. } => format!("t|{}|{}", call.id, row.id()),
    }
}

#[component]
fn TimelineRow(item: Item) -> impl IntoView {
    let when = item.at.map(crate::web::platform::wall).unwrap_or_default();
    let cause = item.cause.clone();
    view! {
        <li id=format!("ev-{}", item.id) tabindex="-1" class="event" class:generic=item.generic class:command=item.command
            data-type=item.ty.clone() data-event=item.id.clone() data-category=item.category.token()
            data-at=item.at.map(|t| t.0.to_string()) data-call=item.call.clone()>
            <p class="ev-meta">
                <span class="ev-when">{when}</span>
                <span class="ev-pos mono">{position_words(item.position)}</span>
                <span class="ev-type mono">{item.ty.clone()}</span>
            </p>
            <p class="ev-summary">
                {item.by.clone().map(|by| {
                    let console = expect_context::<Console>();
                    view! { <span class="ev-who">{move || words::person_first(&by, &console.me())}</span> " " }
                })}
                {item.summary.clone()}
            </p>
            {cause.map(|(id, here)| match here {
                Some(words) => {
                    let target = id.clone();
                    view! {
                        <a class="ev-cause" href=format!("#ev-{id}") data-cause=id.clone()
                            on:click=move |ev| { ev.prevent_default(); jump(&target); }>
                            {format!("\u{21b3} caused by {words}")}
                        </a>
                    }.into_any()
                }
                None => view! {
                    <span class="ev-cause" title=format!("cause {id}")>
                        "\u{21b3} caused by an event not in this timeline"
                    </span>
                }.into_any(),
            })}
        </li>
    }
}

#[component]
fn Audit(commands: Signal<Vec<CommandView>>) -> impl IntoView {
    view! {
        <section class="audit" aria-labelledby="audit-title">
            <h2 id="audit-title">"Command audit"</h2>
            <p class="hint" hidden=move || commands.with(|c| !c.is_empty())>"No commands yet."</p>
                <ol class="commands">
                    <For each=move || commands.get()
                        key=|c| super::key((&c.id, &c.phase, c.sends, c.ack_latency_ms, c.outcome_latency_ms))
                        let:c>
                        <CommandRow command=c />
                    </For>
                </ol>
        </section>
    }
}

#[component]
pub fn SessionView(key: SessionKey) -> impl IntoView {
    let console = expect_context::<Console>();
    let k = key.clone();
    // How many of the newest events are shown: "Show earlier" pages in more.
    let limit = RwSignal::new(timeline::MAX_ITEMS as u64);
    let all_runs = RwSignal::new(false);
    // Read again only when this session moved on, not on every change.
    let revision = console.revision(&key);
    let detail: Memo<Option<SessionDetail>> = Memo::new(move |_| {
        revision.track();
        console.session(&k, limit.get() as usize)
    });
    let lane = Signal::derive(move || detail.with(|d| d.as_ref().map(|d| d.lane.clone())));
    let filter = RwSignal::new(timeline::Filter::All);
    let rows = Memo::new(move |_| {
        let f = filter.get();
        detail.with(|d| d.as_ref().map(|d| timeline::rows(&d.items, f)).unwrap_or_default())
    });
    let earlier = move || detail.with(|d| d.as_ref().map_or(0, |d| d.earlier));
    let dropped = move || detail.with(|d| d.as_ref().map_or(0, |d| d.dropped));
    let commands = Signal::derive(move || detail.with(|d| d.as_ref().map(|d| d.commands.clone()).unwrap_or_default()));
    let k2 = key.clone();
    let pending = Memo::new(move |_| {
        console.inbox.with(|all| all.iter().filter(|r| r.session == k2).cloned().collect::<Vec<_>>())
    });
    let vendor = move || {
        lane.with(|l| {
            l.as_ref()
                .filter(|l| l.verbs.listed && l.state != LaneState::Ended)
                .map(|l| l.verbs.vendor.clone())
                .unwrap_or_default()
        })
    };
    view! {
        <section class="session" data-session=key.name.to_string()>
            <p class="back">
                <a href=Route::Sessions.href()>"\u{2190} All sessions"</a>
                // The routes live in the fragment, so this scrolls instead of linking.
                <button type="button" class="quiet to-latest" on:click=move |_| to_timeline()>"Latest events \u{2193}"</button>
            </p>
            <p class="empty" hidden=move || detail.with(Option::is_some)>"This session is not known (yet)."</p>
            <div hidden=move || detail.with(Option::is_none)>
                {move || lane.get().map(|l| view! {
                    <header class="session-head">
                        <h1 class="view-title">
                            <span class="agent">{l.agent.clone()}</span>
                            " "
                            <span>{l.label.clone().unwrap_or_else(|| l.name.clone())}</span>
                        </h1>
                        <p class="lane-meta">
                            <span class=format!("state state-{}", l.state.token()) data-session-state=l.state.token()>{l.state.token()}</span>
                            {format!(" \u{b7} session {} \u{b7} ", l.name)}
                            <span class="mono" title="source">{l.source.clone()}</span>
                            {l.relay.clone().map(|r| format!(" \u{b7} via {r}"))}
                        </p>
                        <ul class="runs">
                            {(l.runs_shown(all_runs.get()).1 > 0).then(|| view! {
                                <li>
                                    <button type="button" class="quiet more-runs" on:click=move |_| all_runs.set(true)>
                                        {format!("Show {}", words::count(l.runs_shown(false).1, "earlier run", "earlier runs"))}
                                    </button>
                                </li>
                            })}
                            {l.runs_shown(all_runs.get()).0.iter().map(|r| view! {
                                <li data-run=r.name.clone() data-run-status=r.status.token()>
                                    <span class="mono">{r.name.clone()}</span>
                                    " "
                                    <span class=format!("state state-{}", r.status.token())>{r.status.token()}</span>
                                    {r.reason.clone().map(|x| format!(" \u{2014} {x}"))}
                                </li>
                            }).collect_view()}
                        </ul>
                    </header>
                })}
                <Controls lane=lane revision=revision />
                <For each=vendor key=|t| t.clone() let:t>
                    <VendorForm lane=lane revision=revision ty=t />
                </For>
                <div hidden=move || pending.with(Vec::is_empty)>
                    <h2>"Waiting for you"</h2>
                    // To these cards only: provided to the view's own owner,
                    // it would outlive the view and rank the inbox's cards
                    // too low once the person went back to it.
                    <Provider value=UnderHeading>
                        <ol class="cards">
                            <For each=move || pending.get() key=|r| super::key(r) let:r>
                                {move || console.card(&r).map(|c| view! { <li><CardItem card=c /></li> })}
                            </For>
                        </ol>
                    </Provider>
                </div>
                // The commands sent and what became of them, above the long
                // timeline, where a person looks first.
                <Audit commands=commands />
                <section class="timeline-wrap" aria-labelledby="timeline-title">
                    <h2 id="timeline-title">"Timeline"</h2>
                    <div class="timeline-tools">
                        <label for="timeline-type">"Show"</label>
                        <select id="timeline-type" on:change=move |ev| filter.set(timeline::Filter::from_token(&event_target_value(&ev)))>
                            <option value="all" selected=move || filter.get() == timeline::Filter::All>"All events"</option>
                            {Category::ALL.into_iter().map(|c| view! {
                                <option value=c.token() selected=move || filter.get() == timeline::Filter::Only(c)>{c.words()}</option>
                            }).collect_view()}
                        </select>
                        <span class="hint">"Newest first"</span>
                    </div>
                    <p class="hint" hidden=move || !rows.with(Vec::is_empty)>"No events of this type."</p>
                    <ol class="timeline">
                        <For each=move || rows.get() key=entry_key let:r>
                            <TimelineEntry row=r />
                        </For>
                    </ol>
                    <button type="button" class="earlier" hidden=move || earlier() == 0
                        on:click=move |_| limit.update(|l| *l += timeline::MAX_ITEMS as u64)>
                        {move || format!("Show {}", words::count(earlier().min(timeline::MAX_ITEMS), "earlier event", "earlier events"))}
                    </button>
                    <p class="hint dropped" hidden=move || { earlier() > 0 || dropped() == 0 }>
                        {move || format!("{} no longer kept on this device.", words::count(dropped(), "earlier event is", "earlier events are"))}
                    </p>
                </section>
            </div>
        </section>
    }
}

/// Brings the timeline's newest events to the top of the view.
fn to_timeline() {
    if let Some(el) = document().get_element_by_id("timeline-title") {
        el.scroll_into_view();
    }
}

/// Focuses the first element matching `selector`; false when none does
/// or it cannot take the focus (disabled).
fn focus_selector(selector: &str) -> bool {
    match document().query_selector(selector).ok().flatten().and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
        Some(el) => {
            let _ = el.focus();
            document().active_element().is_some_and(|a| a.is_same_node(Some(&el)))
        }
        None => false,
    }
}

/// The session's controls, in the order focus should land on them.
const CONTROLS: &str = "button[data-verb=\"resume\"]:enabled, button[data-verb=\"pause\"]:enabled, button[data-verb=\"cancel-session\"]:enabled, .control-buttons button:enabled";

/// While the controls redraw (a paused session shows Resume, a cancelled
/// run loses its button), the focus would fall to the page: it goes to
/// the first of `selector` once there is one, for `tries` × 200 ms.
fn refocus(selector: &'static str, tries: u32) {
    crate::web::platform::after(200, move || {
        let lost = document().active_element().is_none_or(|a| a.tag_name() == "BODY");
        if (lost && focus_selector(selector)) || !lost && tries < 25 {
            return;
        }
        if tries > 0 {
            refocus(selector, tries - 1);
        }
    });
}
