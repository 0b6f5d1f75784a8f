//! The engine's layers, read from the `use` lines of its sources: the
//! protocol layer (the wire: events, validation, frames) is what every
//! other layer builds on, so it imports nothing from the store, control
//! or the client; and no engine module imports, through others, one that
//! imports it, a parent's re-exports included (inline test modules aside:
//! they may reach anywhere).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Modules of the engine the protocol layer must not import.
const ABOVE_PROTOCOL: [&str; 3] = ["store", "control", "client"];

/// One source file: its module path (`["protocol", "validate"]`) and text.
struct Source {
    module: Vec<String>,
    file: PathBuf,
    text: String,
}

fn sources(dir: &Path, out: &mut Vec<Source>) {
    let mut entries: Vec<_> = fs::read_dir(dir).expect("engine/src is readable").map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
            let rel = path.strip_prefix(&src).unwrap().with_extension("");
            let mut module: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            out.push(Source { module, text: fs::read_to_string(&path).unwrap(), file: path });
        }
    }
}

/// Every `use` statement of `text`, with whether it sits at the file's top
/// level (not indented) or in an inline module such as `mod tests`.
fn use_statements(text: &str) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        let body =
            ["use ", "pub use ", "pub(crate) use ", "pub(super) use "].iter().find_map(|p| trimmed.strip_prefix(p));
        let Some(body) = body else { continue };
        let mut statement = body.to_owned();
        while !statement.contains(';') {
            match lines.next() {
                Some(next) => statement.push_str(next.split("//").next().unwrap_or_default()),
                None => break,
            }
        }
        let statement = statement.split(';').next().unwrap_or_default().split_whitespace().collect::<String>();
        out.push((trimmed.len() == line.len(), statement));
    }
    out
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e`.
fn expand(path: &str) -> Vec<String> {
    let path: String = path.split_whitespace().collect();
    let path = path.as_str();
    let Some(open) = path.find('{') else { return vec![path.to_owned()] };
    let close = path.rfind('}').expect("a use group closes");
    let (prefix, inner) = (&path[..open], &path[open + 1..close]);
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts.into_iter().filter(|p| !p.is_empty()).flat_map(|p| expand(&format!("{prefix}{p}"))).collect()
}

/// The engine module a use path names, from the module it is written in
/// (`here`, whose submodules are `children`); `None` for paths outside the
/// engine (std, dependencies). Inside an inline module (`mod tests`),
/// `super` is the file's module.
fn target(path: &str, here: &[String], top_level: bool, children: &BTreeSet<String>) -> Option<Vec<String>> {
    let mut segments = path.split("::").peekable();
    let mut at: Vec<String> = match *segments.peek()? {
        "crate" => Vec::new(),
        "self" | "super" => here.to_vec(),
        child if top_level && children.contains(child) => here.to_vec(),
        _ => return None,
    };
    if segments.peek() == Some(&"crate") || segments.peek() == Some(&"self") {
        segments.next();
    }
    let mut first_super = !top_level;
    while segments.peek() == Some(&"super") {
        segments.next();
        if first_super {
            first_super = false;
        } else {
            at.pop();
        }
    }
    at.extend(segments.map(str::to_owned));
    Some(at)
}

/// Module → the modules its top-level `use` lines import (the longest
/// module prefix of each path), for every engine source.
fn import_graph(all: &[Source]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let modules: BTreeSet<&Vec<String>> = all.iter().map(|s| &s.module).collect();
    let mut graph = BTreeMap::new();
    for s in all {
        let children = children(all, &s.module);
        let edges: &mut BTreeSet<Vec<String>> = graph.entry(s.module.clone()).or_default();
        for (top, statement) in use_statements(&s.text).into_iter().filter(|(top, _)| *top) {
            for path in expand(&statement) {
                let Some(full) = target(&path, &s.module, top, &children) else { continue };
                let owner = (0..=full.len()).rev().map(|n| full[..n].to_vec()).find(|m| modules.contains(m));
                if let Some(owner) = owner.filter(|m| *m != s.module) {
                    edges.insert(owner);
                }
            }
        }
    }
    graph
}

/// The names of `module`'s submodules.
fn children(all: &[Source], module: &[String]) -> BTreeSet<String> {
    all.iter()
        .filter(|s| s.module.len() == module.len() + 1 && s.module.starts_with(module))
        .map(|s| s.module[module.len()].clone())
        .collect()
}

fn engine_sources() -> Vec<Source> {
    let mut all = Vec::new();
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut all);
    assert!(all.len() > 50, "the engine's sources were not found");
    all
}

#[test]
fn the_protocol_layer_imports_nothing_from_the_layers_above_it() {
    let all = engine_sources();
    let mut found = Vec::new();
    for s in all.iter().filter(|s| s.module.first().is_some_and(|m| m == "protocol")) {
        let children = children(&all, &s.module);
        for (top, statement) in use_statements(&s.text) {
            for path in expand(&statement) {
                let Some(full) = target(&path, &s.module, top, &children) else { continue };
                if full.first().is_some_and(|m| ABOVE_PROTOCOL.contains(&m.as_str())) {
                    found.push(format!("{}: use {path}", s.file.display()));
                }
            }
        }
        // Paths written out in code, not only in `use` lines.
        for (n, line) in s.text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for layer in ABOVE_PROTOCOL {
                if code.contains(&format!("crate::{layer}::")) || code.contains(&format!("crate::{layer};")) {
                    found.push(format!("{}:{}: {}", s.file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "the protocol layer reaches above itself:\n{}", found.join("\n"));
}

#[test]
fn no_engine_module_imports_one_that_imports_it() {
    let graph = import_graph(&engine_sources());
    // Depth-first search; a module met again while still on the path closes a loop.
    fn visit<'a>(
        m: &'a Vec<String>,
        graph: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        path: &mut Vec<&'a Vec<String>>,
        done: &mut BTreeSet<&'a Vec<String>>,
    ) -> Option<String> {
        if let Some(i) = path.iter().position(|p| *p == m) {
            let names: Vec<String> = path[i..].iter().chain([&m]).map(|p| p.join("::")).collect();
            return Some(names.join(" -> "));
        }
        if !done.insert(m) {
            return None;
        }
        path.push(m);
        for next in graph.get(m).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        if let Some(found) = visit(m, &graph, &mut Vec::new(), &mut done) {
            panic!("engine modules import one another in a loop (a child importing through its parent's re-exports counts: import from the module that defines the item): {found}");
        }
    }
}

#[test]
fn the_reader_sees_use_lines_as_written() {
    assert_eq!(
        expand("crate::{store::{Store, Change}, time::UnixMs}"),
        ["crate::store::Store", "crate::store::Change", "crate::time::UnixMs"]
    );
    let here = ["protocol".to_owned(), "validate".to_owned()];
    let children = BTreeSet::from(["payload".to_owned()]);
    let path = |p: &[&str]| Some(p.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(target("super::event::Event", &here, true, &children), path(&["protocol", "event", "Event"]));
    assert_eq!(target("super::Violation", &here, false, &children), path(&["protocol", "validate", "Violation"]));
    assert_eq!(target("payload::check", &here, true, &children), path(&["protocol", "validate", "payload", "check"]));
    assert_eq!(target("serde_json::Value", &here, true, &children), None);
    let statements = use_statements("use a::{\n    b,\n    c,\n};\n    use super::*;\n");
    assert_eq!(statements, [(true, "a::{b,c,}".to_owned()), (false, "super::*".to_owned())]);
}
