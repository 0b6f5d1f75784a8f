//! Reading and writing a frame's JSON members, shared by every frame.

use serde_json::{Map, Value};

/// Removes `key` from `map` when `parse` accepts it; otherwise leaves it
/// there, so a wrong-shaped declaration is carried rather than trusted.
pub(super) fn take<T>(map: &mut Map<String, Value>, key: &str, parse: impl Fn(&Value) -> Option<T>) -> Option<T> {
    let parsed = parse(map.get(key)?)?;
    map.remove(key);
    Some(parsed)
}

pub(super) fn string_list(v: &Value) -> Option<Vec<String>> {
    v.as_array()?.iter().map(|s| s.as_str().map(str::to_owned)).collect()
}

pub(super) fn strings(v: &[String]) -> Value {
    Value::Array(v.iter().map(|s| Value::String(s.clone())).collect())
}

pub(super) fn opt_string(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_owned)
}

pub(super) fn extend_missing(m: &mut Map<String, Value>, other: &Map<String, Value>) {
    for (k, v) in other {
        if !m.contains_key(k) {
            m.insert(k.clone(), v.clone());
        }
    }
}
