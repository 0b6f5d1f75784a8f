//! The root: the bridge in context, the route, and the choice between the
//! connect screen and the console.

use leptos::prelude::*;

use super::connect::Connect;
use super::route::Route;
use super::shell::Shell;
use crate::model::setup::{default_relay, Link, RelayInput};
use crate::web::bridge::Console;
use crate::web::platform::window;
use crate::web::storage;

/// What the connect screen starts with, and whether to connect at once.
fn initial(link: Option<Link>) -> (Vec<RelayInput>, bool, bool) {
    let location = window().location();
    let origin = default_relay(
        &location.protocol().unwrap_or_default(),
        &location.host().unwrap_or_default(),
    );
    if let Some(link) = link {
        let token = link.token.unwrap_or_default();
        let urls = if link.relays.is_empty() {
            vec![origin]
        } else {
            link.relays
        };
        let relays: Vec<RelayInput> = urls
            .into_iter()
            .map(|url| RelayInput {
                url,
                token: token.clone(),
            })
            .collect();
        // A link is a session's worth of access: kept for this tab only.
        storage::save(&relays, false);
        return (relays, false, true);
    }
    if let Some(saved) = storage::load().filter(|s| !s.relays.is_empty()) {
        return (saved.relays, saved.remember, true);
    }
    (
        vec![RelayInput {
            url: origin,
            token: String::new(),
        }],
        false,
        false,
    )
}

#[component]
pub fn App(link: Option<Link>) -> impl IntoView {
    let console = Console::new();
    provide_context(console);
    console.run_clock();
    console
        .notify
        .set(storage::notify_wanted() && crate::web::notify::granted());

    let route = RwSignal::new(Route::current());
    let handle =
        window_event_listener(leptos::ev::hashchange, move |_| route.set(Route::current()));
    on_cleanup(move || handle.remove());
    provide_context(route);

    let (relays, remember, auto) = initial(link);
    let errors = RwSignal::new(Vec::<(usize, String)>::new());
    if auto {
        if let Err(e) = console.connect(&relays) {
            errors.set(e);
        }
    }
    let form = RwSignal::new(relays);
    provide_context(form);
    let remember = RwSignal::new(remember);

    view! {
        <Show
            when=move || console.active.get()
            fallback=move || view! { <Connect relays=form remember=remember errors=errors /> }
        >
            <Shell />
        </Show>
    }
}
