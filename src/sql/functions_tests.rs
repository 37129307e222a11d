//! `iceberg_scan` and `iceberg_incremental` over in-repo fixtures.

use datafusion::prelude::SessionContext;

use crate::sql::test_support::{ORDERS_FIRST, ORDERS_SECOND, WRITTEN_AT, error, row, warehouse};

fn session() -> SessionContext {
    let ctx = SessionContext::new();
    crate::sql::register(&ctx);
    ctx
}

/// `'<location>'` of a warehouse table and its relocation argument.
fn args(table: &str) -> String {
    format!(
        "'{}/db/{table}', '{WRITTEN_AT}={}'",
        warehouse(),
        warehouse()
    )
}

/// The location and relocation argument, with `version` between them.
fn args_at(table: &str, version: &str) -> String {
    format!(
        "'{}/db/{table}', {version}, '{WRITTEN_AT}={}'",
        warehouse(),
        warehouse()
    )
}

#[tokio::test]
async fn iceberg_scan_reads_current_snapshots_refs_and_tags() {
    let ctx = session();
    let cases = [
        (
            format!(
                "count(*), sum(order_id) FROM iceberg_scan({})",
                args("orders")
            ),
            [20, 210],
        ),
        (
            format!(
                "count(*), sum(order_id) FROM iceberg_scan({})",
                args_at("orders", &ORDERS_FIRST.to_string())
            ),
            [10, 55],
        ),
        (
            format!(
                "count(*), sum(order_id) FROM iceberg_scan({})",
                args_at("orders", "'main'")
            ),
            [20, 210],
        ),
        (
            format!(
                "count(*), sum(id) FROM iceberg_scan({})",
                args_at("refs", "'v1'")
            ),
            [10, 45],
        ),
        (
            format!(
                "count(*), sum(id) FROM iceberg_scan({})",
                args_at("refs", "'dev'")
            ),
            [20, 690],
        ),
        (
            format!(
                "count(*), sum(s.id) FROM iceberg_scan({}) AS s",
                args_at("refs", "'audit'")
            ),
            [10, 45],
        ),
    ];
    for (select, expected) in cases {
        let query = format!("SELECT {select}");
        assert_eq!(row(&ctx, &query).await.unwrap(), expected, "{query}");
    }
}

#[tokio::test]
async fn iceberg_scan_of_a_metadata_file_and_an_external_table() {
    let ctx = session();
    let file = format!(
        "{}/db/orders/metadata/00001-5189159d-5812-48e1-8275-e7336a371f7b.metadata.json",
        warehouse()
    );
    let query = format!(
        "SELECT count(*) FROM iceberg_scan('{file}', '{WRITTEN_AT}={}')",
        warehouse()
    );
    assert_eq!(row(&ctx, &query).await.unwrap(), [10]);

    let dir = format!(
        "{}/tests/fixtures/external/impala_v2_delete_positional",
        env!("CARGO_MANIFEST_DIR")
    );
    let old = "/test-warehouse/iceberg_test/hadoop_catalog/ice/iceberg_v2_delete_positional";
    let query = format!(
        "SELECT count(*), sum(id) FROM iceberg_scan('{dir}', 6816997371555012807, '{old}={dir}')"
    );
    assert_eq!(row(&ctx, &query).await.unwrap(), [3, 6]);
}

#[tokio::test]
async fn iceberg_incremental_reads_appended_rows() {
    let ctx = session();
    let cases = [
        format!(
            "iceberg_incremental({})",
            args_at("orders", &ORDERS_FIRST.to_string())
        ),
        format!(
            "iceberg_incremental({})",
            args_at("orders", &format!("{ORDERS_FIRST}, {ORDERS_SECOND}"))
        ),
        format!(
            "iceberg_incremental({})",
            args_at("orders", &format!("{ORDERS_FIRST}, 'main'"))
        ),
    ];
    for function in cases {
        let query = format!("SELECT count(*), sum(order_id) FROM {function}");
        assert_eq!(row(&ctx, &query).await.unwrap(), [10, 155], "{query}");
    }
    let empty = format!(
        "SELECT count(*) FROM iceberg_incremental({})",
        args_at("orders", &format!("{ORDERS_SECOND}, {ORDERS_SECOND}"))
    );
    assert_eq!(row(&ctx, &empty).await.unwrap(), [0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loads_inside_a_multi_threaded_runtime() {
    let ctx = session();
    let query = format!("SELECT count(*) FROM iceberg_scan({})", args("orders"));
    assert_eq!(row(&ctx, &query).await.unwrap(), [20]);
}

#[tokio::test]
async fn errors_name_the_location_and_the_request() {
    let ctx = session();
    let missing = format!("{}/db/ghost", warehouse());
    let cases = [
        (format!("iceberg_scan('{missing}')"), vec![missing.as_str()]),
        (
            format!("iceberg_scan({})", args_at("orders", "42")),
            vec!["iceberg_scan(", "db/orders", "snapshot 42"],
        ),
        (
            format!("iceberg_scan({})", args_at("refs", "'nope'")),
            vec!["db/refs", "ref 'nope'"],
        ),
        (
            format!("iceberg_incremental({})", args_at("refs", "0")),
            vec!["iceberg_incremental(", "db/refs"],
        ),
        (
            format!(
                "iceberg_incremental({})",
                args_at("refs", &format!("{}, 'v2'", 7_019_671_183_757_973_925_i64))
            ),
            vec!["iceberg_incremental(", "v2"],
        ),
        ("iceberg_scan()".to_string(), vec!["usage: iceberg_scan("]),
        (
            "iceberg_scan(1)".to_string(),
            vec!["location must be a string"],
        ),
        (
            "iceberg_scan('a', 1, 2)".to_string(),
            vec!["usage: iceberg_scan("],
        ),
        (
            "iceberg_incremental('a')".to_string(),
            vec!["usage: iceberg_incremental("],
        ),
        (
            "iceberg_incremental('a', 'b')".to_string(),
            vec!["b is not a snapshot id"],
        ),
        ("iceberg_scan('a', 'x=')".to_string(), vec!["empty side"]),
        (
            "iceberg_scan('a', 1.5)".to_string(),
            vec!["must be a snapshot id or a ref name"],
        ),
    ];
    for (function, expected) in cases {
        let message = error(&ctx, &format!("SELECT * FROM {function}")).await;
        for part in expected {
            assert!(message.contains(part), "{function}: {message}");
        }
    }
}
