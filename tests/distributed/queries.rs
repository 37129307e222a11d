//! Queries over Iceberg tables on 2 and 3 worker processes, against the single-process answers.

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::physical_plan::displayable;
use datafusion::prelude::SessionContext;
use icefloe::io::Relocation;
use icefloe::metadata_tables::{IcebergMetadataTable, MetadataTableKind};
use icefloe::spec::SnapshotSelector;
use icefloe::{IcebergTableProvider, TableOptions};

use crate::cluster::Cluster;

fn fixtures() -> String {
    format!("{}/tests/fixtures", env!("CARGO_MANIFEST_DIR"))
}

/// Registers the tables every query reads in `ctx`: PyIceberg-written tables (partitioned,
/// evolved, position and equality deletes), Impala's (deletion vectors, equality and
/// position deletes together), metadata tables and a table at its first snapshot.
async fn register_tables(ctx: &SessionContext) {
    let wh1 = format!("{}/pyiceberg/wh1", fixtures());
    let moved = Relocation::new().with_rule("file:///data/lake/wh1", &wh1);
    for table in [
        "orders",
        "part_evo",
        "schema_evo",
        "deletes_mor",
        "deletes_eq",
        "refs",
    ] {
        let options = TableOptions::default().with_relocation_rules(moved.clone());
        let location = format!("{wh1}/db/{table}");
        let provider = IcebergTableProvider::open(ctx, &location, options)
            .await
            .unwrap();
        ctx.register_table(table, Arc::new(provider)).unwrap();
    }
    let external = format!("{}/external", fixtures());
    for (table, written_at, metadata) in [
        (
            "impala_v3_deletion_vectors",
            "hdfs://localhost:20500/test-warehouse/iceberg_v3_deletion_vectors",
            "v3",
        ),
        (
            "impala_v2_delete_both_eq_and_pos",
            "/test-warehouse/iceberg_test/hadoop_catalog/ice/iceberg_v2_delete_both_eq_and_pos",
            "v4",
        ),
    ] {
        let options = TableOptions::default()
            .with_relocation(written_at, format!("{external}/{table}"))
            .with_relocation(
                format!("hdfs://localhost:20500{written_at}"),
                format!("{external}/{table}"),
            );
        let location = format!("{external}/{table}/metadata/{metadata}.metadata.json");
        let provider = IcebergTableProvider::open(ctx, &location, options)
            .await
            .unwrap();
        ctx.register_table(table, Arc::new(provider)).unwrap();
    }
    let refs = IcebergTableProvider::open(
        ctx,
        &format!("{wh1}/db/refs"),
        TableOptions::default().with_relocation_rules(moved.clone()),
    )
    .await
    .unwrap()
    .table();
    let first = refs.metadata().snapshots[0].snapshot_id;
    for kind in [
        MetadataTableKind::Snapshots,
        MetadataTableKind::Files,
        MetadataTableKind::Entries,
    ] {
        let relation = IcebergMetadataTable::try_new(refs.clone(), kind, SnapshotSelector::Current);
        ctx.register_table(format!("refs_{}", kind.name()), Arc::new(relation.unwrap()))
            .unwrap();
    }
    let options = TableOptions::default()
        .with_relocation_rules(moved)
        .with_snapshot_id(first);
    let then = IcebergTableProvider::open(ctx, &format!("{wh1}/db/refs"), options)
        .await
        .unwrap();
    ctx.register_table("refs_then", Arc::new(then)).unwrap();
}

/// Scans, filters, joins, aggregates and orders, TPC-H style, over the tables above.
const QUERIES: [&str; 14] = [
    "SELECT * FROM orders",
    "SELECT * FROM orders WHERE order_id > 3",
    "SELECT date_trunc('day', order_ts) AS day, count(*), sum(order_id) FROM orders GROUP BY 1 ORDER BY 1",
    "SELECT * FROM part_evo",
    "SELECT * FROM schema_evo",
    "SELECT * FROM deletes_mor",
    "SELECT * FROM deletes_eq",
    "SELECT count(*), min(id), max(id), sum(id) FROM deletes_eq WHERE id > 3",
    "SELECT a.id, b.id FROM deletes_eq a JOIN deletes_mor b ON a.id = b.id ORDER BY a.id",
    "SELECT * FROM impala_v3_deletion_vectors",
    "SELECT * FROM impala_v2_delete_both_eq_and_pos ORDER BY 1 LIMIT 3",
    "SELECT * FROM refs_then",
    "SELECT snapshot_id, operation FROM refs_snapshots ORDER BY 1",
    "SELECT f.file_path, f.record_count FROM refs_files f JOIN refs_entries e ON f.file_path = e.data_file.file_path ORDER BY 1",
];

fn sorted_rows(batches: &[RecordBatch]) -> Vec<String> {
    let shown = pretty_format_batches(batches).unwrap().to_string();
    let mut rows: Vec<String> = shown
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(1)
        .map(str::to_string)
        .collect();
    rows.sort();
    rows
}

async fn answers(ctx: &SessionContext, query: &str) -> Vec<String> {
    let run = async { ctx.sql(query).await?.collect().await };
    let batches = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .unwrap_or_else(|_| panic!("{query}: no answer in 120 s"))
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    sorted_rows(&batches)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_give_the_single_process_answers_on_two_and_three_workers() {
    let single = SessionContext::new();
    icefloe::sql::register(&single);
    register_tables(&single).await;
    for workers in [2, 3] {
        let cluster = Cluster::start(workers);
        let ctx = cluster.coordinator();
        register_tables(&ctx).await;
        for query in QUERIES {
            let expected = answers(&single, query).await;
            assert!(!expected.is_empty(), "{query}: no rows to compare");
            assert_eq!(
                answers(&ctx, query).await,
                expected,
                "{query} on {workers} workers"
            );
        }
        // The scans did go to the workers: the plan has network boundaries.
        let plan = ctx
            .sql("SELECT * FROM deletes_eq")
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let shown = displayable(plan.as_ref()).indent(true).to_string();
        assert!(shown.contains("DistributedExec"), "{shown}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_worker_fails_the_query_cleanly() {
    let mut cluster = Cluster::start(2);
    let ctx = cluster.coordinator();
    register_tables(&ctx).await;
    cluster.kill(1);
    let run = async { ctx.sql("SELECT * FROM orders").await?.collect().await };
    let outcome = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the query ends within 120 s");
    let err = outcome.expect_err("a query with a task on a lost worker fails");
    let shown = err.to_string();
    assert!(
        shown.contains("Error connecting to Distributed DataFusion worker"),
        "{shown}"
    );
}

/// Not a check: the wall time of scans on 1, 2 and 3 worker processes next to the single
/// process (`cargo test --features distributed --test distributed -- --ignored --nocapture`).
/// On one small machine this shows the runtime's overhead, not a speed-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn wall_time_on_one_two_and_three_workers() {
    let queries = [
        "SELECT * FROM orders",
        "SELECT * FROM deletes_eq",
        "SELECT a.id, b.id FROM deletes_eq a JOIN deletes_mor b ON a.id = b.id",
    ];
    let single = SessionContext::new();
    icefloe::sql::register(&single);
    register_tables(&single).await;
    let time = |ctx: SessionContext, query: &'static str| async move {
        answers(&ctx, query).await;
        let mut runs = Vec::new();
        for _ in 0..9 {
            let started = std::time::Instant::now();
            answers(&ctx, query).await;
            runs.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        runs.sort_by(f64::total_cmp);
        runs[runs.len() / 2]
    };
    for query in queries {
        let mut line = format!(
            "{query}: single {:.1} ms",
            time(single.clone(), query).await
        );
        for workers in [1, 2, 3] {
            let cluster = Cluster::start(workers);
            let ctx = cluster.coordinator();
            register_tables(&ctx).await;
            line += &format!(", {workers} workers {:.1} ms", time(ctx, query).await);
        }
        println!("{line}");
    }
}
