//! How a card is answered: option buttons, a text reply, a form, or a
//! note that the answer belongs to the agent's own interface.

use aep_client::control::answer::Answer;
use leptos::ev::SubmitEvent;
use leptos::prelude::*;

use super::form::FormAnswer;
use super::steady::Steady;
use crate::model::card::{Answering, CardView, OptionView};
use crate::model::reply;
use crate::web::bridge::Console;

/// Sends `answer` for the card; a refusal to send is shown, never queued.
/// A card still settling into place takes nothing: the click was aimed at
/// whatever was there before.
pub fn send(
    console: Console,
    card: RwSignal<CardView>,
    answer: Answer,
    error: RwSignal<Option<String>>,
    steady: Steady,
) -> bool {
    if !steady.ready() {
        return false;
    }
    let key = card.with_untracked(|c| c.key.clone());
    match console.respond(&key, answer) {
        Ok(_) => {
            error.set(None);
            super::keys::focus_after_answer(&format!("card-{}", key.request));
            true
        }
        Err(e) => {
            error.set(Some(format!(
                "{} \u{2014} {e}",
                crate::model::clock::time_of_day(crate::web::platform::now())
            )));
            false
        }
    }
}

#[component]
fn OptionButtons(
    card: RwSignal<CardView>,
    options: Vec<OptionView>,
    error: RwSignal<Option<String>>,
) -> impl IntoView {
    let console = expect_context::<Console>();
    let steady = Steady::here();
    let busy = move || card.with(|c| c.in_flight());
    view! {
        <div class="options" role="group" aria-label="Answer with an option">
            {options
                .into_iter()
                .enumerate()
                .map(|(i, o)| {
                    let id = o.id.clone();
                    let label = if o.label_is_id { o.id.clone() } else { o.label.clone() };
                    let aria = format!("Answer {}", label);
                    view! {
                        <button
                            type="button"
                            class="option"
                            class:permissive=o.permissive
                            class:id-only=o.label_is_id
                            data-option=o.id.clone()
                            aria-label=aria
                            disabled=busy
                            aria-disabled=move || steady.settling().then_some("true")
                            on:click=move |_| {
                                send(console, card, Answer::option(id.clone()), error, steady);
                            }
                        >
                            <kbd aria-hidden="true">{(i + 1).to_string()}</kbd>
                            <span class="option-label">{label}</span>
                            {o.label_is_id.then(|| view! { <span class="id-note">"(id only: the agent sent no label)"</span> })}
                        </button>
                    }
                })
                .collect_view()}
        </div>
    }
}

#[component]
fn TextReply(card: RwSignal<CardView>, error: RwSignal<Option<String>>) -> impl IntoView {
    let console = expect_context::<Console>();
    let steady = Steady::here();
    let text = RwSignal::new(String::new());
    let (id, agent, choices, permission) = card.with_untracked(|c| {
        (
            c.id.clone(),
            c.agent.clone(),
            c.choices.clone(),
            c.is_permission(),
        )
    });
    let input_id = format!("reply-{id}");
    let note_id = format!("reply-note-{id}");
    let has_options = !choices.is_empty();
    let busy = move || card.with(|c| c.in_flight());
    let submit = move |ev: SubmitEvent| {
        ev.prevent_default();
        let t = text.get_untracked();
        if t.trim().is_empty() {
            error.set(Some("Type a reply first.".into()));
            return;
        }
        if send(console, card, Answer::text(t), error, steady) {
            text.set(String::new());
        }
    };
    let meaning = Memo::new(move |_| text.with(|t| reply::meaning(t, &choices, permission)));
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
                    {move || meaning.with(|m| m.button())}
                </button>
            </div>
            <p class="hint" id=note_id aria-live="polite">
                {move || meaning.with(|m| m.hint(has_options)).or(standing_note.map(str::to_owned)).unwrap_or_default()}
            </p>
        </form>
    }
}

#[component]
fn Elsewhere(channels: Vec<String>, options: Vec<OptionView>) -> impl IntoView {
    let via = if channels.is_empty() {
        "another channel".to_owned()
    } else {
        channels.join(", ")
    };
    view! {
        <div class="elsewhere" data-answering="elsewhere">
            <p class="elsewhere-note">
                <strong>"Answer in the agent's own interface."</strong>
                {format!(" This request is for information here: its answer travels by {via}, and this console cannot send one.")}
            </p>
            {(!options.is_empty()).then(|| view! {
                <p class="hint">"The choices offered there:"</p>
                <ul class="info-options">
                    {options.into_iter().map(|o| view! { <li>{o.label}</li> }).collect_view()}
                </ul>
            })}
        </div>
    }
}

/// `expanded`: the card shows everything; on a phone a compact card keeps
/// the text reply (beside options) and a form's fields for a tap.
#[component]
pub fn AnswerArea(card: RwSignal<CardView>, #[prop(optional)] expanded: Option<RwSignal<bool>>) -> impl IntoView {
    let error = RwSignal::new(None::<String>);
    let c = card.get_untracked();
    let expand = move |_| {
        if let Some(e) = expanded {
            e.set(true);
        }
    };
    let body = match c.answering.clone() {
        Answering::Options => view! {
            <OptionButtons card=card options=c.options.clone() error=error />
            <div class="more-answer">
                <TextReply card=card error=error />
            </div>
        }
        .into_any(),
        Answering::Text => view! { <TextReply card=card error=error /> }.into_any(),
        Answering::Form => view! {
            <button type="button" class="open-form primary" on:click=expand>
                {format!("Fill in the form ({})", crate::model::words::count(c.fields.len(), "field", "fields"))}
            </button>
            <div class="more-answer">
                <FormAnswer card=card error=error />
            </div>
        }
        .into_any(),
        Answering::Elsewhere(channels) => view! { <Elsewhere channels=channels options=c.options.clone() /> }.into_any(),
        Answering::Unknown => view! {
            <p class="hint">"Only later steps of this request were seen, not the request itself, so there is nothing to answer against."</p>
        }
        .into_any(),
        Answering::Ambiguous { claims } => view! {
            <p class="hint ambiguous">{format!(
                "Claimed by {claims} connections at once: the relay refuses answers to this session until only one is left."
            )}</p>
        }
        .into_any(),
    };
    let fields_error = c.fields_error.clone();
    view! {
        <div class="actions" data-answering=c.answering.token()>
            {fields_error.map(|e| view! {
                <p class="capture-note">{format!("The agent's form could not be read ({e}); reply in words instead.")}</p>
            })}
            {body}
            <Show when=move || error.get().is_some()>
                <p class="send-error" role="alert">{move || error.get().unwrap_or_default()}</p>
            </Show>
        </div>
    }
}
