//! Checks of the harness itself, on an in-memory table with the Arrow types icefloe produces:
//! the SQL literals must compare with those columns, and rendering must follow the answer
//! files' conventions. No icefloe code runs here.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryViewArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray,
    Float32Array, Int32Array, Int64Array, RecordBatch, StringViewArray, Time64MicrosecondArray,
    TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use serde_json::{Value, json};

use crate::render::{self, Style, json_equal};
use crate::sql_expr;
use crate::support;

const UUID_A: [u8; 16] = [
    0x91, 0x83, 0x31, 0x04, 0xe2, 0x65, 0xa9, 0x9c, 0x5d, 0x67, 0x05, 0x74, 0xeb, 0xb4, 0x02, 0xfc,
];
const UUID_B: [u8; 16] = [0; 16];

fn schema() -> Schema {
    let uuid_metadata =
        HashMap::from([("ARROW:extension:name".to_string(), "arrow.uuid".to_string())]);
    Schema::new(vec![
        Field::new("l", DataType::Int64, true),
        Field::new("i", DataType::Int32, true),
        Field::new("s", DataType::Utf8View, true),
        Field::new("d", DataType::Decimal128(10, 2), true),
        Field::new("dt", DataType::Date32, true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        Field::new(
            "tz",
            DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
            true,
        ),
        Field::new("f", DataType::Float32, true),
        Field::new("flag", DataType::Boolean, true),
        Field::new("u", DataType::FixedSizeBinary(16), true).with_metadata(uuid_metadata),
        Field::new("b", DataType::BinaryView, true),
        Field::new("t", DataType::Time64(TimeUnit::Microsecond), true),
    ])
}

fn columns() -> Vec<ArrayRef> {
    let uuids = FixedSizeBinaryArray::try_from_sparse_iter_with_size(
        [Some(UUID_A.to_vec()), Some(UUID_B.to_vec()), None].into_iter(),
        16,
    )
    .unwrap();
    vec![
        Arc::new(Int64Array::from(vec![Some(i64::MIN), Some(i64::MAX), None])),
        Arc::new(Int32Array::from(vec![Some(25), Some(-3), None])),
        Arc::new(StringViewArray::from(vec![
            Some("eu-central"),
            Some(""),
            None,
        ])),
        Arc::new(
            Decimal128Array::from(vec![Some(51386), Some(-5), None])
                .with_precision_and_scale(10, 2)
                .unwrap(),
        ),
        Arc::new(Date32Array::from(vec![Some(19027), Some(-25567), None])),
        // 2024-07-06T07:12:29.919310 and 1969-12-31T23:59:59.999999
        Arc::new(TimestampMicrosecondArray::from(vec![
            Some(1_720_249_949_919_310),
            Some(-1),
            None,
        ])),
        // 2024-03-10T07:27:53+00:00 and 1970-01-01T00:00:00+00:00
        Arc::new(
            TimestampMicrosecondArray::from(vec![Some(1_710_055_673_000_000), Some(0), None])
                .with_timezone("+00:00"),
        ),
        Arc::new(Float32Array::from(vec![
            Some(-4.75),
            Some(f32::NAN),
            Some(1.1),
        ])),
        Arc::new(BooleanArray::from(vec![Some(true), Some(false), None])),
        Arc::new(uuids),
        Arc::new(BinaryViewArray::from(vec![
            Some(&[0x7d, 0x02, 0xb0][..]),
            Some(&[][..]),
            None,
        ])),
        // 00:00:36.685838
        Arc::new(Time64MicrosecondArray::from(vec![
            Some(36_685_838),
            Some(0),
            None,
        ])),
    ]
}

async fn context() -> SessionContext {
    let schema = Arc::new(schema());
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns()).unwrap();
    let ctx = SessionContext::new();
    let table = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    ctx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn literals_compare_with_icefloe_column_types() {
    let ctx = context().await;
    let cases = [
        (
            json!({"op": "eq", "column": "l", "type": "long", "value": i64::MIN}),
            1,
        ),
        (
            json!({"op": "lt", "column": "i", "type": "int", "value": 25}),
            1,
        ),
        (
            json!({"op": "eq", "column": "s", "type": "string", "value": "eu-central"}),
            1,
        ),
        (
            json!({"op": "starts_with", "column": "s", "type": "string", "value": "eu"}),
            1,
        ),
        (
            json!({"op": "eq", "column": "d", "type": "decimal(10, 2)", "value": "513.86"}),
            1,
        ),
        (
            json!({"op": "gte", "column": "dt", "type": "date", "value": "2022-02-04"}),
            1,
        ),
        (
            json!({"op": "eq", "column": "ts", "type": "timestamp", "value": "2024-07-06T07:12:29.919310"}),
            1,
        ),
        (
            json!({"op": "lt", "column": "ts", "type": "timestamp", "value": "1970-01-01T00:00:00"}),
            1,
        ),
        (
            json!({"op": "eq", "column": "tz", "type": "timestamptz", "value": "2024-03-10T07:27:53+00:00"}),
            1,
        ),
        (
            json!({"op": "eq", "column": "f", "type": "float", "value": -4.75}),
            1,
        ),
        (json!({"op": "is_nan", "column": "f", "type": "float"}), 1),
        (
            json!({"op": "eq", "column": "flag", "type": "boolean", "value": true}),
            1,
        ),
        (
            json!({"op": "eq", "column": "u", "type": "uuid", "value": "91833104-e265-a99c-5d67-0574ebb402fc"}),
            1,
        ),
        (
            json!({"op": "in", "column": "b", "type": "binary", "value": ["7d02b0", "45fb"]}),
            1,
        ),
        (
            json!({"op": "eq", "column": "b", "type": "binary", "value": ""}),
            1,
        ),
    ];
    let mut failures = Vec::new();
    for (expr, expected) in cases {
        let sql = sql_expr::filter(&expr).unwrap();
        match support::count_rows(&ctx, Some(&sql)).await {
            Ok(n) if n == expected => {}
            other => failures.push(format!("{sql}: expected {expected}, got {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregates_render_in_oracle_conventions() {
    let ctx = context().await;
    let cases: [(&str, &str, &str, Value); 12] = [
        ("l", "long", "sum", json!("-1")),
        ("l", "long", "min", json!(i64::MIN)),
        ("d", "decimal(10, 2)", "sum", json!("513.81")),
        ("dt", "date", "min", json!("1900-01-01")),
        (
            "ts",
            "timestamp",
            "min",
            json!("1969-12-31T23:59:59.999999"),
        ),
        (
            "tz",
            "timestamptz",
            "max",
            json!("2024-03-10T07:27:53+00:00"),
        ),
        ("f", "float", "max", json!(1.1)),
        ("f", "float", "nan_count", json!(1)),
        ("flag", "boolean", "count_true", json!(1)),
        (
            "u",
            "uuid",
            "max",
            json!("91833104-e265-a99c-5d67-0574ebb402fc"),
        ),
        ("b", "binary", "max", json!("7d02b0")),
        ("t", "time", "max", json!("00:00:36.685838")),
    ];
    let mut failures = Vec::new();
    for (column, ty, key, expected) in cases {
        let select = sql_expr::oracle_aggregate(column, ty, key).unwrap();
        let sql = format!("SELECT {select} FROM t");
        match support::scalar(&ctx, &sql, Style::PYICEBERG).await {
            Ok(got) if json_equal(&expected, &render::as_iceberg_type(got.clone(), ty)) => {}
            other => failures.push(format!("{sql}: expected {expected}, got {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_render_in_external_conventions() {
    let ctx = context().await;
    let rows = support::rows(
        &ctx,
        "SELECT * FROM t ORDER BY l ASC NULLS LAST",
        Style::EXTERNAL,
    )
    .await
    .unwrap();
    let expected = json!([
        [
            i64::MIN,
            25,
            "eu-central",
            "513.86",
            "2022-02-04",
            "2024-07-06T07:12:29.919310",
            "2024-03-10T07:27:53+00:00",
            -4.75,
            true,
            "91833104-e265-a99c-5d67-0574ebb402fc",
            "hex:7d02b0",
            "00:00:36.685838"
        ],
        [
            i64::MAX,
            -3,
            "",
            "-0.05",
            "1900-01-01",
            "1969-12-31T23:59:59.999999",
            "1970-01-01T00:00:00+00:00",
            "NaN",
            false,
            "00000000-0000-0000-0000-000000000000",
            "hex:",
            "00:00:00"
        ],
        [
            null, null, null, null, null, null, null, 1.1, null, null, null, null
        ]
    ]);
    assert!(
        json_equal(&expected, &Value::from(rows.clone())),
        "{rows:?}"
    );
}
