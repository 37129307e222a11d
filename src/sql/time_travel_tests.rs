//! Version clauses over `db.orders` (two appends: 10 rows with sum(order_id) 55, then 20 rows
//! with 210) and `db.refs`, against the PyIceberg oracle's answers.

use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::MemTable;
use datafusion::prelude::SessionContext;

use super::*;
use crate::sql::test_support::{
    ORDERS_FIRST, ORDERS_FIRST_MS, ORDERS_SECOND, ORDERS_SECOND_MS, error, row, session,
};

const COUNT_SUM: &str = "SELECT count(*), sum(order_id) FROM orders";

#[tokio::test]
async fn each_syntax_form_reads_the_asked_snapshot() {
    let ctx = session().await;
    let first = vec![10, 55];
    let second = vec![20, 210];
    let cases = [
        // Between the two commits (the oracle's time_travel entries).
        ("FOR SYSTEM_TIME AS OF '2026-11-30 14:42:38.900'", &first),
        ("FOR SYSTEM_TIME AS OF '2026-11-30T14:42:38.886Z'", &first),
        (
            "TIMESTAMP AS OF TIMESTAMP '2026-11-30 14:42:38.920'",
            &first,
        ),
        ("TIMESTAMP AS OF '2026-11-30 14:42:38.921'", &second),
        ("TIMESTAMP AS OF '2026-11-30T15:42:38.887+01:00'", &first),
        ("TIMESTAMP AS OF 1796049758920", &first),
        ("TIMESTAMP AS OF 1796049758920 + 1", &second),
        ("TIMESTAMP AS OF to_timestamp_millis(1796049758886)", &first),
        // The fixture was written in late 2026: a century ahead of any clock is after it.
        ("TIMESTAMP AS OF now() + INTERVAL '100 years'", &second),
        (
            "TIMESTAMP AS OF TIMESTAMP '2026-11-30 15:42:38.900+01:00'",
            &first,
        ),
        (
            "FOR SYSTEM_TIME AS OF CAST('2026-11-30 14:42:38.950' AS TIMESTAMP) - INTERVAL '40' MILLISECOND",
            &first,
        ),
        ("TIMESTAMP AS OF DATE '2027-01-01'", &second),
        ("VERSION AS OF 5717840931077797238", &first),
        ("VERSION AS OF 2307351587894854234", &second),
        ("VERSION AS OF 'main'", &second),
        ("VERSION AS OF '5717840931077797238'", &first),
        ("AT(VERSION => 5717840931077797238)", &first),
        ("AT(TIMESTAMP => 1796049758900)", &first),
    ];
    for (clause, expected) in cases {
        let query = format!("{COUNT_SUM} {clause}");
        assert_eq!(&row(&ctx, &query).await.unwrap(), expected, "{query}");
    }
    assert_eq!(row(&ctx, COUNT_SUM).await.unwrap(), second);
    let edges = [
        (ORDERS_FIRST_MS, &first),
        (ORDERS_SECOND_MS - 1, &first),
        (ORDERS_SECOND_MS, &second),
    ];
    for (ms, expected) in edges {
        let query = format!("{COUNT_SUM} FOR SYSTEM_TIME AS OF {ms}");
        assert_eq!(&row(&ctx, &query).await.unwrap(), expected, "{query}");
    }
}

#[tokio::test]
async fn aliases_and_qualified_columns_survive() {
    let ctx = session().await;
    let v1 = format!("VERSION AS OF {ORDERS_FIRST}");
    let queries = [
        format!("SELECT count(o.order_id) FROM orders {v1} AS o WHERE o.order_id > 5"),
        format!("SELECT count(orders.order_id) FROM orders {v1} WHERE orders.order_id > 5"),
        format!("SELECT count(*) FROM public.orders {v1} o WHERE order_id > 5"),
    ];
    for query in queries {
        assert_eq!(row(&ctx, &query).await.unwrap(), [5], "{query}");
    }
    let join = format!(
        "SELECT count(*) FROM orders AS now JOIN orders {v1} AS old ON now.order_id = old.order_id"
    );
    assert_eq!(row(&ctx, &join).await.unwrap(), [10]);
    let union = format!(
        "SELECT count(*) FROM (SELECT order_id FROM orders VERSION AS OF {ORDERS_SECOND} \
         EXCEPT SELECT order_id FROM orders {v1})"
    );
    assert_eq!(row(&ctx, &union).await.unwrap(), [10]);
}

#[tokio::test]
async fn refs_and_tags_through_version_as_of() {
    let ctx = session().await;
    let cases = [
        ("'v1'", [10, 45]),
        ("'v2'", [20, 190]),
        ("'dev'", [20, 690]),
        ("'audit'", [10, 45]),
        ("'main'", [30, 435]),
    ];
    for (version, expected) in cases {
        let query = format!("SELECT count(*), sum(id) FROM refs VERSION AS OF {version}");
        assert_eq!(row(&ctx, &query).await.unwrap(), expected, "{query}");
    }
}

#[tokio::test]
async fn resolution_errors_name_the_table_and_the_request() {
    let ctx = session().await;
    let cases = [
        (
            "orders VERSION AS OF 42",
            vec!["orders", "VERSION AS OF 42", "snapshot 42"],
        ),
        ("orders VERSION AS OF -42", vec!["orders", "snapshot -42"]),
        (
            "refs VERSION AS OF 'nope'",
            vec!["refs", "'nope'", "ref 'nope'"],
        ),
        (
            "orders FOR SYSTEM_TIME AS OF '2020-01-01'",
            vec!["orders", "2020-01-01T00:00:00.000Z"],
        ),
        (
            "orders TIMESTAMP AS OF 1796049758885",
            vec!["orders", "1796049758885"],
        ),
    ];
    for (from, expected) in cases {
        let message = error(&ctx, &format!("SELECT * FROM {from}")).await;
        for part in expected {
            assert!(message.contains(part), "{from}: {message}");
        }
    }
}

#[tokio::test]
async fn bad_clauses_are_plan_errors() {
    let ctx = session().await;
    let cases = [
        ("orders TIMESTAMP AS OF 'yesterday'", "yesterday"),
        ("orders TIMESTAMP AS OF NULL", "not a non-null constant"),
        ("orders TIMESTAMP AS OF true", "AS OF needs a timestamp"),
        ("orders VERSION AS OF 1.5", "VERSION AS OF needs"),
        ("orders AT(OFFSET => -60)", "AT(OFFSET => -60)"),
        ("orders TIMESTAMP AS OF order_id", "order_id"),
    ];
    for (from, expected) in cases {
        let message = error(&ctx, &format!("SELECT * FROM {from}")).await;
        assert!(message.contains(expected), "{from}: {message}");
    }
}

#[tokio::test]
async fn version_clause_on_other_tables_is_a_plan_error() {
    let ctx = session().await;
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
    let mem = MemTable::try_new(schema, vec![vec![]]).unwrap();
    ctx.register_table("plain", Arc::new(mem)).unwrap();
    ctx.sql("CREATE VIEW v AS SELECT 1 AS x").await.unwrap();
    for table in ["plain", "v"] {
        let message = error(&ctx, &format!("SELECT * FROM {table} VERSION AS OF 1")).await;
        assert!(message.contains("needs an Iceberg table"), "{message}");
        assert!(message.contains(table), "{message}");
    }
    let message = error(&ctx, "SELECT * FROM ghost VERSION AS OF 1").await;
    assert!(message.contains("ghost"), "{message}");
}

#[tokio::test]
async fn sql_plans_version_clauses_also_without_register() {
    // DataFusion's own planner would drop the clause and read the current snapshot.
    let with = session().await;
    let ctx = SessionContext::new();
    ctx.register_table("orders", with.table_provider("orders").await.unwrap())
        .unwrap();
    let query = format!("{COUNT_SUM} VERSION AS OF {ORDERS_FIRST}");
    assert_eq!(row(&ctx, &query).await.unwrap(), [10, 55]);
}
