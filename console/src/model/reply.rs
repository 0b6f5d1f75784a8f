//! What typed text will count as, said before it is sent: on the send
//! button itself, not only in a hint. The matching is the engine's own
//! AEP-0008 rule ([`match_text`]); this only names its outcome.

use aep_engine::control::answer::{match_text, TextMatch};
use aep_engine::protocol::form::Choice;

/// The meaning of a reply as typed so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplyMeaning {
    /// Nothing typed yet.
    Empty,
    /// The text names exactly one option: it counts as that option.
    Option { label: String },
    /// The text names several options: the agent may refuse it.
    Ambiguous,
    /// On a permission request, text naming no option is a refusal with
    /// the text as its reason.
    Refusal,
    /// Elsewhere, text naming no option (or a request with no options) is
    /// sent as the reply itself.
    Words,
}

/// What `text` will count as on a request offering `choices`.
pub fn meaning(text: &str, choices: &[Choice], permission: bool) -> ReplyMeaning {
    if text.trim().is_empty() {
        return ReplyMeaning::Empty;
    }
    if choices.is_empty() {
        return ReplyMeaning::Words;
    }
    match match_text(text, choices) {
        TextMatch::Option(c) => ReplyMeaning::Option { label: c.label.clone() },
        TextMatch::Ambiguous(_) => ReplyMeaning::Ambiguous,
        TextMatch::Unmatched if permission => ReplyMeaning::Refusal,
        TextMatch::Unmatched => ReplyMeaning::Words,
    }
}

/// Words a person types for yes, and for no.
const YES: &[&str] = &[
    "yes", "y", "yeah", "yep", "sure", "ok", "okay", "approve", "approved", "go", "proceed", "allow", "lgtm",
    "confirm", "accept",
];
const NO: &[&str] = &["no", "n", "nope", "deny", "reject", "stop", "cancel", "dont", "don't"];

/// The option a reply that names none most likely meant: its number
/// (`1`), or a common word for yes or no (`yes please`, `ok`). Offered on
/// a tap, never applied on its own: AEP-0008 reads the text as it is.
pub fn likely<'a>(text: &str, choices: &'a [Choice]) -> Option<&'a Choice> {
    let t = text.trim().to_ascii_lowercase();
    if let Ok(n) = t.parse::<usize>() {
        return n.checked_sub(1).and_then(|i| choices.get(i));
    }
    let first = t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '\'')).next().unwrap_or("");
    let yes = if YES.contains(&first) {
        true
    } else if NO.contains(&first) {
        false
    } else {
        return None;
    };
    choices.iter().find(|c| super::card::is_permissive(&c.id) == yes)
}

/// The default an input request names in its prompt (`… (default: OPS)`).
pub fn default_in(prompt: &str) -> Option<String> {
    let at = prompt.to_ascii_lowercase().rfind("default:")?;
    let rest = prompt[at + "default:".len()..].trim_start();
    let value = rest.split([')', '\n']).next()?.trim().trim_end_matches(['.', ',']);
    (!value.is_empty()).then(|| value.to_owned())
}

impl ReplyMeaning {
    /// The send button's words: what pressing it will do.
    pub fn button(&self) -> String {
        match self {
            ReplyMeaning::Option { label } => format!("Send as \u{201c}{label}\u{201d}"),
            ReplyMeaning::Refusal => "Send as refusal".to_owned(),
            ReplyMeaning::Empty | ReplyMeaning::Ambiguous | ReplyMeaning::Words => "Send reply".to_owned(),
        }
    }

    /// A sentence under the box, when there is more to say than the button.
    pub fn hint(&self, has_options: bool) -> Option<String> {
        match self {
            ReplyMeaning::Empty => None,
            ReplyMeaning::Option { label } => Some(format!("The agent reads this as \u{201c}{label}\u{201d}.")),
            ReplyMeaning::Ambiguous => Some("This names more than one option; the agent may refuse it.".to_owned()),
            ReplyMeaning::Refusal => {
                Some("This names no option, so it counts as a refusal, with your text as the reason.".to_owned())
            }
            ReplyMeaning::Words if has_options => Some("This names no option; it is sent as guidance text.".to_owned()),
            ReplyMeaning::Words => None,
        }
    }

    /// The button warns: the reply does the opposite of what it may read as.
    pub fn is_refusal(&self) -> bool {
        matches!(self, ReplyMeaning::Refusal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow_deny() -> Vec<Choice> {
        [("allow", "Allow"), ("deny", "Deny")]
            .iter()
            .map(|(id, label)| Choice { id: (*id).into(), label: (*label).into() })
            .collect()
    }

    #[test]
    fn a_yes_on_a_permission_that_names_no_option_is_sent_as_a_refusal() {
        let m = meaning("yes, go ahead", &allow_deny(), true);
        assert_eq!(m, ReplyMeaning::Refusal);
        assert_eq!(m.button(), "Send as refusal");
    }

    #[test]
    fn text_naming_an_option_says_which() {
        let m = meaning("  ALLOW ", &allow_deny(), true);
        assert_eq!(m, ReplyMeaning::Option { label: "Allow".into() });
        assert_eq!(m.button(), "Send as \u{201c}Allow\u{201d}");
    }

    #[test]
    fn common_words_and_numbers_offer_the_option_they_likely_meant() {
        let o = allow_deny();
        for yes in ["yes", "ok", "approve", "yes please", "1", "Sure!"] {
            assert_eq!(meaning(yes, &o, true), ReplyMeaning::Refusal, "{yes}: AEP-0008 reads it as it is");
            assert_eq!(likely(yes, &o).map(|c| c.id.as_str()), Some("allow"), "{yes}");
        }
        for no in ["no", "nope, not now", "2"] {
            assert_eq!(likely(no, &o).map(|c| c.id.as_str()), Some("deny"), "{no}");
        }
        assert_eq!(likely("use the staging cluster", &o), None);
        assert_eq!(likely("3", &o), None);
    }

    #[test]
    fn an_input_names_its_default_in_its_prompt() {
        assert_eq!(
            default_in("Which incident tracker project should I search? (default: OPS)").as_deref(),
            Some("OPS")
        );
        assert_eq!(default_in("Branch name? Default: main."), Some("main".into()));
        assert_eq!(default_in("Which project?"), None);
    }

    #[test]
    fn elsewhere_unmatched_text_is_a_plain_reply() {
        assert_eq!(meaning("use staging", &allow_deny(), false), ReplyMeaning::Words);
        assert_eq!(meaning("OPS and SEC", &[], false).button(), "Send reply");
        assert_eq!(meaning("   ", &allow_deny(), true), ReplyMeaning::Empty);
        assert_eq!(ReplyMeaning::Empty.button(), "Send reply");
    }
}
