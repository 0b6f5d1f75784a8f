//! The connect screen: relay URLs and tokens, and where to keep them.

use leptos::ev::SubmitEvent;
use leptos::prelude::*;

use super::route::{close_relays, Route};
use crate::model::setup::RelayInput;
use crate::web::bridge::Console;
use crate::web::storage;

/// What the connect screen edits, kept while the console runs so the
/// screen opened again from the menu shows what is in use.
#[derive(Clone, Copy)]
pub struct ConnectForm {
    pub relays: RwSignal<Vec<RelayInput>>,
    pub remember: RwSignal<bool>,
    pub errors: RwSignal<Vec<(usize, String)>>,
    /// The relays came from a link: connecting keeps them for this tab
    /// unless "remember" is ticked, and never erases what the device keeps.
    pub from_link: RwSignal<bool>,
    /// The field that takes the focus when the screen opens (a refused
    /// relay's token field, for "Enter another token"), by DOM id.
    pub focus: RwSignal<Option<String>>,
}

/// The relays and tokens. `cancel`: opened over a running console (from
/// its menu or a refused token's banner), so Cancel, Esc and Back return
/// to it unchanged.
#[component]
pub fn Connect(#[prop(optional)] cancel: bool) -> impl IntoView {
    let console = expect_context::<Console>();
    let route = expect_context::<RwSignal<Route>>();
    let ConnectForm { relays, remember, errors, from_link, focus } = expect_context::<ConnectForm>();
    if cancel {
        let esc = window_event_listener(leptos::ev::keydown, move |ev| {
            if ev.key() == "Escape" {
                ev.prevent_default();
                close_relays(route);
            }
        });
        on_cleanup(move || esc.remove());
    }
    // The field to fix takes the focus: a refused token's, else the first.
    request_animation_frame(move || {
        let id = match focus.get_untracked() {
            Some(id) => id,
            None if cancel => "connect-title".to_owned(),
            None => return,
        };
        focus.set(None);
        if let Some(el) = document().get_element_by_id(&id) {
            use wasm_bindgen::JsCast;
            let _ = el.unchecked_into::<web_sys::HtmlElement>().focus();
        }
    });
    let submit = move |ev: SubmitEvent| {
        ev.prevent_default();
        let list: Vec<RelayInput> = relays
            .get_untracked()
            .into_iter()
            .map(|r| RelayInput { url: r.url.trim().to_owned(), token: r.token.trim().to_owned() })
            .filter(|r| !r.url.is_empty())
            .collect();
        match console.connect(&list) {
            Ok(()) => {
                if from_link.get_untracked() && !remember.get_untracked() {
                    storage::save_for_tab(&list);
                } else {
                    storage::save(&list, remember.get_untracked());
                }
                errors.set(Vec::new());
                if cancel {
                    close_relays(route);
                }
            }
            Err(e) => errors.set(e),
        }
    };
    let add = move |_| {
        relays.update(|r| {
            let token = r.first().map(|f| f.token.clone()).unwrap_or_default();
            r.push(RelayInput { url: String::new(), token });
        })
    };
    let rows = move || {
        let count = relays.with(Vec::len);
        (0..count)
            .map(|i| {
                let url = move || relays.with(|r| r.get(i).map(|x| x.url.clone()).unwrap_or_default());
                let token = move || relays.with(|r| r.get(i).map(|x| x.token.clone()).unwrap_or_default());
                let error = move || errors.with(|e| e.iter().find(|(row, _)| *row == i).map(|(_, m)| m.clone()));
                view! {
                    <fieldset class="relay-row">
                        <legend>{format!("Relay {}", i + 1)}</legend>
                        <label for=format!("relay-url-{i}")>"WebSocket URL"</label>
                        <input
                            id=format!("relay-url-{i}")
                            name="relay-url"
                            type="url"
                            inputmode="url"
                            autocomplete="url"
                            spellcheck="false"
                            placeholder="wss://relay.example/socket"
                            prop:value=url
                            on:input=move |ev| {
                                let v = event_target_value(&ev);
                                relays.update(|r| if let Some(x) = r.get_mut(i) { x.url = v; });
                            }
                        />
                        <label for=format!("relay-token-{i}")>"Access token"</label>
                        <input
                            id=format!("relay-token-{i}")
                            name="relay-token"
                            type="password"
                            autocomplete="off"
                            spellcheck="false"
                            placeholder="leave empty for an open relay"
                            prop:value=token
                            on:input=move |ev| {
                                let v = event_target_value(&ev);
                                relays.update(|r| if let Some(x) = r.get_mut(i) { x.token = v; });
                            }
                        />
                        {move || error().map(|e| view! { <p class="field-error" role="alert">{e}</p> })}
                            <button
                                type="button"
                                hidden=move || relays.with(Vec::len) < 2
                                class="quiet"
                                aria-label=format!("Remove relay {}", i + 1)
                                on:click=move |_| relays.update(|r| { if i < r.len() { r.remove(i); } })
                            >
                                "Remove"
                            </button>
                    </fieldset>
                }
            })
            .collect_view()
    };
    view! {
        <section class="connect" aria-labelledby="connect-title">
            <h1 id="connect-title" tabindex="-1">{if cancel { "Relays" } else { "AEP console" }}</h1>
            <p class="lede">"Connect to the relays your agents report to. You can watch and answer them from here."</p>
            {(!cancel).then(|| view! { <super::shell::InsecurePage /> })}
            <form on:submit=submit aria-label="Connect to relays">
                {rows}
                <button type="button" class="quiet" on:click=add>"Add another relay"</button>
                <label class="check">
                    <input
                        type="checkbox"
                        name="remember"
                        prop:checked=move || remember.get()
                        on:change=move |ev| remember.set(event_target_checked(&ev))
                    />
                    "Remember on this device"
                </label>
                <p class="hint">
                    {move || if remember.get() {
                        "Relays and tokens are kept in this browser's local storage until you forget them."
                    } else {
                        "Tokens are kept only until this tab is closed."
                    }}
                </p>
                <button type="submit" class="primary">"Connect"</button>
                {cancel.then(|| view! {
                    <button type="button" class="cancel-relays" on:click=move |_| close_relays(route)>
                        "Cancel \u{2014} keep the current connection"
                    </button>
                })}
            </form>
        </section>
    }
}
