//! `OPTIONS` choosing the table state, on the in-repo fixture `pyiceberg/wh1/db/orders` (two
//! appends of ten rows each).

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Int64Type;
use datafusion::prelude::SessionContext;

const FIRST: i64 = 5_717_840_931_077_797_238;

fn warehouse() -> String {
    format!(
        "{}/tests/fixtures/pyiceberg/wh1",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Creates `t` with the extra options and counts its rows.
async fn count_with(options: &str) -> Result<i64, String> {
    let ctx = SessionContext::new();
    crate::sql::register(&ctx);
    let wh = warehouse();
    let create = format!(
        "CREATE EXTERNAL TABLE t STORED AS ICEBERG LOCATION '{wh}/db/orders' \
         OPTIONS ('relocate' 'file:///data/lake/wh1={wh}'{options})"
    );
    ctx.sql(&create).await.map_err(|e| e.to_string())?;
    let batches = ctx
        .sql("SELECT count(*) FROM t")
        .await
        .map_err(|e| e.to_string())?
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    Ok(batches[0].column(0).as_primitive::<Int64Type>().value(0))
}

#[tokio::test]
async fn each_option_names_a_state() {
    let cases = [
        (String::new(), 20),
        (format!(", 'snapshot-id' '{FIRST}'"), 10),
        (", 'ref' 'main'".to_string(), 20),
        (", 'as-of-timestamp' '1796049758887'".to_string(), 10),
        (
            ", 'as-of-timestamp' '2026-11-30 14:42:38.887'".to_string(),
            10,
        ),
        (
            ", 'as-of-timestamp' '2026-11-30T16:42:38.921+02:00'".to_string(),
            20,
        ),
    ];
    for (options, rows) in cases {
        assert_eq!(count_with(&options).await, Ok(rows), "{options}");
    }
}

#[tokio::test]
async fn bad_options_are_named() {
    let cases = [
        (", 'ref' 'main', 'snapshot-id' '1'", "at most one of"),
        (
            ", 'as-of-timestamp' 'yesterday'",
            "as-of-timestamp: 'yesterday': is not a timestamp",
        ),
        (
            ", 'snapshot-id' 'x'",
            "snapshot-id 'x': is not a snapshot id",
        ),
        (", 'ref' 'nope'", "ref 'nope'"),
        (
            ", 'as-of-timestamp' '2020-01-01'",
            "no snapshot as of 2020-01-01T00:00:00.000Z",
        ),
    ];
    for (options, expected) in cases {
        let err = count_with(options).await.unwrap_err();
        assert!(err.contains(expected), "{options}: {err}");
    }
}

/// The first metadata file of the table created at `dir/t` by `create`.
async fn created(dir: &std::path::Path, create: &str) -> Result<serde_json::Value, String> {
    let ctx = SessionContext::new();
    crate::sql::register(&ctx);
    // DataFusion gives `TIMESTAMP WITH TIME ZONE` the session's zone, none by default.
    ctx.sql("SET datafusion.execution.time_zone = '+00:00'")
        .await
        .unwrap();
    ctx.sql(create).await.map_err(|e| e.to_string())?;
    let batches = ctx
        .sql("SELECT count(*) FROM t")
        .await
        .map_err(|e| e.to_string())?
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(batches[0].column(0).as_primitive::<Int64Type>().value(0), 0);
    let bytes = std::fs::read(dir.join("t/metadata/v1.metadata.json")).unwrap();
    Ok(serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn a_column_list_creates_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let create = format!(
        "CREATE EXTERNAL TABLE t (id BIGINT NOT NULL, name VARCHAR, \
         order_ts TIMESTAMP WITH TIME ZONE, category VARCHAR, amount DECIMAL(10, 2), d DATE) \
         STORED AS ICEBERG LOCATION '{}/t' PARTITIONED BY (category) \
         OPTIONS ('partitioning' 'day(order_ts), bucket(16, id), truncate(4, name)', \
         'format-version' '1', 'write.target-file-size-bytes' '1000')",
        dir.path().display()
    );
    let v = created(dir.path(), &create).await.unwrap();
    assert_eq!(v["format-version"], serde_json::json!(1));
    let fields: Vec<(i64, &str, &str, bool)> = v["schemas"][0]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_i64().unwrap(),
                f["name"].as_str().unwrap(),
                f["type"].as_str().unwrap(),
                f["required"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        fields,
        [
            (1, "id", "long", true),
            (2, "name", "string", false),
            (3, "order_ts", "timestamptz", false),
            (4, "category", "string", false),
            (5, "amount", "decimal(10, 2)", false),
            (6, "d", "date", false),
        ]
    );
    let spec: Vec<(i64, i64, &str, &str)> = v["partition-specs"][0]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["source-id"].as_i64().unwrap(),
                f["field-id"].as_i64().unwrap(),
                f["name"].as_str().unwrap(),
                f["transform"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        spec,
        [
            (4, 1000, "category", "identity"),
            (3, 1001, "order_ts_day", "day"),
            (1, 1002, "id_bucket", "bucket[16]"),
            (2, 1003, "name_trunc", "truncate[4]"),
        ]
    );
    assert_eq!(
        v["properties"],
        serde_json::json!({"write.target-file-size-bytes": "1000"})
    );
}

#[tokio::test]
async fn creation_errors_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let with = |options: &str| {
        format!(
            "CREATE EXTERNAL TABLE t (id BIGINT, d DATE) STORED AS ICEBERG \
             LOCATION '{}/t' OPTIONS ({options})",
            dir.path().display()
        )
    };
    for (options, expected) in [
        (
            "'partitioning' 'hour(d)'",
            "transform hour is not valid for column 'd' of type date",
        ),
        ("'partitioning' 'day(nope)'", "no column 'nope'"),
        (
            "'partitioning' 'bucket(x, id)'",
            "'x' is not a positive integer",
        ),
        ("'format-version' '7'", "table format version 7"),
    ] {
        let err = created(dir.path(), &with(options)).await.unwrap_err();
        assert!(err.contains(expected), "{options}: {err}");
        assert!(!dir.path().join("t").exists(), "nothing written");
    }
    // A column list for an existing table stays an error.
    let wh = warehouse();
    let ctx = SessionContext::new();
    crate::sql::register(&ctx);
    let err = ctx
        .sql(&format!(
            "CREATE EXTERNAL TABLE o (x INT) STORED AS ICEBERG LOCATION '{wh}/db/orders' \
             OPTIONS ('relocate' 'file:///data/lake/wh1={wh}')"
        ))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("brings its own schema"), "{err}");
}
