//! One event's JSON object read in a single serde pass, borrowing from the
//! text: each member's value is kept as its exact bytes (`&RawValue`), core
//! attributes in their slots and extension attributes in wire order.
//!
//! Nothing here interprets a value beyond what its first byte says; the
//! envelope rules ([`validate`](super::validate)) and [`Event`](super::event::Event)
//! read the slots through the typed helpers below, so both agree on what a
//! member holds without building a JSON tree.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

/// The members of one event object, borrowed from its text.
#[derive(Debug, Default)]
pub struct Envelope<'a> {
    pub aep: Option<&'a RawValue>,
    pub id: Option<&'a RawValue>,
    pub ty: Option<&'a RawValue>,
    pub subject: Option<&'a RawValue>,
    pub time: Option<&'a RawValue>,
    pub source: Option<&'a RawValue>,
    pub agent: Option<&'a RawValue>,
    pub session: Option<&'a RawValue>,
    pub run: Option<&'a RawValue>,
    pub step: Option<&'a RawValue>,
    pub seq: Option<&'a RawValue>,
    pub epoch: Option<&'a RawValue>,
    pub cause: Option<&'a RawValue>,
    pub traceparent: Option<&'a RawValue>,
    pub severity: Option<&'a RawValue>,
    pub capture: Option<&'a RawValue>,
    pub data: Option<&'a RawValue>,
    /// Every other member, in wire order; a repeated name keeps its first
    /// place and its last value (as a JSON object reader would).
    pub extensions: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a> Envelope<'a> {
    /// Reads `text` as one JSON object. Errors are JSON syntax errors, or
    /// a top-level value that is not an object.
    pub fn parse(text: &'a str) -> Result<Envelope<'a>, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let envelope = Envelope::deserialize(&mut de)?;
        de.end()?;
        Ok(envelope)
    }

    /// The slot of a core attribute (`data` included), or `None` for an
    /// extension name.
    pub fn core(&self, name: &str) -> Option<Option<&'a RawValue>> {
        Some(match name {
            "aep" => self.aep,
            "id" => self.id,
            "type" => self.ty,
            "subject" => self.subject,
            "time" => self.time,
            "source" => self.source,
            "agent" => self.agent,
            "session" => self.session,
            "run" => self.run,
            "step" => self.step,
            "seq" => self.seq,
            "epoch" => self.epoch,
            "cause" => self.cause,
            "traceparent" => self.traceparent,
            "severity" => self.severity,
            "capture" => self.capture,
            "data" => self.data,
            _ => return None,
        })
    }

    fn slot(&mut self, name: &str) -> Option<&mut Option<&'a RawValue>> {
        Some(match name {
            "aep" => &mut self.aep,
            "id" => &mut self.id,
            "type" => &mut self.ty,
            "subject" => &mut self.subject,
            "time" => &mut self.time,
            "source" => &mut self.source,
            "agent" => &mut self.agent,
            "session" => &mut self.session,
            "run" => &mut self.run,
            "step" => &mut self.step,
            "seq" => &mut self.seq,
            "epoch" => &mut self.epoch,
            "cause" => &mut self.cause,
            "traceparent" => &mut self.traceparent,
            "severity" => &mut self.severity,
            "capture" => &mut self.capture,
            "data" => &mut self.data,
            _ => return None,
        })
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Envelope<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Envelope<'a>, D::Error> {
        struct Members<'a>(std::marker::PhantomData<&'a ()>);

        impl<'de: 'a, 'a> Visitor<'de> for Members<'a> {
            type Value = Envelope<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an event (a JSON object)")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Envelope<'a>, M::Error> {
                let mut env = Envelope::default();
                while let Some(name) = map.next_key::<Name<'de>>()? {
                    let value: &'de RawValue = map.next_value()?;
                    match env.slot(&name.0) {
                        Some(slot) => *slot = Some(value),
                        None => match env.extensions.iter_mut().find(|(n, _)| *n == name.0) {
                            Some(known) => known.1 = value,
                            None => env.extensions.push((name.0, value)),
                        },
                    }
                }
                Ok(env)
            }
        }

        deserializer.deserialize_map(Members(std::marker::PhantomData))
    }
}

/// A string member as decoded once for every reader: absent (`None`), not
/// a string (`Some(None)`), or its text, borrowed unless it had escapes.
pub type Decoded<'a> = Option<Option<Cow<'a, str>>>;

/// The string-valued core members of an [`Envelope`], each decoded once:
/// the envelope rules and the event both read them, and decoding again
/// for each reader would scan every text several times.
#[derive(Debug, Default)]
pub struct Texts<'a> {
    pub aep: Decoded<'a>,
    pub id: Decoded<'a>,
    pub ty: Decoded<'a>,
    pub subject: Decoded<'a>,
    pub time: Decoded<'a>,
    pub source: Decoded<'a>,
    pub agent: Decoded<'a>,
    pub session: Decoded<'a>,
    pub run: Decoded<'a>,
    pub step: Decoded<'a>,
    pub cause: Decoded<'a>,
    pub traceparent: Decoded<'a>,
    pub severity: Decoded<'a>,
    pub capture: Decoded<'a>,
}

impl<'a> Texts<'a> {
    pub fn of(env: &Envelope<'a>) -> Texts<'a> {
        let d = |v: Option<&'a RawValue>| v.map(as_str);
        Texts {
            aep: d(env.aep),
            id: d(env.id),
            ty: d(env.ty),
            subject: d(env.subject),
            time: d(env.time),
            source: d(env.source),
            agent: d(env.agent),
            session: d(env.session),
            run: d(env.run),
            step: d(env.step),
            cause: d(env.cause),
            traceparent: d(env.traceparent),
            severity: d(env.severity),
            capture: d(env.capture),
        }
    }
}

/// Every member of a JSON object in wire order, borrowed: for rewriting an
/// event member by member without disturbing the others.
pub fn members(text: &str) -> Result<Vec<(Cow<'_, str>, &RawValue)>, serde_json::Error> {
    struct Ordered<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

    impl<'de> Deserialize<'de> for Ordered<'de> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Ordered<'de>, D::Error> {
            struct Members;
            impl<'de> Visitor<'de> for Members {
                type Value = Ordered<'de>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Ordered<'de>, M::Error> {
                    let mut out = Vec::new();
                    while let Some(name) = map.next_key::<Name<'de>>()? {
                        out.push((name.0, map.next_value::<&'de RawValue>()?));
                    }
                    Ok(Ordered(out))
                }
            }
            deserializer.deserialize_map(Members)
        }
    }

    serde_json::from_str::<Ordered<'_>>(text).map(|o| o.0)
}

/// A member name, borrowed unless it carried escapes.
struct Name<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Name<'de>, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

/// The JSON kind of a value, named as in messages.
pub fn kind(v: &RawValue) -> &'static str {
    match v.get().as_bytes().first() {
        Some(b'"') => "string",
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b't' | b'f') => "boolean",
        Some(b'n') => "null",
        _ => "number",
    }
}

/// A string value's text: borrowed when it has no escapes.
pub fn as_str(v: &RawValue) -> Option<Cow<'_, str>> {
    let raw = v.get();
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if has_backslash(inner.as_bytes()) {
        serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

/// Whether `bytes` hold a `\\`, eight bytes at a time: every attribute
/// text is checked on every event, and they are too short for a memchr
/// call to pay off.
fn has_backslash(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const SLASHES: u64 = u64::from_ne_bytes([b'\\'; 8]);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let x = u64::from_ne_bytes(word.try_into().unwrap_or_default()) ^ SLASHES;
        // A zero byte in `x` is a backslash in the text.
        if x.wrapping_sub(ONES) & !x & HIGHS != 0 {
            return true;
        }
    }
    words.remainder().contains(&b'\\')
}

/// A non-negative integer value (what `Value::as_u64` accepts: no
/// fraction, no exponent, within `u64`).
pub fn as_u64(v: &RawValue) -> Option<u64> {
    let raw = v.get();
    if raw.bytes().all(|b| b.is_ascii_digit()) {
        raw.parse().ok()
    } else {
        None
    }
}

/// An integer value in `i64` or `u64` (what `Number::is_i64 || is_u64`
/// accepts; `-0` reads as a float there, so it is not one).
pub fn is_integer(v: &RawValue) -> bool {
    let raw = v.get();
    match raw.strip_prefix('-') {
        Some(digits) => digits.bytes().all(|b| b.is_ascii_digit()) && raw.parse::<i64>().is_ok_and(|n| n != 0),
        None => as_u64(v).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> &RawValue {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn members_land_in_slots_and_extensions_keep_order() {
        let text = r#"{"zeta":1,"id":"E\u0031","aep":"0.1","alpha":true,"data":{"a":[1]},"zeta":2}"#;
        let env = Envelope::parse(text).unwrap();
        assert_eq!(as_str(env.id.unwrap()).unwrap(), "E1");
        assert!(matches!(as_str(env.aep.unwrap()), Some(Cow::Borrowed("0.1"))));
        assert_eq!(env.data.unwrap().get(), r#"{"a":[1]}"#);
        let ext: Vec<(&str, &str)> = env.extensions.iter().map(|(n, v)| (n.as_ref(), v.get())).collect();
        assert_eq!(ext, [("zeta", "2"), ("alpha", "true")]);
        assert!(Envelope::parse("[1]").is_err());
        assert!(Envelope::parse("{} x").is_err());
    }

    #[test]
    fn escapes_are_found_wherever_they_sit() {
        for n in 0..20 {
            let plain = "a".repeat(n);
            assert!(!has_backslash(plain.as_bytes()));
            for at in 0..n {
                let mut t = plain.clone().into_bytes();
                t[at] = b'\\';
                assert!(has_backslash(&t), "{n} {at}");
            }
        }
        // Bytes next to a backslash in value (0x5b, 0x5d, 0xdc) are not one.
        assert!(!has_backslash("[]]\u{dc}[[]]]]".as_bytes()));
    }

    #[test]
    fn numbers_read_as_json_values_do() {
        assert_eq!(as_u64(raw("187")), Some(187));
        for not in ["1.0", "1e2", "-1", "-0", "18446744073709551616", "\"1\""] {
            assert_eq!(as_u64(raw(not)), None, "{not}");
        }
        assert!(is_integer(raw("-5")) && is_integer(raw("18446744073709551615")));
        assert!(!is_integer(raw("-0")) && !is_integer(raw("1.5")) && !is_integer(raw("-9223372036854775809")));
        for (v, k) in [("\"x\"", "string"), ("{}", "object"), ("[]", "array"), ("false", "boolean"), ("null", "null"), ("-2", "number")] {
            assert_eq!(kind(raw(v)), k);
        }
    }
}
