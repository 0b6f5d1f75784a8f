//! Time as a value. The engine never reads a clock: every call that needs
//! "now" takes a [`UnixMs`], so tests drive a 10 s window in microseconds.

use std::fmt;
use std::ops::{Add, Sub};

/// Milliseconds since the Unix epoch (the unit of `Date.now()`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixMs(pub u64);

impl UnixMs {
    /// Formats as RFC 3339 in UTC with millisecond precision, the form
    /// this engine stamps on the events it builds. Written out by hand: the
    /// `time` crate's format descriptions add about 8 KB to the wasm module
    /// for one fixed layout.
    pub fn to_rfc3339(self) -> String {
        let nanos = i128::from(self.0) * 1_000_000;
        let t = ::time::OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap_or(::time::OffsetDateTime::UNIX_EPOCH);
        let d = t.date();
        let tm = t.time();
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            d.year(),
            u8::from(d.month()),
            d.day(),
            tm.hour(),
            tm.minute(),
            tm.second(),
            tm.millisecond()
        )
    }

    /// Parses an RFC 3339 timestamp (any offset). `None` when it is not one.
    pub fn parse_rfc3339(s: &str) -> Option<UnixMs> {
        let t = ::time::OffsetDateTime::parse(s, &::time::format_description::well_known::Rfc3339).ok()?;
        let ms = t.unix_timestamp_nanos() / 1_000_000;
        u64::try_from(ms).ok().map(UnixMs)
    }

    /// `self - earlier`, saturating at zero.
    pub fn since(self, earlier: UnixMs) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl Add<u64> for UnixMs {
    type Output = UnixMs;
    fn add(self, ms: u64) -> UnixMs {
        UnixMs(self.0.saturating_add(ms))
    }
}

impl Sub<u64> for UnixMs {
    type Output = UnixMs;
    fn sub(self, ms: u64) -> UnixMs {
        UnixMs(self.0.saturating_sub(ms))
    }
}

impl fmt::Display for UnixMs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trip() {
        let t = UnixMs(1_783_073_703_221);
        let s = t.to_rfc3339();
        assert_eq!(s, "2026-07-03T10:15:03.221Z");
        assert_eq!(UnixMs::parse_rfc3339(&s), Some(t));
        assert_eq!(UnixMs::parse_rfc3339("2026-07-03T12:15:03.221+02:00"), Some(t));
        assert_eq!(UnixMs::parse_rfc3339("yesterday"), None);
    }
}
