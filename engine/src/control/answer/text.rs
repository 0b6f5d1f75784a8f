//! Typed text naming an option (AEP-0008): after trimming, text that
//! case-insensitively equals an option's `id`, or exactly one option's
//! `label`, is that option. An id match wins over a label match, because
//! ids are what the agent minted and answers are keyed by.

use crate::protocol::form::Choice;
use crate::text::lowercase;

/// What a piece of text names among the offered options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TextMatch<'a> {
    /// Exactly one option is named.
    Option(&'a Choice),
    /// Several options fit (duplicate labels, ids differing only by case):
    /// naming none of them for sure, it maps to none.
    Ambiguous(Vec<&'a Choice>),
    Unmatched,
}

/// Matches `text` against `options` per the AEP-0008 rule.
pub fn match_text<'a>(text: &str, options: &'a [Choice]) -> TextMatch<'a> {
    let wanted = text.trim();
    if let Some(exact) = options.iter().find(|o| o.id == wanted) {
        return TextMatch::Option(exact);
    }
    let folded = lowercase(wanted);
    let by_id: Vec<&Choice> = options.iter().filter(|o| lowercase(o.id.trim()) == folded).collect();
    let by_label: Vec<&Choice> = options.iter().filter(|o| lowercase(o.label.trim()) == folded).collect();
    let candidates = if by_id.is_empty() { by_label } else { by_id };
    match candidates.as_slice() {
        [] => TextMatch::Unmatched,
        [one] => TextMatch::Option(one),
        _ => TextMatch::Ambiguous(candidates),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> Vec<Choice> {
        pairs.iter().map(|(id, label)| Choice { id: (*id).into(), label: (*label).into() }).collect()
    }

    fn id_of(m: TextMatch<'_>) -> Option<String> {
        match m {
            TextMatch::Option(c) => Some(c.id.clone()),
            _ => None,
        }
    }

    #[test]
    fn matches_ids_and_labels_trimmed_and_case_insensitively() {
        let o = opts(&[("allow", "Allow once"), ("deny", "Deny")]);
        assert_eq!(id_of(match_text("deny", &o)), Some("deny".into()));
        assert_eq!(id_of(match_text("  DENY \n", &o)), Some("deny".into()));
        assert_eq!(id_of(match_text("allow ONCE", &o)), Some("allow".into()));
        assert_eq!(match_text("allow twice", &o), TextMatch::Unmatched);
        assert_eq!(match_text("", &o), TextMatch::Unmatched);
    }

    #[test]
    fn an_id_beats_another_options_label() {
        let o = opts(&[("1", "yes"), ("yes", "Proceed")]);
        assert_eq!(id_of(match_text("Yes", &o)), Some("yes".into()));
    }

    #[test]
    fn a_label_shared_by_two_options_names_neither() {
        let o = opts(&[("a", "Same"), ("b", "same"), ("c", "Other")]);
        match match_text("same", &o) {
            TextMatch::Ambiguous(c) => assert_eq!(c.len(), 2),
            other => panic!("{other:?}"),
        }
        let o = opts(&[("Go", "x"), ("go", "y")]);
        assert_eq!(id_of(match_text("go", &o)), Some("go".into()), "exact id first");
        assert!(matches!(match_text("GO", &o), TextMatch::Ambiguous(_)));
    }
}
