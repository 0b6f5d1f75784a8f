//! The audit as a spreadsheet: one row per command ([`super::words::Row`]).
//!
//! Every cell is quoted, and text a spreadsheet would run as a formula
//! (OWASP's CSV injection rules: a cell starting with `=`, `+`, `-`, `@`,
//! tab or carriage return) is kept as text: any cell may carry what a
//! sender chose (a session id, a command id, an agent's label or prompt).

use super::words::{Row, COLUMNS};

/// The commands as CSV, header first.
pub fn rows(rows: &[Row<'_>]) -> Result<String, String> {
    let mut out = ::csv::WriterBuilder::new().quote_style(::csv::QuoteStyle::Always).from_writer(Vec::new());
    out.write_record(COLUMNS).map_err(|e| e.to_string())?;
    for row in rows {
        out.write_record(row.cells().iter().map(|cell| inert(cell))).map_err(|e| e.to_string())?;
    }
    let bytes = out.into_inner().map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| e.to_string())
}

/// A cell a spreadsheet would run as a formula, prefixed with `'` so it is
/// shown as the text it is.
pub fn inert(text: &str) -> String {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::Summary;

    #[test]
    fn every_cell_a_sender_controls_is_kept_as_text() {
        let hostile = Summary {
            id: "-2+3+cmd|' /C calc'!A0".into(),
            session: "@SUM(1+1)".into(),
            agent: "=HYPERLINK(\"x\")".into(),
            label: "\tlabel".into(),
            verb: "+verb".into(),
            outcome: "\rout".into(),
            principal: "-who".into(),
            ..Summary::default()
        };
        let row = Row { summary: &hostile, answer: "=1+1".into(), result: "@r".into() };
        let csv = rows(&[row]).unwrap();
        let mut reader = ::csv::Reader::from_reader(csv.as_bytes());
        let record = reader.records().next().unwrap().unwrap();
        for cell in &record {
            assert!(!cell.starts_with(['=', '+', '-', '@', '\t', '\r']), "`{cell}` in {csv}");
        }
        assert!(record.iter().any(|c| c == "'@SUM(1+1)"), "{csv}");
        assert!(csv.lines().all(|l| l.starts_with('"')), "every cell quoted: {csv}");
    }
}
