//! The maintenance table functions on real tables (a directory table and a catalog table).

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;

use super::*;
use crate::catalog::now_ms;
use crate::spec::{NestedField, PrimitiveType, Schema as IcebergSchema};
use crate::table::Table;
use crate::to_arrow::schema_to_arrow;
use crate::transaction::WriteTarget;
use crate::write::{TableCreation, append_batches};

/// A table `(id long)` at `dir` with one commit per id; its location and snapshot ids.
async fn table(dir: &std::path::Path, ids: &[i64]) -> (String, Vec<i64>) {
    let io = FileIO::default();
    let location = dir.display().to_string();
    let schema = IcebergSchema::new(0, vec![NestedField::required(1, "id", PrimitiveType::Long)]);
    let table = TableCreation::new(schema)
        .create_at(&io, &location)
        .await
        .unwrap();
    let arrow = Arc::new(schema_to_arrow(table.metadata().current_schema()).unwrap());
    for id in ids {
        let batch = RecordBatch::try_new(
            Arc::clone(&arrow),
            vec![Arc::new(Int64Array::from(vec![*id])) as ArrayRef],
        )
        .unwrap();
        let target = WriteTarget::directory(&io, &location).unwrap();
        append_batches(&target, &[batch], "main").await.unwrap();
    }
    let table = Table::load(io, &location).await.unwrap();
    let snapshots = table
        .metadata()
        .snapshots
        .iter()
        .map(|s| s.snapshot_id)
        .collect();
    (location, snapshots)
}

async fn rows(ctx: &SessionContext, sql: &str) -> String {
    let batches = crate::sql::sql(ctx, sql)
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

async fn snapshot_count(location: &str) -> usize {
    let table = Table::load(FileIO::default(), location).await.unwrap();
    table.metadata().snapshots.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expire_snapshots_reports_what_it_removed_and_only_when_read() {
    let dir = tempfile::tempdir().unwrap();
    let (location, s) = table(dir.path(), &[1, 2, 3]).await;
    let ctx = SessionContext::new();
    crate::sql::register(&ctx);
    let later = now_ms() + 10 * 86_400_000;
    // Planning and EXPLAIN change nothing.
    let sql = format!(
        "SELECT kind, count(*) AS n FROM iceberg_expire_snapshots('{location}', {later}, 1, true) GROUP BY kind ORDER BY kind"
    );
    crate::sql::sql(&ctx, &format!("EXPLAIN {sql}"))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_eq!(snapshot_count(&location).await, 3);
    // A dry run: the two older snapshots and their two manifest lists, nothing removed.
    let expected = "+----------+---+\n| kind     | n |\n+----------+---+\n| file     | 2 |\n| snapshot | 2 |\n+----------+---+";
    assert_eq!(rows(&ctx, &sql).await, expected);
    assert_eq!(snapshot_count(&location).await, 3);
    // For real.
    let sql = format!(
        "SELECT name FROM iceberg_expire_snapshots('{location}', {later}, 1) WHERE kind = 'snapshot' ORDER BY name"
    );
    let mut expected_ids = vec![s[0].to_string(), s[1].to_string()];
    expected_ids.sort();
    let text = rows(&ctx, &sql).await;
    for id in &expected_ids {
        assert!(text.contains(id.as_str()), "{text}");
    }
    assert_eq!(snapshot_count(&location).await, 1);
    // Bad calls are plan errors naming the usage.
    let err = crate::sql::sql(&ctx, "SELECT * FROM iceberg_expire_snapshots()")
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("iceberg_expire_snapshots('<table>'"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_by_table_function_in_a_directory_and_in_a_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let (location, s) = table(&dir.path().join("t"), &[1, 2, 3]).await;
    let ctx = SessionContext::new();
    crate::sql::register(&ctx);
    let sql = format!(
        "SELECT * FROM iceberg_rollback_to_snapshot('{location}', {})",
        s[0]
    );
    let text = rows(&ctx, &sql).await;
    assert!(text.contains(&format!("| {} ", s[2])), "{text}");
    assert!(text.contains(&format!("| {} ", s[0])), "{text}");
    let current = Table::load(FileIO::default(), &location).await.unwrap();
    assert_eq!(current.metadata().current_snapshot_id, Some(s[0]));
    // A catalog table by its SQL name.
    let db = dir.path().join("catalog.db");
    crate::catalog::SqliteCatalog::create(&db, "default", FileIO::default()).unwrap();
    let ctx = SessionContext::new();
    crate::session::register_catalog_as_default(&ctx, &db, Relocation::default())
        .await
        .unwrap();
    crate::sql::register(&ctx);
    for statement in [
        "CREATE SCHEMA db",
        "CREATE TABLE db.t (id BIGINT NOT NULL)",
        "INSERT INTO db.t VALUES (1)",
        "INSERT INTO db.t VALUES (2)",
    ] {
        crate::sql::sql(&ctx, statement)
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
    }
    let first = rows(
        &ctx,
        r#"SELECT snapshot_id FROM db."t$snapshots" ORDER BY committed_at LIMIT 1"#,
    )
    .await;
    let first: i64 = first
        .lines()
        .nth(3)
        .unwrap()
        .trim_matches(|c| c == '|' || c == ' ')
        .parse()
        .unwrap();
    rows(
        &ctx,
        &format!("SELECT * FROM iceberg_rollback_to_snapshot('db.t', {first})"),
    )
    .await;
    assert_eq!(
        rows(&ctx, "SELECT count(*) AS n FROM db.t").await,
        "+---+\n| n |\n+---+\n| 1 |\n+---+"
    );
}

/// The single `detail` of a procedure's result row.
async fn detail(ctx: &SessionContext, sql: &str) -> String {
    let batches = crate::sql::sql(ctx, sql)
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let column = batches[0]
        .column(1)
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    column.value(0).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_maintenance_operation_is_a_table_function() {
    let dir = tempfile::tempdir().unwrap();
    let (t, s) = table(dir.path(), &[1, 2, 3]).await;
    let ctx = SessionContext::new();
    crate::sql::register(&ctx);
    assert_eq!(
        detail(
            &ctx,
            &format!("SELECT * FROM iceberg_create_tag('{t}', 'v1', {})", s[0])
        )
        .await,
        format!("v1 at {}", s[0])
    );
    assert_eq!(
        detail(
            &ctx,
            &format!(
                "SELECT * FROM iceberg_create_branch('{t}', 'dev', {})",
                s[0]
            )
        )
        .await,
        format!("dev at {}", s[0])
    );
    assert_eq!(
        detail(
            &ctx,
            &format!("SELECT * FROM iceberg_fast_forward('{t}', 'dev', 'main')")
        )
        .await,
        format!("dev at {}", s[2])
    );
    assert_eq!(
        detail(
            &ctx,
            &format!("SELECT * FROM iceberg_drop_ref('{t}', 'dev')")
        )
        .await,
        "dev"
    );
    let m = Table::load(FileIO::default(), &t).await.unwrap();
    assert!(!m.metadata().refs.contains_key("dev"));
    assert_eq!(m.metadata().refs["v1"].snapshot_id, s[0]);
    // Off main by a rollback, the third append comes back by cherry-pick.
    rows(
        &ctx,
        &format!(
            "SELECT * FROM iceberg_rollback_to_snapshot('{t}', {})",
            s[1]
        ),
    )
    .await;
    let picked = detail(
        &ctx,
        &format!("SELECT * FROM iceberg_cherry_pick('{t}', {})", s[2]),
    )
    .await;
    assert!(picked.starts_with(&format!("{} as ", s[2])), "{picked}");
    // Three manifests (two appends and the pick) become one.
    let rewritten = detail(
        &ctx,
        &format!("SELECT * FROM iceberg_rewrite_manifests('{t}')"),
    )
    .await;
    assert_eq!(rewritten, "3 into 1");
    let current = Table::load(FileIO::default(), &t).await.unwrap();
    let ctx2 = SessionContext::new();
    let provider =
        crate::IcebergTableProvider::try_new(current, crate::spec::SnapshotSelector::Current)
            .unwrap();
    ctx2.register_table("x", Arc::new(provider)).unwrap();
    assert_eq!(
        rows(&ctx2, "SELECT count(*) AS n, sum(id) AS s FROM x").await,
        "+---+---+\n| n | s |\n+---+---+\n| 3 | 6 |\n+---+---+"
    );
    // A stray file is an orphan once the cutoff is after it.
    std::fs::write(dir.path().join("data/stray.parquet"), b"PAR1").unwrap();
    let later = now_ms() + 86_400_000;
    let dry = detail(
        &ctx,
        &format!("SELECT * FROM iceberg_remove_orphan_files('{t}', {later}, true)"),
    )
    .await;
    assert_eq!(dry, "1 orphan(s), 0 deleted");
    let done = detail(
        &ctx,
        &format!("SELECT * FROM iceberg_remove_orphan_files('{t}', {later})"),
    )
    .await;
    assert_eq!(done, "1 orphan(s), 1 deleted");
    assert!(!dir.path().join("data/stray.parquet").exists());
}
