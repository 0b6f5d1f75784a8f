//! Pure helpers: the same validation, matching and folding the client
//! uses, for code that holds events already (logs, tests, other transports).

use std::sync::Arc;

use aep_engine::protocol::event::Event;
use aep_engine::protocol::filter::{Filter, FilterErrorKind};
use aep_engine::protocol::validate;
use aep_engine::store::{ChangeFeed, Store, StoreConfig};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::convert::{self, aep_error};
use super::members::Members;
use crate::error::AepErrorCode;
use crate::input::StoreLimits;
use crate::view::{self, EventValidation, EventViolation, FilterError, FilterValidation};

/// Rejected inputs reported individually by `projectState`; the rest are
/// only counted.
const MAX_REPORTED_REJECTS: usize = 100;

/// Checks one event (an object, or its JSON text) against every rule that
/// applies to it alone: `{ valid, violations: [{ rule, detail }] }`.
#[wasm_bindgen(js_name = validateEvent)]
pub fn validate_event(event: JsValue) -> JsValue {
    let violations: Vec<EventViolation> =
        match convert::json_text(&event).and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string())) {
            Ok(v) => validate::event(&v)
                .into_iter()
                .map(|v| EventViolation { detail: v.detail, rule: v.rule.to_string() })
                .collect(),
            Err(e) => vec![EventViolation { detail: e, rule: "json.syntax".to_owned() }],
        };
    convert::to_js(&EventValidation { valid: violations.is_empty(), violations })
}

/// Checks an attr-match filter: `{ valid, error?: { code, key?, detail } }`.
#[wasm_bindgen(js_name = validateFilter)]
pub fn validate_filter(filter: JsValue) -> JsValue {
    let error = read_filter(&filter).err();
    convert::to_js(&FilterValidation { valid: error.is_none(), error })
}

/// Whether `event` matches `filter`. Throws an `AepError` (`invalid-filter`)
/// for an invalid filter.
#[wasm_bindgen]
pub fn matches(filter: JsValue, event: JsValue) -> Result<bool, JsValue> {
    let f = read_filter(&filter).map_err(|e| aep_error(AepErrorCode::InvalidFilter, e.detail))?;
    let value =
        convert::to_json(&event).map_err(|e| aep_error(AepErrorCode::InvalidArgument, format!("event: {e}")))?;
    match value {
        Value::Object(m) => Ok(f.matches_value(&m)),
        _ => Err(aep_error(AepErrorCode::InvalidArgument, "event: expected an object")),
    }
}

fn read_filter(filter: &JsValue) -> Result<Filter, FilterError> {
    let value = convert::to_json(filter).map_err(|detail| FilterError {
        code: FilterErrorKind::NotAnObject.code().to_owned(),
        detail,
        key: None,
    })?;
    Filter::parse(&value).map_err(|e| FilterError { code: e.kind.code().to_owned(), detail: e.detail, key: e.key })
}

/// Folds a whole stream (an array of events or JSON texts, or one JSONL
/// text as a string or UTF-8 bytes) through a fresh store and returns what
/// it amounts to:
/// `{ sessions, inbox, violations, counts, evicted, rejected }`.
///
/// The fold holds everything it is given unless `options.limits` bounds
/// it; `evicted` then counts what the bounds dropped.
#[wasm_bindgen(js_name = projectState)]
pub fn project_state(events: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let now = convert::now();
    let mut config = if options.is_undefined() || options.is_null() {
        StoreConfig::unbounded()
    } else {
        let m = Members::of(&options, "projectState(options): ", AepErrorCode::InvalidArgument)?;
        limits(m.json("limits")?)?
    };
    // Only the end state is returned: nobody reads a change feed.
    config.changes = ChangeFeed::Off;
    let mut store = Store::new(config);
    let mut rejected = Vec::new();
    let mut rejected_count = 0u64;
    let mut fold = |index: usize, event: Result<Event, String>, store: &mut Store| match event {
        Ok(e) => {
            store.apply(e, None, now);
        }
        Err(err) => {
            rejected_count += 1;
            if rejected.len() < MAX_REPORTED_REJECTS {
                rejected.push(view::RejectedLine { index: index as u64, error: err });
            }
        }
    };
    if let Some(bytes) = events.dyn_ref::<js_sys::Uint8Array>() {
        fold_jsonl_bytes(bytes.to_vec(), &mut fold, &mut store);
    } else if events.is_string() {
        fold_jsonl(&Arc::from(convert::string_text(&events).as_str()), &mut fold, &mut store);
    } else if js_sys::Array::is_array(&events) {
        // One `JSON.stringify` for the whole array crosses the boundary once;
        // element by element is the fallback when some element cannot be
        // stringified, so that only that element is rejected.
        let whole: Option<Arc<str>> = js_sys::JSON::stringify(&events)
            .ok()
            .filter(|s| s.is_string())
            .map(|s| Arc::from(convert::string_text(&s).as_str()));
        reserve_heap(whole.as_ref().map_or(0, |w| w.len()));
        match whole.as_ref().and_then(|w| Some((w, array_items(w)?))) {
            Some((whole, items)) => {
                for (i, item) in items.into_iter().enumerate() {
                    // A string element is an event's JSON text.
                    let event = match item.starts_with('"').then(|| serde_json::from_str::<String>(item)) {
                        Some(Ok(text)) => Event::parse(&text),
                        _ => Event::parse_in(whole, span_of(whole, item)),
                    };
                    fold(i, event.map_err(|e| e.to_string()), &mut store);
                }
            }
            None => {
                let list = js_sys::Array::from(&events);
                for i in 0..list.length() {
                    let event = convert::json_text(&list.get(i))
                        .and_then(|text| Event::parse(&text).map_err(|e| e.to_string()));
                    fold(i as usize, event, &mut store);
                }
            }
        }
    } else {
        return Err(aep_error(
            AepErrorCode::InvalidArgument,
            "projectState(events): expected an array of events, or JSONL as a string or a Uint8Array",
        ));
    }
    let mut out = view::projection(&store);
    out.rejected = view::Rejected { count: rejected_count, first: rejected };
    Ok(convert::to_js(&out))
}

/// Folds JSONL given as bytes: as text when it is all UTF-8, else line by
/// line, rejecting only the lines that are not.
fn fold_jsonl_bytes(
    bytes: Vec<u8>,
    fold: &mut impl FnMut(usize, Result<Event, String>, &mut Store),
    store: &mut Store,
) {
    let bytes = match String::from_utf8(bytes) {
        Ok(jsonl) => return fold_jsonl(&Arc::from(jsonl.as_str()), fold, store),
        Err(e) => e.into_bytes(),
    };
    let lines = bytes.split(|b| *b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    for (i, line) in lines.enumerate() {
        match std::str::from_utf8(line) {
            Ok(l) if l.trim().is_empty() => {}
            Ok(l) => fold(i, Event::parse(l).map_err(|e| e.to_string()), store),
            Err(e) => fold(i, Err(format!("malformed event: not UTF-8 ({e})")), store),
        }
    }
}

/// Folds each non-blank line of a JSONL text; rejects carry line numbers.
/// Lines end at `\n`, and a `\r` before it is no part of the line, as
/// with [`str::lines`]. Each event keeps its line as a span of the text.
fn fold_jsonl(jsonl: &Arc<str>, fold: &mut impl FnMut(usize, Result<Event, String>, &mut Store), store: &mut Store) {
    reserve_heap(jsonl.len());
    let bytes = jsonl.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while start < bytes.len() {
        let end = find_newline(bytes, start).unwrap_or(bytes.len());
        // `\n` is ASCII: both ends are character boundaries.
        let line = &jsonl[start..end];
        let line = line.strip_suffix('\r').unwrap_or(line);
        if !line.trim().is_empty() {
            fold(i, Event::parse_in(jsonl, span_of(jsonl, line)).map_err(|e| e.to_string()), store);
        }
        start = end + 1;
        i += 1;
    }
}

/// Where `part`, a slice of `whole`, sits in it.
fn span_of(whole: &str, part: &str) -> std::ops::Range<usize> {
    let at = part.as_ptr() as usize - whole.as_ptr() as usize;
    at..at + part.len()
}

/// Where the first `\n` at or after `from` is, eight bytes at a time (in
/// the module, faster than the standard library's search).
fn find_newline(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    const NEWLINES: u64 = ONES * b'\n' as u64;
    let mut at = from;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default()) ^ NEWLINES;
        // The lowest byte of `word` that is zero sets the lowest bit here.
        let zero = word.wrapping_sub(ONES) & !word & HIGH;
        if zero != 0 {
            return Some(at + (zero.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    bytes[at..].iter().position(|b| *b == b'\n').map(|p| at + p)
}

/// The elements of a JSON array's text as `JSON.stringify` writes it (no
/// whitespace between tokens), each as its own text; `None` when the text
/// is not such an array.
fn array_items(text: &str) -> Option<Vec<&str>> {
    let bytes = text.strip_prefix('[')?.strip_suffix(']')?.as_bytes();
    let inner = &text[1..text.len() - 1];
    let mut items = Vec::new();
    let (mut depth, mut start, mut at) = (0usize, 0, 0);
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                at += 1;
                loop {
                    match *bytes.get(at)? {
                        b'"' => break,
                        b'\\' => at += 2,
                        _ => at += 1,
                    }
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b',' if depth == 0 => {
                // Delimiters are ASCII: both ends are character boundaries.
                items.push(&inner[start..at]);
                start = at + 1;
            }
            _ => {}
        }
        at += 1;
    }
    if depth != 0 {
        return None;
    }
    if !bytes.is_empty() {
        items.push(&inner[start..]);
    }
    Some(items)
}

/// Grows the heap once, before folding `bytes` of JSON, to about what the
/// store will hold (three times its input). Left to grow as the fold
/// allocates, the heap grows by one 64 KiB step at a time, and a host that
/// copies the whole memory on each step (Node 20 here: about half a
/// millisecond per step at 200 MiB) turns a large stream quadratic. The
/// block is freed at once and the allocator reuses it; if it cannot be had,
/// the fold grows as before.
fn reserve_heap(bytes: usize) {
    let _ = Vec::<u8>::new().try_reserve_exact(bytes.saturating_mul(3));
}

fn limits(value: Option<Value>) -> Result<StoreConfig, JsValue> {
    let Some(value) = value else { return Ok(StoreConfig::unbounded()) };
    let l = StoreLimits::read(&value)
        .map_err(|e| aep_error(AepErrorCode::InvalidArgument, format!("projectState options.limits: {e}")))?;
    Ok(l.config())
}
