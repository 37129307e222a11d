//! [`sql`] and [`register`] as an embedder sees them.

use super::test_support::{ORDERS_FIRST, row, session};
use super::*;

#[tokio::test]
async fn sql_runs_one_statement_at_a_time() {
    let ctx = session().await;
    let err = sql(&ctx, "SELECT 1; SELECT 2").await.unwrap_err();
    assert!(err.to_string().contains("one SQL statement"), "{err}");
    let err = sql(&ctx, "  -- nothing\n").await.unwrap_err();
    assert!(err.to_string().contains("no SQL statement"), "{err}");
    let err = sql(&ctx, "SELEC 1").await.unwrap_err();
    assert!(err.to_string().contains("SELEC"), "{err}");
}

#[tokio::test]
async fn sql_runs_ddl_and_honors_the_session_dialect() {
    let ctx = session().await;
    sql(
        &ctx,
        "CREATE VIEW first AS SELECT * FROM orders VERSION AS OF 5717840931077797238",
    )
    .await
    .unwrap();
    assert_eq!(row(&ctx, "SELECT count(*) FROM first").await.unwrap(), [10]);
    sql(&ctx, "SET datafusion.sql_parser.dialect = 'PostgreSQL'")
        .await
        .unwrap();
    let query = format!("SELECT count(*)::BIGINT FROM orders VERSION AS OF {ORDERS_FIRST}");
    assert_eq!(row(&ctx, &query).await.unwrap(), [10]);
    sql(&ctx, "SET datafusion.sql_parser.dialect = 'MySQL'")
        .await
        .unwrap();
    let query = "SELECT count(*) FROM `orders` FOR SYSTEM_TIME AS OF '2026-11-30 14:42:38.900'";
    assert_eq!(row(&ctx, query).await.unwrap(), [10]);
}

#[tokio::test]
async fn explain_shows_the_scan_of_the_asked_table() {
    let ctx = session().await;
    let query = format!("EXPLAIN SELECT order_id FROM orders VERSION AS OF {ORDERS_FIRST} AS o");
    let batches = sql(&ctx, &query).await.unwrap().collect().await.unwrap();
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string();
    assert!(text.contains("TableScan: orders"), "{text}");
    assert!(text.contains("SubqueryAlias: o"), "{text}");
}

#[test]
fn sql_future_is_send() {
    // Embedders spawn queries on multi-threaded runtimes: the future must be `Send`.
    fn assert_send<T: Send>(_: &T) {}
    let ctx = datafusion::prelude::SessionContext::new();
    let future = super::sql(&ctx, "SELECT 1");
    assert_send(&future);
}
