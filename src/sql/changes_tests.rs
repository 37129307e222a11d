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

/// Runs `statements` on `ctx` (with icefloe's planning) and returns the last one's rows.
async fn run_all(ctx: &SessionContext, statements: &[&str]) -> Vec<RecordBatch> {
    let mut last = Vec::new();
    for statement in statements {
        last = super::super::sql(ctx, statement)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"))
            .collect()
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    last
}

/// The path of the data file of `db.<table>` whose `id` bounds hold `id`.
async fn files_holding(ctx: &SessionContext, table: &str, id: i64) -> String {
    let query = format!(
        "SELECT file_path FROM db.\"{table}$files\" WHERE content = 0 AND \
         readable_metrics['id']['lower_bound'] <= {id} AND readable_metrics['id']['upper_bound'] >= {id}"
    );
    let batches = run_all(ctx, &[&query]).await;
    let column = datafusion::arrow::compute::cast(
        batches[0].column(0),
        &datafusion::arrow::datatypes::DataType::Utf8,
    )
    .unwrap();
    column.as_string::<i32>().value(0).to_string()
}

#[tokio::test]
async fn delete_drops_files_whose_metrics_prove_every_row_matches_without_reading_them() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = scratch(dir.path()).await;
    super::super::register(&ctx);
    // Three files of an unpartitioned merge-on-read table; the second has a deleted row.
    run_all(
        &ctx,
        &[
            "CREATE TABLE db.w (id BIGINT NOT NULL, n BIGINT) TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')",
            "INSERT INTO db.w VALUES (1, 10), (2, 20), (3, 30)",
            "INSERT INTO db.w VALUES (4, 40), (5, 50), (6, 60)",
            "INSERT INTO db.w VALUES (7, 70), (8, NULL), (9, 90)",
            "DELETE FROM db.w WHERE id = 5",
        ],
    )
    .await;
    // Files 2 and 3 hold only ids >= 4: they go whole, so they need not exist to be dropped.
    let second = files_holding(&ctx, "w", 4).await;
    let third = files_holding(&ctx, "w", 7).await;
    for file in [&second, &third] {
        let path = file.strip_prefix("file://").unwrap_or(file);
        std::fs::remove_file(path).unwrap();
    }
    let w = TableChanges::of(&ctx, "db.w").await.unwrap();
    let deleted = w
        .delete()
        .filter(col("id").gt_eq(lit(2i64)))
        .execute()
        .await
        .unwrap();
    // 2, 3 from the first file (a deletion of 2 rows), 4 and 6 (5 was deleted), 7, 8 and 9.
    assert_eq!(deleted.rows_deleted, 7);
    assert_eq!(deleted.data_files_removed, 2);
    assert_eq!(deleted.delete_files_added, 1);
    let left = run_all(&ctx, &["SELECT id FROM db.w ORDER BY id"]).await;
    let ids: Vec<i64> = left
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    assert_eq!(ids, [1]);
    let summary = run_all(
        &ctx,
        &["SELECT summary['deleted-data-files'], summary['deleted-records'], summary['total-records'] FROM db.\"w$snapshots\" ORDER BY committed_at DESC LIMIT 1"],
    )
    .await;
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&summary)
        .unwrap()
        .to_string();
    assert!(text.contains("| 2 ") && text.contains("| 6 "), "{text}");

    // A NULL in a column of the condition proves nothing: that file is read (and, gone from
    // disk, fails the statement, which changes nothing).
    run_all(
        &ctx,
        &[
            "CREATE TABLE db.v (id BIGINT NOT NULL, n BIGINT)",
            "INSERT INTO db.v VALUES (1, 10), (2, NULL)",
        ],
    )
    .await;
    let only = files_holding(&ctx, "v", 1).await;
    std::fs::remove_file(only.strip_prefix("file://").unwrap_or(&only)).unwrap();
    let v = TableChanges::of(&ctx, "db.v").await.unwrap();
    let err = v.delete().filter(col("n").gt(lit(0i64))).execute().await;
    assert!(err.is_err(), "the file with a NULL was not read");
    let snapshots = run_all(&ctx, &["SELECT count(*) FROM db.\"v$snapshots\""]).await;
    assert_eq!(
        snapshots[0].column(0).as_primitive::<Int64Type>().value(0),
        1
    );
}
