//! The audit as a spreadsheet: one row per command.

use aep_engine::UnixMs;

use super::summary::Summary;

const COLUMNS: [&str; 13] = [
    "time",
    "who",
    "agent",
    "session",
    "label",
    "verb",
    "command",
    "prompt",
    "answer",
    "ack",
    "outcome",
    "latency_ms",
    "result",
];

/// The commands as CSV, header first.
pub fn rows(commands: &[Summary]) -> Result<String, String> {
    let mut out = ::csv::Writer::from_writer(Vec::new());
    out.write_record(COLUMNS).map_err(|e| e.to_string())?;
    for c in commands {
        let time = UnixMs(c.at).to_rfc3339();
        let latency = c.latency().map(|ms| ms.to_string()).unwrap_or_default();
        let ack = if c.ack.is_pending() { "none".to_owned() } else { c.ack.to_string() };
        let result = c.result();
        let row = [
            time.as_str(),
            &c.principal,
            &c.agent,
            &c.session,
            &inert(&c.label),
            &c.verb,
            &c.id,
            &inert(&c.prompt),
            &inert(&c.answer),
            &ack,
            &c.outcome,
            &latency,
            &result,
        ];
        out.write_record(row).map_err(|e| e.to_string())?;
    }
    let bytes = out.into_inner().map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| e.to_string())
}

/// Agent text that a spreadsheet would run as a formula is kept as text.
fn inert(text: &str) -> String {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_owned()
    }
}
