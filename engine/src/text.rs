//! Text helpers chosen with the WebAssembly builds in mind: numbers and
//! quoted strings in messages go through serde_json's formatting (linked
//! anyway) rather than `{:?}` and `f64`'s `Display`, a browser build folds
//! case with the host's tables rather than shipping Unicode's, and the keys
//! looked up per event are compared a word at a time.

/// Whether two texts are equal, compared eight bytes at a time. In the
/// WebAssembly builds `==` on strings calls the standard library's
/// `memcmp`, which compares a byte at a time; every owner event's session
/// is found by its `source`, tens of bytes, compared here.
#[inline]
pub fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let (mut x, mut y) = (a.chunks_exact(8), b.chunks_exact(8));
    let word = |c: &[u8]| u64::from_ne_bytes(c.try_into().unwrap_or_default());
    (&mut x).zip(&mut y).all(|(p, q)| word(p) == word(q)) && x.remainder() == y.remainder()
}

/// The name of a JSON value's kind, as messages say what they found.
pub fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `s` as a JSON string literal: quoted, with quotes and control
/// characters escaped, so agent text can never break a message's shape.
pub fn quote(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// `n` as JSON writes it: `3`, `2.5`, `-0.001`; non-finite values (which
/// JSON cannot carry) as `NaN`, `inf` and `-inf`.
pub fn number(n: f64) -> String {
    if n.is_nan() {
        return "NaN".into();
    }
    if n.is_infinite() {
        return if n > 0.0 { "inf" } else { "-inf" }.into();
    }
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        return (n as i64).to_string();
    }
    serde_json::Value::from(n).to_string()
}

/// `s` in lower case by Unicode's default case mapping.
pub fn lowercase(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    unicode_lowercase(s)
}

/// In a browser build (feature `host-lowercase`, which `aep-browser` turns
/// on) the host's `String.prototype.toLowerCase` applies the same mapping,
/// so the module does not carry Unicode's case tables (about 8 KB gzipped).
/// The engine only names the function; the browser driver defines it, as
/// `getrandom`'s custom backends are defined.
#[cfg(all(feature = "host-lowercase", target_arch = "wasm32"))]
fn unicode_lowercase(s: &str) -> String {
    extern "Rust" {
        fn __aep_host_lowercase(s: &str) -> String;
    }
    // SAFETY: `aep-browser`, the crate that turns the feature on, defines
    // the function with exactly this signature.
    unsafe { __aep_host_lowercase(s) }
}

#[cfg(not(all(feature = "host-lowercase", target_arch = "wasm32")))]
fn unicode_lowercase(s: &str) -> String {
    s.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_agrees_with_equality() {
        let texts =
            ["", "a", "aep://h", "aep://host-a/agent/a", "aep://host-a/agent/b", "aep://host-a/agent/ab", "grüße"];
        for a in texts {
            for b in texts {
                assert_eq!(same(a, b), a == b, "{a:?} {b:?}");
            }
        }
        // Differences in every position, whole words and the tail alike.
        let base = "0123456789abcdefghij";
        for at in 0..base.len() {
            let mut other = base.as_bytes().to_vec();
            other[at] = b'.';
            assert!(!same(base, std::str::from_utf8(&other).unwrap()), "{at}");
        }
    }

    #[test]
    fn quotes_like_json() {
        assert_eq!(quote("plain"), "\"plain\"");
        assert_eq!(quote("a \"b\"\n\u{1}"), "\"a \\\"b\\\"\\n\\u0001\"");
        assert_eq!(quote("grüße"), "\"grüße\"");
    }

    #[test]
    fn lowercase_is_unicode_aware() {
        assert_eq!(lowercase("Allow ONCE"), "allow once");
        assert_eq!(lowercase("ÄRGER Σ"), "ärger σ");
    }

    #[test]
    fn numbers_read_as_written() {
        assert_eq!(number(3.0), "3");
        assert_eq!(number(-0.0), "0");
        assert_eq!(number(2.5), "2.5");
        assert_eq!(number(-0.001), "-0.001");
        assert_eq!(number(1e300), "1e+300");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::NEG_INFINITY), "-inf");
    }
}
