//! Rules: the standing rules of the relay that served the page, opened
//! from the Menu. Each says what it answers, for whom, until when and how
//! often it has; an operator extends or revokes it here (the relay
//! refuses a viewer, whatever this view shows).

use leptos::prelude::*;

use super::connect::ConnectForm;
use super::push::page_token;
use crate::model::rules::{self, RuleView, LIFETIMES};
use crate::web::rules as api;

/// A time in the person's own zone, with its date.
fn local(ms: u64) -> String {
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms as f64));
    String::from(date.to_locale_string("default", &wasm_bindgen::JsValue::UNDEFINED))
}

#[component]
fn RuleItem(rule: RuleView, reload: Callback<()>, error: RwSignal<Option<String>>) -> impl IntoView {
    let form = use_context::<ConnectForm>();
    let id = StoredValue::new(rule.id.clone());
    let token = move || page_token(form).unwrap_or_default();
    let revoke = move |_| {
        let token = token();
        leptos::task::spawn_local(async move {
            match api::revoke(&token, &id.get_value()).await {
                Ok(_) => reload.run(()),
                Err(why) => error.set(Some(why)),
            }
        });
    };
    let extend = move |lifetime: &'static str| {
        let token = token();
        leptos::task::spawn_local(async move {
            match api::edit(&token, &id.get_value(), rules::extend(lifetime)).await {
                Ok(_) => reload.run(()),
                Err(why) => error.set(Some(why)),
            }
        });
    };
    let active = rule.is_active();
    let standing = rule.standing(rule.expires_at.map(local));
    view! {
        <li class="rule" data-rule=rule.id.clone() data-state=rule.state.clone()>
            <p class="rule-what">{rule.what()}</p>
            <p class="rule-standing hint">
                {format!("Rule {}, made by {} at {}; {standing}", rule.id, rule.author, local(rule.made_at))}
            </p>
            {active.then(|| view! {
                <p class="rule-actions">
                    {LIFETIMES.iter().map(|&(word, words)| view! {
                        <button type="button" class="quiet" data-extend=word on:click=move |_| extend(word)>
                            {format!("Hold {words} from now")}
                        </button>
                    }).collect_view()}
                    <button type="button" class="danger" data-revoke=rule.id.clone() on:click=revoke>"Revoke"</button>
                </p>
            })}
        </li>
    }
}

#[component]
pub fn Rules() -> impl IntoView {
    let form = use_context::<ConnectForm>();
    let listed = RwSignal::new(None::<Result<Vec<RuleView>, String>>);
    let error = RwSignal::new(None::<String>);
    let reload = Callback::new(move |()| {
        let token = page_token(form).unwrap_or_default();
        leptos::task::spawn_local(async move { listed.set(Some(api::list(&token).await)) });
    });
    reload.run(());
    view! {
        <section class="rules" aria-labelledby="rules-title">
            <h1 id="rules-title" class="view-title">"Rules"</h1>
            <p class="hint">
                "Standing answers the relay gives on their author's behalf. A rule never answers a destructive request, one of severity error or worse, or one that does not offer its option."
            </p>
            {move || error.get().map(|why| view! { <p class="banner offline" role="alert">{why}</p> })}
            {move || match listed.get() {
                None => view! { <p class="hint">"Loading\u{2026}"</p> }.into_any(),
                Some(Err(why)) => view! { <p class="banner offline" role="alert">{why}</p> }.into_any(),
                Some(Ok(list)) if list.is_empty() => view! {
                    <p class="empty">"No rule yet. Make one from a request's card."</p>
                }.into_any(),
                Some(Ok(list)) => view! {
                    <ol class="rule-list">
                        {list.into_iter().map(|rule| view! { <RuleItem rule=rule reload=reload error=error /> }).collect_view()}
                    </ol>
                }.into_any(),
            }}
        </section>
    }
}
