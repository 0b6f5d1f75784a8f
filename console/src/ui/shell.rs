//! The frame around every view: relay status, navigation, banners.

use leptos::prelude::*;

use super::history::History;
use super::inbox::Inbox;
use super::keys::{KeyHelp, Keys};
use super::route::Route;
use super::session::SessionView;
use super::sessions::Sessions;
use crate::model::setup::RelayInput;
use crate::web::bridge::Console;
use crate::web::{notify, storage};

#[component]
fn RelayChips() -> impl IntoView {
    let console = expect_context::<Console>();
    view! {
        <ul class="relays" aria-label="Relays">
            <For each=move || console.relays.get() key=|r| (r.id, r.words.clone()) let:r>
                <li class="chip" data-relay=r.label.clone() data-state=r.token title=r.detail.clone().unwrap_or_default()>
                    <span class="dot" aria-hidden="true"></span>
                    <span class="chip-label">{r.label.clone()}</span>
                    <span class="chip-state">{r.words.clone()}</span>
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
                (Route::Session(_), Route::Sessions) => true,
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
                "Sessions " <span class="count">{move || console.lanes.with(|l| l.iter().filter(|x| x.state != "ended").count())}</span>
            </a>
            <a href=Route::History.href() aria-current=current(Route::History)>"History"</a>
        </nav>
    }
}

#[component]
fn Tools() -> impl IntoView {
    let console = expect_context::<Console>();
    let help = expect_context::<RwSignal<bool, LocalStorage>>();
    let toggle_notify = move |_| {
        if console.notify.get_untracked() {
            console.notify.set(false);
            storage::set_notify_wanted(false);
            return;
        }
        leptos::task::spawn_local(async move {
            let ok = notify::ask().await;
            console.notify.set(ok);
            storage::set_notify_wanted(ok);
        });
    };
    let leave = move |_| {
        console.disconnect();
    };
    let form = use_context::<RwSignal<Vec<RelayInput>>>();
    let forget = move |_| {
        storage::forget();
        // Nor kept in the connect screen's fields.
        if let Some(form) = form {
            form.update(|f| f.iter_mut().for_each(|r| r.token.clear()));
        }
        console.disconnect();
    };
    view! {
        <div class="tools" id="tools">
            <Show when=notify::supported>
                <button
                    type="button"
                    class="quiet"
                    aria-pressed=move || if console.notify.get() { "true" } else { "false" }
                    on:click=toggle_notify
                    title="Notify me about new requests while this tab is in the background"
                >
                    {move || if console.notify.get() { "Notifications on" } else { "Notify me" }}
                </button>
            </Show>
            <button type="button" class="quiet keys-button" aria-label="Keyboard shortcuts" on:click=move |_| help.update(|h| *h = !*h)>
                "?"
            </button>
            <button type="button" class="quiet" on:click=leave title="Disconnect and change relays">"Relays"</button>
            <button type="button" class="quiet" on:click=forget title="Disconnect and forget relays and tokens">"Forget"</button>
        </div>
    }
}

#[component]
fn Banners() -> impl IntoView {
    let console = expect_context::<Console>();
    let none_live = move || {
        console
            .relays
            .with(|r| !r.is_empty() && !r.iter().any(|x| x.is_live()))
    };
    view! {
        <div class="banners" aria-live="polite">
            <Show when=move || !console.online.get()>
                <p class="banner offline" role="status">
                    "You are offline. Nothing is sent while offline, and the console reconnects by itself."
                </p>
            </Show>
            <Show when=move || console.online.get() && none_live()>
                <p class="banner offline" role="status" data-banner="no-relay">
                    "No relay is connected. Answers and commands are refused, never queued, until one is."
                </p>
            </Show>
            <For
                each=move || console.relays.with(|r| r.iter().filter(|x| x.token == "refused").cloned().collect::<Vec<_>>())
                key=|r| (r.id, r.words.clone())
                let:r
            >
                <p class="banner offline" role="alert" data-banner="refused">
                    <span>{format!("Relay {} refused the connection ({}). {}", r.label, r.words, r.detail.clone().unwrap_or_default())}</span>
                    <button type="button" on:click=move |_| console.disconnect()>"Change relays"</button>
                </p>
            </For>
            <For each=move || console.notices.get() key=|n| n.id let:n>
                <p class="banner notice" data-notice=n.kind role="status">
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
    let menu = RwSignal::new(false);
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
            <RelayChips />
        </header>
        <Nav />
        <Banners />
        <Keys />
        <KeyHelp />
        <main id="main" tabindex="-1">
            {move || match route.get() {
                Route::Inbox => view! { <Inbox /> }.into_any(),
                Route::Sessions => view! { <Sessions /> }.into_any(),
                Route::Session(key) => view! { <SessionView key=key /> }.into_any(),
                Route::History => view! { <History /> }.into_any(),
            }}
        </main>
    }
}
