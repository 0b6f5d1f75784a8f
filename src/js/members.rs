//! Reading an object handed in from JavaScript (options, drafts, keys)
//! member by member.
//!
//! Every error names the member at fault and where it is (`relays[1]: `,
//! `draft: `), never its value: a token, or a URL carrying one, is a value,
//! and serde's messages quote values. (Its readers would also weigh on the
//! package's budgeted size.)

use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{self, aep_error};
use crate::error::AepErrorCode;

/// The members of one JavaScript object, with how its errors are told.
pub struct Members<'a> {
    source: &'a JsValue,
    /// Before a member's name in an error: empty, `draft: `, `relays[1]: `.
    at: &'a str,
    code: AepErrorCode,
}

impl<'a> Members<'a> {
    /// `source`'s members, its errors carrying `code`; refused unless it
    /// is an object.
    pub fn of(source: &'a JsValue, at: &'a str, code: AepErrorCode) -> Result<Members<'a>, JsValue> {
        let members = Members { source, at, code };
        if source.is_object() {
            Ok(members)
        } else {
            Err(members.refuse("expected an object"))
        }
    }

    /// An error of this object's code, prefixed by where it is.
    pub fn refuse(&self, message: impl AsRef<str>) -> JsValue {
        aep_error(self.code, format!("{}{}", self.at, message.as_ref()))
    }

    /// The member, unless it is missing, `undefined` or `null`.
    pub fn get(&self, key: &str) -> Option<JsValue> {
        Some(convert::get(self.source, key)).filter(|v| !v.is_undefined() && !v.is_null())
    }

    /// An optional string.
    pub fn text(&self, key: &str) -> Result<Option<String>, JsValue> {
        self.get(key).map(|v| v.as_string().ok_or_else(|| self.refuse(format!("`{key}` must be a string")))).transpose()
    }

    /// A string that must be there and not be empty.
    pub fn required(&self, key: &str) -> Result<String, JsValue> {
        self.text(key)?.filter(|t| !t.is_empty()).ok_or_else(|| self.refuse(format!("`{key}` is required")))
    }

    /// An optional non-negative integer.
    pub fn count(&self, key: &str) -> Result<Option<u64>, JsValue> {
        let read = |v: JsValue| match v.as_f64() {
            Some(n) if n >= 0.0 && n.fract() == 0.0 => Ok(n as u64),
            _ => Err(self.refuse(format!("`{key}` must be a non-negative integer"))),
        };
        self.get(key).map(read).transpose()
    }

    /// An optional name of a closed set (a capture level, a severity),
    /// read by `parse`; `what` names the set in the error.
    pub fn named<T>(&self, key: &str, what: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Option<T>, JsValue> {
        let read = |name: String| parse(&name).ok_or_else(|| self.refuse(format!("`{key}`: unknown {what} `{name}`")));
        self.text(key)?.map(read).transpose()
    }

    /// An optional function (a callback, a constructor).
    pub fn function(&self, key: &str) -> Result<Option<js_sys::Function>, JsValue> {
        let read =
            |v: JsValue| convert::as_function(&v).ok_or_else(|| self.refuse(format!("`{key}` must be a function")));
        self.get(key).map(read).transpose()
    }

    /// An optional member read as JSON.
    pub fn json(&self, key: &str) -> Result<Option<Value>, JsValue> {
        self.get(key).map(|v| convert::to_json(&v).map_err(|e| self.refuse(format!("`{key}`: {e}")))).transpose()
    }

    /// An optional JSON object.
    pub fn object(&self, key: &str) -> Result<Option<serde_json::Map<String, Value>>, JsValue> {
        match self.json(key)? {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(self.refuse(format!("`{key}` must be an object"))),
        }
    }

    /// An optional array, each of its items read by `item` (given the
    /// item and its `key[i]` name).
    pub fn array<T>(
        &self,
        key: &str,
        mut item: impl FnMut(JsValue, &str) -> Result<T, JsValue>,
    ) -> Result<Option<Vec<T>>, JsValue> {
        let Some(v) = self.get(key) else { return Ok(None) };
        if !js_sys::Array::is_array(&v) {
            return Err(self.refuse(format!("`{key}` must be an array")));
        }
        js_sys::Array::from(&v)
            .iter()
            .enumerate()
            .map(|(i, v)| item(v, &format!("{key}[{i}]")))
            .collect::<Result<_, _>>()
            .map(Some)
    }
}
