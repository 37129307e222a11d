//! The Rust API of row-level changes: each builder against the rows SQL leaves, its metrics,
//! and the errors of incomplete builders.

use datafusion::arrow::array::{AsArray, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::prelude::{SessionContext, col, lit};

use super::*;
use crate::catalog::SqliteCatalog;
use crate::{FileIO, Relocation};

async fn scratch(dir: &std::path::Path) -> SessionContext {
    let db = dir.join("catalog.db");
    SqliteCatalog::create(&db, "default", FileIO::default()).unwrap();
    let ctx = SessionContext::new();
    crate::session::register_catalog_as_default(&ctx, &db, Relocation::default())
        .await
        .unwrap();
    // Not `sql::register`: the builders plan row-level changes without it.
    for sql in [
        "CREATE SCHEMA db",
        "CREATE TABLE db.t (id BIGINT NOT NULL, n BIGINT) PARTITION BY (bucket(2, id))",
        "INSERT INTO db.t VALUES (1, 10), (2, 20), (3, 30), (4, 40), (5, 50)",
    ] {
        super::super::sql(&ctx, sql)
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
    }
    ctx
}

async fn rows(ctx: &SessionContext) -> Vec<(i64, i64)> {
    let batches = ctx
        .sql("SELECT id, n FROM db.t ORDER BY id")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    batches
        .iter()
        .flat_map(|b| {
            let ids = b.column(0).as_primitive::<Int64Type>().values().to_vec();
            let ns = b.column(1).as_primitive::<Int64Type>().values().to_vec();
            ids.into_iter().zip(ns)
        })
        .collect()
}

#[tokio::test]
async fn delete_update_merge_overwrite_and_truncate_from_rust_report_what_they_did() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = scratch(dir.path()).await;
    let t = TableChanges::of(&ctx, "db.t").await.unwrap();

    let deleted = t
        .delete()
        .filter(col("id").gt(lit(4i64)))
        .execute()
        .await
        .unwrap();
    assert_eq!(deleted.rows_deleted, 1);
    assert_eq!((deleted.rows_updated, deleted.rows_inserted), (0, 0));
    assert!(deleted.data_files_removed >= 1);
    assert_eq!(rows(&ctx).await, [(1, 10), (2, 20), (3, 30), (4, 40)]);

    let updated = t
        .update()
        .set("n", col("n") + lit(1i64))
        .filter(col("id").lt(lit(3i64)))
        .execute()
        .await
        .unwrap();
    assert_eq!(updated.rows_updated, 2);
    assert_eq!(updated.rows_deleted, 0);
    assert!(updated.data_files_added >= 1 && updated.bytes_written > 0);
    assert_eq!(rows(&ctx).await, [(1, 11), (2, 21), (3, 30), (4, 40)]);

    let source = ctx
        .read_batch(
            RecordBatch::try_from_iter([
                ("id", Arc::new(Int64Array::from(vec![2, 3, 9])) as _),
                ("n", Arc::new(Int64Array::from(vec![200, -1, 900])) as _),
            ])
            .unwrap(),
        )
        .unwrap();
    let merged = t
        .merge(source)
        .on(col("target.id").eq(col("source.id")))
        .when_matched_delete(Some(col("source.n").lt(lit(0i64))))
        .when_matched_update([("n", col("source.n"))])
        .when_not_matched_insert([("id", col("source.id")), ("n", col("source.n"))])
        .when_not_matched_by_source_update(None, [("n", col("target.n") * lit(2i64))])
        .execute()
        .await
        .unwrap();
    assert_eq!(
        (
            merged.rows_deleted,
            merged.rows_updated,
            merged.rows_inserted
        ),
        (1, 3, 1)
    );
    assert_eq!(rows(&ctx).await, [(1, 22), (2, 200), (4, 80), (9, 900)]);

    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(vec![7])) as _),
        ("n", Arc::new(Int64Array::from(vec![70])) as _),
    ])
    .unwrap();
    let schema = t.provider.schema();
    let batch = RecordBatch::try_new(schema, batch.columns().to_vec()).unwrap();
    let overwritten = t.overwrite(vec![batch]).await.unwrap();
    assert_eq!(overwritten.rows_inserted, 1);
    assert!(overwritten.data_files_removed >= 2);
    assert_eq!(rows(&ctx).await, [(7, 70)]);

    t.truncate().await.unwrap();
    assert!(rows(&ctx).await.is_empty());
}

#[tokio::test]
async fn incomplete_builders_and_other_tables_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = scratch(dir.path()).await;
    let t = TableChanges::of(&ctx, "db.t").await.unwrap();
    let source = ctx.sql("SELECT 1 AS id").await.unwrap();
    let err = t.merge(source).execute().await.unwrap_err().to_string();
    assert!(err.contains("ON condition"), "{err}");
    let err = t
        .update()
        .set("nope", lit(1))
        .execute()
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("nope"), "{err}");
    ctx.sql("CREATE TABLE plain (x INT)").await.unwrap();
    let err = TableChanges::of(&ctx, "plain")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("not an Iceberg table"), "{err}");
    // Nothing was changed by the refused statements.
    assert_eq!(rows(&ctx).await.len(), 5);
}

#[tokio::test]
async fn without_icefloes_planning_datafusion_s_hooks_are_refused_and_nothing_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = scratch(dir.path()).await;
    // `scratch` does not call `sql::register`: DataFusion plans DELETE itself and hands the
    // provider an empty filter list for this subquery (apache/datafusion#24654).
    let err = ctx
        .sql("DELETE FROM db.t WHERE id IN (SELECT 1)")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("icefloe::sql::register"), "{err}");
    let err = ctx
        .sql("UPDATE db.t SET n = 0 WHERE id = 1")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("icefloe::sql::register"), "{err}");
    assert_eq!(rows(&ctx).await.len(), 5);
}
