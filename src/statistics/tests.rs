//! Table statistics end to end: computed through SQL on directory tables, then read back as
//! the scans' distinct counts and seen in DataFusion's choice of hash-join build sides.

use std::sync::Arc;

use datafusion::common::stats::Precision;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::{ExecutionPlan, StatisticsArgs, StatisticsContext};
use datafusion::prelude::SessionContext;

use crate::spec::metadata::StatisticsFile;
use crate::spec::puffin::THETA_BLOB_TYPE;
use crate::transaction::{SetStatistics, WriteTarget};
use crate::{FileIO, Table};

async fn run(ctx: &SessionContext, sql: &str) {
    crate::sql::sql(ctx, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// A session with directory tables `f` (4,000 rows; `a`: 10 distinct strings, `b`: 500
/// distinct longs), `d1` (10 rows, one per `a`) and `d2` (500 rows, one per `b`) under `dir`.
async fn star(dir: &std::path::Path) -> SessionContext {
    let ctx = SessionContext::new();
    crate::sql::register(&ctx);
    let at = |t: &str| dir.join(t).display().to_string();
    for sql in [
        format!("CREATE EXTERNAL TABLE f (a VARCHAR, b BIGINT) STORED AS ICEBERG LOCATION '{}'", at("f")),
        format!("CREATE EXTERNAL TABLE d1 (a VARCHAR, x BIGINT) STORED AS ICEBERG LOCATION '{}'", at("d1")),
        format!("CREATE EXTERNAL TABLE d2 (b BIGINT, y VARCHAR) STORED AS ICEBERG LOCATION '{}'", at("d2")),
        "INSERT INTO f SELECT 'k' || CAST(v % 10 AS VARCHAR), v % 500 FROM (SELECT unnest(range(0, 4000)) AS v)".to_string(),
        "INSERT INTO d1 SELECT 'k' || CAST(v AS VARCHAR), v FROM (SELECT unnest(range(0, 10)) AS v)".to_string(),
        "INSERT INTO d2 SELECT v, 'y' || CAST(v AS VARCHAR) FROM (SELECT unnest(range(0, 500)) AS v)".to_string(),
    ] {
        run(&ctx, &sql).await;
    }
    ctx
}

const JOIN: &str = "SELECT count(*) FROM f JOIN d1 ON f.a = d1.a JOIN d2 ON f.b = d2.b";

async fn plan(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    let df = crate::sql::sql(ctx, sql).await.unwrap();
    df.create_physical_plan().await.unwrap()
}

/// The hash joins of a plan, outermost first.
fn joins(plan: &Arc<dyn ExecutionPlan>, out: &mut Vec<Arc<dyn ExecutionPlan>>) {
    if plan.is::<HashJoinExec>() {
        out.push(Arc::clone(plan));
    }
    for child in plan.children() {
        joins(child, out);
    }
}

/// Whether the build (left) side of the outer join is the other join's output.
async fn builds_on_the_inner_join(ctx: &SessionContext) -> bool {
    let mut found = Vec::new();
    joins(&plan(ctx, JOIN).await, &mut found);
    assert_eq!(found.len(), 2);
    let outer = found[0].downcast_ref::<HashJoinExec>().unwrap();
    let mut inner = Vec::new();
    joins(outer.left(), &mut inner);
    !inner.is_empty()
}

/// The distinct counts of the first scan of `sql`'s plan.
async fn scan_distinct_counts(ctx: &SessionContext, sql: &str) -> Vec<Precision<usize>> {
    fn scan(plan: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
        if plan.name() == "DataSourceExec" {
            return Some(Arc::clone(plan));
        }
        plan.children().into_iter().find_map(scan)
    }
    let plan = plan(ctx, sql).await;
    let scan = scan(&plan).unwrap();
    let stats = StatisticsContext::new()
        .compute(scan.as_ref(), &StatisticsArgs::new())
        .unwrap();
    stats
        .column_statistics
        .iter()
        .map(|c| c.distinct_count)
        .collect()
}

#[tokio::test]
async fn scans_report_the_distinct_counts_and_joins_build_on_the_smaller_input() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = star(dir.path()).await;
    // Without statistics DataFusion takes f.a as unique (no bounds cap a string's distinct
    // count) and expects f JOIN d1 to give 10 rows: it builds the outer join on it.
    assert_eq!(
        scan_distinct_counts(&ctx, "SELECT a, b FROM f").await,
        [Precision::Absent, Precision::Absent]
    );
    assert!(builds_on_the_inner_join(&ctx).await);
    for t in ["f", "d1", "d2"] {
        let location = dir.path().join(t).display().to_string();
        run(
            &ctx,
            &format!("SELECT * FROM iceberg_compute_table_stats('{location}')"),
        )
        .await;
    }
    // The data's distinct counts (10 strings, 500 longs), inexact as estimates are.
    assert_eq!(
        scan_distinct_counts(&ctx, "SELECT a, b FROM f").await,
        [Precision::Inexact(10), Precision::Inexact(500)]
    );
    // f JOIN d1 really gives 4,000 rows, more than d2's 500: with the counts the outer join
    // builds on d2.
    run(&ctx, "SELECT 1").await;
    let rows = crate::sql::test_support::row(&ctx, "SELECT count(*) FROM f JOIN d1 ON f.a = d1.a")
        .await
        .unwrap();
    assert_eq!(rows, [4000]);
    assert!(!builds_on_the_inner_join(&ctx).await);
    // A later snapshot still gets its ancestor's counts (inexact either way).
    run(&ctx, "INSERT INTO f VALUES ('k99', 9999)").await;
    assert_eq!(
        scan_distinct_counts(&ctx, "SELECT a FROM f").await,
        [Precision::Inexact(10)]
    );
}

/// Registers, for `table`'s current snapshot, a statistics file at `path` whose blob metadata
/// has no `ndv` (so readers must open the file), with the sizes given.
async fn register_without_ndv(location: &str, path: &str, size: i64, footer: i64) {
    let io = FileIO::default();
    let target = WriteTarget::directory(&io, location).unwrap();
    let table: Table = target.load().await.unwrap();
    let snapshot = table.metadata().current_snapshot_id.unwrap();
    let seq = table.metadata().last_sequence_number;
    let blob = serde_json::json!({"type": THETA_BLOB_TYPE, "snapshot-id": snapshot,
        "sequence-number": seq, "fields": [1]});
    let file = StatisticsFile {
        snapshot_id: snapshot,
        statistics_path: path.to_string(),
        file_size_in_bytes: size,
        file_footer_size_in_bytes: footer,
        key_metadata: None,
        blob_metadata: vec![blob],
    };
    let action = SetStatistics::new(file);
    target
        .transaction(table)
        .with_action(action)
        .commit()
        .await
        .unwrap();
}

#[tokio::test]
async fn footers_serve_blob_metadata_without_ndv_and_broken_files_only_lose_the_counts() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = star(dir.path()).await;
    let location = dir.path().join("d1").display().to_string();
    run(
        &ctx,
        &format!("SELECT * FROM iceberg_compute_table_stats('{location}', 'a')"),
    )
    .await;
    let table = Table::load(FileIO::default(), &location).await.unwrap();
    let good = table.metadata().statistics[0].clone();
    // The footer's ndv (the same file, its blob metadata in the table stripped).
    register_without_ndv(
        &location,
        &good.statistics_path,
        good.file_size_in_bytes,
        good.file_footer_size_in_bytes,
    )
    .await;
    let counts = scan_distinct_counts(&ctx, "SELECT a FROM d1").await;
    assert_eq!(counts, [Precision::Inexact(10)]);
    // A corrupt file and a missing one: no counts, and the query still answers.
    let garbage = format!("{location}/metadata/garbage.stats");
    std::fs::write(&garbage, vec![7u8; 600]).unwrap();
    let missing = format!("{location}/metadata/missing.stats");
    for path in [garbage, missing] {
        register_without_ndv(&location, &path, 600, 100).await;
        assert_eq!(
            scan_distinct_counts(&ctx, "SELECT a FROM d1").await,
            [Precision::Absent]
        );
        let rows = crate::sql::test_support::row(&ctx, "SELECT count(DISTINCT a) FROM d1")
            .await
            .unwrap();
        assert_eq!(rows, [10]);
    }
}
