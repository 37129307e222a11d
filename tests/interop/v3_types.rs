//! The v3 types icefloe writes, read by the other engines: PyIceberg 0.12 reads a table of
//! `timestamp_ns`, `timestamptz_ns` and `unknown` columns partitioned by `day` and `hour` of
//! them (values to the nanosecond, partition tuples); DuckDB's iceberg extension reads a table
//! of `timestamp_ns` and `variant` (values, the variants as JSON) and one of `geometry` (the WKB
//! as DuckDB's GEOMETRY, shown as WKT). PyIceberg 0.12 has no
//! `variant` and DuckDB 1.5.5 no `timestamptz_ns`, hence two tables. The Python side, with the
//! expected values, is `tests/interop/v3_types.py`.

use std::path::Path;

use super::{Warehouse, interop_py_script, python, run, warehouse};

/// The statements; their values are the ones v3_types.py expects.
const STATEMENTS: &[&str] = &[
    "CREATE TABLE db.ns (id INT, ts TIMESTAMP(9), tz TIMESTAMP(9) WITH TIME ZONE, u UNKNOWN) \
     TBLPROPERTIES ('format-version' = '3') PARTITION BY (day(ts), hour(tz))",
    "INSERT INTO db.ns VALUES \
     (1, '2024-01-01T00:00:00.000000001', '2024-01-01T23:59:59.999999999+00:00', NULL), \
     (2, '2024-01-01T12:34:56.123456789', '2024-01-02T00:00:00+00:00', NULL), \
     (3, '2024-01-03T00:00:00.5', NULL, NULL)",
    "CREATE TABLE db.variant (id INT, ts TIMESTAMP(9), v VARIANT) \
     TBLPROPERTIES ('format-version' = '3') PARTITION BY (day(ts))",
    "INSERT INTO db.variant VALUES \
     (1, '2024-01-01T00:00:00.000000001', parse_json('{\"b\": [1, 2.5, \"x\"], \"a\": null, \"n\": {\"k\": true}}')), \
     (2, '2024-01-03T12:34:56.123456789', NULL)",
    "INSERT INTO db.variant VALUES (3, '2024-01-03T00:00:00', parse_json('42')), \
     (4, '2024-01-04T00:00:00', parse_json('\"text\"'))",
    // POINT(1 2) little-endian, LINESTRING(0 0, 1 1) big-endian (WKB).
    "CREATE TABLE db.geo (id INT, g GEOMETRY) TBLPROPERTIES ('format-version' = '3')",
    "INSERT INTO db.geo VALUES (1, X'0101000000000000000000F03F0000000000000040'), \
     (2, X'000000000200000002000000000000000000000000000000003FF00000000000003FF0000000000000'), \
     (3, NULL)",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v3_types_icefloe_writes_read_the_same_in_pyiceberg_and_duckdb() {
    let Some(python) = python("v3_types_icefloe_writes_read_the_same_in_pyiceberg_and_duckdb")
    else {
        return;
    };
    let Warehouse {
        dir: _dir,
        path: warehouse,
        ctx,
        ..
    } = warehouse("types").await;
    for statement in STATEMENTS {
        run(&ctx, statement).await;
    }
    assert!(
        interop_py_script(&python, Path::new("v3_types.py"), &["check", &warehouse]),
        "PyIceberg or DuckDB reads icefloe's v3 types differently (output above)"
    );
}
