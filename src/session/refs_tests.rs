//! Refs by name over tables registered without a catalog: `t.branch_x`, `t.tag_x`, `"t@x"`,
//! checked against the oracle's `refs_answers` for `db.refs`.

use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::MemTable;
use datafusion::prelude::SessionContext;

use super::*;
use crate::sql::test_support::{REFS_V1, WRITTEN_AT, error, row, session, warehouse};

const COUNT_SUM: &str = "SELECT count(*), sum(id) FROM";

#[test]
fn derived_names() {
    let cases = [
        ("branch_dev", Some(Derived::Branch("dev".into()))),
        ("tag_v1", Some(Derived::Tag("v1".into()))),
        (
            "tag_with_underscore",
            Some(Derived::Tag("with_underscore".into())),
        ),
        ("snapshot_id_-7", Some(Derived::SnapshotId(-7))),
        (
            "at_timestamp_1700000000000",
            Some(Derived::AsOfTimestamp(1_700_000_000_000)),
        ),
        ("branch_", None),
        ("snapshot_id_x", None),
        ("history", None),
    ];
    for (name, expected) in cases {
        assert_eq!(Derived::parse(name), expected, "{name}");
    }
}

#[tokio::test]
async fn two_part_and_at_names_read_the_refs() {
    let ctx = session().await;
    let cases = [
        ("refs.branch_dev", [20, 690]),
        ("refs.branch_audit", [10, 45]),
        ("refs.branch_main", [30, 435]),
        ("refs.tag_v1", [10, 45]),
        ("refs.tag_v2", [20, 190]),
        ("refs.snapshot_id_7019671183757973925", [10, 45]),
        ("refs.at_timestamp_1796049769870", [20, 190]),
        (r#""refs@v2""#, [20, 190]),
        (r#""refs@dev""#, [20, 690]),
        (r#""refs@main""#, [30, 435]),
        (r#""refs@7019671183757973925""#, [10, 45]),
        (r#"public."refs@audit""#, [10, 45]),
        (r#"datafusion.public."refs@v1""#, [10, 45]),
    ];
    for (name, expected) in cases {
        let query = format!("{COUNT_SUM} {name}");
        assert_eq!(row(&ctx, &query).await.unwrap(), expected, "{query}");
        // Names need no special parser: DataFusion's own `ctx.sql` resolves them too.
        let batches = ctx.sql(&query).await.unwrap().collect().await.unwrap();
        assert_eq!(batches[0].num_rows(), 1);
    }
    let query = "SELECT count(*) FROM refs.tag_v2 AS t WHERE t.id < 5";
    assert_eq!(row(&ctx, query).await.unwrap(), [5]);
    let query = format!(r#"{COUNT_SUM} "refs@{REFS_V1}""#);
    assert_eq!(row(&ctx, &query).await.unwrap(), [10, 45]);
}

#[tokio::test]
async fn ref_errors_name_the_table_and_the_ref() {
    let ctx = session().await;
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
    ctx.register_table(
        "plain",
        Arc::new(MemTable::try_new(schema, vec![vec![]]).unwrap()),
    )
    .unwrap();
    let cases = [
        (
            "refs.branch_v1",
            vec!["refs.branch_v1", "'v1': is a tag, not a branch"],
        ),
        (
            "refs.tag_dev",
            vec!["refs.tag_dev", "'dev': is a branch, not a tag"],
        ),
        ("refs.tag_nope", vec!["refs.tag_nope", "ref 'nope'"]),
        ("refs.branch_nope", vec!["refs.branch_nope", "ref 'nope'"]),
        (r#""refs@nope""#, vec!["refs@nope", "ref 'nope'"]),
        (r#""refs@42""#, vec!["refs@42", "snapshot 42"]),
        (
            "refs.snapshot_id_42",
            vec!["refs.snapshot_id_42", "snapshot 42"],
        ),
        ("refs.at_timestamp_0", vec!["refs.at_timestamp_0"]),
        ("plain.branch_main", vec!["plain is not one"]),
        (r#""plain@main""#, vec!["plain is not one"]),
        ("refs.nonsense", vec!["refs.nonsense", "not found"]),
        ("ghost.branch_main", vec!["ghost"]),
        (r#""ghost@main""#, vec!["ghost@main", "not found"]),
    ];
    for (name, expected) in cases {
        let message = error(&ctx, &format!("SELECT * FROM {name}")).await;
        for part in expected {
            assert!(message.contains(part), "{name}: {message}");
        }
    }
}

#[tokio::test]
async fn tables_created_by_sql_have_refs_too() {
    let ctx = SessionContext::new();
    crate::sql::register(&ctx);
    let create = format!(
        "CREATE EXTERNAL TABLE r STORED AS ICEBERG LOCATION '{}/db/refs' \
         OPTIONS ('relocate' '{WRITTEN_AT}={}')",
        warehouse(),
        warehouse()
    );
    crate::sql::sql(&ctx, &create).await.unwrap();
    assert_eq!(
        row(&ctx, &format!("{COUNT_SUM} r.tag_v2")).await.unwrap(),
        [20, 190]
    );
    assert_eq!(
        row(&ctx, &format!(r#"{COUNT_SUM} "r@dev""#)).await.unwrap(),
        [20, 690]
    );
    let query = format!("{COUNT_SUM} r VERSION AS OF 'v1'");
    assert_eq!(row(&ctx, &query).await.unwrap(), [10, 45]);
}

#[tokio::test]
async fn registering_twice_wraps_once() {
    let ctx = session().await;
    crate::sql::register(&ctx);
    let catalog = ctx.catalog("datafusion").unwrap();
    let refs = catalog.downcast_ref::<RefsCatalog>().unwrap();
    assert!(!refs.inner.is::<RefsCatalog>());
    assert_eq!(catalog.schema_names(), ["public"]);
    let public = catalog.schema("public").unwrap();
    assert!(public.table_exist("orders"));
    assert!(!public.table_exist("orders@main"));
    let mut names = public.table_names();
    names.sort();
    assert_eq!(names, ["orders", "refs"]);
    assert!(catalog.schema("refs").unwrap().table_exist("tag_v1"));
    assert!(catalog.schema("ghost").is_none());
    assert_eq!(
        row(&ctx, &format!("{COUNT_SUM} refs.tag_v1"))
            .await
            .unwrap(),
        [10, 45]
    );
}
