//! The protocol's names are decided on as enums, never as strings: no
//! source outside tests compares an event type, a command verb, a nack
//! reason or an error code with a string literal (`== "…"`, `!= "…"`,
//! `Some("…")` or `"…"` as a match pattern, `starts_with("…")`). Such a
//! comparison compiles with a typo in it and goes quiet when the registry
//! renames a member; `EventKind`, `EventType`, `CommandVerb`, `NackReason`
//! and `ErrorCode` do not.
//!
//! Scanned: every crate's sources (the engine, the relay, the console, the
//! JavaScript API, both drivers, the adapters). Not scanned: test files and
//! inline `#[cfg(test)]` items, comments (doc examples show misspellings on
//! purpose), the generated vocabulary itself, and the one module that reads
//! a type's name into its kind.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use aep_engine::protocol::vocabulary::{CommandVerb, ErrorCode, EventType, NackReason};

/// Source trees scanned, from the workspace root.
const TREES: [&str; 6] = ["engine/src", "relay/src", "console/src", "src", "browser/src", "driver-tokio/src"];

/// Files whose job is to spell the names, relative to the workspace root:
/// the generated vocabulary's wrapper, and the parser of an event's type
/// into its kind (where `x.` and the `agent.` category rule live).
const SPELLERS: [&str; 2] = ["engine/src/protocol/vocabulary.rs", "engine/src/protocol/kind.rs"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the engine sits in the workspace").to_path_buf()
}

/// Every registered name a comparison must not spell out.
fn names() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    names.extend(EventType::ALL.iter().map(|t| t.as_str().to_owned()));
    for verb in CommandVerb::ALL {
        names.insert(verb.as_str().to_owned());
        names.extend(verb.as_str().strip_prefix("control.").map(str::to_owned));
    }
    names.extend(NackReason::ALL.iter().map(|r| r.as_str().to_owned()));
    names.extend(ErrorCode::ALL.iter().map(|c| c.as_str().to_owned()));
    names
}

/// Prefixes that pick a family of types (`session.`, `control.`, `x.`):
/// a prefix test with one of them decides by type as much as `==` does.
fn prefixes() -> BTreeSet<String> {
    let mut prefixes = BTreeSet::from(["x.".to_owned()]);
    for t in EventType::ALL {
        let name = t.as_str();
        prefixes.extend(name.match_indices('.').map(|(i, _)| name[..=i].to_owned()));
    }
    prefixes
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.map(|e| e.expect("a readable directory entry").path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "tests" {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|x| x == "rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// Every tree scanned: the fixed ones and each adapter's `src`.
fn sources() -> Vec<PathBuf> {
    let root = root();
    let mut files = Vec::new();
    for tree in TREES {
        rust_files(&root.join(tree), &mut files);
    }
    let mut adapters: Vec<PathBuf> = fs::read_dir(root.join("adapters"))
        .map(|d| d.map(|e| e.expect("a readable directory entry").path().join("src")).collect())
        .unwrap_or_default();
    adapters.sort();
    for src in adapters {
        rust_files(&src, &mut files);
    }
    files
}

/// The lines of `text` that are product code, numbered from 1: comments
/// and `#[cfg(test)]` items (up to their closing brace at the same indent)
/// left out.
fn product_lines(text: &str) -> Vec<(usize, &str)> {
    if text.trim_start().starts_with("#![cfg(test)]") {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        if trimmed.starts_with("#[cfg(") && trimmed.contains("test") && !trimmed.contains("not(test") {
            let indent = &line[..line.len() - trimmed.len()];
            let closing = format!("{indent}}}");
            // The item the attribute applies to: one line ending `;`, or a
            // block closed at the attribute's indent.
            for (_, item) in lines.by_ref() {
                let item_trimmed = item.trim();
                if item_trimmed.starts_with("#[") {
                    continue;
                }
                if item_trimmed.ends_with(';') && !item_trimmed.ends_with('{') {
                    break;
                }
                if item_trimmed.ends_with('{') && !item_trimmed.ends_with("{}") {
                    for (_, inner) in lines.by_ref() {
                        if inner.trim_end() == closing || inner.trim_end().starts_with(&format!("{closing};")) {
                            break;
                        }
                    }
                }
                break;
            }
            continue;
        }
        out.push((i + 1, line));
    }
    out
}

/// A string literal on a line: its text and byte span (quotes included).
struct Literal<'a> {
    text: &'a str,
    start: usize,
    end: usize,
}

/// The plain string literals of `line` (raw strings and char literals
/// skipped; an unclosed string, one continued on the next line, ends the
/// scan).
fn literals(line: &str) -> Vec<Literal<'_>> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' => {
                // A char literal (`'"'`) or a lifetime: step over either.
                i += if bytes.get(i + 2) == Some(&b'\'') {
                    3
                } else if bytes.get(i + 1) == Some(&b'\\') {
                    4
                } else {
                    1
                };
            }
            b'r' if (bytes.get(i + 1) == Some(&b'"') || bytes.get(i + 1) == Some(&b'#'))
                && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')) =>
            {
                let hashes = bytes[i + 1..].iter().take_while(|b| **b == b'#').count();
                let close = format!("\"{}", "#".repeat(hashes));
                let body = i + 2 + hashes;
                match line.get(body..).and_then(|rest| rest.find(&close)) {
                    Some(at) => i = body + at + close.len(),
                    None => return out,
                }
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if i >= bytes.len() {
                    return out;
                }
                out.push(Literal { text: &line[start + 1..i], start, end: i + 1 });
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// How `line` decides by the literal at `lit`, if it does: as a compared
/// value, a match pattern or a prefix.
fn comparison(
    line: &str,
    lit: &Literal<'_>,
    names: &BTreeSet<String>,
    prefixes: &BTreeSet<String>,
) -> Option<&'static str> {
    let mut before = line[..lit.start].trim_end();
    let mut after = line[lit.end..].trim_start();
    for call in ["starts_with(", "strip_prefix(", "trim_start_matches("] {
        if before.ends_with(call) && (names.contains(lit.text) || prefixes.contains(lit.text)) {
            return Some("a prefix test");
        }
    }
    if !names.contains(lit.text) {
        return None;
    }
    // `Some("…")` compares as a whole.
    if let (Some(b), Some(a)) = (before.strip_suffix("Some("), after.strip_prefix(')')) {
        before = b.trim_end();
        after = a.trim_start();
    }
    if before.ends_with("==") || before.ends_with("!=") || after.starts_with("==") || after.starts_with("!=") {
        return Some("an equality test");
    }
    if before.ends_with("eq(") || before.ends_with("contains(&") {
        return Some("an equality test");
    }
    if line[lit.end..].contains("=>") {
        return Some("a match pattern");
    }
    if line[..lit.start].contains("matches!(") {
        return Some("a `matches!` pattern");
    }
    None
}

/// Every comparison with a registered name in the product's sources, as
/// `file:line: how: the line`.
fn offenders() -> Vec<String> {
    let (root, names, prefixes) = (root(), names(), prefixes());
    let mut found = Vec::new();
    for file in sources() {
        let rel = file.strip_prefix(&root).expect("under the root").to_string_lossy().replace('\\', "/");
        if SPELLERS.contains(&rel.as_str()) {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap_or_else(|e| panic!("{rel}: {e}"));
        for (n, line) in product_lines(&text) {
            for lit in literals(line) {
                if let Some(how) = comparison(line, &lit, &names, &prefixes) {
                    found.push(format!("{rel}:{n}: {how} with \"{}\": {}", lit.text, line.trim()));
                }
            }
        }
    }
    found
}

#[test]
fn no_source_compares_a_protocol_name_with_a_string_literal() {
    let found = offenders();
    assert!(
        found.is_empty(),
        "{} comparison(s) of an event type, command verb, nack reason or error code with a string literal; \
         decide on the enum instead (EventKind / EventType, CommandVerb, NackReason, ErrorCode):\n  {}",
        found.len(),
        found.join("\n  ")
    );
}

/// The scanner itself: it finds each form of comparison, and leaves alone
/// what is not one (a name written out, a comment, a test module, an
/// unrelated word).
#[test]
fn the_scan_finds_each_form_and_nothing_else() {
    let (names, prefixes) = (names(), prefixes());
    let hits = |line: &str| -> Vec<&'static str> {
        literals(line).iter().filter_map(|l| comparison(line, l, &names, &prefixes)).collect()
    };
    assert_eq!(hits(r#"if event.ty() == "control.pause" {"#), ["an equality test"]);
    assert_eq!(hits(r#"if "run.failed" != ty {"#), ["an equality test"]);
    assert_eq!(hits(r#"reason.as_deref() == Some("invalid")"#), ["an equality test"]);
    assert_eq!(hits(r#"    Some("no-route") => 404,"#), ["a match pattern"]);
    assert_eq!(hits(r#"    "tool.completed" | "tool.failed" => true,"#), ["a match pattern", "a match pattern"]);
    assert_eq!(hits(r#"matches!(code, "ambiguous" | "no-route")"#), ["a `matches!` pattern", "a `matches!` pattern"]);
    assert_eq!(hits(r#"if ty.starts_with("session.") {"#), ["a prefix test"]);
    assert_eq!(hits(r#"Some((v, _)) if v.starts_with("x.") => {}"#), ["a prefix test"]);
    assert!(hits(r#"let ty = "control.pause";"#).is_empty(), "writing a name is not deciding by it");
    assert!(hits(r#"x => Some("accepted"),"#).is_empty(), "a value after `=>` is no pattern");
    assert!(hits(r#"if mode.get() == "json" {"#).is_empty(), "not a protocol name");
    assert!(hits(r##"let raw = r#"{"type":"control.pause"}"# == x;"##).is_empty(), "raw strings are data");

    let text = "fn a() {\n    // if ty == \"run.failed\"\n}\n#[cfg(test)]\nmod tests {\n    fn b() {\n        x == \"run.failed\";\n    }\n}\nfn c() {}\n";
    let kept: Vec<usize> = product_lines(text).iter().map(|(n, _)| *n).collect();
    assert_eq!(kept, [1, 3, 10], "comments and the test module are left out, what follows is kept");
}
