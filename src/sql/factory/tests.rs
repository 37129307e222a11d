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
            "as-of-timestamp: 'yesterday' is not a timestamp",
        ),
        (
            ", 'snapshot-id' 'x'",
            "snapshot-id 'x' is not a snapshot id",
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
