//! A form answer (AEP-0006): one input per field, checked in the browser
//! with the agent's own rules before anything is sent.

use aep_engine::control::answer::Answer;
use aep_engine::protocol::form::{FieldSpec, FieldType};
use aep_engine::text::number;
use leptos::ev::SubmitEvent;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::steady::Steady;
use crate::model::card::CardView;
use crate::model::form::{marked_required, Draft, Errors, Input, OTHER};

fn dom_id(card: &str, field: &str) -> String {
    format!("f-{card}-{field}")
}

/// Numbers go through the engine's `text::number` rather than `f64`'s
/// `Display`, which would link core's float formatting (about 10 KB).
fn range(f: &FieldSpec) -> Option<String> {
    match (f.min.map(number), f.max.map(number)) {
        (Some(a), Some(b)) => Some(format!("{a} to {b}")),
        (Some(a), None) => Some(format!("at least {a}")),
        (None, Some(b)) => Some(format!("at most {b}")),
        (None, None) => None,
    }
}

#[component]
fn Field(
    card_id: String,
    spec: FieldSpec,
    draft: RwSignal<Draft>,
    errors: RwSignal<Errors>,
    busy: Signal<bool>,
) -> impl IntoView {
    let id = dom_id(&card_id, &spec.id);
    let err_id = format!("{id}-error");
    let fid = spec.id.clone();
    let fid_err = spec.id.clone();
    let my_errors = Memo::new(move |_| errors.with(|e| e.get(&fid_err).cloned().unwrap_or_default()));
    let invalid = move || {
        if my_errors.with(Vec::is_empty) {
            "false"
        } else {
            "true"
        }
    };
    let set = {
        let fid = fid.clone();
        move |input: Input| {
            draft.update(|d| {
                d.inputs.insert(fid.clone(), input);
            });
            errors.update(|e| {
                e.remove(&fid);
            });
        }
    };
    let required = spec.required;
    let marked = marked_required(&spec);
    let label = spec.label.clone();
    let label_view = view! {
        <span class="field-label">
            {label.clone()}
            {marked.then(|| view! { <span class="req">" (required)"</span> })}
        </span>
    };
    let control = match (spec.ty, spec.multi) {
        (FieldType::String, _) => {
            let set = set.clone();
            view! {
                <label for=id.clone()>{label_view}</label>
                <input
                    id=id.clone()
                    type="text"
                    name=spec.id.clone()
                    autocomplete="off"
                    aria-invalid=invalid
                    aria-describedby=err_id.clone()
                    aria-required=required.to_string()
                    disabled=busy
                    on:input=move |ev| set(Input::Text(event_target_value(&ev)))
                />
            }
            .into_any()
        }
        (FieldType::Number, _) => {
            let set = set.clone();
            let hint = range(&spec);
            view! {
                <label for=id.clone()>
                    {label_view}
                    {hint.clone().map(|h| view! { <span class="range">{format!(" \u{2014} {h}")}</span> })}
                </label>
                <input
                    id=id.clone()
                    type="number"
                    inputmode="decimal"
                    step="any"
                    name=spec.id.clone()
                    min=spec.min.map(number)
                    max=spec.max.map(number)
                    aria-invalid=invalid
                    aria-describedby=err_id.clone()
                    aria-required=required.to_string()
                    disabled=busy
                    on:input=move |ev| set(Input::Number(event_target_value(&ev)))
                />
            }
            .into_any()
        }
        (FieldType::Boolean, _) => {
            let set = set.clone();
            view! {
                <label class="check" for=id.clone()>
                    <input
                        id=id.clone()
                        type="checkbox"
                        name=spec.id.clone()
                        aria-describedby=err_id.clone()
                        disabled=busy
                        on:change=move |ev| set(Input::Bool(event_target_checked(&ev)))
                    />
                    {label_view}
                </label>
            }
            .into_any()
        }
        (FieldType::Select, true) => {
            let choices = spec.choices.clone();
            let set = set.clone();
            let fid = fid.clone();
            view! {
                <fieldset class="multi" id=id.clone() aria-describedby=err_id.clone() aria-invalid=invalid>
                    <legend>{label_view}</legend>
                    {choices
                        .into_iter()
                        .enumerate()
                        .map(|(i, c)| {
                            let set = set.clone();
                            let fid = fid.clone();
                            let cid = c.id.clone();
                            view! {
                                <label class="check" for=format!("{id}-{i}")>
                                    <input
                                        id=format!("{id}-{i}")
                                        type="checkbox"
                                        value=c.id.clone()
                                        disabled=busy
                                        on:change=move |ev| {
                                            let on = event_target_checked(&ev);
                                            let mut picked = match draft.with_untracked(|d| d.inputs.get(&fid).cloned()) {
                                                Some(Input::Multi(p)) => p,
                                                _ => Vec::new(),
                                            };
                                            picked.retain(|p| p != &cid);
                                            if on {
                                                picked.push(cid.clone());
                                            }
                                            set(Input::Multi(picked));
                                        }
                                    />
                                    <span>{c.label.clone()}</span>
                                </label>
                            }
                        })
                        .collect_view()}
                </fieldset>
            }
            .into_any()
        }
        (FieldType::Select, false) => {
            let choices = spec.choices.clone();
            let other = spec.other;
            let set = set.clone();
            let fid = fid.clone();
            let fid_other = fid.clone();
            let lookup = choices.clone();
            let is_other =
                move || draft.with(|d| matches!(d.inputs.get(&fid_other), Some(Input::Choice(Some(c))) if c == OTHER));
            let other_id = format!("{id}-other");
            view! {
                <label for=id.clone()>{label_view}</label>
                <select
                    id=id.clone()
                    name=spec.id.clone()
                    aria-invalid=invalid
                    aria-describedby=err_id.clone()
                    aria-required=required.to_string()
                    disabled=busy
                    on:change=move |ev| {
                        let v = event_target_value(&ev);
                        let choice = match v.as_str() {
                            "" => None,
                            "other" => Some(OTHER.to_owned()),
                            i => i.parse::<usize>().ok().and_then(|i| lookup.get(i)).map(|c| c.id.clone()),
                        };
                        set(Input::Choice(choice));
                    }
                >
                    <option value="">"Choose\u{2026}"</option>
                    {choices
                        .iter()
                        .enumerate()
                        .map(|(i, c)| view! { <option value=i.to_string()>{c.label.clone()}</option> })
                        .collect_view()}
                    {other.then(|| view! { <option value="other">"Other\u{2026}"</option> })}
                </select>
                    <label for=other_id.clone() class="other-label" hidden={
                        let is_other = is_other.clone();
                        move || !is_other()
                    }>{format!("{label}: your own value")}</label>
                    <input
                        id=other_id.clone()
                        type="text"
                        hidden=move || !is_other()
                        name=format!("{}-other", fid)
                        autocomplete="off"
                        disabled=busy
                        on:input={
                            let fid = fid.clone();
                            move |ev| {
                                let v = event_target_value(&ev);
                                draft.update(|d| {
                                    d.other.insert(fid.clone(), v);
                                });
                            }
                        }
                    />
            }
            .into_any()
        }
    };
    view! {
        <div class="field" data-field=spec.id.clone() data-type=spec.ty.as_str()>
            {control}
            <div id=err_id class="field-errors" aria-live="polite">
                {move || my_errors.get().into_iter().map(|m| view! { <p class="field-error">{m}</p> }).collect_view()}
            </div>
        </div>
    }
}

/// The form; a checked answer goes to `on_answer`.
#[component]
pub fn FormAnswer(card: RwSignal<CardView>, busy: Signal<bool>, on_answer: impl Fn(Answer) + 'static) -> impl IntoView {
    let steady = Steady::here();
    let (card_id, fields) = card.with_untracked(|c| (c.id.clone(), c.fields.clone()));
    let draft = RwSignal::new(Draft::new(&fields));
    let errors = RwSignal::new(Errors::new());
    let submit_fields = fields.clone();
    let submit_card = card_id.clone();
    let submit = move |ev: SubmitEvent| {
        ev.prevent_default();
        match draft.with_untracked(|d| d.values(&submit_fields)) {
            Err(e) => {
                // Focus the first field the agent would refuse.
                let first = submit_fields.iter().find(|f| e.contains_key(&f.id)).map(|f| dom_id(&submit_card, &f.id));
                errors.set(e);
                if let Some(el) = first.and_then(|id| document().get_element_by_id(&id)) {
                    let _ = el.unchecked_into::<web_sys::HtmlElement>().focus();
                }
            }
            Ok(values) => {
                errors.set(Errors::new());
                on_answer(Answer::values(values));
            }
        }
    };
    let count = move || errors.with(|e| e.values().map(Vec::len).sum::<usize>());
    view! {
        <form class="form-answer" novalidate=true on:submit=submit aria-label="Answer the form">
            {fields
                .into_iter()
                .map(|f| view! { <Field card_id=card_id.clone() spec=f draft=draft errors=errors busy=busy /> })
                .collect_view()}
            <p class="form-summary" role="alert" hidden=move || count() == 0>
                {move || format!("{} problem{} to fix before this can be sent.", count(), if count() == 1 { "" } else { "s" })}
            </p>
            <button type="submit" class="primary" disabled=busy aria-disabled=move || steady.settling().then_some("true")>"Send answer"</button>
        </form>
    }
}
