//! Test helper: Arrow rows as the JSON the PyIceberg oracle files hold (maps as `[key, value]`
//! pairs, binary as hex, dates and timestamps in Python's `isoformat`, decimals as strings).

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int8Type, Int32Type, Int64Type,
    Time64MicrosecondType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
};
use serde_json::{Map, Value, json};

use crate::spec::values::{format_date, format_decimal};

/// Every row of the batches as a JSON object keyed by column name.
pub(super) fn rows(batches: &[RecordBatch]) -> Vec<Value> {
    let mut out = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let mut object = Map::new();
            for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
                object.insert(field.name().clone(), value(column.as_ref(), row));
            }
            out.push(Value::Object(object));
        }
    }
    out
}

/// One value of an array as JSON.
pub(super) fn value(array: &dyn Array, row: usize) -> Value {
    if array.is_null(row) {
        return Value::Null;
    }
    match array.data_type() {
        DataType::Boolean => json!(array.as_boolean().value(row)),
        DataType::Int8 => json!(array.as_primitive::<Int8Type>().value(row)),
        DataType::Int32 => json!(array.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => json!(array.as_primitive::<Int64Type>().value(row)),
        DataType::Float32 => json!(f64::from(array.as_primitive::<Float32Type>().value(row))),
        DataType::Float64 => json!(array.as_primitive::<Float64Type>().value(row)),
        DataType::Utf8 => json!(array.as_string::<i32>().value(row)),
        DataType::Dictionary(..) => {
            let strings = cast(array, &DataType::Utf8).unwrap();
            value(strings.as_ref(), row)
        }
        DataType::Binary => json!(hex(array.as_binary::<i32>().value(row))),
        DataType::FixedSizeBinary(_) => json!(hex(array.as_fixed_size_binary().value(row))),
        DataType::Date32 => json!(format_date(array.as_primitive::<Date32Type>().value(row))),
        DataType::Decimal128(_, scale) => {
            let unscaled = array.as_primitive::<Decimal128Type>().value(row);
            json!(format_decimal(unscaled, u32::try_from(*scale).unwrap()))
        }
        DataType::Time64(TimeUnit::Microsecond) => {
            let micros = array.as_primitive::<Time64MicrosecondType>().value(row);
            json!(format!("{}.{:06}", micros / 1_000_000, micros % 1_000_000))
        }
        DataType::Timestamp(unit, tz) => timestamp(array, row, unit, tz.is_some()),
        DataType::List(_) => {
            let list = array.as_list::<i32>().value(row);
            Value::Array((0..list.len()).map(|i| value(list.as_ref(), i)).collect())
        }
        DataType::Map(..) => {
            let entries = array.as_map().value(row);
            let (keys, values) = (entries.column(0), entries.column(1));
            let pairs = (0..entries.len())
                .map(|i| json!([value(keys.as_ref(), i), value(values.as_ref(), i)]));
            Value::Array(pairs.collect())
        }
        DataType::Struct(fields) => {
            let array = array.as_struct();
            let object = fields
                .iter()
                .zip(array.columns())
                .map(|(f, c)| (f.name().clone(), value(c.as_ref(), row)));
            Value::Object(object.collect())
        }
        other => panic!("no JSON form for {other}"),
    }
}

fn timestamp(array: &dyn Array, row: usize, unit: &TimeUnit, utc: bool) -> Value {
    let micros = match unit {
        TimeUnit::Millisecond => array.as_primitive::<TimestampMillisecondType>().value(row) * 1000,
        TimeUnit::Microsecond => array.as_primitive::<TimestampMicrosecondType>().value(row),
        other => panic!("unexpected unit {other:?}"),
    };
    let at = chrono::DateTime::from_timestamp_micros(micros)
        .unwrap()
        .naive_utc();
    let mut text = at.format("%Y-%m-%dT%H:%M:%S").to_string();
    if micros.rem_euclid(1_000_000) != 0 {
        text.push_str(&format!(".{:06}", micros.rem_euclid(1_000_000)));
    }
    if utc {
        text.push_str("+00:00");
    }
    json!(text)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
