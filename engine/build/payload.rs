//! The per-type payload schemas (`schemas/types/*.json`) as a static Rust
//! table. The table keeps exactly the keywords the engine enforces; any
//! other keyword fails the build, so a spec change the engine does not
//! understand is loud instead of silently ignored.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

const OUTPUT_FILE: &str = "payload_schemas.rs";

/// Keywords the engine enforces.
const VALIDATION_KEYWORDS: [&str; 11] =
    ["type", "properties", "required", "enum", "const", "items", "minimum", "maximum", "format", "if", "then"];
/// Keywords that carry no validation meaning (plus the capture annotation).
const ANNOTATION_KEYWORDS: [&str; 6] = ["$schema", "$id", "title", "description", "$comment", "x-aep-capture"];
const JSON_TYPES: [(&str, &str); 7] = [
    ("null", "Null"),
    ("boolean", "Boolean"),
    ("object", "Object"),
    ("array", "Array"),
    ("number", "Number"),
    ("integer", "Integer"),
    ("string", "String"),
];
const FORMATS: [(&str, &str); 1] = [("date-time", "DateTime")];
const CAPTURE_LEVELS: [(&str, &str); 4] =
    [("none", "None"), ("metadata", "Metadata"), ("redacted", "Redacted"), ("full", "Full")];

/// Writes the table of every payload schema in `dir` to `out`.
pub fn generate(dir: &Path, out: &Path) -> Result<(), String> {
    let mut generator = Generator::default();
    let mut types = BTreeMap::new();
    for path in schema_files(dir)? {
        println!("cargo:rerun-if-changed={}", path.display());
        let ty = type_name(&path)?;
        let text = fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let schema: Value = serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        if schema.get("type") != Some(&Value::from("object")) {
            return Err(format!("{}: a payload schema must declare \"type\": \"object\"", path.display()));
        }
        let node = generator.node(&schema, &ty).map_err(|e| format!("{}: {e}", path.display()))?;
        types.insert(ty, node);
    }

    let mut code = generator.code;
    code.push_str("/// Every type with a payload schema, sorted by name.\n");
    code.push_str("pub static TYPES: &[(&str, &Schema)] = &[\n");
    for (ty, node) in &types {
        let _ = writeln!(code, "    ({ty:?}, &{node}),");
    }
    code.push_str("];\n");
    let target = out.join(OUTPUT_FILE);
    fs::write(&target, code).map_err(|e| format!("cannot write {}: {e}", target.display()))
}

fn schema_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?.path();
        if path.extension().is_some_and(|x| x == "json") {
            files.push(path);
        }
    }
    if files.is_empty() {
        return Err(format!("no payload schemas (*.json) in {}", dir.display()));
    }
    files.sort();
    Ok(files)
}

/// `tool.completed.schema.json` describes the type `tool.completed`.
fn type_name(path: &Path) -> Result<String, String> {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".schema.json"))
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| format!("{}: payload schema files are named {{type}}.schema.json", path.display()))
}

/// Emits one `static` per distinct schema node and hands back its name.
/// Children are named before their parents, so identical subtrees (the
/// shared `cost`, `tool_ref`, `document` objects) collapse into one static.
#[derive(Default)]
struct Generator {
    code: String,
    names: BTreeMap<String, String>,
}

impl Generator {
    fn node(&mut self, schema: &Value, at: &str) -> Result<String, String> {
        let obj = schema.as_object().ok_or_else(|| format!("{at}: a schema must be an object"))?;
        for key in obj.keys() {
            if !VALIDATION_KEYWORDS.contains(&key.as_str()) && !ANNOTATION_KEYWORDS.contains(&key.as_str()) {
                return Err(format!(
                    "{at}: unsupported schema keyword `{key}` (the engine enforces only {VALIDATION_KEYWORDS:?})"
                ));
            }
        }

        let kinds = self.kinds(obj.get("type"), at)?;
        let capture = match obj.get("x-aep-capture") {
            None => "None".to_owned(),
            Some(v) => format!("Some(Capture::{})", lookup(&CAPTURE_LEVELS, v, "x-aep-capture", at)?),
        };
        let mut properties = String::new();
        if let Some(props) = obj.get("properties") {
            let props = props.as_object().ok_or_else(|| format!("{at}: `properties` must be an object"))?;
            for (name, sub) in props {
                let child = self.node(sub, &format!("{at}.{name}"))?;
                let _ = write!(properties, "Property {{ name: {name:?}, schema: &{child} }}, ");
            }
        }
        let required = string_list(obj.get("required"), "required", at)?;
        let allowed = match obj.get("enum") {
            None => "None".to_owned(),
            Some(Value::Array(values)) if !values.is_empty() => {
                let literals: Result<Vec<String>, String> = values.iter().map(|v| literal(v, at)).collect();
                format!("Some(&[{}])", literals?.join(", "))
            }
            Some(_) => return Err(format!("{at}: `enum` must be a non-empty array")),
        };
        let constant = match obj.get("const") {
            None => "None".to_owned(),
            Some(v) => format!("Some({})", literal(v, at)?),
        };
        let items = match obj.get("items") {
            None => "None".to_owned(),
            Some(sub) => format!("Some(&{})", self.node(sub, &format!("{at}[]"))?),
        };
        let minimum = number(obj.get("minimum"), "minimum", at)?;
        let maximum = number(obj.get("maximum"), "maximum", at)?;
        let format = match obj.get("format") {
            None => "None".to_owned(),
            Some(v) => format!("Some(Format::{})", lookup(&FORMATS, v, "format", at)?),
        };
        let conditional = match (obj.get("if"), obj.get("then")) {
            (None, None) => "None".to_owned(),
            (Some(cond), Some(then)) => {
                let cond = self.node(cond, &format!("{at}(if)"))?;
                let then = self.node(then, &format!("{at}(then)"))?;
                format!("Some((&{cond}, &{then}))")
            }
            _ => return Err(format!("{at}: `if` and `then` come together")),
        };

        let body = format!(
            "Schema {{ kinds: {kinds}, capture: {capture}, properties: &[{properties}], \
             required: &[{required}], allowed: {allowed}, constant: {constant}, items: {items}, \
             minimum: {minimum}, maximum: {maximum}, format: {format}, conditional: {conditional} }}"
        );
        if let Some(name) = self.names.get(&body) {
            return Ok(name.clone());
        }
        let name = format!("S{}", self.names.len());
        let _ = writeln!(self.code, "static {name}: Schema = {body};");
        self.names.insert(body, name.clone());
        Ok(name)
    }

    fn kinds(&self, ty: Option<&Value>, at: &str) -> Result<String, String> {
        let names: Vec<&Value> = match ty {
            None => return Ok("Kinds::ANY".to_owned()),
            Some(Value::Array(list)) if !list.is_empty() => list.iter().collect(),
            Some(v @ Value::String(_)) => vec![v],
            Some(_) => return Err(format!("{at}: `type` must be a name or a non-empty list of names")),
        };
        let mut code = "Kinds::ANY".to_owned();
        for name in names {
            let _ = write!(code, ".with(Kind::{})", lookup(&JSON_TYPES, name, "type", at)?);
        }
        Ok(code)
    }
}

fn lookup(table: &[(&str, &str)], value: &Value, keyword: &str, at: &str) -> Result<String, String> {
    let text = value.as_str().ok_or_else(|| format!("{at}: `{keyword}` must be a string"))?;
    table
        .iter()
        .find(|(name, _)| *name == text)
        .map(|(_, variant)| (*variant).to_owned())
        .ok_or_else(|| format!("{at}: unsupported `{keyword}` value {text:?}"))
}

fn string_list(value: Option<&Value>, keyword: &str, at: &str) -> Result<String, String> {
    let Some(value) = value else { return Ok(String::new()) };
    let list = value.as_array().ok_or_else(|| format!("{at}: `{keyword}` must be an array of strings"))?;
    let mut code = String::new();
    for item in list {
        let s = item.as_str().ok_or_else(|| format!("{at}: `{keyword}` must be an array of strings"))?;
        let _ = write!(code, "{s:?}, ");
    }
    Ok(code)
}

fn number(value: Option<&Value>, keyword: &str, at: &str) -> Result<String, String> {
    match value {
        None => Ok("None".to_owned()),
        Some(v) => {
            let n = v.as_f64().ok_or_else(|| format!("{at}: `{keyword}` must be a number"))?;
            Ok(format!("Some({n:?})"))
        }
    }
}

fn literal(value: &Value, at: &str) -> Result<String, String> {
    Ok(match value {
        Value::Null => "Literal::Null".to_owned(),
        Value::Bool(b) => format!("Literal::Bool({b})"),
        Value::Number(n) => {
            let n = n.as_f64().ok_or_else(|| format!("{at}: number {n} is out of range"))?;
            format!("Literal::Number({n:?})")
        }
        Value::String(s) => format!("Literal::Str({s:?})"),
        Value::Array(_) | Value::Object(_) => {
            return Err(format!("{at}: only scalar `enum`/`const` values are supported"));
        }
    })
}
