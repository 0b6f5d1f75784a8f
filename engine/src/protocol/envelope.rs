//! One event's JSON object read in a single serde pass, borrowing from the
//! text: each member's value is kept as its exact bytes ([`Raw`]), core
//! attributes in their slots and extension attributes in wire order.
//!
//! Nothing here interprets a value beyond what its first byte says; the
//! envelope rules ([`validate`](super::validate)) and [`Event`](super::event::Event)
//! read the slots through the typed helpers below, so both agree on what a
//! member holds without building a JSON tree.
//!
//! Nearly every event carries its string attributes without escapes. Those
//! are read as borrowed text straight from the parser, their exact bytes
//! being the text between its quotes; anything else (an escape, a value of
//! the wrong kind, a syntax error) reads the event again member by member
//! as raw values, which is where every error is reported.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

/// The sixteen core context attributes and `data` (AEP-0001 §5.1). An
/// extension attribute may never use one of these names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Core {
    Aep,
    Id,
    Type,
    Subject,
    Time,
    Source,
    Agent,
    Session,
    Run,
    Step,
    Seq,
    Epoch,
    Cause,
    Traceparent,
    Severity,
    Capture,
    Data,
}

impl Core {
    pub const ALL: [Core; 17] = [
        Core::Aep,
        Core::Id,
        Core::Type,
        Core::Subject,
        Core::Time,
        Core::Source,
        Core::Agent,
        Core::Session,
        Core::Run,
        Core::Step,
        Core::Seq,
        Core::Epoch,
        Core::Cause,
        Core::Traceparent,
        Core::Severity,
        Core::Capture,
        Core::Data,
    ];

    /// Whether the member's value is text (all but `seq`, `epoch`, `data`).
    pub fn is_text(self) -> bool {
        !matches!(self, Core::Seq | Core::Epoch | Core::Data)
    }

    /// The member named `name`, if it is a core one. Every member of every
    /// event is looked up here, so the length and first bytes pick the one
    /// candidate and a single comparison confirms it (a `match` on the
    /// strings compares against each name in turn, each a call in the
    /// size-optimised WebAssembly build).
    pub fn of(name: &str) -> Option<Core> {
        let b = name.as_bytes();
        let candidate = match (b.len(), b.first(), b.get(1)) {
            (2, Some(b'i'), _) => Core::Id,
            (3, Some(b'a'), _) => Core::Aep,
            (3, Some(b'r'), _) => Core::Run,
            (3, Some(b's'), _) => Core::Seq,
            (4, Some(b't'), Some(b'y')) => Core::Type,
            (4, Some(b't'), Some(b'i')) => Core::Time,
            (4, Some(b's'), _) => Core::Step,
            (4, Some(b'd'), _) => Core::Data,
            (5, Some(b'a'), _) => Core::Agent,
            (5, Some(b'c'), _) => Core::Cause,
            (5, Some(b'e'), _) => Core::Epoch,
            (6, Some(b's'), _) => Core::Source,
            (7, Some(b's'), Some(b'u')) => Core::Subject,
            (7, Some(b's'), Some(b'e')) => Core::Session,
            (7, Some(b'c'), _) => Core::Capture,
            (8, Some(b's'), _) => Core::Severity,
            (11, Some(b't'), _) => Core::Traceparent,
            _ => return None,
        };
        (candidate.name() == name).then_some(candidate)
    }

    /// The member's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Core::Aep => "aep",
            Core::Id => "id",
            Core::Type => "type",
            Core::Subject => "subject",
            Core::Time => "time",
            Core::Source => "source",
            Core::Agent => "agent",
            Core::Session => "session",
            Core::Run => "run",
            Core::Step => "step",
            Core::Seq => "seq",
            Core::Epoch => "epoch",
            Core::Cause => "cause",
            Core::Traceparent => "traceparent",
            Core::Severity => "severity",
            Core::Capture => "capture",
            Core::Data => "data",
        }
    }
}

/// A member's value as its exact bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raw<'a>(&'a str);

impl<'a> Raw<'a> {
    /// The value's bytes as they were on the wire.
    #[inline]
    pub fn get(self) -> &'a str {
        self.0
    }
}

impl fmt::Display for Raw<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl<'a> From<&'a RawValue> for Raw<'a> {
    fn from(v: &'a RawValue) -> Raw<'a> {
        Raw(v.get())
    }
}

/// The members of one event object, borrowed from its text.
#[derive(Debug, Default)]
pub struct Envelope<'a> {
    /// The core members' values, by [`Core`].
    core: [Option<Raw<'a>>; Core::ALL.len()],
    /// Every other member, in wire order; a repeated name keeps its first
    /// place and its last value (as a JSON object reader would).
    pub extensions: Vec<(Cow<'a, str>, Raw<'a>)>,
}

impl<'a> Envelope<'a> {
    /// Reads `text` as one JSON object. Errors are JSON syntax errors, or
    /// a top-level value that is not an object.
    pub fn parse(text: &'a str) -> Result<Envelope<'a>, serde_json::Error> {
        Envelope::parse_decoded(text).map(|(env, _)| env)
    }

    /// [`Envelope::parse`], with the string members decoded once for every
    /// reader ([`Texts`]).
    pub fn parse_decoded(text: &'a str) -> Result<(Envelope<'a>, Texts<'a>), serde_json::Error> {
        if let Ok(read) = Plain::read(text) {
            return Ok(read);
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let envelope = Envelope::deserialize(&mut de)?;
        de.end()?;
        let texts = Texts::of(&envelope);
        Ok((envelope, texts))
    }

    /// The value of a core attribute, when present.
    #[inline]
    pub fn get(&self, core: Core) -> Option<Raw<'a>> {
        self.core[core as usize]
    }

    /// Files one member: a core attribute in its slot, anything else as an
    /// extension. A repeated name keeps its first place and its last value.
    fn file(&mut self, core: Option<Core>, name: Cow<'a, str>, value: Raw<'a>) {
        match core {
            Some(c) => *self.slot(c) = Some(value),
            None => match self.extensions.iter_mut().find(|(n, _)| *n == name) {
                Some(known) => known.1 = value,
                None => self.extensions.push((name, value)),
            },
        }
    }

    fn slot(&mut self, core: Core) -> &mut Option<Raw<'a>> {
        &mut self.core[core as usize]
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
                    let value = Raw::from(map.next_value::<&'de RawValue>()?);
                    env.file(Core::of(&name.0), name.0, value);
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
pub struct Texts<'a>([Decoded<'a>; Core::ALL.len()]);

impl<'a> Texts<'a> {
    /// A text member as decoded (`None` for `seq`, `epoch` and `data`).
    #[inline]
    pub fn get(&self, core: Core) -> &Decoded<'a> {
        &self.0[core as usize]
    }

    /// Takes a text member out, leaving `None`.
    pub fn take(&mut self, core: Core) -> Decoded<'a> {
        self.0[core as usize].take()
    }

    /// The slot of a text member.
    fn slot(&mut self, core: Core) -> Option<&mut Decoded<'a>> {
        core.is_text().then(|| &mut self.0[core as usize])
    }

    pub fn of(env: &Envelope<'a>) -> Texts<'a> {
        let mut texts = Texts::default();
        for core in Core::ALL.into_iter().filter(|c| c.is_text()) {
            texts.0[core as usize] = env.get(core).map(as_str);
        }
        texts
    }
}

/// The one-pass reading of an event whose string attributes carry no
/// escapes (see the module's doc): each text is lent by the parser as it
/// found it. Anything else fails here, and the event is read the general
/// way.
struct Plain<'a> {
    text: &'a str,
}

impl<'a> Plain<'a> {
    fn read(text: &'a str) -> Result<(Envelope<'a>, Texts<'a>), serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let read = de::DeserializeSeed::deserialize(Plain { text }, &mut de)?;
        de.end()?;
        Ok(read)
    }

    /// The exact bytes of `s`, a text the parser lent from `text` without
    /// escapes: `s` with its quotes.
    fn quoted(&self, s: &'a str) -> Option<Raw<'a>> {
        let at = (s.as_ptr() as usize).checked_sub(self.text.as_ptr() as usize)?;
        let raw = self.text.get(at.checked_sub(1)?..at + s.len() + 1)?;
        unquote(raw).map(|_| Raw(raw))
    }
}

impl<'de> de::DeserializeSeed<'de> for Plain<'de> {
    type Value = (Envelope<'de>, Texts<'de>);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Plain<'de> {
    type Value = (Envelope<'de>, Texts<'de>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event (a JSON object)")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut env = Envelope::default();
        let mut texts = Texts::default();
        while let Some(name) = map.next_key::<Name<'de>>()? {
            let core = Core::of(&name.0);
            match core.and_then(|c| texts.slot(c)) {
                Some(slot) => {
                    // `&str` deserializes only from text lent without escapes.
                    let s: &'de str = map.next_value()?;
                    let raw = self.quoted(s).ok_or_else(|| de::Error::custom("not a plain string"))?;
                    *slot = Some(Some(Cow::Borrowed(s)));
                    env.file(core, name.0, raw);
                }
                None => env.file(core, name.0, Raw::from(map.next_value::<&'de RawValue>()?)),
            }
        }
        Ok((env, texts))
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

/// The value of the member `name` of a JSON object, as its exact bytes;
/// the last one when the name repeats, as a JSON object reader keeps it.
/// `None` when `object` is not a well-formed object or has no such member.
///
/// For reading one or two payload members without building the payload's
/// tree, which costs an allocation per member and per string.
pub fn member<'a>(object: &'a str, name: &str) -> Option<Raw<'a>> {
    struct Find<'n>(&'n str);

    impl<'de> de::DeserializeSeed<'de> for Find<'_> {
        type Value = Option<Raw<'de>>;
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
            deserializer.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Find<'_> {
        type Value = Option<Raw<'de>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
            let mut found = None;
            while let Some(key) = map.next_key::<Name<'de>>()? {
                let value = Raw::from(map.next_value::<&'de RawValue>()?);
                if key.0 == self.0 {
                    found = Some(value);
                }
            }
            Ok(found)
        }
    }

    let mut de = serde_json::Deserializer::from_str(object);
    let found = de::DeserializeSeed::deserialize(Find(name), &mut de).ok()?;
    de.end().ok()?;
    found
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
pub fn kind(v: Raw<'_>) -> &'static str {
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
pub fn as_str(v: Raw<'_>) -> Option<Cow<'_, str>> {
    let raw = v.get();
    let inner = unquote(raw)?;
    if has_backslash(inner.as_bytes()) {
        serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

/// The text between a value's quotes, when it is quoted. Compared as
/// bytes: the `char` patterns of `strip_prefix` encode their `char` on
/// every call in the size-optimised WebAssembly build, and this runs for
/// every string member of every event.
fn unquote(raw: &str) -> Option<&str> {
    let b = raw.as_bytes();
    (b.len() >= 2 && b[0] == b'"' && b[b.len() - 1] == b'"').then(|| &raw[1..raw.len() - 1])
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
pub fn as_u64(v: Raw<'_>) -> Option<u64> {
    let raw = v.get();
    if raw.bytes().all(|b| b.is_ascii_digit()) {
        raw.parse().ok()
    } else {
        None
    }
}

/// An integer value in `i64` or `u64` (what `Number::is_i64 || is_u64`
/// accepts; `-0` reads as a float there, so it is not one).
pub fn is_integer(v: Raw<'_>) -> bool {
    let raw = v.get();
    match raw.strip_prefix('-') {
        Some(digits) => digits.bytes().all(|b| b.is_ascii_digit()) && raw.parse::<i64>().is_ok_and(|n| n != 0),
        None => as_u64(v).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Raw<'_> {
        Raw::from(serde_json::from_str::<&RawValue>(s).unwrap())
    }

    /// The general reading, member by member, for comparison.
    fn general(text: &str) -> Envelope<'_> {
        let mut de = serde_json::Deserializer::from_str(text);
        Envelope::deserialize(&mut de).unwrap()
    }

    #[test]
    fn core_names_are_found_and_near_misses_are_not() {
        let all = [
            "aep",
            "id",
            "type",
            "subject",
            "time",
            "source",
            "agent",
            "session",
            "run",
            "step",
            "seq",
            "epoch",
            "cause",
            "traceparent",
            "severity",
            "capture",
            "data",
        ];
        for name in all {
            assert_eq!(Core::of(name).map(Core::name), Some(name));
        }
        for not in
            ["", "i", "ID", "tipe", "typo", "sessio", "sessions", "seqs", "subjekt", "acmeregion", "x", "dat", "datum"]
        {
            assert_eq!(Core::of(not), None, "{not}");
        }
    }

    #[test]
    fn the_one_pass_reading_files_what_the_general_one_does() {
        let plain = r#"{"aep":"0.1","id":"E1","type":"run.started","time":"t","source":"aep://h","agent":"a","session":"s","seq":3,"x1":"v","data":{"k":"\n"},"id":"E2"}"#;
        let (env, texts) = Plain::read(plain).expect("plain strings take the one pass");
        let other = general(plain);
        for core in Core::ALL {
            assert_eq!(env.get(core), other.get(core), "{}", core.name());
        }
        assert_eq!(env.extensions, other.extensions);
        assert_eq!(env.get(Core::Id).map(Raw::get), Some(r#""E2""#), "the last value of a repeated name");
        assert_eq!(texts.get(Core::Id), &Some(Some(Cow::Borrowed("E2"))));
        assert_eq!(texts.get(Core::Session), Texts::of(&other).get(Core::Session));
        assert_eq!(texts.get(Core::Seq), &None, "seq is not text");
        // An escape, or a string member of another kind, takes the general way.
        for text in [r#"{"id":"E\u0031"}"#, r#"{"id":7}"#, r#"{"session":null}"#, r#"{"id":"E1"} x"#] {
            assert!(Plain::read(text).is_err(), "{text}");
        }
        let (env, texts) = Envelope::parse_decoded(r#"{"id":"E\u0031","session":null}"#).unwrap();
        assert_eq!(env.get(Core::Id).map(Raw::get), Some(r#""E\u0031""#));
        assert_eq!(texts.get(Core::Id), &Some(Some(Cow::Owned("E1".into()))));
        assert_eq!((env.get(Core::Session).map(Raw::get), texts.get(Core::Session)), (Some("null"), &Some(None)));
    }

    #[test]
    fn members_land_in_slots_and_extensions_keep_order() {
        let text = r#"{"zeta":1,"id":"E\u0031","aep":"0.1","alpha":true,"data":{"a":[1]},"zeta":2}"#;
        let env = Envelope::parse(text).unwrap();
        assert_eq!(as_str(env.get(Core::Id).unwrap()).unwrap(), "E1");
        assert!(matches!(as_str(env.get(Core::Aep).unwrap()), Some(Cow::Borrowed("0.1"))));
        assert_eq!(env.get(Core::Data).unwrap().get(), r#"{"a":[1]}"#);
        let ext: Vec<(&str, &str)> = env.extensions.iter().map(|(n, v)| (n.as_ref(), v.get())).collect();
        assert_eq!(ext, [("zeta", "2"), ("alpha", "true")]);
        assert!(Envelope::parse("[1]").is_err());
        assert!(Envelope::parse("{} x").is_err());
    }

    #[test]
    fn a_member_is_read_as_an_object_reader_reads_it() {
        let object = r#"{"a":1,"b":{"c":"x\u0031"},"a":"last","d":[1,{"a":2}]}"#;
        let value: serde_json::Map<String, serde_json::Value> = serde_json::from_str(object).unwrap();
        for name in ["a", "b", "d", "c", "nope"] {
            let read = member(object, name).map(|raw| serde_json::from_str::<serde_json::Value>(raw.get()).unwrap());
            assert_eq!(read.as_ref(), value.get(name), "{name}");
        }
        let inner = member(object, "b").unwrap();
        assert_eq!(member(inner.get(), "c").and_then(as_str).as_deref(), Some("x1"));
        for not_an_object in ["[1]", "\"a\"", "{\"a\":1", "{\"a\":1} x", ""] {
            assert_eq!(member(not_an_object, "a"), None, "{not_an_object}");
        }
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
        for (v, k) in [
            ("\"x\"", "string"),
            ("{}", "object"),
            ("[]", "array"),
            ("false", "boolean"),
            ("null", "null"),
            ("-2", "number"),
        ] {
            assert_eq!(kind(raw(v)), k);
        }
    }
}
