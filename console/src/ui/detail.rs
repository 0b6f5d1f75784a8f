//! What a request is about, on its card before any tap: why it is
//! destructive, the agent's explanation, the command whole (monospace,
//! wrapped between tokens, never inside one) and each file's change as a
//! diff. Long text folds behind a "show all" that says how much; it
//! unfolds in place. Agent text is only ever put in text nodes.

use leptos::prelude::*;

use crate::model::card::CardView;
use crate::model::detail::{
    pieces, show_all_words, ChangeView, Detail, DiffLine, Fold, Piece, COMMAND_FOLD, DIFF_FOLD,
};

/// "Destructive", and why, in the adapter's words: on the card from the
/// start, not only on the approval's second tap.
#[component]
pub fn DestructiveNote(card: CardView) -> impl IntoView {
    card.destructive.then(|| {
        let why = card.destructive_because.clone().unwrap_or_else(|| "the agent marked it so".to_owned());
        view! {
            <p class="destructive-note">
                <span class="destructive-badge">"Destructive"</span>
                <span class="sr-only">": "</span>
                <span class="destructive-why">{why}</span>
            </p>
        }
    })
}

/// The request's details, when the agent sent any.
#[component]
pub fn RequestDetail(card: CardView) -> impl IntoView {
    let Detail { description, command, changes } = card.detail.clone();
    let agent = card.agent.clone();
    let id = card.id.clone();
    let error = card.detail_error.clone();
    let command_id = format!("command-{id}");
    (!card.detail.is_empty() || error.is_some()).then(|| {
        view! {
            <div class="request-detail">
                {description.map(|d| view! {
                    <figure class="agent-why">
                        <figcaption>{format!("Why, says {agent}")}</figcaption>
                        <blockquote class="why">{d}</blockquote>
                    </figure>
                })}
                {command.map(|lines| {
                    let label = format!("Command, {}", crate::model::words::count(lines.len(), "line", "lines"));
                    view! {
                        <div class="command-block" role="group" aria-label=label>
                            <Folded id=command_id.clone() lines=lines.into_iter().map(Line::Command).collect() fold=COMMAND_FOLD what="lines" />
                        </div>
                    }
                })}
                {changes.into_iter().enumerate().map(|(i, c)| view! { <Change change=c id=format!("change-{id}-{i}") /> }).collect_view()}
                {error.map(|e| view! { <p class="capture-note">{format!("The agent's details could not be read ({e}).")}</p> })}
            </div>
        }
    })
}

/// One line a fold shows.
#[derive(Clone)]
enum Line {
    Command(String),
    Diff(DiffLine),
}

impl Line {
    fn render(self) -> AnyView {
        match self {
            Line::Command(l) => command_line(l).into_any(),
            Line::Diff(l) => diff_line(l).into_any(),
        }
    }
}

/// `lines`, the first `fold.keep` of them until "show all" is tapped when
/// there are more than `fold.above`.
#[component]
fn Folded(id: String, lines: Vec<Line>, fold: Fold, what: &'static str) -> impl IntoView {
    let total = lines.len();
    let folded_to = fold.shown(total);
    let all = RwSignal::new(false);
    let lines = StoredValue::new(lines);
    let shown = move || {
        let n = if all.get() { total } else { folded_to.unwrap_or(total) };
        lines.with_value(|l| l.iter().take(n).cloned().map(Line::render).collect_view())
    };
    let toggle_words = move || if all.get() { "Show fewer".to_owned() } else { show_all_words(total, what) };
    view! {
        <pre class="mono folded" id=id.clone() data-lines=total.to_string()
            data-folded=move || (folded_to.is_some() && !all.get()).to_string()><code>{shown}</code></pre>
        {folded_to.map(|keep| view! {
            <button type="button" class="show-all" aria-controls=id.clone() aria-expanded=move || all.get().to_string()
                on:click=move |_| all.update(|a| *a = !*a)>
                {toggle_words}
                {move || (!all.get()).then(|| view! { <span class="more-count">{format!(" ({} more)", total - keep)}</span> })}
            </button>
        })}
    }
}

/// One line of a command: its tokens kept whole, the spaces between them
/// where it may wrap.
fn command_line(line: String) -> impl IntoView {
    view! { <span class="line">{tokens(&line)}</span> }
}

fn tokens(line: &str) -> impl IntoView {
    pieces(line)
        .into_iter()
        .map(|p| match p {
            Piece::Token(t) => view! { <span class="tok">{t.to_owned()}</span> }.into_any(),
            Piece::Space(s) => s.to_owned().into_any(),
        })
        .collect_view()
}

/// One line of a diff: its number where known, its sign, and its text.
fn diff_line(l: DiffLine) -> impl IntoView {
    let number = l.number().map(|n| n.to_string()).unwrap_or_default();
    view! {
        <span class="line diff-line" data-mark=l.mark.token()>
            <span class="ln" aria-hidden="true">{number}</span>
            <span class="sign" aria-hidden="true">{l.mark.sign()}</span>
            <span class="sr-only">{l.mark.words()}</span>
            <span class="text">{tokens(&l.text)}</span>
        </span>
    }
}

/// One file's change: its path, size and the diff.
#[component]
fn Change(change: ChangeView, id: String) -> impl IntoView {
    let label = format!("Change to {}", change.path);
    let size = change.size_words();
    let action = change.action_words();
    let has_lines = !change.lines.is_empty();
    view! {
        <div class="change" role="group" aria-label=label>
            <p class="change-head">
                <span class="change-path mono" title=change.path.clone()>{change.shown_path.clone()}</span>
                <span class="change-size">{size}</span>
            </p>
            {action.map(|a| view! { <p class="change-action">{a}</p> })}
            {has_lines.then(|| view! {
                <Folded id=id lines=change.lines.iter().cloned().map(Line::Diff).collect() fold=DIFF_FOLD what="diff lines" />
            })}
        </div>
    }
}
