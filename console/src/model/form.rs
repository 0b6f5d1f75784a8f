//! A form being filled in: what the inputs hold, turned into the
//! `values` map and checked with the very rules the agent applies
//! (`protocol::form::check_values`), so the console never sends what the
//! agent would refuse, and says why in the same words.

use aep_engine::order::SortedMap;
use aep_engine::protocol::form::{check_values, FieldSpec, FieldType};
use serde_json::{Map, Number, Value};

/// What one input holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Text(String),
    /// As typed; parsed on submit.
    Number(String),
    Bool(bool),
    /// A single choice id, or `OTHER` with the typed text.
    Choice(Option<String>),
    Multi(Vec<String>),
}

/// The select value meaning "other…" (free text instead of a choice).
pub const OTHER: &str = "\u{0}other";

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Draft {
    pub inputs: SortedMap<Input>,
    /// Free text for `other` selects, by field id.
    pub other: SortedMap<String>,
}

/// Whether a field is marked "(required)". A checkbox always answers
/// (ticked or not), and AEP-0006 has no "must be true": marking it would
/// read as "must be ticked", which the form never says.
pub fn marked_required(spec: &FieldSpec) -> bool {
    spec.required && spec.ty != FieldType::Boolean
}

/// Field id → the messages to show next to it.
pub type Errors = SortedMap<Vec<String>>;

impl Draft {
    /// Empty inputs for `fields` (checkboxes unticked, selects unchosen).
    pub fn new(fields: &[FieldSpec]) -> Draft {
        let mut inputs = SortedMap::new();
        for f in fields {
            let input = match (f.ty, f.multi) {
                (FieldType::String, _) => Input::Text(String::new()),
                (FieldType::Number, _) => Input::Number(String::new()),
                (FieldType::Boolean, _) => Input::Bool(false),
                (FieldType::Select, true) => Input::Multi(Vec::new()),
                (FieldType::Select, false) => Input::Choice(None),
            };
            inputs.insert(f.id.clone(), input);
        }
        Draft { inputs, other: SortedMap::new() }
    }

    /// The `values` to send, or what to fix first. Empty inputs are left
    /// out (so a required one is reported missing); a checkbox always
    /// answers true or false.
    pub fn values(&self, fields: &[FieldSpec]) -> Result<Map<String, Value>, Errors> {
        let mut values = Map::new();
        let mut errors = Errors::new();
        for f in fields {
            let Some(input) = self.inputs.get(&f.id) else {
                continue;
            };
            match input {
                Input::Text(s) if !s.trim().is_empty() => {
                    values.insert(f.id.clone(), Value::String(s.clone()));
                }
                Input::Number(s) if !s.trim().is_empty() => match parse_number(s) {
                    Some(n) => {
                        values.insert(f.id.clone(), Value::Number(n));
                    }
                    None => {
                        errors.or_default(f.id.clone()).push(format!("\u{201c}{}\u{201d} must be a number", f.label))
                    }
                },
                Input::Bool(b) => {
                    values.insert(f.id.clone(), Value::Bool(*b));
                }
                Input::Choice(Some(c)) if c == OTHER => {
                    let text = self.other.get(&f.id).map(|s| s.trim()).unwrap_or_default();
                    if !text.is_empty() {
                        values.insert(f.id.clone(), Value::String(text.to_owned()));
                    }
                }
                Input::Choice(Some(c)) => {
                    values.insert(f.id.clone(), Value::String(c.clone()));
                }
                Input::Multi(picked) if !picked.is_empty() => {
                    // In the order the form offers them.
                    let ordered: Vec<Value> = f
                        .choices
                        .iter()
                        .filter(|c| picked.contains(&c.id))
                        .map(|c| Value::String(c.id.clone()))
                        .collect();
                    values.insert(f.id.clone(), Value::Array(ordered));
                }
                _ => {}
            }
        }
        if let Err(problems) = check_values(fields, &values) {
            for p in problems {
                // A field already reported (an unreadable number) is not
                // also reported missing.
                if !errors.contains_key(&p.field) || !self.inputs.contains_key(&p.field) {
                    errors.or_default(p.field.clone()).push(p.message);
                }
            }
        }
        if errors.is_empty() {
            Ok(values)
        } else {
            Err(errors)
        }
    }
}

/// A number as typed, kept integral when it is one.
fn parse_number(s: &str) -> Option<Number> {
    let s = s.trim();
    if let Ok(i) = s.parse::<i64>() {
        return Some(Number::from(i));
    }
    decimal(s).filter(|f| f.is_finite()).and_then(Number::from_f64)
}

/// `s` as the nearest `f64` when it is a decimal number in the grammar
/// `str::parse::<f64>` reads (`-1.5`, `.5`, `2.`, `+3e-4`; its `inf` and
/// `NaN` words, never finite, are left out). In WebAssembly the host's
/// `parseFloat` (correctly rounded, as Rust's is) converts it, so the
/// module does not carry core's float parser and its 10 KB table of
/// powers of five.
fn decimal(s: &str) -> Option<f64> {
    if !is_decimal(s) {
        return None;
    }
    #[cfg(target_arch = "wasm32")]
    {
        Some(js_sys::parse_float(s))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        s.parse::<f64>().ok()
    }
}

/// Sign, digits with at most one point and at least one digit, then an
/// optional exponent: `e` or `E`, a sign, digits.
fn is_decimal(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = digits(whole) && digits(fraction) && !(whole.is_empty() && fraction.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mantissa_ok && exponent_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use aep_engine::protocol::form::parse_fields;
    use serde_json::json;

    fn release() -> Vec<FieldSpec> {
        parse_fields(&json!([
            {"id": "version", "type": "string", "label": "Release tag", "required": true},
            {"id": "environment", "type": "select", "label": "Environment", "required": true,
             "choices": [{"id": "staging", "label": "Staging"}, {"id": "production", "label": "Production"}]},
            {"id": "regions", "type": "select", "label": "Regions", "multi": true,
             "choices": [{"id": "us", "label": "US"}, {"id": "eu", "label": "EU"}]},
            {"id": "replicas", "type": "number", "label": "Replicas", "required": true, "min": 1, "max": 20},
            {"id": "canary", "type": "boolean", "label": "Canary"},
            {"id": "notify", "type": "select", "label": "Announce in", "other": true,
             "choices": [{"id": "releases", "label": "#releases"}]}
        ]))
        .unwrap()
    }

    #[test]
    fn an_empty_form_reports_every_required_field_in_the_agents_words() {
        let fields = release();
        let errors = Draft::new(&fields).values(&fields).unwrap_err();
        assert_eq!(errors.keys().collect::<Vec<_>>(), ["environment", "replicas", "version"]);
        assert!(errors["version"][0].contains("Release tag"), "{errors:?}");
    }

    #[test]
    fn a_filled_form_gives_the_values_the_agent_checks() {
        let fields = release();
        let mut d = Draft::new(&fields);
        d.inputs.insert("version".into(), Input::Text("v2.14.0".into()));
        d.inputs.insert("environment".into(), Input::Choice(Some("staging".into())));
        d.inputs.insert("regions".into(), Input::Multi(vec!["eu".into(), "us".into()]));
        d.inputs.insert("replicas".into(), Input::Number("3".into()));
        d.inputs.insert("notify".into(), Input::Choice(Some(OTHER.into())));
        d.other.insert("notify".into(), "#payments".into());
        let v = d.values(&fields).unwrap();
        assert_eq!(
            Value::Object(v),
            json!({"version": "v2.14.0", "environment": "staging", "regions": ["us", "eu"], "replicas": 3,
                   "canary": false, "notify": "#payments"})
        );
    }

    #[test]
    fn out_of_range_and_unparseable_numbers_are_caught() {
        let fields = release();
        let mut d = Draft::new(&fields);
        d.inputs.insert("replicas".into(), Input::Number("40".into()));
        let e = d.values(&fields).unwrap_err();
        assert!(e["replicas"][0].contains("at most 20"), "{e:?}");
        d.inputs.insert("replicas".into(), Input::Number("three".into()));
        let e = d.values(&fields).unwrap_err();
        assert!(e["replicas"][0].contains("must be a number"), "{e:?}");
    }

    #[test]
    fn numbers_read_as_rust_reads_them() {
        let short = [
            "0", "7", "-7", "1.5", "-2.25", ".5", "-.5", "+.5", "2.", "1.e5", "+3e-4", "1E5", "1e+5", "0.1", "1e308",
            "1e309", "-1e400", "1e-400", "-0.0", "4.9e-324", "007.50", "", ".", "e5", "1e", "1e+", "1e-", "1.2.3",
            "--1", "+-1", "1_000", "0x10", "1,5", "1 5", "inf", "-inf", "infinity", "NaN", "nan", "1e5.5", "five",
            "\u{661}",
        ];
        let long = [
            "6.02214076e23",
            "0.30000000000000004",
            "3.14159265358979323846264338327950288",
            "123456789012345678901234567890",
        ];
        let typed = short.into_iter().chain(long);
        for s in typed {
            let std = s.parse::<f64>().ok().filter(|f| f.is_finite());
            let ours = decimal(s).filter(|f| f.is_finite());
            assert_eq!(ours.map(f64::to_bits), std.map(f64::to_bits), "{s:?}");
        }
        assert_eq!(parse_number(" 42 "), Some(Number::from(42)));
        assert_eq!(parse_number("2.5"), Number::from_f64(2.5));
        assert_eq!(parse_number("1e400"), None);
        assert_eq!(parse_number("three"), None);
    }

    #[test]
    fn a_required_checkbox_is_not_marked_as_if_it_had_to_be_ticked() {
        let fields = parse_fields(&json!([
            {"id": "anonymise", "type": "boolean", "label": "Anonymise", "required": true},
            {"id": "format", "type": "string", "label": "Format", "required": true},
            {"id": "note", "type": "string", "label": "Note"}
        ]))
        .unwrap();
        let marks: Vec<bool> = fields.iter().map(marked_required).collect();
        assert_eq!(marks, [false, true, false]);
        // And unticked, it answers: false is a value.
        let mut d = Draft::new(&fields);
        d.inputs.insert("format".into(), Input::Text("csv".into()));
        assert_eq!(d.values(&fields).unwrap()["anonymise"], json!(false));
    }
}
