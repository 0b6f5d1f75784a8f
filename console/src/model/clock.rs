//! Durations and instants in the few words a glance needs.

use aep_engine::UnixMs;

/// `7 s`, `4 min`, `3 h`, `2 d`.
pub fn span(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{s} s"),
        60..=3_599 => format!("{} min", s / 60),
        3_600..=86_399 => format!("{} h", s / 3_600),
        _ => format!("{} d", s / 86_400),
    }
}

/// How long ago `then` was: `12 s ago`; `just now` under a second.
pub fn ago(now: UnixMs, then: UnixMs) -> String {
    let ms = now.since(then);
    if ms < 1000 {
        "just now".to_owned()
    } else {
        format!("{} ago", span(ms))
    }
}

/// A latency: `350 ms`, `2.4 s`, `3 min`.
pub fn latency(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1_000..=59_999 => format!("{}.{} s", ms / 1000, (ms % 1000) / 100),
        _ => span(ms),
    }
}

/// What is left until `deadline`: `0:43`, `12:05`, `1 h 20 min`;
/// `None` once it has passed.
pub fn countdown(now: UnixMs, deadline: UnixMs) -> Option<String> {
    if deadline.0 <= now.0 {
        return None;
    }
    let s = (deadline.0 - now.0).div_ceil(1000);
    Some(if s < 3_600 {
        format!("{}:{:02}", s / 60, s % 60)
    } else {
        format!("{} h {} min", s / 3_600, (s % 3_600) / 60)
    })
}

/// The reader's time zone, as the device states it: how far east of UTC
/// its clocks are at a given instant (daylight saving included), and its
/// name. The agent's own clock says nothing of where the reader is.
pub trait Zone {
    /// Minutes east of UTC at `at`.
    fn offset_min(&self, at: UnixMs) -> i32;
    /// `Europe/Berlin`, when the device names it.
    fn name(&self) -> Option<String>;
}

/// UTC, for tests.
#[cfg(test)]
pub struct Utc;

#[cfg(test)]
impl Zone for Utc {
    fn offset_min(&self, _: UnixMs) -> i32 {
        0
    }

    fn name(&self) -> Option<String> {
        Some("UTC".to_owned())
    }
}

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];

/// A moment on the reader's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Local {
    /// Days since 1970-01-01 on the reader's calendar.
    day: i64,
    year: i64,
    month: u32,
    date: u32,
    /// Seconds since the reader's midnight.
    second: u32,
}

impl Local {
    fn of(at: UnixMs, zone: &impl Zone) -> Local {
        let secs = (at.0 / 1000) as i64 + i64::from(zone.offset_min(at)) * 60;
        let day = secs.div_euclid(86_400);
        let (year, month, date) = civil(day);
        Local { day, year, month, date, second: secs.rem_euclid(86_400) as u32 }
    }

    fn hm(&self) -> String {
        format!("{:02}:{:02}", self.second / 3_600, (self.second % 3_600) / 60)
    }

    fn hms(&self) -> String {
        format!("{}:{:02}", self.hm(), self.second % 60)
    }

    fn date_words(&self) -> String {
        format!("{} {}", self.date, MONTHS[self.month as usize - 1])
    }
}

/// The civil date of a day count since 1970-01-01 (proleptic Gregorian,
/// Howard Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let date = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, date)
}

/// When `at` was on the reader's clock, in a glance: `14:03` today,
/// `3 Dec 14:03` another day this year, `3 Dec 2025 14:03` before.
pub fn wall(at: UnixMs, now: UnixMs, zone: &impl Zone) -> String {
    let (then, today) = (Local::of(at, zone), Local::of(now, zone));
    if then.day == today.day {
        then.hm()
    } else if then.year == today.year {
        format!("{} {}", then.date_words(), then.hm())
    } else {
        format!("{} {} {}", then.date_words(), then.year, then.hm())
    }
}

/// When `at` was, in full, with the zone it is told in:
/// `Thu 3 Dec 2026, 14:03:07 (Europe/Berlin, UTC+01:00)`.
pub fn wall_exactly(at: UnixMs, zone: &impl Zone) -> String {
    let t = Local::of(at, zone);
    let off = zone.offset_min(at);
    let sign = if off < 0 { '-' } else { '+' };
    let utc = format!("UTC{sign}{:02}:{:02}", off.abs() / 60, off.abs() % 60);
    let weekday = WEEKDAYS[t.day.rem_euclid(7) as usize];
    let named = match zone.name() {
        Some(n) if n != "UTC" => format!("{n}, {utc}"),
        _ => utc,
    };
    format!("{weekday} {} {}, {} ({named})", t.date_words(), t.year, t.hms())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_for_spans() {
        assert_eq!(span(12_400), "12 s");
        assert_eq!(span(125_000), "2 min");
        assert_eq!(span(7_200_000), "2 h");
        assert_eq!(latency(350), "350 ms");
        assert_eq!(latency(2_450), "2.4 s");
        assert_eq!(ago(UnixMs(10_000), UnixMs(9_500)), "just now");
        assert_eq!(ago(UnixMs(70_000), UnixMs(9_000)), "1 min ago");
    }

    #[test]
    fn countdowns_end() {
        assert_eq!(countdown(UnixMs(0), UnixMs(43_000)).as_deref(), Some("0:43"));
        assert_eq!(countdown(UnixMs(0), UnixMs(42_001)).as_deref(), Some("0:43"));
        assert_eq!(countdown(UnixMs(0), UnixMs(3_700_000)).as_deref(), Some("1 h 1 min"));
        assert_eq!(countdown(UnixMs(5), UnixMs(5)), None);
    }

    /// A zone at a fixed offset, named.
    struct Fixed(i32, &'static str);

    impl Zone for Fixed {
        fn offset_min(&self, _: UnixMs) -> i32 {
            self.0
        }

        fn name(&self) -> Option<String> {
            Some(self.1.to_owned())
        }
    }

    /// 2026-12-03T10:15:07Z.
    const AT: UnixMs = UnixMs(1_796_292_907_000);

    #[test]
    fn times_are_the_readers_with_the_date_when_not_today() {
        let auckland = Fixed(13 * 60, "Pacific/Auckland");
        // 23:15 on 3 Dec in Auckland: the same day there, shown as a time.
        assert_eq!(wall(AT, UnixMs(AT.0 + 30 * 60_000), &auckland), "23:15");
        // An hour later it is 4 Dec there: yesterday's time gets its date.
        assert_eq!(wall(AT, UnixMs(AT.0 + 60 * 60_000), &auckland), "3 Dec 23:15");
        assert_eq!(wall(AT, UnixMs(AT.0 + 60 * 60_000), &Utc), "10:15", "still 3 Dec in UTC");
        let new_york = Fixed(-5 * 60, "America/New_York");
        assert_eq!(wall(AT, UnixMs(AT.0 + 40 * 86_400_000), &new_york), "3 Dec 2026 05:15", "another year");
        assert_eq!(wall_exactly(AT, &auckland), "Thu 3 Dec 2026, 23:15:07 (Pacific/Auckland, UTC+13:00)");
        assert_eq!(wall_exactly(AT, &new_york), "Thu 3 Dec 2026, 05:15:07 (America/New_York, UTC-05:00)");
        assert_eq!(wall_exactly(AT, &Utc), "Thu 3 Dec 2026, 10:15:07 (UTC+00:00)");
    }

    #[test]
    fn the_calendar_holds_across_leap_years_and_before_1970() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(19_417), (2023, 3, 1));
        assert_eq!(civil(11_016), (2000, 2, 29));
        assert_eq!(civil(-1), (1969, 12, 31));
    }
}
