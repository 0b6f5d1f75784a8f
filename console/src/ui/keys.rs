//! Desktop keys: `j`/`k` between cards, `1`–`9` to the card's options
//! (Enter then answers), `/` to the reply box, `?` for this list.
//! Nothing answers on a single key press.

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement, KeyboardEvent};

fn focused_card() -> Option<Element> {
    document().active_element()?.closest("article.card").ok().flatten()
}

fn cards() -> Vec<HtmlElement> {
    let Ok(list) = document().query_selector_all("main article.card") else {
        return Vec::new();
    };
    (0..list.length()).filter_map(|i| list.item(i)).filter_map(|n| n.dyn_into::<HtmlElement>().ok()).collect()
}

fn focus(el: &HtmlElement) {
    let _ = el.focus();
    let opts = web_sys::ScrollIntoViewOptions::new();
    opts.set_block(web_sys::ScrollLogicalPosition::Nearest);
    el.scroll_into_view_with_scroll_into_view_options(&opts);
}

/// After an answer is sent from inside `card`: the focus moves on to the
/// next waiting card (the previous one at the end of the list, the inbox
/// itself when none is left), so it never drops to the page body when the
/// answered card's buttons are disabled or the card leaves. Only when the
/// focus was in that card: an answer never steals it from elsewhere.
/// After the next render, focuses `selector` inside the card with DOM id
/// `card` when focus was in that card (a tap or a key there).
pub fn focus_in_card(card: &str, selector: &'static str) {
    let card = card.to_owned();
    let was_inside =
        document().get_element_by_id(&card).zip(document().active_element()).is_some_and(|(c, a)| c.contains(Some(&a)));
    if !was_inside {
        return;
    }
    request_animation_frame(move || {
        if let Some(el) = document()
            .get_element_by_id(&card)
            .and_then(|c| c.query_selector(selector).ok().flatten())
            .and_then(|e| e.dyn_into::<HtmlElement>().ok())
        {
            let opts = web_sys::FocusOptions::new();
            opts.set_prevent_scroll(true);
            let _ = el.focus_with_options(&opts);
        }
    });
}

pub fn focus_after_answer(card: &str) {
    let Some(here) = document().get_element_by_id(card) else { return };
    let inside = document().active_element().is_some_and(|a| here.contains(Some(&a)));
    if !inside {
        return;
    }
    let all = cards();
    let at = all.iter().position(|c| c.is_same_node(Some(&here)));
    let next = at.and_then(|i| all.get(i + 1).or_else(|| i.checked_sub(1).and_then(|p| all.get(p))));
    match next {
        // Without scrolling: the confirmation stays where the person acted.
        Some(el) => {
            let opts = web_sys::FocusOptions::new();
            opts.set_prevent_scroll(true);
            let _ = el.focus_with_options(&opts);
        }
        None => {
            if let Some(main) = document().get_element_by_id("main").and_then(|m| m.dyn_into::<HtmlElement>().ok()) {
                let _ = main.focus();
            }
        }
    }
}

fn step(delta: i32) {
    let all = cards();
    if all.is_empty() {
        return;
    }
    let current = focused_card();
    let at = current.and_then(|c| all.iter().position(|x| x.is_same_node(Some(&c))));
    let next = match at {
        None => 0,
        Some(i) => (i as i32 + delta).clamp(0, all.len() as i32 - 1) as usize,
    };
    focus(&all[next]);
}

fn in_card(selector: &str) -> Option<HtmlElement> {
    let card = focused_card().or_else(|| cards().into_iter().next().map(Into::into))?;
    card.query_selector(selector).ok().flatten()?.dyn_into().ok()
}

fn typing(e: &KeyboardEvent) -> bool {
    let Some(t) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) else {
        return false;
    };
    matches!(t.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT") || t.has_attribute("contenteditable")
}

#[component]
pub fn Keys() -> impl IntoView {
    let help = expect_context::<RwSignal<bool, LocalStorage>>();
    let handle = window_event_listener(leptos::ev::keydown, move |e: KeyboardEvent| {
        if e.ctrl_key() || e.meta_key() || e.alt_key() {
            return;
        }
        if typing(&e) {
            if e.key() == "Escape" {
                if let Some(t) = e.target().and_then(|t| t.dyn_into::<HtmlElement>().ok()) {
                    let _ = t.blur();
                    if let Some(card) =
                        t.closest("article.card").ok().flatten().and_then(|c| c.dyn_into::<HtmlElement>().ok())
                    {
                        let _ = card.focus();
                    }
                }
            }
            return;
        }
        match e.key().as_str() {
            "j" => step(1),
            "k" => step(-1),
            "/" => {
                if let Some(input) = in_card("form.reply input") {
                    e.prevent_default();
                    // A compact card keeps its reply behind the expand.
                    if input.offset_parent().is_none() {
                        if let Some(toggle) = in_card("button.details-toggle") {
                            toggle.click();
                        }
                        request_animation_frame(move || {
                            let _ = input.focus();
                        });
                    } else {
                        let _ = input.focus();
                    }
                }
            }
            "?" => help.update(|h| *h = !*h),
            "Escape" => help.set(false),
            k if k.len() == 1 && k.chars().all(|c| ('1'..='9').contains(&c)) => {
                if let Some(b) = in_card(&format!(".options button.option:nth-of-type({k})")) {
                    e.prevent_default();
                    let _ = b.focus();
                }
            }
            _ => {}
        }
    });
    on_cleanup(move || handle.remove());
}

#[component]
pub fn KeyHelp() -> impl IntoView {
    let help = expect_context::<RwSignal<bool, LocalStorage>>();
    // Opening moves the focus to the list's Close button; closing gives it
    // back to whatever had it before (the page itself only if that is gone).
    let close_ref = NodeRef::<leptos::html::Button>::new();
    let before = StoredValue::new_local(None::<HtmlElement>);
    Effect::new(move |was_open: Option<bool>| {
        let open = help.get();
        if open && was_open != Some(true) {
            before.set_value(document().active_element().and_then(|e| e.dyn_into::<HtmlElement>().ok()));
            request_animation_frame(move || {
                if let Some(b) = close_ref.get_untracked() {
                    let _ = b.focus();
                }
            });
        } else if !open && was_open == Some(true) {
            let back = before
                .get_value()
                .filter(|e| e.is_connected())
                .or_else(|| document().get_element_by_id("main").and_then(|m| m.dyn_into::<HtmlElement>().ok()));
            if let Some(el) = back {
                let _ = el.focus();
            }
        }
        open
    });
    view! {
        {move || help.get().then(|| view! {
            // A div: an aside is complementary content, which may not be
            // a dialog.
            <div class="key-help" role="dialog" aria-label="Keyboard shortcuts">
                <h2>"Keyboard"</h2>
                <dl>
                    <div><dt><kbd>"j"</kbd>" / "<kbd>"k"</kbd></dt><dd>"next / previous card"</dd></div>
                    <div><dt><kbd>"1"</kbd>"\u{2013}"<kbd>"9"</kbd></dt><dd>"go to that option of the card; Enter answers"</dd></div>
                    <div><dt><kbd>"/"</kbd></dt><dd>"reply to the card in words"</dd></div>
                    <div><dt><kbd>"Esc"</kbd></dt><dd>"leave a text box"</dd></div>
                    <div><dt><kbd>"?"</kbd></dt><dd>"show or hide this list"</dd></div>
                </dl>
                <button type="button" node_ref=close_ref on:click=move |_| help.set(false)>"Close"</button>
            </div>
        })}
    }
}
