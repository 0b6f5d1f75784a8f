//! How a card is answered: option buttons, a text reply, a form, or a
//! note that the answer belongs to the agent's own interface.

use aep_engine::control::answer::Answer;
use leptos::ev::SubmitEvent;
use leptos::prelude::*;

use super::form::FormAnswer;
use super::steady::Steady;
use crate::model::card::{Answering, CardView, OptionView};
use crate::model::hold::{self, Held};
use crate::model::reply;
use crate::web::bridge::Console;
use crate::web::platform::perf_now;

/// Holds `answer` for the card on this device for a few seconds (it can
/// be undone, or sent at once), then sends it; a refusal to send is shown,
/// never queued. A card still settling into place takes nothing: the click
/// was aimed at whatever was there before.
pub fn send(
    console: Console,
    card: RwSignal<CardView>,
    answer: Answer,
    error: RwSignal<Option<String>>,
    steady: Steady,
) -> bool {
    // One answer per request from this device: one held or in flight
    // already is the answer.
    if card.with_untracked(CardView::in_flight) {
        return false;
    }
    if !steady.ready() {
        steady.refuse();
        return false;
    }
    steady.taken();
    let (key, what) = card.with_untracked(|c| (c.key.clone(), hold::what(&answer, &c.options)));
    error.set(None);
    // With no relay to send to, it is refused now, in words, not held.
    if !console.relays.with_untracked(|r| r.iter().any(|r| r.is_live())) {
        console.answer_now(&key, answer, error);
        return false;
    }
    console.hold(&key, answer, what, error);
    super::keys::focus_in_card(&format!("card-{}", key.request), "div.hold");
    true
}

/// The held answer of a card, if any.
fn held_of(console: Console, card: RwSignal<CardView>) -> Memo<Option<Held>> {
    let id = card.with_untracked(|c| c.id.clone());
    Memo::new(move |_| console.held.with(|h| h.iter().find(|x| x.request == id).cloned()))
}

/// An answer waiting on this device: what it says, when it leaves, and
/// the ways to take it back or send it at once. Its buttons take no tap
/// for a moment after it appears (console.css): the second half of a
/// double tap on the answer is neither Undo nor Send now.
#[component]
fn HoldBar(held: Memo<Option<Held>>) -> impl IntoView {
    let console = expect_context::<Console>();
    let seq = move || held.with_untracked(|h| h.as_ref().map_or(0, |h| h.seq));
    let is_held = Memo::new(move |_| held.with(Option::is_some));
    view! {
        {move || is_held.get().then(|| view! {
            <div class="hold" role="status" tabindex="-1">
                <p class="hold-words">
                    <span>{move || held.with(|h| h.as_ref().map(|h| h.words(console.now.get())).unwrap_or_default())}</span>
                    <span class="hint">{hold::CLOSING_DROPS}</span>
                </p>
                <div class="hold-buttons">
                    <button type="button" class="undo" on:click=move |_| console.undo(seq())>"Undo"</button>
                    <button type="button" class="send-now" on:click=move |_| console.release(seq())>"Send now"</button>
                </div>
            </div>
        })}
    }
}

/// Said on the card when a tap came while it had just moved (or just come
/// into view): the tap was not taken, and another one will be. Below the
/// buttons, so they stay where the finger is.
#[component]
fn MovedNote() -> impl IntoView {
    let steady = Steady::here();
    view! {
        {move || steady.refused().then(|| view! {
            <p class="moved-note" role="status">"This card just moved, so that tap was not taken. Tap again."</p>
        })}
    }
}

#[component]
fn OptionButtons(
    card: RwSignal<CardView>,
    options: Vec<OptionView>,
    error: RwSignal<Option<String>>,
    busy: Signal<bool>,
) -> impl IntoView {
    let console = expect_context::<Console>();
    let steady = Steady::here();
    // A severe approval takes a second tap on its button, which first says
    // why; a double tap is not one (the second half comes too soon).
    let confirming = RwSignal::new(None::<(String, f64)>);
    view! {
        <div class="options" role="group" aria-label="Answer with an option">
            {options
                .into_iter()
                .enumerate()
                .map(|(i, o)| {
                    let label = if o.label_is_id { o.id.clone() } else { o.label.clone() };
                    let chosen = o.clone();
                    let id = StoredValue::new(o.id.clone());
                    let asking = move || confirming.with(|c| c.as_ref().is_some_and(|(x, _)| id.with_value(|i| x == i)));
                    let second = StoredValue::new(card.with_untracked(|c| hold::confirm_words(c.severity, c.destructive, &label)));
                    // Named by what it shows, "Tap again to …" included.
                    let words = move || if asking() { second.get_value() } else { label.clone() };
                    view! {
                        <button
                            type="button"
                            class="option"
                            class:permissive=o.permissive
                            class:id-only=o.label_is_id
                            class:confirming=asking
                            data-option=o.id.clone()
                            disabled=busy
                            aria-disabled=move || steady.settling().then_some("true")
                            on:click=move |_| {
                                if !card.with_untracked(|c| c.needs_confirm(&chosen)) {
                                    send(console, card, Answer::option(chosen.id.clone()), error, steady);
                                    return;
                                }
                                let now = perf_now();
                                match confirming.get_untracked() {
                                    Some((x, at)) if x == chosen.id && now - at < hold::CONFIRM_INERT_MS => {}
                                    Some((x, _)) if x == chosen.id => {
                                        confirming.set(None);
                                        send(console, card, Answer::option(x), error, steady);
                                    }
                                    _ if steady.ready() => {
                                        steady.taken();
                                        confirming.set(Some((chosen.id.clone(), now)));
                                    }
                                    _ => steady.refuse(),
                                }
                            }
                        >
                            <kbd aria-hidden="true">{(i + 1).to_string()}</kbd>
                            <span class="option-label">{words}</span>
                            {o.label_is_id.then(|| view! { <span class="id-note">"(id only: the agent sent no label)"</span> })}
                        </button>
                    }
                })
                .collect_view()}
        </div>
    }
}

#[component]
fn TextReply(card: RwSignal<CardView>, error: RwSignal<Option<String>>, busy: Signal<bool>) -> impl IntoView {
    let console = expect_context::<Console>();
    let steady = Steady::here();
    let text = RwSignal::new(String::new());
    let (id, agent, choices, permission, default) = card.with_untracked(|c| {
        (
            c.id.clone(),
            c.agent.clone(),
            c.choices.clone(),
            c.is_permission(),
            // An input that names a default takes an empty reply as it.
            c.prompt.as_deref().filter(|_| c.is_input()).and_then(reply::default_in),
        )
    });
    let likely_choices = choices.clone();
    let default_words = default.clone();
    let input_id = format!("reply-{id}");
    let note_id = format!("reply-note-{id}");
    let has_options = !choices.is_empty();
    let submit = move |ev: SubmitEvent| {
        ev.prevent_default();
        let mut t = text.get_untracked();
        if t.trim().is_empty() {
            match default.clone() {
                Some(d) => t = d,
                None => {
                    error.set(Some("Type a reply first.".into()));
                    return;
                }
            }
        }
        if send(console, card, Answer::text(t), error, steady) {
            text.set(String::new());
        }
    };
    let meaning = Memo::new(move |_| text.with(|t| reply::meaning(t, &choices, permission)));
    // A refusal that reads like a yes (or a number): the option it likely
    // meant, one tap away (through that option's own button and steps).
    let likely = move || {
        meaning
            .with(|m| m.is_refusal())
            .then(|| text.with(|t| reply::likely(t, &likely_choices).map(|c| (c.id.clone(), c.label.clone()))))
            .flatten()
    };
    let likely = StoredValue::new(likely);
    let card_dom = format!("card-{id}");
    let pick_likely = move |_| {
        let Some((option, _)) = likely.with_value(|l| untrack(l)) else { return };
        if let Some(b) = document()
            .get_element_by_id(&card_dom)
            .and_then(|c| c.query_selector(&format!("button.option[data-option=\"{option}\"]")).ok().flatten())
        {
            use wasm_bindgen::JsCast;
            b.unchecked_into::<web_sys::HtmlElement>().click();
            text.set(String::new());
        }
    };
    let button_words = move || match (&default_words, text.with(|t| t.trim().is_empty())) {
        (Some(d), true) => format!("Send \u{201c}{d}\u{201d} (the default)"),
        _ => meaning.with(|m| m.button()),
    };
    let standing_note = if permission {
        Some("A reply that names no option counts as a refusal, with your text as the reason.")
    } else if has_options {
        Some("A reply naming an option counts as that option.")
    } else {
        None
    };
    view! {
        <form class="reply" on:submit=submit>
            <label for=input_id.clone() class="reply-label">
                {if has_options { "Or reply in words" } else { "Your reply" }}
            </label>
            <div class="reply-row">
                <input
                    id=input_id
                    type="text"
                    name="reply"
                    autocomplete="off"
                    enterkeyhint="send"
                    aria-label=format!("Reply to {agent}")
                    aria-describedby=note_id.clone()
                    prop:value=move || text.get()
                    on:input=move |ev| text.set(event_target_value(&ev))
                    disabled=busy
                />
                <button
                    type="submit"
                    class="send"
                    class:refusal=move || meaning.with(|m| m.is_refusal())
                    disabled=busy
                    aria-disabled=move || steady.settling().then_some("true")
                >
                    {button_words}
                </button>
            </div>
            {move || likely.with_value(|l| l()).map(|(_, label)| view! {
                <button type="button" class="likely" on:click=pick_likely.clone()>
                    {format!("Answer \u{201c}{label}\u{201d} instead?")}
                </button>
            })}
            <p class="hint" id=note_id aria-live="polite">
                {move || meaning.with(|m| m.hint(has_options)).or(standing_note.map(str::to_owned)).unwrap_or_default()}
            </p>
        </form>
    }
}

/// Why a viewer sees no answer buttons, naming who this console is.
fn read_only_words(me: &[String]) -> String {
    let who = me.first().map(|n| format!(" as {n}")).unwrap_or_default();
    format!("Read-only: this console is connected{who}, a credential that may watch requests but not answer them.")
}

/// `expanded`: the card shows everything; on a phone a compact card keeps
/// the text reply (beside options) and a form's fields for a tap.
#[component]
pub fn AnswerArea(card: RwSignal<CardView>, #[prop(optional)] expanded: Option<RwSignal<bool>>) -> impl IntoView {
    let console = expect_context::<Console>();
    let error = RwSignal::new(None::<String>);
    let c = card.get_untracked();
    let held = held_of(console, card);
    let busy = Signal::derive(move || held.with(Option::is_some) || card.with(|c| c.in_flight()));
    // Redrawn only when the way to answer changes (a roster finds the agent
    // gone, a relay's hello makes this console a viewer), not on every
    // update, so a reply being typed is kept.
    let answering = Memo::new(move |_| card.with(|c| c.answering.clone()));
    let body = move || {
        let c = card.get_untracked();
        let form_card = format!("card-{}", c.id);
        let expand = move |_| {
            if let Some(e) = expanded {
                e.set(true);
            }
            super::keys::focus_in_card(&form_card, "form.form-answer :is(input, select, textarea)");
        };
        match answering.get() {
            Answering::Options => view! {
                <OptionButtons card=card options=c.options.clone() error=error busy=busy />
                <div class="more-answer">
                    <TextReply card=card error=error busy=busy />
                </div>
            }
            .into_any(),
            Answering::Text => view! { <TextReply card=card error=error busy=busy /> }.into_any(),
            Answering::Form => {
                let steady = Steady::here();
                let on_answer = move |a: Answer| {
                    send(console, card, a, error, steady);
                };
                view! {
                    <button type="button" class="open-form primary" on:click=expand>
                        {format!("Fill in the form ({})", crate::model::words::count(c.fields.len(), "field", "fields"))}
                    </button>
                    {c.form_only(crate::web::platform::now(), &crate::web::platform::DeviceZone).map(|w| view! { <p class="hint form-only">{w}</p> })}
                    <div class="more-answer">
                        <FormAnswer card=card busy=busy on_answer=on_answer />
                    </div>
                }
                .into_any()
            }
            // Listed for information below the inbox, never as cards.
            Answering::Elsewhere(_) | Answering::Unknown => ().into_any(),
            Answering::ReadOnly => view! {
                <p class="hint read-only">{move || read_only_words(&console.me())}</p>
            }
            .into_any(),
            Answering::Unreachable => view! {
                <p class="hint unreachable">
                    "Its agent is not connected to a relay right now, so no answer can reach it. It stays here in case the agent comes back."
                </p>
            }
            .into_any(),
            Answering::Ambiguous { claims } => view! {
                <p class="hint ambiguous">{format!(
                    "Claimed by {claims} connections at once: the relay refuses answers to this session until only one is left."
                )}</p>
            }
            .into_any(),
        }
    };
    let fields_error = c.fields_error.clone();
    view! {
        <div class="actions" class:held=move || held.with(Option::is_some) data-answering=move || answering.with(|a| a.token())>
            <HoldBar held=held />
            {fields_error.map(|e| view! {
                <p class="capture-note">{format!("The agent's form could not be read ({e}); reply in words instead.")}</p>
            })}
            {body}
            <MovedNote />
            // "Send again once it is live" goes once a relay is live again.
            {move || error.get().filter(|e| !(e.ends_with("once it is live.") && console.relays.with(|r| r.iter().any(|r| r.is_live()))))
                .map(|e| view! { <p class="send-error" role="alert">{e}</p> })}
        </div>
    }
}
