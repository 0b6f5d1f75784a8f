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

/// A wall-clock time of day, `14:03:07` (UTC: the console does not guess
/// the reader's zone from the agent's clock).
pub fn time_of_day(at: UnixMs) -> String {
    let s = (at.0 / 1000) % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3_600, (s % 3_600) / 60, s % 60)
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
        assert_eq!(
            countdown(UnixMs(0), UnixMs(43_000)).as_deref(),
            Some("0:43")
        );
        assert_eq!(
            countdown(UnixMs(0), UnixMs(42_001)).as_deref(),
            Some("0:43")
        );
        assert_eq!(
            countdown(UnixMs(0), UnixMs(3_700_000)).as_deref(),
            Some("1 h 1 min")
        );
        assert_eq!(countdown(UnixMs(5), UnixMs(5)), None);
        assert_eq!(time_of_day(UnixMs(3_723_000)), "01:02:03");
    }
}
