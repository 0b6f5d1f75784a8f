//! "Always": a standing rule made from a request's card, in one tap. The
//! option tapped answers this request and, from then on, the same request
//! from the same agent (its exact input, any session, for an hour), unless
//! the person changed what the rule matches, where and for how long. The
//! relay fills in the agent and the tool from the request, keeps the rule
//! and refuses what it must (a viewer, a destructive or severe request).

use aep_engine::Severity;
use leptos::prelude::*;
use serde_json::Value;

use super::connect::ConnectForm;
use super::push::page_token;
use crate::model::card::{Answering, CardView};
use crate::model::rules::{Choice, LIFETIMES, ONE_TAP};
use crate::web::rules as api;

/// Whether a rule could ever answer requests like this card's: one a
/// person answers here with an option, neither destructive nor severe.
fn may_have_a_rule(c: &CardView) -> bool {
    c.answering == Answering::Options && !c.options.is_empty() && !c.destructive && c.severity < Severity::Error
}

/// What the person changed of a one-tap rule.
#[derive(Clone, Copy)]
struct Fields {
    /// Opened: the rule takes the fields below, not the one-tap defaults.
    opened: RwSignal<bool>,
    /// How the relay sees the request: its input, or why no rule may answer it.
    seen: RwSignal<Option<Result<Value, String>>>,
    pattern: RwSignal<String>,
    prefix: RwSignal<bool>,
    this_session: RwSignal<bool>,
    lifetime: RwSignal<String>,
}

#[component]
fn RuleFields(fields: Fields) -> impl IntoView {
    let Fields { seen, pattern, prefix, this_session, lifetime, .. } = fields;
    move || {
        let refused = seen.with(|s| match s {
            Some(Ok(v)) => v.get("refused").and_then(Value::as_str).map(str::to_owned),
            _ => None,
        });
        match (seen.get(), refused) {
            (None, _) => view! { <p class="hint">"Asking the relay\u{2026}"</p> }.into_any(),
            (Some(Err(why)), _) => view! { <p class="rule-error" role="alert">{why}</p> }.into_any(),
            (Some(Ok(_)), Some(why)) => {
                view! { <p class="rule-error" role="alert">{format!("No rule: {why}.")}</p> }.into_any()
            }
            (Some(Ok(_)), None) => view! {
                <div class="rule-fields">
                    <label class="rule-field">"Match "
                        <select name="rule-match" on:change=move |ev| prefix.set(event_target_value(&ev) == "prefix")>
                            <option value="exact">"exactly"</option>
                            <option value="prefix">"starting with"</option>
                        </select>
                    </label>
                    <label class="rule-field">"Input "
                        <input type="text" name="rule-pattern" class="mono" prop:value=move || pattern.get()
                            on:input=move |ev| pattern.set(event_target_value(&ev)) />
                    </label>
                    <label class="rule-field">
                        <input type="checkbox" name="rule-this-session"
                            on:change=move |ev| this_session.set(event_target_checked(&ev)) />
                        " Only in this session"
                    </label>
                    <label class="rule-field">"For "
                        <select name="rule-for" on:change=move |ev| lifetime.set(event_target_value(&ev))>
                            {LIFETIMES.iter().map(|&(word, words)| view! { <option value=word>{words}</option> }).collect_view()}
                        </select>
                    </label>
                </div>
            }
            .into_any(),
        }
    }
}

#[component]
pub fn RuleMaker(card: RwSignal<CardView>) -> impl IntoView {
    let form = use_context::<ConnectForm>();
    let (request, options) = card.with_untracked(|c| (c.id.clone(), c.options.clone()));
    let offered = Memo::new(move |_| card.with(|c| may_have_a_rule(c) && !c.in_flight() && c.answer.is_none()));
    let fields = Fields {
        opened: RwSignal::new(false),
        seen: RwSignal::new(None),
        pattern: RwSignal::new(String::new()),
        prefix: RwSignal::new(false),
        this_session: RwSignal::new(false),
        lifetime: RwSignal::new(LIFETIMES[0].0.to_owned()),
    };
    let said = RwSignal::new(None::<Result<String, String>>);
    let request = StoredValue::new(request);
    let token = move || page_token(form).unwrap_or_default();
    let open = move |_| {
        let now = !fields.opened.get_untracked();
        fields.opened.set(now);
        if now && fields.seen.get_untracked().is_none() {
            let token = token();
            leptos::task::spawn_local(async move {
                let answer = api::request(&token, &request.get_value()).await;
                if let Ok(v) = &answer {
                    fields.pattern.set(v.get("input").and_then(Value::as_str).unwrap_or_default().to_owned());
                }
                fields.seen.set(Some(answer));
            });
        }
    };
    let make = move |option: String| {
        let changed = fields.opened.get_untracked() && matches!(fields.seen.get_untracked(), Some(Ok(_)));
        let choice = Choice {
            request: request.get_value(),
            option,
            prefix: fields.prefix.get_untracked(),
            pattern: changed.then(|| fields.pattern.get_untracked()),
            this_session: changed && fields.this_session.get_untracked(),
            lifetime: if changed { fields.lifetime.get_untracked() } else { LIFETIMES[0].0.to_owned() },
        };
        let token = token();
        said.set(None);
        leptos::task::spawn_local(async move {
            let answer = api::make(&token, choice.body()).await.map(|v| {
                let id = v.get("rule").and_then(|r| r.get("id")).and_then(Value::as_str).unwrap_or_default().to_owned();
                match v.get("request").and_then(Value::as_str) {
                    Some("answered") => format!("Rule {id} made: it answers this request and the next like it."),
                    Some(other) => format!("Rule {id} made; this request: {other}."),
                    None => format!("Rule {id} made."),
                }
            });
            if answer.is_ok() {
                fields.opened.set(false);
            }
            said.set(Some(answer));
        });
    };
    let options = StoredValue::new(options);
    let summary = move || {
        if fields.opened.get() {
            "as set below".to_owned()
        } else {
            ONE_TAP.to_owned()
        }
    };
    view! {
        {move || offered.get().then(|| view! {
            <div class="rule-maker" role="group" aria-label="Always answer like this">
                <p class="rule-line">
                    <span class="rule-words">"Always: "</span>
                    {options.get_value().into_iter().map(|o| {
                        let label = if o.label_is_id { o.id.clone() } else { o.label.clone() };
                        let id = o.id.clone();
                        view! {
                            <button type="button" class="quiet rule-make" data-option=o.id.clone()
                                on:click=move |_| make(id.clone())>
                                {label}
                            </button>
                        }
                    }).collect_view()}
                    <span class="hint rule-scope">{summary}</span>
                    <button type="button" class="quiet rule-open" aria-expanded=move || fields.opened.get().to_string()
                        on:click=open>
                        "Change\u{2026}"
                    </button>
                </p>
                {move || fields.opened.get().then(|| view! { <RuleFields fields=fields /> })}
            </div>
        })}
        {move || said.get().map(|s| match s {
            Ok(words) => view! { <p class="rule-said" role="status">{words}</p> }.into_any(),
            Err(why) => view! { <p class="rule-error" role="alert">{why}</p> }.into_any(),
        })}
    }
}
