//! The root: the bridge in context, the route, and the choice between the
//! connect screen and the console.

use leptos::prelude::*;

use super::connect::{Connect, ConnectForm};
use super::route::Route;
use super::shell::Shell;
use crate::model::setup::{default_relay, plan_link, Link, RelayInput, UNKNOWN_RELAY};
use crate::web::bridge::Console;
use crate::web::platform::window;
use crate::web::storage;

/// What the connect screen starts with.
struct Initial {
    relays: Vec<RelayInput>,
    remember: bool,
    /// Connect at once.
    auto: bool,
    /// The relays came from a link: kept for this tab only.
    from_link: bool,
    /// Per row, what to check before connecting.
    notes: Vec<(usize, String)>,
}

fn initial(link: Option<Link>) -> Initial {
    let location = window().location();
    let origin = default_relay(&location.protocol().unwrap_or_default(), &location.host().unwrap_or_default());
    let saved = storage::load().filter(|s| !s.relays.is_empty());
    if let Some(link) = link {
        let known = saved.as_ref().map(|s| s.relays.as_slice()).unwrap_or_default();
        let plan = plan_link(link, &origin, known);
        let notes = plan.unknown.iter().map(|row| (*row, UNKNOWN_RELAY.to_owned())).collect();
        let auto = !plan.must_ask();
        if auto {
            // A link is a session's worth of access: kept for this tab
            // only, and what the device remembers stays.
            storage::save_for_tab(&plan.relays);
        }
        return Initial { relays: plan.relays, remember: false, auto, from_link: true, notes };
    }
    if let Some(saved) = saved {
        return Initial {
            relays: saved.relays,
            remember: saved.remember,
            auto: true,
            from_link: false,
            notes: Vec::new(),
        };
    }
    Initial {
        relays: vec![RelayInput { url: origin, token: String::new() }],
        remember: false,
        auto: false,
        from_link: false,
        notes: Vec::new(),
    }
}

#[component]
pub fn App(link: Option<Link>) -> impl IntoView {
    let console = Console::new();
    provide_context(console);
    // Connecting comes first: the socket's handshake then overlaps the
    // drawing of the page, and the first request is not kept waiting for it.
    let Initial { relays, remember, auto, from_link, notes } = initial(link);
    let errors = RwSignal::new(notes);
    if auto {
        if let Err(e) = console.connect(&relays) {
            errors.set(e);
        }
    }
    super::steady::Watcher::provide(console);
    console.run_clock();
    // The worker shows Web Push and the in-tab notifications alike.
    if crate::web::push::facts(false).service_worker {
        leptos::task::spawn_local(async {
            let _ = crate::web::push::register().await;
        });
    }

    let route = RwSignal::new(Route::current());
    let handle = window_event_listener(leptos::ev::hashchange, move |_| route.set(Route::current()));
    on_cleanup(move || handle.remove());
    provide_context(route);
    // Here, not in the shell: a notification may name a request held
    // behind "N new", and opening it brings those in.
    super::inbox::NewAbove::provide();
    super::push::open_notified_requests(route);
    let form = ConnectForm {
        relays: RwSignal::new(relays),
        remember: RwSignal::new(remember),
        errors,
        from_link: RwSignal::new(from_link),
        focus: RwSignal::new(None),
    };
    provide_context(form);
    // A memo, so the console is drawn again only when it comes or goes.
    let active = Memo::new(move |_| console.active.get());

    view! {
        {move || if active.get() {
            view! { <Shell /> }.into_any()
        } else {
            view! { <main id="main" class="connect-page"><Connect /></main> }.into_any()
        }}
    }
}
