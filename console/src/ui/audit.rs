//! Audit: who decided what, when, and what came of it, from the relay's
//! durable trail (`/audit` of the relay that served the page). Filters by
//! person, agent, command, result and local dates; one compact row per
//! decision with its detail a tap away; Export downloads the same filter.

use aep_engine::protocol::vocabulary::CommandVerb;
use gloo_net::http::Request;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::connect::ConnectForm;
use super::push::page_token;
use crate::model::audit::{self, verb_words, Filter, Row, OUTCOMES};
use crate::web::platform::window;

/// Local midnight (or the last ms of the day, `end`) of an `<input
/// type=date>` value, in ms since the epoch.
fn local_day(value: &str, end: bool) -> Option<u64> {
    let mut parts = value.split('-').map(|p| p.parse::<i32>().ok());
    let (Some(Some(y)), Some(Some(m)), Some(Some(d))) = (parts.next(), parts.next(), parts.next()) else { return None };
    let date = js_sys::Date::new_with_year_month_day(y as u32, m - 1, d);
    let ms = date.get_time() + if end { 86_400_000.0 - 1.0 } else { 0.0 };
    (ms.is_finite() && ms >= 0.0).then_some(ms as u64)
}

/// A time in the person's own zone, with its date; and as RFC 3339.
fn local_time(ms: u64) -> (String, String) {
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms as f64));
    (
        String::from(date.to_locale_string("default", &wasm_bindgen::JsValue::UNDEFINED)),
        String::from(date.to_iso_string()),
    )
}

/// The relay's answer to `/audit?{query}`, or why not, in words.
async fn fetch(query: String, token: Option<String>) -> Result<String, String> {
    let mut request = Request::get(&format!("/audit?{query}"));
    if let Some(token) = token {
        request = request.header("authorization", &format!("Bearer {token}"));
    }
    let response = request.send().await.map_err(|e| format!("the relay could not be reached ({e})"))?;
    let body = response.text().await.unwrap_or_default();
    if response.ok() {
        return Ok(body);
    }
    let detail = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("detail").and_then(|d| d.as_str()).map(str::to_owned));
    Err(detail.unwrap_or_else(|| format!("the relay answered {}", response.status())))
}

/// Hands `body` to the browser as a file named `name`.
fn download(body: &str, name: &str, kind: &str) -> Result<(), String> {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(body));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(kind);
    let blob =
        web_sys::Blob::new_with_str_sequence_and_options(&parts, &options).map_err(|_| "no file could be made")?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(|_| "no file could be made")?;
    let document = window().document().ok_or("no document")?;
    let link: web_sys::HtmlAnchorElement = document.create_element("a").map_err(|_| "no link")?.unchecked_into();
    link.set_href(&url);
    link.set_download(name);
    link.click();
    let _ = web_sys::Url::revoke_object_url(&url);
    Ok(())
}

/// A rule's making time as the person reads it: the hour and minute in
/// their own zone.
fn local_hour(ms: u64) -> String {
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms as f64));
    format!("{:02}:{:02}", date.get_hours(), date.get_minutes())
}

#[component]
fn Detail(row: Row) -> impl IntoView {
    let latency = row.latency_ms.map(|ms| format!("{ms} ms"));
    let by_rule = row.by_rule(local_hour);
    view! {
        <dl class="audit-detail">
            {by_rule.map(|words| view! { <dt>"By"</dt><dd class="audit-rule">{words}</dd> })}
            <dt>"Request"</dt><dd>{if row.prompt.is_empty() { "\u{2014}".to_owned() } else { row.prompt.clone() }}</dd>
            <dt>"Answer"</dt><dd>{if row.answer.is_empty() { "\u{2014}".to_owned() } else { row.answer.clone() }}</dd>
            <dt>"Agent said"</dt><dd>{if row.ack.is_empty() { "nothing".to_owned() } else { row.ack.clone() }}</dd>
            <dt>"Outcome"</dt><dd>{if row.outcome.is_empty() { "\u{2014}".to_owned() } else { row.outcome.clone() }}</dd>
            <dt>"Took"</dt><dd>{latency.unwrap_or_else(|| "\u{2014}".to_owned())}</dd>
            <dt>"Session"</dt><dd>{if row.label.is_empty() { row.session.clone() } else { format!("{} ({})", row.label, row.session) }}</dd>
            <dt>"Command"</dt><dd class="mono">{row.command.clone()}</dd>
        </dl>
    }
}

#[component]
pub fn Audit() -> impl IntoView {
    let form = use_context::<ConnectForm>();
    let filter = RwSignal::new(Filter::default());
    let rows = RwSignal::new(None::<Result<Vec<Row>, String>>);
    let (from_day, to_day) = (RwSignal::new(String::new()), RwSignal::new(String::new()));
    let search = move || {
        let mut f = filter.get_untracked();
        f.from = local_day(&from_day.get_untracked(), false);
        f.to = local_day(&to_day.get_untracked(), true);
        filter.set(f.clone());
        let token = page_token(form);
        leptos::task::spawn_local(async move {
            let answer = fetch(f.query("json"), token).await.and_then(|body| audit::rows(&body));
            rows.set(Some(answer));
        });
    };
    search();
    let export = move |format: &'static str| {
        let query = filter.get_untracked().query(format);
        let token = page_token(form);
        leptos::task::spawn_local(async move {
            let (name, kind) = match format {
                "csv" => ("audit.csv", "text/csv"),
                _ => ("audit.jsonl", "application/x-ndjson"),
            };
            let done = fetch(query, token).await.and_then(|body| download(&body, name, kind));
            if let Err(e) = done {
                rows.set(Some(Err(e)));
            }
        });
    };
    let text = move |pick: fn(&mut Filter) -> &mut String| {
        move |ev: leptos::ev::Event| filter.update(|f| *pick(f) = event_target_value(&ev))
    };
    view! {
        <section class="audit" aria-labelledby="audit-title">
            <h1 id="audit-title" class="view-title">"Audit"</h1>
            <p class="hint">"Every decision the relay kept, newest first, with what came of it."</p>
            <form class="audit-filter" on:submit=move |ev| { ev.prevent_default(); search(); }>
                <label>"Person" <input type="search" name="who" autocomplete="off" on:input=text(|f| &mut f.who) /></label>
                <label>"Agent" <input type="search" name="agent" autocomplete="off" on:input=text(|f| &mut f.agent) /></label>
                <label>"Command"
                    <select name="verb" on:change=text(|f| &mut f.verb)>
                        <option value="">"Any"</option>
                        {CommandVerb::ALL.iter().map(|v| view! { <option value=v.as_str()>{verb_words(*v)}</option> }).collect_view()}
                    </select>
                </label>
                <label>"Result"
                    <select name="outcome" on:change=text(|f| &mut f.outcome)>
                        <option value="">"Any"</option>
                        {OUTCOMES.iter().map(|(v, w)| view! { <option value=*v>{*w}</option> }).collect_view()}
                    </select>
                </label>
                <label>"From" <input type="date" name="from" on:input=move |ev| from_day.set(event_target_value(&ev)) /></label>
                <label>"To" <input type="date" name="to" on:input=move |ev| to_day.set(event_target_value(&ev)) /></label>
                <button type="submit">"Search"</button>
            </form>
            <p class="audit-export">
                "Export: "
                <button type="button" class="quiet" data-export="csv" on:click=move |_| export("csv")>"CSV"</button>
                <button type="button" class="quiet" data-export="jsonl" on:click=move |_| export("jsonl")>"JSONL"</button>
            </p>
            {move || match rows.get() {
                None => view! { <p class="hint">"Loading\u{2026}"</p> }.into_any(),
                Some(Err(why)) => view! { <p class="banner offline" role="alert">{why}</p> }.into_any(),
                Some(Ok(list)) if list.is_empty() => view! { <p class="empty">"No decision matches."</p> }.into_any(),
                Some(Ok(list)) => view! {
                    <ol class="audit-rows">
                        {list.into_iter().map(|row| {
                            let (when, iso) = local_time(row.at);
                            let (who, command) = (row.who.clone(), row.command.clone());
                            view! {
                                <li class="audit-row" data-who=who data-command=command>
                                    <details>
                                        <summary>
                                            <time class="audit-time" datetime=iso>{when}</time>
                                            " "<span class="audit-request">{row.request()}</span>
                                            " \u{00b7} "<span class="audit-who">{row.who.clone()}</span>
                                            " "<span class="audit-action">{row.action()}</span>
                                            " \u{00b7} "<span class="audit-agent">{row.agent.clone()}</span>
                                            " \u{00b7} "<span class="audit-result">{row.result_words()}</span>
                                            {row.by_rule(local_hour).map(|words| view! { " \u{00b7} "<span class="audit-by-rule">{words}</span> })}
                                        </summary>
                                        <Detail row=row />
                                    </details>
                                </li>
                            }
                        }).collect_view()}
                    </ol>
                }.into_any(),
            }}
        </section>
    }
}
