//! "Notify this device": the switch that subscribes this browser to the
//! page relay's Web Push, a test notification, the principal's devices;
//! and opening the console at the request a notification was about.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::connect::ConnectForm;
use super::inbox::NewAbove;
use super::route::Route;
use crate::model::push::{device_name, page_relay, DeviceState};
use crate::web::bridge::Console;
use crate::web::platform::window;
use crate::web::push;

/// The token of the relay that served the page (its pushes reach this
/// origin's worker), if the console connects to it.
pub(super) fn page_token(form: Option<ConnectForm>) -> Option<String> {
    let location = window().location();
    let (protocol, host) = (location.protocol().ok()?, location.host().ok()?);
    form?.relays.with_untracked(|r| page_relay(r, &protocol, &host).map(|r| r.token.clone()))
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Devices {
    principal: String,
    endpoints: Vec<String>,
}

#[component]
pub fn NotifyDevice() -> impl IntoView {
    let console = expect_context::<Console>();
    let form = use_context::<ConnectForm>();
    let state = RwSignal::new(DeviceState::of(&push::facts(false)));
    let busy = RwSignal::new(false);
    let problem = RwSignal::new(None::<String>);
    let said = RwSignal::new(None::<String>);
    let devices = RwSignal::new(None::<Devices>);
    let mine = RwSignal::new(None::<String>);
    let open = RwSignal::new(false);

    // What the browser holds, and (while the panel is open) what the
    // relay has registered for this principal.
    let refresh = move || {
        leptos::task::spawn_local(async move {
            let current = push::subscription().await;
            mine.set(current.as_ref().map(|s| s.endpoint()));
            let now = DeviceState::of(&push::facts(current.is_some()));
            state.set(now);
            console.notify.set(now.is_on());
            if !open.get_untracked() {
                return;
            }
            match page_token(form) {
                Some(token) => match push::devices(&token).await {
                    Ok((principal, endpoints)) => devices.set(Some(Devices { principal, endpoints })),
                    Err(e) => problem.set(Some(format!("Devices could not be listed: {e}"))),
                },
                None => devices.set(None),
            }
        });
    };
    refresh();

    let flip = move |_| {
        if busy.get_untracked() {
            return;
        }
        let token = page_token(form);
        let turning_on = !state.get_untracked().is_on();
        busy.set(true);
        problem.set(None);
        said.set(None);
        leptos::task::spawn_local(async move {
            let done =
                if turning_on { push::turn_on(token.as_deref()).await } else { push::turn_off(token.as_deref()).await };
            if let Err(e) = done {
                problem.set(Some(if turning_on {
                    format!("Could not turn on notifications with the console closed: {e}")
                } else {
                    format!("Notifications could not be turned off: {e}")
                }));
            }
            busy.set(false);
            refresh();
        });
    };
    let test = move |_| {
        said.set(None);
        leptos::task::spawn_local(async move {
            match push::test_notification().await {
                Ok(()) => said.set(Some("A test notification was shown.".into())),
                Err(e) => problem.set(Some(format!("No test notification: {e}"))),
            }
        });
    };
    let remove = move |endpoint: String| {
        let Some(token) = page_token(form) else { return };
        leptos::task::spawn_local(async move {
            if mine.get_untracked().as_deref() == Some(endpoint.as_str()) {
                // This device: the browser forgets it too.
                if let Err(e) = push::turn_off(Some(&token)).await {
                    problem.set(Some(format!("This device could not be removed: {e}")));
                }
            } else if let Err(e) = push::forget(&token, &endpoint).await {
                problem.set(Some(format!("The device could not be removed: {e}")));
            }
            refresh();
        });
    };

    view! {
        <details class="push" data-state=move || state.get().token() on:toggle=move |ev| {
            let now = ev.target().and_then(|t| t.dyn_into::<web_sys::Element>().ok()).is_some_and(|d| d.has_attribute("open"));
            open.set(now);
            if now {
                refresh();
            }
        }>
            <summary>"Notifications: " <span class="push-state">{move || state.get().words()}</span></summary>
            <div class="push-panel">
                <button
                    type="button"
                    role="switch"
                    class="switch"
                    aria-checked=move || if state.get().is_on() { "true" } else { "false" }
                    aria-describedby="push-explain"
                    disabled=move || busy.get() || !state.get().switchable()
                    on:click=flip
                >
                    <span class="switch-track" aria-hidden="true"></span>
                    "Notify this device"
                </button>
                <p id="push-explain" class="hint">{move || state.get().explanation()}</p>
                <p class="hint push-problem" role="alert" hidden=move || problem.get().is_none()>{move || problem.get()}</p>
                {move || state.get().switchable().then(|| view! {
                    <button type="button" class="quiet" data-push="test" on:click=test>"Send a test notification"</button>
                })}
                <p class="hint" role="status">{move || said.get()}</p>
                {move || devices.get().map(|d| view! {
                    <p class="push-devices-title" id="push-devices-title">
                        {format!("Devices notified as {}", d.principal)}
                    </p>
                    {if d.endpoints.is_empty() {
                        view! { <p class="hint">"None yet."</p> }.into_any()
                    } else {
                        view! {
                            <ul class="push-devices" aria-labelledby="push-devices-title">
                                {d.endpoints.into_iter().map(|endpoint| {
                                    let this = mine.get_untracked().as_deref() == Some(endpoint.as_str());
                                    let name = format!("{}{}", device_name(&endpoint), if this { " \u{2014} this device" } else { "" });
                                    let label = format!("Remove {name}");
                                    let gone = endpoint.clone();
                                    view! {
                                        <li data-endpoint=endpoint>
                                            <span>{name}</span>
                                            <button type="button" class="quiet" aria-label=label on:click=move |_| remove(gone.clone())>"Remove"</button>
                                        </li>
                                    }
                                }).collect_view()}
                            </ul>
                        }.into_any()
                    }}
                })}
            </div>
        </details>
    }
}

/// Opens the console at the request a notification was about: the
/// `?request=` of the page it opened (then taken out of the address), and
/// each request the worker names to a window already open.
pub fn open_notified_requests(route: RwSignal<Route>) {
    let new_above = expect_context::<NewAbove>();
    let location = window().location();
    let search = location.search().unwrap_or_default();
    let asked = search
        .trim_start_matches('?')
        .split('&')
        .find_map(|pair| pair.strip_prefix("request="))
        .and_then(|v| js_sys::decode_uri_component(v).ok())
        .map(String::from);
    if let Some(request) = asked {
        let path = location.pathname().unwrap_or_default();
        let hash = location.hash().unwrap_or_default();
        let _ = window()
            .history()
            .and_then(|h| h.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&format!("{path}{hash}"))));
        reveal(route, new_above, request);
    }
    push::on_open_request(move |request| reveal(route, new_above, request));
}

/// How long a card named by a notification is looked for (the console
/// may still be connecting).
const REVEAL_TRIES: u32 = 60;
const REVEAL_EVERY_MS: i32 = 250;

/// Shows the inbox and, once the request's card is drawn, scrolls to it
/// and gives it the focus.
fn reveal(route: RwSignal<Route>, new_above: NewAbove, request: String) {
    if route.get_untracked() != Route::Inbox {
        let _ = window().location().set_hash(&Route::Inbox.href());
        route.set(Route::Inbox);
    }
    look_for(request, new_above, REVEAL_TRIES);
}

fn look_for(request: String, new_above: NewAbove, tries: u32) {
    let card = window().document().and_then(|d| d.get_element_by_id(&format!("card-{request}")));
    if let Some(card) = card.and_then(|c| c.dyn_into::<web_sys::HtmlElement>().ok()) {
        let options = web_sys::ScrollIntoViewOptions::new();
        options.set_block(web_sys::ScrollLogicalPosition::Center);
        card.scroll_into_view_with_scroll_into_view_options(&options);
        let focus = web_sys::FocusOptions::new();
        focus.set_prevent_scroll(true);
        let _ = card.focus_with_options(&focus);
        return;
    }
    // Not drawn: it may be among those held behind "N new" (the person
    // asked for it, so nothing moves unasked when they come in).
    if new_above.held.get_untracked() > 0 {
        new_above.bring_in.update(|n| *n += 1);
    }
    if tries > 0 {
        crate::web::platform::after(REVEAL_EVERY_MS, move || look_for(request, new_above, tries - 1));
    }
}
