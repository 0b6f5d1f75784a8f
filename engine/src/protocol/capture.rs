//! Capture at field granularity (AEP-0002 §5.1): the level each payload
//! field needs, the down-level a hop applies under a ceiling (AEP-0001
//! §8.2), and the type-dependent gating of form answers (AEP-0006).
//!
//! The levels come from the `x-aep-capture` annotations of the payload
//! schemas, compiled into the engine at build time.
//!
//! With the `redact` feature, the adapter's side too (AEP-0003 §9): the
//! redaction pipeline, content digests and emission at a ceiling.

mod downlevel;
#[cfg(feature = "redact")]
mod emit;
mod exception;
mod form_values;
#[cfg(feature = "redact")]
mod redact;

pub use downlevel::{downlevel, landing_level};
#[cfg(feature = "redact")]
pub use emit::{content_digest, emit_at_ceiling, CaptureCeiling};
pub use exception::synthesized_prompt;
pub use form_values::{gate_form_values, has_free_text};
#[cfg(feature = "redact")]
pub use redact::{RedactOptions, Redactor};

use crate::protocol::event::Capture;
use crate::protocol::validate::payload::schema::{self, Schema};

/// The lowest capture level at which a payload field may be present.
///
/// `path` names members from the payload root; arrays are looked through,
/// so `["documents", "content"]` is the `content` of every document. A
/// field the schema names without an annotation is `metadata` (AEP-0002
/// §5.1 rule 4). `None` when the type has no schema or the schema does not
/// name the field.
pub fn field_level(ty: &str, path: &[&str]) -> Option<Capture> {
    let (first, rest) = path.split_first()?;
    let mut node = schema::lookup(ty)?.property(first)?;
    for name in rest {
        node = node.member(name)?;
    }
    Some(node.capture.unwrap_or_default())
}

/// Every annotated field of a type's payload, as `(path, level)` in schema
/// order. Paths are dotted; `[]` marks the items of an array
/// (`documents[].content`). `None` when the type has no schema.
pub fn annotations(ty: &str) -> Option<Vec<(String, Capture)>> {
    let mut out = Vec::new();
    collect_annotations(schema::lookup(ty)?, "", &mut out);
    Some(out)
}

fn collect_annotations(node: &Schema, prefix: &str, out: &mut Vec<(String, Capture)>) {
    for property in node.properties {
        let path = format!("{prefix}{}", property.name);
        if let Some(level) = property.schema.capture {
            out.push((path.clone(), level));
        }
        collect_annotations(property.schema, &format!("{path}."), out);
        if let Some(items) = property.schema.items {
            let items_path = format!("{path}[]");
            if let Some(level) = items.capture {
                out.push((items_path.clone(), level));
            }
            collect_annotations(items, &format!("{items_path}."), out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_levels_follow_the_annotations() {
        assert_eq!(field_level("tool.completed", &["result"]), Some(Capture::Full));
        assert_eq!(field_level("tool.completed", &["result_redacted"]), Some(Capture::Redacted));
        assert_eq!(field_level("tool.completed", &["tool", "name"]), Some(Capture::Metadata));
        assert_eq!(field_level("tool.failed", &["error", "message"]), Some(Capture::Redacted));
        assert_eq!(field_level("resource.retrieval.returned", &["documents", "content"]), Some(Capture::Full));
        assert_eq!(field_level("attention.requested", &["fields", "choices", "label"]), Some(Capture::Metadata));
        assert_eq!(field_level("attention.requested", &["context"]), Some(Capture::Full));
        assert_eq!(field_level("tool.completed", &["nope"]), None);
        assert_eq!(field_level("x.acme.tool.ran", &["result"]), None);
        assert_eq!(field_level("tool.completed", &[]), None);
    }

    #[test]
    fn annotations_list_nested_and_array_paths() {
        let all = annotations("resource.citation.recorded").unwrap();
        let level = |p: &str| all.iter().find(|(path, _)| path == p).map(|(_, l)| *l);
        assert_eq!(level("citations[].cited_text"), Some(Capture::Full));
        assert_eq!(level("citations[].source.uri"), Some(Capture::Redacted));
        assert_eq!(level("citations[].offset.page.page"), Some(Capture::Metadata));
        assert_eq!(level("count"), Some(Capture::Metadata));
        assert!(annotations("x.acme.tool.ran").is_none());
    }
}
