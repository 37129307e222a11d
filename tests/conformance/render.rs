//! Arrow values rendered in the answer files' JSON conventions, Arrow types named with Iceberg
//! type names, and the comparison of rendered values with expected ones.
//!
//! Conventions shared by both answer sets: decimals as strings with their scale; dates as
//! `YYYY-MM-DD`; times and timestamps as ISO 8601 with a fraction only when it is not zero
//! (Python's `isoformat`); `timestamptz` in UTC with `+00:00`; float32 as the shortest decimal
//! that round-trips through float32; NaN and infinities as "NaN", "Infinity", "-Infinity";
//! uuids dashed; binary as hex (with a `hex:` prefix in the external set); maps as lists of
//! `[key, value]` pairs.

use chrono::{DateTime, NaiveDateTime, NaiveTime};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Field, Float32Type, Float64Type, Int8Type, Int16Type,
    Int32Type, Int64Type, Time64MicrosecondType, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use datafusion::arrow::record_batch::RecordBatch;
use serde_json::{Map, Value};

/// The key of an expected value that accepts any of several values (see [`json_equal`]).
pub const ANY_OF: &str = "$any_of";

/// The field metadata key that marks Arrow extension types (uuid, variant).
const EXTENSION_NAME: &str = "ARROW:extension:name";

/// How an answer set spells the values that differ between the sets.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    binary_prefix: &'static str,
}

impl Style {
    /// `external/expected_answers.json`: binary as `"hex:0102"`.
    pub const EXTERNAL: Style = Style {
        binary_prefix: "hex:",
    };
    /// PyIceberg oracle: binary as plain hex.
    pub const PYICEBERG: Style = Style { binary_prefix: "" };
}

/// Every row of `batches`, each value rendered.
pub fn rows(batches: &[RecordBatch], style: Style) -> Result<Vec<Vec<Value>>, String> {
    let mut out = Vec::new();
    for batch in batches {
        let schema = batch.schema();
        for row in 0..batch.num_rows() {
            let values = batch
                .columns()
                .iter()
                .zip(schema.fields())
                .map(|(array, field)| cell(array.as_ref(), field, row, style))
                .collect::<Result<Vec<_>, _>>()?;
            out.push(values);
        }
    }
    Ok(out)
}

/// One value of `array` (described by `field`) at `row`.
pub fn cell(array: &dyn Array, field: &Field, row: usize, style: Style) -> Result<Value, String> {
    if array.is_null(row) {
        return Ok(Value::Null);
    }
    if let Some(value) = integer(array, row) {
        return Ok(value);
    }
    let value = match array.data_type() {
        DataType::Boolean => Value::Bool(array.as_boolean().value(row)),
        DataType::Float32 => float32(array.as_primitive::<Float32Type>().value(row)),
        DataType::Float64 => float64(array.as_primitive::<Float64Type>().value(row)),
        DataType::Decimal128(_, scale) => Value::String(decimal(
            array.as_primitive::<Decimal128Type>().value(row),
            *scale,
        )),
        DataType::Date32 => Value::String(date(array.as_primitive::<Date32Type>().value(row))?),
        DataType::Time64(TimeUnit::Microsecond) => Value::String(time_micros(
            array.as_primitive::<Time64MicrosecondType>().value(row),
        )?),
        DataType::Timestamp(unit, tz) => Value::String(timestamp(array, row, *unit, tz.is_some())?),
        DataType::Utf8 => Value::String(array.as_string::<i32>().value(row).to_string()),
        DataType::LargeUtf8 => Value::String(array.as_string::<i64>().value(row).to_string()),
        DataType::Utf8View => Value::String(array.as_string_view().value(row).to_string()),
        DataType::Binary => binary(array.as_binary::<i32>().value(row), style),
        DataType::LargeBinary => binary(array.as_binary::<i64>().value(row), style),
        DataType::BinaryView => binary(array.as_binary_view().value(row), style),
        DataType::FixedSizeBinary(_) => {
            let bytes = array.as_fixed_size_binary().value(row);
            if is_uuid(field) {
                Value::String(uuid(bytes))
            } else {
                binary(bytes, style)
            }
        }
        DataType::Struct(fields) => {
            let array = array.as_struct();
            let mut object = Map::new();
            for (child, child_field) in array.columns().iter().zip(fields) {
                let value = cell(child.as_ref(), child_field, row, style)?;
                object.insert(child_field.name().clone(), value);
            }
            Value::Object(object)
        }
        DataType::List(element) => {
            list(array.as_list::<i32>().value(row).as_ref(), element, style)?
        }
        DataType::LargeList(element) => {
            list(array.as_list::<i64>().value(row).as_ref(), element, style)?
        }
        DataType::Map(..) => map(array, row, style)?,
        DataType::Dictionary(_, value_type) => {
            let dictionary = array.as_any_dictionary();
            let index = dictionary.normalized_keys()[row];
            let value_field = Field::new(field.name(), (**value_type).clone(), true);
            cell(dictionary.values().as_ref(), &value_field, index, style)?
        }
        other => return Err(format!("no rendering for Arrow type {other}")),
    };
    Ok(value)
}

fn integer(array: &dyn Array, row: usize) -> Option<Value> {
    let value = match array.data_type() {
        DataType::Int8 => Value::from(array.as_primitive::<Int8Type>().value(row)),
        DataType::Int16 => Value::from(array.as_primitive::<Int16Type>().value(row)),
        DataType::Int32 => Value::from(array.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => Value::from(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => Value::from(array.as_primitive::<UInt8Type>().value(row)),
        DataType::UInt16 => Value::from(array.as_primitive::<UInt16Type>().value(row)),
        DataType::UInt32 => Value::from(array.as_primitive::<UInt32Type>().value(row)),
        DataType::UInt64 => Value::from(array.as_primitive::<UInt64Type>().value(row)),
        _ => return None,
    };
    Some(value)
}

fn list(values: &dyn Array, element: &Field, style: Style) -> Result<Value, String> {
    let items = (0..values.len())
        .map(|i| cell(values, element, i, style))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Value::Array(items))
}

/// A map as the PyIceberg oracle writes it: a list of `[key, value]` pairs, in stored order.
fn map(array: &dyn Array, row: usize, style: Style) -> Result<Value, String> {
    let entries = array.as_map().value(row);
    let fields = entries.fields();
    let (keys, values) = (entries.column(0), entries.column(1));
    let pairs = (0..entries.len())
        .map(|i| {
            let key = cell(keys.as_ref(), &fields[0], i, style)?;
            let value = cell(values.as_ref(), &fields[1], i, style)?;
            Ok(Value::from(vec![key, value]))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Value::Array(pairs))
}

/// NaN and the infinities as the answer files spell them, else the number.
fn special_float(value: f64) -> Option<Value> {
    if value.is_nan() {
        Some(Value::from("NaN"))
    } else if value == f64::INFINITY {
        Some(Value::from("Infinity"))
    } else if value == f64::NEG_INFINITY {
        Some(Value::from("-Infinity"))
    } else {
        None
    }
}

/// A float32 as the shortest decimal that round-trips through float32 (Rust's `Display` for
/// `f32` prints exactly that), held as the f64 of that decimal.
fn float32(value: f32) -> Value {
    if let Some(special) = special_float(f64::from(value)) {
        return special;
    }
    let shortest: f64 = value.to_string().parse().unwrap_or(f64::NAN);
    Value::from(shortest)
}

fn float64(value: f64) -> Value {
    special_float(value).unwrap_or_else(|| Value::from(value))
}

/// An unscaled decimal with `scale` digits after the point, e.g. `-0.05`.
pub fn decimal(unscaled: i128, scale: i8) -> String {
    if scale <= 0 {
        let zeros = "0".repeat(usize::from(scale.unsigned_abs()));
        return format!("{unscaled}{}", if unscaled == 0 { "" } else { &zeros });
    }
    let scale = usize::from(scale.unsigned_abs());
    let digits = unscaled.unsigned_abs().to_string();
    let digits = format!("{digits:0>width$}", width = scale + 1);
    let (int_part, frac_part) = digits.split_at(digits.len() - scale);
    let sign = if unscaled < 0 { "-" } else { "" };
    format!("{sign}{int_part}.{frac_part}")
}

fn date(days: i32) -> Result<String, String> {
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).ok_or("no epoch")?;
    let day = epoch
        .checked_add_signed(chrono::TimeDelta::days(i64::from(days)))
        .ok_or_else(|| format!("date {days} out of range"))?;
    Ok(day.format("%Y-%m-%d").to_string())
}

fn time_micros(micros: i64) -> Result<String, String> {
    let seconds = u32::try_from(micros.div_euclid(1_000_000)).map_err(|e| e.to_string())?;
    let nanos = u32::try_from(micros.rem_euclid(1_000_000) * 1000).map_err(|e| e.to_string())?;
    let time = NaiveTime::from_num_seconds_from_midnight_opt(seconds, nanos)
        .ok_or_else(|| format!("time {micros} out of range"))?;
    Ok(format!("{}{}", time.format("%H:%M:%S"), fraction(nanos)))
}

fn timestamp(array: &dyn Array, row: usize, unit: TimeUnit, utc: bool) -> Result<String, String> {
    let datetime = match unit {
        TimeUnit::Second => {
            DateTime::from_timestamp(array.as_primitive::<TimestampSecondType>().value(row), 0)
        }
        TimeUnit::Millisecond => DateTime::from_timestamp_millis(
            array.as_primitive::<TimestampMillisecondType>().value(row),
        ),
        TimeUnit::Microsecond => DateTime::from_timestamp_micros(
            array.as_primitive::<TimestampMicrosecondType>().value(row),
        ),
        TimeUnit::Nanosecond => Some(DateTime::from_timestamp_nanos(
            array.as_primitive::<TimestampNanosecondType>().value(row),
        )),
    };
    let naive: NaiveDateTime = datetime.ok_or("timestamp out of range")?.naive_utc();
    let nanos = naive.and_utc().timestamp_subsec_nanos();
    let zone = if utc { "+00:00" } else { "" };
    Ok(format!(
        "{}{}{zone}",
        naive.format("%Y-%m-%dT%H:%M:%S"),
        fraction(nanos)
    ))
}

/// Python's `isoformat` fraction: nothing for whole seconds, else six digits (nine when the
/// value has nanoseconds).
fn fraction(nanos: u32) -> String {
    match nanos {
        0 => String::new(),
        n if n % 1000 == 0 => format!(".{:06}", n / 1000),
        n => format!(".{n:09}"),
    }
}

fn binary(bytes: &[u8], style: Style) -> Value {
    Value::String(format!("{}{}", style.binary_prefix, hex(bytes)))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A value computed over a uuid column (`max(u)`) loses the column's extension metadata and
/// renders as plain hex; this restores the dashed form the answers use for Iceberg `uuid`.
pub fn as_iceberg_type(value: Value, iceberg_type: &str) -> Value {
    match value {
        Value::String(h) if iceberg_type == "uuid" && h.len() == 32 => Value::String(dashed(&h)),
        other => other,
    }
}

fn uuid(bytes: &[u8]) -> String {
    dashed(&hex(bytes))
}

fn dashed(h: &str) -> String {
    if h.len() != 32 || !h.is_ascii() {
        return h.to_string();
    }
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn is_uuid(field: &Field) -> bool {
    matches!(field.data_type(), DataType::FixedSizeBinary(16))
        && field.metadata().get(EXTENSION_NAME).map(String::as_str) == Some("arrow.uuid")
}

fn is_variant(field: &Field) -> bool {
    field
        .metadata()
        .get(EXTENSION_NAME)
        .is_some_and(|name| name.contains("variant"))
}

/// The Iceberg type name (as the answer files write it) of an Arrow field icefloe produced.
pub fn iceberg_type(field: &Field) -> String {
    if is_uuid(field) {
        return "uuid".to_string();
    }
    if is_variant(field) {
        return "variant".to_string();
    }
    match field.data_type() {
        DataType::Boolean => "boolean".to_string(),
        DataType::Int32 => "int".to_string(),
        DataType::Int64 => "long".to_string(),
        DataType::Float32 => "float".to_string(),
        DataType::Float64 => "double".to_string(),
        DataType::Decimal128(p, s) => format!("decimal({p}, {s})"),
        DataType::Date32 => "date".to_string(),
        DataType::Time64(TimeUnit::Microsecond) => "time".to_string(),
        DataType::Timestamp(TimeUnit::Microsecond, None) => "timestamp".to_string(),
        DataType::Timestamp(TimeUnit::Microsecond, Some(_)) => "timestamptz".to_string(),
        DataType::Timestamp(TimeUnit::Nanosecond, None) => "timestamp_ns".to_string(),
        DataType::Timestamp(TimeUnit::Nanosecond, Some(_)) => "timestamptz_ns".to_string(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "string".to_string(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "binary".to_string(),
        DataType::FixedSizeBinary(len) => format!("fixed[{len}]"),
        DataType::Struct(fields) => {
            let inner: Vec<String> = fields
                .iter()
                .map(|f| format!("{}: {}", f.name(), iceberg_type(f)))
                .collect();
            format!("struct<{}>", inner.join(", "))
        }
        DataType::List(element) | DataType::LargeList(element) => {
            format!("list<{}>", iceberg_type(element))
        }
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                format!("map<{}, {}>", iceberg_type(&kv[0]), iceberg_type(&kv[1]))
            }
            other => format!("map<{other}>"),
        },
        other => format!("arrow:{other}"),
    }
}

/// Floats compare equal within a few ulps: serde_json (without its `float_roundtrip`
/// feature, which this crate does not enable) may parse a decimal one ulp off the nearest
/// double, e.g. `970070.7568359375` as `970070.7568359376`. Every float in the answer files
/// is exactly representable (multiples of 1/8 or 1/1024, or float32 values), so a few ulps
/// never hide a wrong answer.
fn floats_equal(expected: Option<f64>, actual: Option<f64>) -> bool {
    match (expected, actual) {
        (Some(e), Some(a)) => e == a || (e - a).abs() <= 4.0 * f64::EPSILON * e.abs().max(a.abs()),
        _ => false,
    }
}

/// Whether a rendered value equals the expected one. Numbers compare by value (integers
/// exactly, others as f64); an expected number also matches a decimal string of the same value
/// (integer sums are computed as `DECIMAL(38,0)` so that they cannot overflow).
///
/// An expected object `{"$any_of": [a, b, ...]}` matches any of its values (used where two
/// answers are both defensible; see `inspect_quirks`).
pub fn json_equal(expected: &Value, actual: &Value) -> bool {
    if let Some(Value::Array(choices)) = expected.as_object().and_then(|o| o.get(ANY_OF)) {
        return choices.iter().any(|choice| json_equal(choice, actual));
    }
    match (expected, actual) {
        (Value::Number(e), Value::Number(a)) => match (e.as_i64(), a.as_i64()) {
            (Some(e), Some(a)) => e == a,
            _ => match (e.as_u64(), a.as_u64()) {
                (Some(e), Some(a)) => e == a,
                _ => floats_equal(e.as_f64(), a.as_f64()),
            },
        },
        (Value::Number(e), Value::String(a)) => {
            e.to_string() == *a || floats_equal(e.as_f64(), a.parse::<f64>().ok())
        }
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(e, a)| json_equal(e, a))
        }
        (Value::Object(e), Value::Object(a)) => {
            e.len() == a.len()
                && e.iter()
                    .all(|(k, v)| a.get(k).is_some_and(|av| json_equal(v, av)))
        }
        (e, a) => e == a,
    }
}
