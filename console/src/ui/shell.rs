//! The frame around every view: relay status, navigation, banners.

use leptos::prelude::*;

use super::audit::Audit;
use super::connect::{Connect, ConnectForm};
use super::history::History;
use super::inbox::{Inbox, NewAbovePill};
use super::keys::{KeyHelp, Keys};
use super::push::NotifyDevice;
use super::route::{open_relays, Route};
use super::rules::Rules;
use super::session::SessionView;
use super::sessions::Sessions;
use crate::model::session::LaneState;
use crate::model::status;
use crate::web::bridge::Console;
use crate::web::storage;

#[component]
fn RelayChips() -> impl IntoView {
    let console = expect_context::<Console>();
    view! {
        <ul class="relays" aria-label="Relays">
            <For each=move || console.relays.get() key=|r| super::key((r.id, &r.words, &r.principal, r.may_command)) let:r>
                <li class="chip" data-relay=r.label.clone() data-state=r.link.token()
                    title=r.detail.clone().map_or_else(|| r.label.clone(), |d| format!("{} \u{2014} {d}", r.label))>
                    <span class="dot" aria-hidden="true"></span>
                    <span class="chip-label">{status::name_of(&r.label)}</span>
                    <span class="chip-state">{r.words.clone()}</span>
                    {r.principal.clone().map(|p| view! { <span class="chip-as">{format!("as {p}")}</span> })}
                    {(r.may_command == Some(false)).then(|| view! { <span class="chip-as chip-read-only">"read-only"</span> })}
                </li>
            </For>
        </ul>
    }
}

#[component]
fn Nav() -> impl IntoView {
    let console = expect_context::<Console>();
    let route = expect_context::<RwSignal<Route>>();
    let current = move |r: Route| {
        move || {
            let now = route.get();
            let on = match (&now, &r) {
                (Route::Session(_), Route::Sessions) | (Route::Audit, Route::History) => true,
                (a, b) => a == b,
            };
            if on {
                Some("page")
            } else {
                None
            }
        }
    };
    view! {
        <nav class="tabs" aria-label="Views">
            <a href=Route::Inbox.href() aria-current=current(Route::Inbox)>
                "Inbox " <span class="count" data-count="inbox">{move || console.inbox.with(Vec::len)}</span>
            </a>
            <a href=Route::Sessions.href() aria-current=current(Route::Sessions)>
                "Sessions " <span class="count">{move || console.lanes.with(|l| l.iter().filter(|x| x.state != LaneState::Ended).count())}</span>
            </a>
            <a href=Route::History.href() aria-current=current(Route::History)>"History"</a>
            <NewAbovePill />
        </nav>
    }
}

#[component]
fn Tools() -> impl IntoView {
    let console = expect_context::<Console>();
    let help = expect_context::<RwSignal<bool, LocalStorage>>();
    // Forgetting wipes the kept token: asked first, the safe choice focused.
    let confirm_forget = RwSignal::new(false);
    let keep_ref = NodeRef::<leptos::html::Button>::new();
    Effect::new(move |_| {
        if confirm_forget.get() {
            if let Some(b) = keep_ref.get() {
                let _ = b.focus();
            }
        }
    });
    let route = expect_context::<RwSignal<Route>>();
    let form = use_context::<ConnectForm>().map(|f| f.relays);
    let forget = move |_| {
        confirm_forget.set(false);
        storage::forget();
        // Nor kept in the connect screen's fields.
        if let Some(form) = form {
            form.update(|f| f.iter_mut().for_each(|r| r.token.clear()));
        }
        console.disconnect();
    };
    view! {
        <div class="tools" id="tools">
            <NotifyDevice />
            <button type="button" class="quiet keys-button" aria-label="Keyboard shortcuts" on:click=move |_| help.update(|h| *h = !*h)>
                "?"
            </button>
            <button type="button" class="quiet" data-open="relays" on:click=move |_| open_relays(route) title="Change relays or tokens">"Relays"</button>
            <a class="quiet" data-open="rules" href=Route::Rules.href() title="Standing rules: list, extend, revoke">"Rules"</a>
            <button
                type="button"
                class="quiet"
                aria-expanded=move || if confirm_forget.get() { "true" } else { "false" }
                on:click=move |_| confirm_forget.set(true)
                title="Disconnect and forget relays and tokens"
            >
                "Forget"
            </button>
            {move || confirm_forget.get().then(|| view! {
                <div class="confirm forget" role="alertdialog" aria-labelledby="forget-q">
                    <p id="forget-q">"Forget the relays and tokens kept in this browser? You will need the token again to reconnect."</p>
                    <button type="button" class="danger" data-confirm="forget" on:click=forget>"Forget them"</button>
                    <button type="button" node_ref=keep_ref on:click=move |_| confirm_forget.set(false)>"Keep them"</button>
                </div>
            })}
        </div>
    }
}

/// Said on every screen of a page that is not a secure context (plain HTTP
/// from another machine): before a token is typed, and while connected.
#[component]
pub fn InsecurePage() -> impl IntoView {
    (!crate::web::platform::secure_context()).then(|| view! {
        <p class="banner notice" role="status" data-banner="insecure">
            <span>
                "This page came over plain HTTP from another machine: the token crosses the network in clear, and the browser withholds notifications, installing and the clipboard. Serve the relay over HTTPS: see \u{201c}On your phone\u{201d} in the README."
            </span>
        </p>
    })
}

#[component]
fn Banners() -> impl IntoView {
    let console = expect_context::<Console>();
    let route = expect_context::<RwSignal<Route>>();
    let form = expect_context::<ConnectForm>();
    let reach = move || console.relays.with(|r| status::reach(r, console.online.get()));
    view! {
        <div class="banners" aria-live="polite">
            <InsecurePage />
            {move || reach().banner().map(|words| view! {
                <p
                    class="banner offline"
                    role="status"
                    data-banner="no-relay"
                    data-device-offline=matches!(reach(), status::Reach::NoneLive { device_offline: true }).to_string()
                >
                    {words}
                </p>
            })}
            <For
                each=move || console.relays.with(|r| r.iter().filter(|x| x.is_refused()).cloned().collect::<Vec<_>>())
                key=|r| super::key((r.id, &r.words, &r.principal))
                let:r
            >
                <p class="banner offline" role="alert" data-banner="refused">
                    <span>{status::refused_banner(&r)}</span>
                    <button type="button" on:click={
                        let field = format!("relay-token-{}", r.id);
                        move |_| {
                        form.focus.set(Some(field.clone()));
                        open_relays(route);
                    }}>"Enter another token"</button>
                </p>
            </For>
            <For each=move || console.notices.get() key=|n| n.id.to_string() let:n>
                <p class="banner notice" data-notice=n.kind.token() role="status">
                    <span>{n.text.clone()}</span>
                    <button type="button" class="quiet" aria-label="Dismiss notice" on:click=move |_| console.dismiss_notice(n.id)>
                        "Dismiss"
                    </button>
                </p>
            </For>
        </div>
    }
}

#[component]
pub fn Shell() -> impl IntoView {
    let route = expect_context::<RwSignal<Route>>();
    let help = RwSignal::new_local(false);
    provide_context(help);
    super::inbox::Drawn::provide();
    let menu = RwSignal::new(false);
    let console = expect_context::<Console>();
    Effect::new(move |_| {
        let waiting = console.inbox.with(Vec::len);
        document().set_title(&crate::model::words::page_title(waiting));
    });
    keep_scroll_per_view();
    focus_follows_view(route);
    Effect::new(move |_| {
        route.track();
        menu.set(false);
    });
    view! {
        <a class="skip" href="#main" on:click=move |ev| {
            ev.prevent_default();
            if let Some(m) = document().get_element_by_id("main") {
                use wasm_bindgen::JsCast;
                let _ = m.unchecked_into::<web_sys::HtmlElement>().focus();
            }
        }>"Skip to content"</a>
        <header class="top" class:open=move || menu.get()>
            <div class="bar">
                <span class="brand">"AEP console"</span>
                <RelayChips />
                <button
                    type="button"
                    class="quiet menu-toggle"
                    aria-expanded=move || if menu.get() { "true" } else { "false" }
                    aria-controls="tools"
                    on:click=move |_| menu.update(|m| *m = !*m)
                >
                    "Menu"
                </button>
                <Tools />
            </div>
        </header>
        <Nav />
        <Banners />
        // New requests and settled answers, read out where the person is:
        // nothing here takes the focus.
        <p id="announcer" class="sr-only" role="status" aria-atomic="true">{move || console.announced.get()}</p>
        <Keys />
        <KeyHelp />
        <main id="main" tabindex="-1">
            {move || match route.get() {
                Route::Inbox => view! { <Inbox /> }.into_any(),
                Route::Sessions => view! { <Sessions /> }.into_any(),
                Route::Session(key) => view! { <SessionView key=key /> }.into_any(),
                Route::History => view! { <History /> }.into_any(),
                Route::Audit => view! { <Audit /> }.into_any(),
                Route::Relays => view! { <Connect cancel=true /> }.into_any(),
                Route::Rules => view! { <Rules /> }.into_any(),
            }}
        </main>
    }
}

/// A view opened from a control inside the one before it (a card's
/// session, a lane, the relays screen's Cancel) takes the focus away with
/// that control: left on the page itself, Tab would start over at the top
/// and a screen reader would say nothing. The new view's title takes it
/// instead, without scrolling; a focus that is still somewhere (a tab,
/// the relays screen's own) stays.
fn focus_follows_view(route: RwSignal<Route>) {
    use wasm_bindgen::JsCast;
    Effect::new(move |first: Option<()>| {
        route.track();
        if first.is_none() {
            return;
        }
        request_animation_frame(|| {
            let lost = document().active_element().is_none_or(|a| a.tag_name() == "BODY");
            let title = document()
                .query_selector("main h1")
                .ok()
                .flatten()
                .or_else(|| document().get_element_by_id("main"))
                .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok());
            if let (true, Some(title)) = (lost, title) {
                if !title.has_attribute("tabindex") {
                    let _ = title.set_attribute("tabindex", "-1");
                }
                let opts = web_sys::FocusOptions::new();
                opts.set_prevent_scroll(true);
                let _ = title.focus_with_options(&opts);
            }
        });
    });
}

/// Each view opens where it was left, else at its top, never at the
/// scroll position of the view before it. Where each view is scrolled is
/// noted as it scrolls (a route change redraws at once, so by its
/// `hashchange` the old view is already gone and the position clamped).
fn keep_scroll_per_view() {
    /// Views whose position is kept (the latest ones).
    const KEPT: usize = 32;
    let console = expect_context::<Console>();
    let here = StoredValue::new_local(Route::current().href());
    let kept = StoredValue::new_local(Vec::<(String, f64)>::new());
    Effect::new(move |first: Option<()>| {
        console.scrolled.track();
        // Nothing has scrolled yet when the view opens (and reading the
        // position then would lay the page out before it is drawn), or the
        // relays screen is over the view, which keeps its place.
        if first.is_none() || Route::current() == Route::Relays {
            return;
        }
        let y = crate::web::platform::window().scroll_y().unwrap_or(0.0);
        let view = here.get_value();
        kept.update_value(|k| {
            k.retain(|(v, _)| *v != view);
            k.truncate(KEPT);
            k.insert(0, (view, y));
        });
    });
    let handle = window_event_listener(leptos::ev::hashchange, move |_| {
        // Back from the relays screen comes here too, to the same view.
        let next = Route::current().href();
        let back = kept.with_value(|k| k.iter().find(|(v, _)| *v == next).map_or(0.0, |(_, y)| *y));
        here.set_value(next);
        request_animation_frame(move || crate::web::platform::window().scroll_to_with_x_and_y(0.0, back));
    });
    on_cleanup(move || handle.remove());
}
