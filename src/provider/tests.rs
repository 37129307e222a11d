//! Reads of the in-repo fixture `tests/fixtures/pyiceberg/wh1/db/orders`: two appends of ten
//! rows (order ids 1..=10, then 11..=20).

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;

use super::*;
use crate::catalog::test_support::copy_dir;
use crate::io::Relocation;
use crate::scan::plan_metric;

const FIRST: i64 = 5_717_840_931_077_797_238;
const SECOND: i64 = 2_307_351_587_894_854_234;
const FIRST_COMMIT_MS: i64 = 1_796_049_758_886;

fn warehouse() -> String {
    format!(
        "{}/tests/fixtures/pyiceberg/wh1",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn relocation() -> Relocation {
    Relocation::new().with_rule("file:///data/lake/wh1", warehouse())
}

async fn orders(ctx: &SessionContext) -> Table {
    let io = FileIO::new(ctx.runtime_env(), relocation());
    Table::load(io, &format!("{}/db/orders", warehouse()))
        .await
        .unwrap()
}

/// `(count(*), sum(order_id))` of a provider.
async fn count_and_sum(ctx: &SessionContext, provider: IcebergTableProvider) -> (i64, i64) {
    ctx.deregister_table("t").unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let batches = ctx
        .sql("SELECT count(*), coalesce(sum(order_id), 0) FROM t")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let batch = &batches[0];
    let value = |i: usize| batch.column(i).as_primitive::<Int64Type>().value(0);
    assert_eq!(batch.column(0).len(), 1);
    (value(0), value(1))
}

#[tokio::test]
async fn incremental_reads_exactly_the_second_commit() {
    let ctx = SessionContext::new();
    let table = orders(&ctx).await;
    let provider =
        IcebergTableProvider::incremental(table.clone(), FIRST, SnapshotSelector::Current).unwrap();
    assert_eq!(provider.snapshot_id(), Some(SECOND));
    assert_eq!(
        provider.incremental_range().map(|r| r.snapshot_ids.clone()),
        Some(vec![SECOND])
    );
    assert_eq!(provider.plan_files().await.unwrap().len(), 1);
    assert_eq!(count_and_sum(&ctx, provider).await, (10, 210 - 55));

    let by_branch =
        IcebergTableProvider::incremental(table, FIRST, SnapshotSelector::Ref("main".into()))
            .unwrap();
    assert_eq!(count_and_sum(&ctx, by_branch).await, (10, 155));
}

#[tokio::test]
async fn incremental_from_equal_to_is_empty() {
    let ctx = SessionContext::new();
    let table = orders(&ctx).await;
    let provider =
        IcebergTableProvider::incremental(table, SECOND, SnapshotSelector::SnapshotId(SECOND))
            .unwrap();
    assert!(provider.plan_files().await.unwrap().is_empty());
    assert_eq!(count_and_sum(&ctx, provider).await, (0, 0));
}

#[tokio::test]
async fn incremental_refuses_a_newer_from() {
    let ctx = SessionContext::new();
    let table = orders(&ctx).await;
    let err = IcebergTableProvider::incremental(table, SECOND, SnapshotSelector::SnapshotId(FIRST))
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { what, reason }
            if what.starts_with("incremental read of table ")
                && reason.contains("is not an ancestor of snapshot")),
        "{err}"
    );
}

#[tokio::test]
async fn time_travel_reads_each_commit() {
    let ctx = SessionContext::new();
    let location = format!("{}/db/orders", warehouse());
    let open = |options: TableOptions| {
        let (ctx, location) = (&ctx, &location);
        async move {
            let options = options.with_relocation_rules(relocation());
            IcebergTableProvider::open(ctx, location, options)
                .await
                .unwrap()
        }
    };
    let first_day = open(TableOptions::default().as_of_timestamp_ms(FIRST_COMMIT_MS + 1)).await;
    assert_eq!(first_day.snapshot_id(), Some(FIRST));
    assert_eq!(count_and_sum(&ctx, first_day).await, (10, 55));
    let by_id = open(TableOptions::default().with_snapshot_id(FIRST)).await;
    assert_eq!(count_and_sum(&ctx, by_id).await, (10, 55));
    let main = open(TableOptions::default().with_ref("main")).await;
    assert_eq!(count_and_sum(&ctx, main).await, (20, 210));

    let too_early = IcebergTableProvider::open(
        &ctx,
        &location,
        TableOptions::default()
            .with_relocation_rules(relocation())
            .as_of_timestamp_ms(FIRST_COMMIT_MS - 1),
    )
    .await
    .unwrap_err();
    assert!(matches!(too_early, Error::NotFound { .. }), "{too_early}");
    assert!(
        too_early.to_string().contains("no snapshot as of"),
        "{too_early}"
    );
}

#[tokio::test]
async fn a_second_plan_reads_manifests_from_the_cache() {
    // A private copy, so no other test shares its cache keys.
    let copy = tempfile::tempdir().unwrap();
    copy_dir(
        std::path::Path::new(&format!("{}/db/orders", warehouse())),
        copy.path(),
    );
    let relocation = Relocation::new().with_rule(
        "file:///data/lake/wh1/db/orders",
        copy.path().display().to_string(),
    );
    let ctx = SessionContext::new();
    let io = FileIO::new(ctx.runtime_env(), relocation);
    let table = Table::load(io, &copy.path().display().to_string())
        .await
        .unwrap();
    let provider = IcebergTableProvider::try_new(table, SnapshotSelector::Current).unwrap();
    let first = provider.plan_files().await.unwrap();
    // Manifest lists and manifests are immutable: once decoded, they are not read again.
    for entry in std::fs::read_dir(copy.path().join("metadata")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "avro") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let second = provider.plan_files().await.unwrap();
    let paths = |tasks: &[FileScanTask]| -> Vec<String> {
        tasks
            .iter()
            .map(|t| t.data_file.file_path.clone())
            .collect()
    };
    assert_eq!(paths(&first), paths(&second));
    assert_eq!(first.len(), 2);
}

#[tokio::test]
async fn planning_counts_are_scan_metrics() {
    let ctx = SessionContext::new();
    let provider =
        IcebergTableProvider::try_new(orders(&ctx).await, SnapshotSelector::Current).unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let plan = ctx
        .sql("SELECT order_id FROM t")
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    datafusion::physical_plan::collect(Arc::clone(&plan), ctx.task_ctx())
        .await
        .unwrap();
    // db.orders (fixture README): two appends of one file each, the second keeping the
    // first's manifest, so the current manifest list holds two manifests.
    assert_eq!(plan_metric(&plan, "manifests_total"), Some(2));
    assert_eq!(plan_metric(&plan, "manifests_pruned"), Some(0));
    assert_eq!(plan_metric(&plan, "data_files_total"), Some(2));
    assert_eq!(plan_metric(&plan, "data_files_scanned"), Some(2));
    assert_eq!(plan_metric(&plan, "delete_files_matched"), Some(0));
    assert!(plan_metric(&plan, "planning_time").is_some());
}

#[tokio::test]
async fn scan_statistics_come_from_the_manifests() {
    let ctx = SessionContext::new();
    let provider =
        IcebergTableProvider::try_new(orders(&ctx).await, SnapshotSelector::Current).unwrap();
    let plan = provider
        .scan(&ctx.state(), Some(&vec![0]), &[], None)
        .await
        .unwrap();
    use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
    let stats = StatisticsContext::new()
        .compute(plan.as_ref(), &StatisticsArgs::new())
        .unwrap();
    use datafusion::common::ScalarValue;
    use datafusion::common::stats::Precision;
    // Order ids 1..=10 and 11..=20, no NULLs (the fixture's construction).
    assert_eq!(stats.num_rows, Precision::Exact(20));
    let order_id = &stats.column_statistics[0];
    assert_eq!(order_id.null_count, Precision::Exact(0));
    // Bounds are never exact: DataFusion must not answer MIN/MAX from them.
    assert_eq!(
        order_id.min_value,
        Precision::Inexact(ScalarValue::Int64(Some(1)))
    );
    assert_eq!(
        order_id.max_value,
        Precision::Inexact(ScalarValue::Int64(Some(20)))
    );
}

/// The physical plan of `sql` over `t` = db.orders, and its text.
async fn orders_plan(sql: &str) -> (Arc<dyn ExecutionPlan>, String) {
    let ctx = SessionContext::new();
    let provider =
        IcebergTableProvider::try_new(orders(&ctx).await, SnapshotSelector::Current).unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let plan = ctx
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let text = datafusion::physical_plan::displayable(plan.as_ref())
        .indent(true)
        .to_string();
    (plan, text)
}

#[tokio::test]
async fn a_partition_filter_skips_the_other_days_manifest() {
    // db.orders is partitioned by day(order_ts); each append wrote one day in its own manifest
    // (2024-01-01, then 2024-01-02).
    let (plan, text) =
        orders_plan("SELECT order_id FROM t WHERE order_ts >= TIMESTAMP '2024-01-02T00:00:00Z'")
            .await;
    assert_eq!(plan_metric(&plan, "manifests_total"), Some(2), "{text}");
    assert_eq!(plan_metric(&plan, "manifests_pruned"), Some(1), "{text}");
    assert_eq!(plan_metric(&plan, "data_files_scanned"), Some(1), "{text}");
    // A transform is lossy: DataFusion still filters the rows.
    assert!(text.contains("FilterExec"), "{text}");
}

#[tokio::test]
async fn metrics_prune_files_within_a_manifest_list() {
    // Order ids 1..=10 are in the first file, 11..=20 in the second.
    let (plan, text) = orders_plan("SELECT * FROM t WHERE order_id = 15").await;
    assert_eq!(
        plan_metric(&plan, "data_files_pruned_by_metrics"),
        Some(1),
        "{text}"
    );
    assert_eq!(plan_metric(&plan, "data_files_scanned"), Some(1), "{text}");
}

#[tokio::test]
async fn identity_partition_filters_are_exact() {
    let ctx = SessionContext::new();
    let io = FileIO::new(ctx.runtime_env(), relocation());
    // Partitioned by identity(b) in its only spec (fixture README).
    let table = Table::load(io, &format!("{}/db/part_identity_bool", warehouse()))
        .await
        .unwrap();
    let provider = IcebergTableProvider::try_new(table, SnapshotSelector::Current).unwrap();
    let column = provider.schema().fields()[0].name().clone();
    let identity = provider
        .table()
        .metadata()
        .default_partition_spec()
        .map(|s| s.fields[0].source_id);
    let name = provider
        .iceberg_schema()
        .columns()
        .iter()
        .find(|c| Some(c.id) == identity)
        .map(|c| c.name.clone())
        .unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let filter = datafusion::prelude::col(name.as_str()).eq(datafusion::prelude::lit(true));
    let other = datafusion::prelude::col(column.as_str()).is_not_null();
    let t = ctx.table_provider("t").await.unwrap();
    let pushdown = t.supports_filters_pushdown(&[&filter, &other]).unwrap();
    use datafusion::logical_expr::TableProviderFilterPushDown as P;
    assert_eq!(pushdown[0], P::Exact);
    if name != column {
        assert_eq!(pushdown[1], P::Inexact);
    }
    // The filtered rows still equal the unfiltered rows that satisfy it.
    let count = |sql: String| {
        let ctx = &ctx;
        async move {
            let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
            batches[0].column(0).as_primitive::<Int64Type>().value(0)
        }
    };
    let exact = count(format!("SELECT count(*) FROM t WHERE \"{name}\" = true")).await;
    let by_hand = count(format!(
        "SELECT sum(CASE WHEN \"{name}\" THEN 1 ELSE 0 END) FROM t"
    ))
    .await;
    assert_eq!(exact, by_hand);
}

#[tokio::test]
async fn row_groups_are_pruned_by_parquet_statistics_after_planning() {
    // db.row_groups: one file sorted by id, 20 row groups of 1000 rows (fixture README).
    let ctx = SessionContext::new();
    let io = FileIO::new(ctx.runtime_env(), relocation());
    let table = Table::load(io, &format!("{}/db/row_groups", warehouse()))
        .await
        .unwrap();
    let provider = IcebergTableProvider::try_new(table, SnapshotSelector::Current).unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let plan = ctx
        .sql("SELECT * FROM t WHERE id = 5005")
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let rows = datafusion::physical_plan::collect(Arc::clone(&plan), ctx.task_ctx())
        .await
        .unwrap();
    assert_eq!(rows.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
    let text =
        datafusion::physical_plan::display::DisplayableExecutionPlan::with_metrics(plan.as_ref())
            .indent(true)
            .to_string();
    assert!(
        text.contains("row_groups_pruned_statistics=20 total → 1 matched"),
        "{text}"
    );
}

#[tokio::test]
async fn a_limit_without_filters_opens_only_the_files_it_needs() {
    // Each of db.orders' two files holds ten rows.
    let (plan, text) = orders_plan("SELECT * FROM t LIMIT 3").await;
    assert_eq!(plan_metric(&plan, "data_files_total"), Some(2), "{text}");
    assert_eq!(plan_metric(&plan, "data_files_scanned"), Some(1), "{text}");
    let (plan, text) = orders_plan("SELECT * FROM t LIMIT 15").await;
    assert_eq!(plan_metric(&plan, "data_files_scanned"), Some(2), "{text}");
    // A filter DataFusion still applies keeps every file that may match.
    let (plan, text) = orders_plan("SELECT * FROM t WHERE customer_id > 0 LIMIT 3").await;
    assert_eq!(plan_metric(&plan, "data_files_scanned"), Some(2), "{text}");
}

#[tokio::test]
async fn count_star_is_answered_from_the_manifest_list() {
    // 20 rows: added_rows_count 10 in each of the two manifests the list holds.
    let (plan, text) = orders_plan("SELECT count(*) FROM t").await;
    assert!(!text.contains("DataSourceExec"), "{text}");
    let ctx = SessionContext::new();
    let provider =
        IcebergTableProvider::try_new(orders(&ctx).await, SnapshotSelector::Current).unwrap();
    assert_eq!(count_and_sum(&ctx, provider).await.0, 20);
    drop(plan);
    // The scan behind it, when executed, yields that many rows (and honours a limit); its
    // metrics say no manifest was read and no file opened.
    for (sql, rows) in [("SELECT 1 FROM t", 20), ("SELECT 1 FROM t LIMIT 7", 7)] {
        let (plan, text) = orders_plan(sql).await;
        assert!(text.contains("IcebergRowCountExec: rows="), "{text}");
        let ctx = SessionContext::new();
        let batches = datafusion::physical_plan::collect(Arc::clone(&plan), ctx.task_ctx())
            .await
            .unwrap();
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), rows);
        assert_eq!(plan_metric(&plan, "manifests_total"), Some(2), "{text}");
        assert_eq!(plan_metric(&plan, "data_files_total"), Some(2), "{text}");
        assert_eq!(plan_metric(&plan, "data_files_scanned"), Some(0), "{text}");
    }
    // A filter needs the files.
    let (_, text) = orders_plan("SELECT count(*) FROM t WHERE customer_id > 0").await;
    assert!(text.contains("DataSourceExec"), "{text}");
}

#[tokio::test]
async fn a_scan_with_every_file_pruned_still_reports_its_planning() {
    // No order has id 1000: both files are pruned by their metrics.
    let (plan, text) = orders_plan("SELECT * FROM t WHERE order_id = 1000").await;
    let ctx = SessionContext::new();
    let batches = datafusion::physical_plan::collect(Arc::clone(&plan), ctx.task_ctx())
        .await
        .unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 0);
    assert!(text.contains("IcebergRowCountExec: rows=0"), "{text}");
    assert_eq!(
        plan_metric(&plan, "data_files_pruned_by_metrics"),
        Some(2),
        "{text}"
    );
    assert_eq!(plan_metric(&plan, "data_files_scanned"), Some(0), "{text}");
}

#[tokio::test]
async fn a_provider_follows_commits_only_forward() {
    let ctx = SessionContext::new();
    let io = orders(&ctx).await.io().clone();
    let dir = "file:///data/lake/wh1/db/orders/metadata";
    let v1 = format!("{dir}/00001-5189159d-5812-48e1-8275-e7336a371f7b.metadata.json");
    let v2 = format!("{dir}/00002-12fddab5-e74f-4436-9b0e-e263cc6ff7c0.metadata.json");
    let first = Table::load_metadata_file(io.clone(), v1).await.unwrap();
    let second = Table::load_metadata_file(io.clone(), v2).await.unwrap();
    // 00002's metadata log names 00001.
    assert!(is_later(&second, &first));
    assert!(!is_later(&first, &second));
    assert!(!is_later(&second, &second));
    // Unrelated names: by sequence number (2 after 1).
    let renamed = |t: &Table, name: &str| {
        Table::from_parts(io.clone(), name.to_string(), Arc::clone(t.metadata()))
    };
    assert!(is_later(&renamed(&second, "b"), &renamed(&first, "a")));
    assert!(!is_later(&renamed(&first, "a"), &renamed(&second, "b")));

    let provider = IcebergTableProvider::try_new(first.clone(), SnapshotSelector::Current).unwrap();
    let clone = provider.clone();
    assert_eq!(provider.snapshot_id(), Some(FIRST));
    advance(&provider.table, &second);
    assert_eq!(provider.snapshot_id(), Some(SECOND));
    // Clones share the state; an older commit arriving late does not move it back.
    assert_eq!(clone.snapshot_id(), Some(SECOND));
    advance(&provider.table, &first);
    assert_eq!(provider.snapshot_id(), Some(SECOND));
    assert_eq!(count_and_sum(&ctx, provider).await, (20, 210));
    // A time-travel provider reads its snapshot whatever its table holds.
    let fixed = IcebergTableProvider::try_new(first, SnapshotSelector::SnapshotId(FIRST)).unwrap();
    advance(&fixed.table, &second);
    assert_eq!(fixed.snapshot_id(), Some(FIRST));
    assert_eq!(count_and_sum(&ctx, fixed).await, (10, 55));
}
