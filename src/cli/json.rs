//! Arrow columns as JSON values, the one value formatting shared by the JSON and CSV printers.
//!
//! | Arrow type                         | JSON                                              |
//! |------------------------------------|---------------------------------------------------|
//! | integers, finite floats            | numbers                                           |
//! | NaN, +-infinity                    | `"NaN"`, `"Infinity"`, `"-Infinity"`              |
//! | booleans                           | booleans                                          |
//! | decimals                           | strings with their scale (`"123.45"`)             |
//! | dates                              | `"YYYY-MM-DD"`                                    |
//! | timestamps                         | ISO-8601 (`2024-01-01T10:00:00`, `...+00:00`)     |
//! | times                              | `"HH:MM:SS.ffffff"` (digits of the unit)          |
//! | binary, fixed                      | lowercase hex                                     |
//! | `arrow.uuid` fixed(16)             | `8-4-4-4-12` uuid                                 |
//! | lists                              | arrays                                            |
//! | structs                            | objects                                           |
//! | maps with string keys              | objects; other keys: arrays of `{key, value}`     |
//! | durations, intervals, others       | Arrow's display string                            |
//! | NULL                               | `null`                                            |

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, OffsetSizeTrait};
use datafusion::arrow::datatypes::{
    ArrowNativeType, DataType, Field, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type,
    Int32Type, Int64Type, TimeUnit, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use serde_json::{Map, Number, Value};

/// The field metadata key naming an Arrow extension type.
const EXTENSION_NAME_KEY: &str = "ARROW:extension:name";

/// Display options giving ISO-8601 temporal values.
pub(crate) const DISPLAY_OPTIONS: FormatOptions<'static> = FormatOptions::new()
    .with_null("")
    .with_datetime_format(Some("%Y-%m-%d"))
    .with_timestamp_tz_format(Some("%Y-%m-%dT%H:%M:%S%.f%:z"));

/// One JSON value per row of `array`, whose field (for extension metadata) is `field`.
pub fn column_to_json(field: &Field, array: &dyn Array) -> Result<Vec<Value>, ArrowError> {
    let values = match array.data_type() {
        DataType::Null => vec![Value::Null; array.len()],
        DataType::Boolean => collect(array, |i| Value::Bool(array.as_boolean().value(i))),
        DataType::Int8 => ints(array.as_primitive::<Int8Type>().iter()),
        DataType::Int16 => ints(array.as_primitive::<Int16Type>().iter()),
        DataType::Int32 => ints(array.as_primitive::<Int32Type>().iter()),
        DataType::Int64 => ints(array.as_primitive::<Int64Type>().iter()),
        DataType::UInt8 => ints(array.as_primitive::<UInt8Type>().iter()),
        DataType::UInt16 => ints(array.as_primitive::<UInt16Type>().iter()),
        DataType::UInt32 => ints(array.as_primitive::<UInt32Type>().iter()),
        DataType::UInt64 => ints(array.as_primitive::<UInt64Type>().iter()),
        DataType::Float16 => {
            let a = array.as_primitive::<Float16Type>();
            floats(a.iter().map(|v| v.map(|v| v.to_string())))
        }
        DataType::Float32 => {
            let a = array.as_primitive::<Float32Type>();
            floats(a.iter().map(|v| v.map(|v| v.to_string())))
        }
        DataType::Float64 => {
            let a = array.as_primitive::<Float64Type>();
            floats(a.iter().map(|v| v.map(|v| v.to_string())))
        }
        DataType::Time32(_) | DataType::Time64(_) => times(array),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => strings(array),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => binaries(array),
        DataType::FixedSizeBinary(_) => fixed_binaries(field, array),
        _ => return nested_to_json(field, array),
    };
    Ok(values)
}

fn nested_to_json(field: &Field, array: &dyn Array) -> Result<Vec<Value>, ArrowError> {
    match array.data_type() {
        DataType::List(child) => list_to_json::<i32>(child, array),
        DataType::LargeList(child) => list_to_json::<i64>(child, array),
        DataType::ListView(child) => list_view_to_json::<i32>(child, array),
        DataType::LargeListView(child) => list_view_to_json::<i64>(child, array),
        DataType::FixedSizeList(child, _) => fixed_list_to_json(child, array),
        DataType::Struct(_) => struct_to_json(array),
        DataType::Map(_, _) => map_to_json(array),
        DataType::Dictionary(_, _) => dictionary_to_json(field, array),
        _ => displayed(array),
    }
}

/// Values of `array` through `f`, `null` where the row is null.
fn collect(array: &dyn Array, f: impl Fn(usize) -> Value) -> Vec<Value> {
    (0..array.len())
        .map(|i| if array.is_null(i) { Value::Null } else { f(i) })
        .collect()
}

fn ints<T: Into<Number>>(values: impl Iterator<Item = Option<T>>) -> Vec<Value> {
    values
        .map(|v| v.map_or(Value::Null, |v| Value::Number(v.into())))
        .collect()
}

/// Floats through their shortest decimal form, so that `0.1f32` stays `0.1`.
fn floats(values: impl Iterator<Item = Option<String>>) -> Vec<Value> {
    values
        .map(|v| v.map_or(Value::Null, |s| float_value(&s)))
        .collect()
}

fn float_value(shortest: &str) -> Value {
    match shortest {
        "NaN" => Value::String("NaN".into()),
        "inf" => Value::String("Infinity".into()),
        "-inf" => Value::String("-Infinity".into()),
        s => s
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map_or_else(|| Value::String(s.to_string()), Value::Number),
    }
}

fn strings(array: &dyn Array) -> Vec<Value> {
    let value = |s: &str| Value::String(s.to_string());
    match array.data_type() {
        DataType::Utf8 => collect(array, |i| value(array.as_string::<i32>().value(i))),
        DataType::LargeUtf8 => collect(array, |i| value(array.as_string::<i64>().value(i))),
        _ => collect(array, |i| value(array.as_string_view().value(i))),
    }
}

fn binaries(array: &dyn Array) -> Vec<Value> {
    match array.data_type() {
        DataType::Binary => collect(array, |i| hex(array.as_binary::<i32>().value(i))),
        DataType::LargeBinary => collect(array, |i| hex(array.as_binary::<i64>().value(i))),
        _ => collect(array, |i| hex(array.as_binary_view().value(i))),
    }
}

fn fixed_binaries(field: &Field, array: &dyn Array) -> Vec<Value> {
    let a = array.as_fixed_size_binary();
    if is_uuid(field) && a.value_length() == 16 {
        collect(array, |i| match <[u8; 16]>::try_from(a.value(i)) {
            Ok(bytes) => Value::String(uuid::Uuid::from_bytes(bytes).hyphenated().to_string()),
            Err(_) => hex(a.value(i)),
        })
    } else {
        collect(array, |i| hex(a.value(i)))
    }
}

/// Whether the field carries the `arrow.uuid` extension type.
pub(crate) fn is_uuid(field: &Field) -> bool {
    field.metadata().get(EXTENSION_NAME_KEY).map(String::as_str) == Some("arrow.uuid")
}

fn hex(bytes: &[u8]) -> Value {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    Value::String(s)
}

/// Times as `HH:MM:SS` plus as many fractional digits as the unit has.
fn times(array: &dyn Array) -> Vec<Value> {
    use datafusion::arrow::datatypes::{
        Time32MillisecondType, Time32SecondType, Time64MicrosecondType, Time64NanosecondType,
    };
    let (values, digits): (Vec<Option<i64>>, u32) = match array.data_type() {
        DataType::Time32(TimeUnit::Second) => (
            array
                .as_primitive::<Time32SecondType>()
                .iter()
                .map(|v| v.map(i64::from))
                .collect(),
            0,
        ),
        DataType::Time32(_) => {
            let a = array.as_primitive::<Time32MillisecondType>();
            (a.iter().map(|v| v.map(i64::from)).collect(), 3)
        }
        DataType::Time64(TimeUnit::Microsecond) => (
            array
                .as_primitive::<Time64MicrosecondType>()
                .iter()
                .collect(),
            6,
        ),
        _ => (
            array
                .as_primitive::<Time64NanosecondType>()
                .iter()
                .collect(),
            9,
        ),
    };
    values
        .into_iter()
        .map(|v| v.map_or(Value::Null, |v| Value::String(format_time(v, digits))))
        .collect()
}

/// `HH:MM:SS[.fff...]` of a time of day in units of `10^-digits` seconds.
pub(crate) fn format_time(value: i64, digits: u32) -> String {
    let per_second = 10i64.pow(digits);
    let (seconds, fraction) = (value.div_euclid(per_second), value.rem_euclid(per_second));
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    if digits == 0 {
        format!("{h:02}:{m:02}:{s:02}")
    } else {
        format!(
            "{h:02}:{m:02}:{s:02}.{fraction:0width$}",
            width = digits as usize
        )
    }
}

/// Arrow's display strings (decimals, dates, timestamps, durations, intervals, ...).
fn displayed(array: &dyn Array) -> Result<Vec<Value>, ArrowError> {
    let formatter = ArrayFormatter::try_new(array, &DISPLAY_OPTIONS)?;
    (0..array.len())
        .map(|i| {
            if array.is_null(i) {
                Ok(Value::Null)
            } else {
                formatter.value(i).try_to_string().map(Value::String)
            }
        })
        .collect()
}

fn list_to_json<O: OffsetSizeTrait>(
    child: &Arc<Field>,
    array: &dyn Array,
) -> Result<Vec<Value>, ArrowError> {
    let list = array.as_list::<O>();
    let values = column_to_json(child, list.values().as_ref())?;
    let offsets = list.value_offsets();
    Ok(collect(array, |i| {
        slice(&values, offsets[i].as_usize(), offsets[i + 1].as_usize())
    }))
}

fn list_view_to_json<O: OffsetSizeTrait>(
    child: &Arc<Field>,
    array: &dyn Array,
) -> Result<Vec<Value>, ArrowError> {
    let list = array.as_list_view::<O>();
    let values = column_to_json(child, list.values().as_ref())?;
    let (offsets, sizes) = (list.value_offsets(), list.value_sizes());
    Ok(collect(array, |i| {
        let start = offsets[i].as_usize();
        slice(&values, start, start + sizes[i].as_usize())
    }))
}

fn fixed_list_to_json(child: &Arc<Field>, array: &dyn Array) -> Result<Vec<Value>, ArrowError> {
    let list = array.as_fixed_size_list();
    let values = column_to_json(child, list.values().as_ref())?;
    let size = list.value_length().max(0) as usize;
    Ok(collect(array, |i| slice(&values, i * size, (i + 1) * size)))
}

fn slice(values: &[Value], start: usize, end: usize) -> Value {
    Value::Array(values.get(start..end).unwrap_or_default().to_vec())
}

fn struct_to_json(array: &dyn Array) -> Result<Vec<Value>, ArrowError> {
    let s = array.as_struct();
    let DataType::Struct(fields) = s.data_type() else {
        return displayed(array);
    };
    let columns = fields
        .iter()
        .zip(s.columns())
        .map(|(f, c)| column_to_json(f, c.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(collect(array, |i| {
        let object: Map<String, Value> = fields
            .iter()
            .zip(&columns)
            .map(|(f, c)| (f.name().clone(), c[i].clone()))
            .collect();
        Value::Object(object)
    }))
}

fn map_to_json(array: &dyn Array) -> Result<Vec<Value>, ArrowError> {
    let map = array.as_map();
    let DataType::Map(entries_field, _) = map.data_type() else {
        return displayed(array);
    };
    let DataType::Struct(kv) = entries_field.data_type() else {
        return displayed(array);
    };
    let (Some(key_field), Some(value_field)) = (kv.first(), kv.get(1)) else {
        return displayed(array);
    };
    let keys = column_to_json(key_field, map.keys().as_ref())?;
    let values = column_to_json(value_field, map.values().as_ref())?;
    let string_keys = is_string_type(key_field.data_type());
    let offsets = map.value_offsets();
    Ok(collect(array, |i| {
        let range = offsets[i].as_usize()..offsets[i + 1].as_usize();
        map_value(&keys[range.clone()], &values[range], string_keys)
    }))
}

fn is_string_type(ty: &DataType) -> bool {
    match ty {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, values) => is_string_type(values),
        _ => false,
    }
}

fn map_value(keys: &[Value], values: &[Value], string_keys: bool) -> Value {
    let pairs = keys.iter().zip(values);
    if string_keys {
        let object = pairs
            .map(|(k, v)| (k.as_str().unwrap_or_default().to_string(), v.clone()))
            .collect();
        Value::Object(object)
    } else {
        let entries = pairs.map(|(k, v)| {
            let mut entry = Map::new();
            entry.insert("key".into(), k.clone());
            entry.insert("value".into(), v.clone());
            Value::Object(entry)
        });
        Value::Array(entries.collect())
    }
}

fn dictionary_to_json(field: &Field, array: &dyn Array) -> Result<Vec<Value>, ArrowError> {
    let dict = array.as_any_dictionary();
    let values: &ArrayRef = dict.values();
    let value_field = Field::new(field.name(), values.data_type().clone(), true)
        .with_metadata(field.metadata().clone());
    let decoded = column_to_json(&value_field, values.as_ref())?;
    let keys = dict.normalized_keys();
    Ok(collect(array, |i| {
        keys.get(i)
            .and_then(|&k| decoded.get(k))
            .cloned()
            .unwrap_or(Value::Null)
    }))
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
