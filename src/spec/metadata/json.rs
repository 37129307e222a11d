//! Reading fields of the metadata JSON objects (table metadata, snapshots, specs, refs) with
//! errors that name the object and the field.
//!
//! Every error is a [`Error::Corrupt`] with an empty path: these are pure decoders and the
//! caller that read the bytes adds the file name.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// A JSON object.
pub(crate) type Object = Map<String, Value>;

/// `v` as an object, or an error naming `what` it should have been.
pub(crate) fn object<'a>(v: &'a Value, what: &str) -> Result<&'a Object> {
    v.as_object()
        .ok_or_else(|| Error::corrupt("", format!("{what} must be a JSON object, found {v}")))
}

/// The error for a required field that is absent (or null).
pub(crate) fn missing(what: &str, key: &str) -> Error {
    Error::corrupt("", format!("{what}: missing required field '{key}'"))
}

fn invalid(what: &str, key: &str, expected: &str, v: &Value) -> Error {
    Error::corrupt(
        "",
        format!("{what}: field '{key}' must be {expected}, found {v}"),
    )
}

/// A JSON number as an exact `i64`.
///
/// Integers are taken as written (serde_json keeps them exactly, never through `f64`). A number
/// written as a float (`4.685659321801244e18`) is accepted only when it is integral and in the
/// `i64` range.
pub(crate) fn exact_i64(v: &Value) -> Option<i64> {
    // -2^63 and 2^63 are both exactly representable as f64; i64 covers [-2^63, 2^63).
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    let n = v.as_number()?;
    if let Some(i) = n.as_i64() {
        return Some(i);
    }
    if n.is_u64() {
        return None;
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && (-LIMIT..LIMIT).contains(&f)).then_some(f as i64)
}

/// An optional `i64` field; absent and `null` are `None`, anything but an integer is an error.
pub(crate) fn opt_i64(o: &Object, key: &str, what: &str) -> Result<Option<i64>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => exact_i64(v)
            .map(Some)
            .ok_or_else(|| invalid(what, key, "a 64-bit integer", v)),
    }
}

/// A required `i64` field.
pub(crate) fn req_i64(o: &Object, key: &str, what: &str) -> Result<i64> {
    opt_i64(o, key, what)?.ok_or_else(|| missing(what, key))
}

/// An optional `i32` field.
pub(crate) fn opt_i32(o: &Object, key: &str, what: &str) -> Result<Option<i32>> {
    match opt_i64(o, key, what)? {
        None => Ok(None),
        Some(i) => i32::try_from(i).map(Some).map_err(|_| {
            Error::corrupt(
                "",
                format!("{what}: field '{key}' value {i} is out of int range"),
            )
        }),
    }
}

/// A required `i32` field.
pub(crate) fn req_i32(o: &Object, key: &str, what: &str) -> Result<i32> {
    opt_i32(o, key, what)?.ok_or_else(|| missing(what, key))
}

/// An optional string field.
pub(crate) fn opt_str<'a>(o: &'a Object, key: &str, what: &str) -> Result<Option<&'a str>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(invalid(what, key, "a string", v)),
    }
}

/// A required string field.
pub(crate) fn req_str<'a>(o: &'a Object, key: &str, what: &str) -> Result<&'a str> {
    opt_str(o, key, what)?.ok_or_else(|| missing(what, key))
}

/// An optional array field; absent and `null` read as empty.
pub(crate) fn opt_array<'a>(o: &'a Object, key: &str, what: &str) -> Result<&'a [Value]> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(v) => Err(invalid(what, key, "an array", v)),
    }
}

/// A string-to-string map. Non-string scalar values are kept as their JSON text, so a writer
/// that put a number in a property does not make the table unreadable.
pub(crate) fn string_map(v: &Value, what: &str) -> Result<BTreeMap<String, String>> {
    object(v, what)?
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            Value::Number(_) | Value::Bool(_) => Ok((k.clone(), v.to_string())),
            other => Err(invalid(what, k, "a string", other)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn integers_are_exact_and_integral_floats_are_accepted() {
        assert_eq!(
            exact_i64(&json!(9_223_372_036_854_775_807_i64)),
            Some(i64::MAX)
        );
        assert_eq!(exact_i64(&json!(i64::MIN)), Some(i64::MIN));
        let v: Value = serde_json::from_str("4.685659321801244e18").unwrap();
        assert_eq!(exact_i64(&v), Some(4_685_659_321_801_243_648));
        assert_eq!(exact_i64(&json!(1.5)), None);
        assert_eq!(exact_i64(&json!(9.3e18)), None);
        assert_eq!(exact_i64(&json!(u64::MAX)), None);
        assert_eq!(exact_i64(&json!("1")), None);
    }

    #[test]
    fn field_errors_name_the_field() {
        let o = json!({"a": "x", "n": null});
        let o = o.as_object().unwrap();
        let err = req_i64(o, "a", "snapshot").unwrap_err().to_string();
        assert!(err.contains("'a'") && err.contains("snapshot"), "{err}");
        let err = req_str(o, "n", "snapshot").unwrap_err().to_string();
        assert!(err.contains("missing required field 'n'"), "{err}");
        assert_eq!(opt_i32(o, "n", "x").unwrap(), None);
    }
}
