use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, Date32Array, Date64Array,
    Decimal128Array, DictionaryArray, DurationSecondArray, FixedSizeBinaryArray,
    FixedSizeListArray, Float16Array, Float32Array, Float64Array, Int8Array, Int32Array,
    Int64Array, IntervalYearMonthArray, LargeBinaryArray, LargeListArray, LargeStringArray,
    ListArray, MapArray, NullArray, RecordBatch, StringArray, StringViewArray, StructArray,
    Time32MillisecondArray, Time32SecondArray, Time64MicrosecondArray, Time64NanosecondArray,
    TimestampMicrosecondArray, TimestampMillisecondArray, TimestampNanosecondArray, UInt64Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, Field, Fields, Float16Type, Int32Type, Schema,
};
use serde_json::{Value, json};

use super::*;

type F16 = <Float16Type as ArrowPrimitiveType>::Native;
use crate::cli::args::OutputFormat;
use crate::cli::print::print_batches;

fn field(name: &str, array: &ArrayRef) -> Field {
    Field::new(name, array.data_type().clone(), true)
}

fn json_of(array: ArrayRef) -> Vec<Value> {
    column_to_json(&field("c", &array), array.as_ref()).unwrap()
}

#[test]
fn integers_are_numbers() {
    let v = json_of(Arc::new(Int8Array::from(vec![Some(-8), None])));
    assert_eq!(v, [json!(-8), Value::Null]);
    let v = json_of(Arc::new(Int64Array::from(vec![i64::MIN, i64::MAX])));
    assert_eq!(v, [json!(i64::MIN), json!(i64::MAX)]);
    assert_eq!(
        json_of(Arc::new(UInt64Array::from(vec![u64::MAX]))),
        [json!(u64::MAX)]
    );
}

#[test]
fn floats_are_numbers_except_non_finite() {
    let v = json_of(Arc::new(Float64Array::from(vec![
        1.5,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ])));
    assert_eq!(
        v,
        [
            json!(1.5),
            json!("NaN"),
            json!("Infinity"),
            json!("-Infinity")
        ]
    );
    let v = json_of(Arc::new(Float32Array::from(vec![
        Some(0.1f32),
        None,
        Some(f32::NAN),
    ])));
    assert_eq!(serde_json::to_string(&v).unwrap(), "[0.1,null,\"NaN\"]");
    let v = json_of(Arc::new(Float16Array::from(vec![
        Some(F16::from_f32(2.5)),
        None,
    ])));
    assert_eq!(v, [json!(2.5), Value::Null]);
}

#[test]
fn booleans_and_nulls() {
    let v = json_of(Arc::new(BooleanArray::from(vec![
        Some(true),
        None,
        Some(false),
    ])));
    assert_eq!(v, [json!(true), Value::Null, json!(false)]);
    assert_eq!(
        json_of(Arc::new(NullArray::new(2))),
        [Value::Null, Value::Null]
    );
}

#[test]
fn decimals_are_strings_with_scale() {
    let a = Decimal128Array::from(vec![Some(12345), Some(-5), None])
        .with_precision_and_scale(10, 2)
        .unwrap();
    assert_eq!(
        json_of(Arc::new(a)),
        [json!("123.45"), json!("-0.05"), Value::Null]
    );
}

#[test]
fn dates_and_timestamps_are_iso() {
    assert_eq!(
        json_of(Arc::new(Date32Array::from(vec![19723]))),
        [json!("2024-01-01")]
    );
    let d64 = Date64Array::from(vec![1_704_067_200_000]);
    assert_eq!(json_of(Arc::new(d64)), [json!("2024-01-01")]);
    let ts = TimestampMicrosecondArray::from(vec![1_704_103_200_000_000, 1_704_103_200_123_456]);
    assert_eq!(
        json_of(Arc::new(ts)),
        [
            json!("2024-01-01T10:00:00"),
            json!("2024-01-01T10:00:00.123456")
        ]
    );
    let tz = TimestampMicrosecondArray::from(vec![1_704_103_200_000_000]).with_timezone("UTC");
    assert_eq!(json_of(Arc::new(tz)), [json!("2024-01-01T10:00:00+00:00")]);
    let tz = TimestampMillisecondArray::from(vec![1_704_103_200_000]).with_timezone("+02:00");
    assert_eq!(json_of(Arc::new(tz)), [json!("2024-01-01T12:00:00+02:00")]);
    let ns = TimestampNanosecondArray::from(vec![Some(1), None]);
    assert_eq!(
        json_of(Arc::new(ns)),
        [json!("1970-01-01T00:00:00.000000001"), Value::Null]
    );
}

#[test]
fn times_have_the_unit_digits() {
    let us = Time64MicrosecondArray::from(vec![Some(36_000_000_001), None]);
    assert_eq!(
        json_of(Arc::new(us)),
        [json!("10:00:00.000001"), Value::Null]
    );
    let ns = Time64NanosecondArray::from(vec![3_723_000_000_005]);
    assert_eq!(json_of(Arc::new(ns)), [json!("01:02:03.000000005")]);
    let ms = Time32MillisecondArray::from(vec![61_250]);
    assert_eq!(json_of(Arc::new(ms)), [json!("00:01:01.250")]);
    let s = Time32SecondArray::from(vec![86_399]);
    assert_eq!(json_of(Arc::new(s)), [json!("23:59:59")]);
}

#[test]
fn strings_of_every_layout() {
    let expected = [json!("a\"b"), Value::Null];
    assert_eq!(
        json_of(Arc::new(StringArray::from(vec![Some("a\"b"), None]))),
        expected
    );
    assert_eq!(
        json_of(Arc::new(LargeStringArray::from(vec![Some("a\"b"), None]))),
        expected
    );
    let view = StringViewArray::from(vec![Some("a\"b"), None]);
    assert_eq!(json_of(Arc::new(view)), expected);
    let long = "a string longer than twelve bytes";
    assert_eq!(
        json_of(Arc::new(StringViewArray::from(vec![long]))),
        [json!(long)]
    );
}

#[test]
fn binaries_are_lowercase_hex() {
    let bytes: Vec<Option<&[u8]>> = vec![Some(&[0xde, 0xad, 0x01]), None, Some(&[])];
    let expected = [json!("dead01"), Value::Null, json!("")];
    assert_eq!(
        json_of(Arc::new(BinaryArray::from(bytes.clone()))),
        expected
    );
    assert_eq!(
        json_of(Arc::new(LargeBinaryArray::from(bytes.clone()))),
        expected
    );
    assert_eq!(json_of(Arc::new(BinaryViewArray::from(bytes))), expected);
    let fixed = FixedSizeBinaryArray::try_from_iter([[0xabu8, 0x0f]].into_iter()).unwrap();
    assert_eq!(json_of(Arc::new(fixed)), [json!("ab0f")]);
}

#[test]
fn uuids_are_canonical_when_the_field_says_so() {
    let bytes: [u8; 16] = [
        0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40,
        0x00,
    ];
    let array: ArrayRef =
        Arc::new(FixedSizeBinaryArray::try_from_iter([bytes].into_iter()).unwrap());
    let metadata = HashMap::from([(EXTENSION_NAME_KEY.to_string(), "arrow.uuid".to_string())]);
    let uuid_field = field("u", &array).with_metadata(metadata);
    assert_eq!(
        column_to_json(&uuid_field, array.as_ref()).unwrap(),
        [json!("123e4567-e89b-12d3-a456-426614174000")]
    );
    assert_eq!(json_of(array), [json!("123e4567e89b12d3a456426614174000")]);
}

#[test]
fn lists_are_arrays() {
    let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1), None]),
        None,
        Some(vec![]),
    ]);
    assert_eq!(
        json_of(Arc::new(list)),
        [json!([1, null]), Value::Null, json!([])]
    );
    let large = LargeListArray::from_iter_primitive::<Int32Type, _, _>(vec![Some(vec![Some(7)])]);
    assert_eq!(json_of(Arc::new(large)), [json!([7])]);
    let fixed = FixedSizeListArray::from_iter_primitive::<Int32Type, _, _>(
        vec![Some(vec![Some(1), Some(2)]), None],
        2,
    );
    assert_eq!(json_of(Arc::new(fixed)), [json!([1, 2]), Value::Null]);
}

#[test]
fn sliced_lists_use_their_offsets() {
    let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1)]),
        Some(vec![Some(2), Some(3)]),
    ]);
    assert_eq!(json_of(Arc::new(list.slice(1, 1))), [json!([2, 3])]);
}

#[test]
fn structs_are_objects() {
    let a: ArrayRef = Arc::new(Int32Array::from(vec![1, 2]));
    let b: ArrayRef = Arc::new(StringArray::from(vec![Some("x"), None]));
    let s = StructArray::try_new(
        Fields::from(vec![field("a", &a), field("b", &b)]),
        vec![a, b],
        Some(vec![true, false].into()),
    )
    .unwrap();
    assert_eq!(
        json_of(Arc::new(s)),
        [json!({"a": 1, "b": "x"}), Value::Null]
    );
}

fn map_array(keys: ArrayRef, values: ArrayRef, offsets: Vec<i32>) -> MapArray {
    let entries = StructArray::try_new(
        Fields::from(vec![
            Field::new("key", keys.data_type().clone(), false),
            field("value", &values),
        ]),
        vec![keys, values],
        None,
    )
    .unwrap();
    let entries_field = Arc::new(Field::new("entries", entries.data_type().clone(), false));
    MapArray::try_new(
        entries_field,
        OffsetBuffer::new(offsets.into()),
        entries,
        None,
        false,
    )
    .unwrap()
}

#[test]
fn maps_are_objects_or_pair_arrays() {
    let keys: ArrayRef = Arc::new(StringArray::from(vec!["k1", "k2", "k3"]));
    let values: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(3)]));
    let map = map_array(keys, values, vec![0, 2, 3]);
    assert_eq!(
        json_of(Arc::new(map)),
        [json!({"k1": 1, "k2": null}), json!({"k3": 3})]
    );

    let keys: ArrayRef = Arc::new(Int32Array::from(vec![10]));
    let values: ArrayRef = Arc::new(StringArray::from(vec!["ten"]));
    let map = map_array(keys, values, vec![0, 1]);
    assert_eq!(
        json_of(Arc::new(map)),
        [json!([{"key": 10, "value": "ten"}])]
    );
}

#[test]
fn dictionaries_are_decoded() {
    let dict: DictionaryArray<Int32Type> = vec![Some("a"), None, Some("b"), Some("a")]
        .into_iter()
        .collect();
    assert_eq!(
        json_of(Arc::new(dict)),
        [json!("a"), Value::Null, json!("b"), json!("a")]
    );
}

#[test]
fn other_types_use_arrow_display() {
    let d = DurationSecondArray::from(vec![Some(90), None]);
    let v = json_of(Arc::new(d));
    assert!(v[0].is_string(), "{v:?}");
    assert_eq!(v[1], Value::Null);
    let i = IntervalYearMonthArray::from(vec![14]);
    assert!(json_of(Arc::new(i))[0].is_string());
}

#[test]
fn whole_batch_in_json_and_csv() {
    let id: ArrayRef = Arc::new(Int32Array::from(vec![1, 2]));
    let tags: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1), Some(2)]),
        None,
    ]));
    let ts: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![Some(0), None]));
    let schema = Arc::new(Schema::new(vec![
        field("id", &id),
        field("tags", &tags),
        field("ts", &ts),
    ]));
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![id, tags, ts]).unwrap();
    let render = |format| {
        let mut out = Vec::new();
        print_batches(&mut out, format, &schema, std::slice::from_ref(&batch)).unwrap();
        String::from_utf8(out).unwrap()
    };
    assert_eq!(
        render(OutputFormat::Json),
        "{\"id\":1,\"tags\":[1,2],\"ts\":\"1970-01-01T00:00:00\"}\n\
         {\"id\":2,\"tags\":null,\"ts\":null}\n"
    );
    assert_eq!(
        render(OutputFormat::Csv),
        "id,tags,ts\n1,\"[1,2]\",1970-01-01T00:00:00\n2,,\n"
    );
}

#[test]
fn time_formatting_helper() {
    assert_eq!(format_time(0, 6), "00:00:00.000000");
    assert_eq!(format_time(45_296_789_000, 6), "12:34:56.789000");
}
