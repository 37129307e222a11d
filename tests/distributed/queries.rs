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
pub async fn register_tables(ctx: &SessionContext) {
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
pub const QUERIES: [&str; 14] = [
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

/// The distributed plan of `sql` drawn by datafusion-distributed, and the part of it that
/// draws the workers' stage (drawn last).
pub async fn workers_stage(ctx: &SessionContext, sql: &str) -> (String, String) {
    let plan = ctx
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    // A statement that commits is answered by its commit, above the distributed plan.
    let plan = match plan.name() {
        "IcebergCommittedExec" => Arc::clone(plan.children()[0]),
        _ => plan,
    };
    let shown = datafusion_distributed::display_plan_ascii(plan.as_ref(), false);
    let stage = shown
        .rsplit("Stage 1 ──")
        .next()
        .unwrap_or_default()
        .to_string();
    (shown, stage)
}

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

pub async fn answers(ctx: &SessionContext, query: &str) -> Vec<String> {
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

/// The data files under `dir` (recursively).
pub fn files_under(dir: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .map_while(Result::ok)
        .map(
            |e| match e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                true => files_under(&e.path()),
                false => 1,
            },
        )
        .sum()
}

const CREATE: &str = "CREATE EXTERNAL TABLE t (id BIGINT, category VARCHAR, k BIGINT) \
    STORED AS ICEBERG LOCATION '{dir}/t' OPTIONS ('partitioning' 'bucket(4, k)')";
pub const INSERT: &str =
    "INSERT INTO t SELECT CAST(id AS BIGINT), category, CAST(id % 3 AS BIGINT) FROM deletes_eq";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insert_is_written_by_the_workers_and_committed_once() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(2);
    let ctx = cluster.coordinator();
    register_tables(&ctx).await;
    let create = CREATE.replace("{dir}", dir.path().to_str().unwrap());
    ctx.sql(&create).await.unwrap().collect().await.unwrap();
    // The writers run in the workers' stage, the commit at the root, here.
    let (shown, stage) = workers_stage(&ctx, INSERT).await;
    assert!(shown.contains("DistributedExec"), "{shown}");
    assert!(stage.contains("IcebergWriteExec"), "{shown}");
    assert!(!stage.contains("IcebergCommitExec"), "{shown}");
    let inserted = answers(&ctx, INSERT).await;
    let expected = answers(&ctx, "SELECT count(*) FROM deletes_eq").await;
    assert_eq!(inserted[0].replace(' ', ""), expected[0].replace(' ', ""));

    // A single process reads back what the select gives, in one snapshot.
    let single = SessionContext::new();
    icefloe::sql::register(&single);
    register_tables(&single).await;
    let location = dir.path().join("t");
    let written =
        IcebergTableProvider::open(&single, location.to_str().unwrap(), TableOptions::default())
            .await
            .unwrap();
    assert_eq!(written.table().metadata().snapshots.len(), 1);
    let metadata = written.table().metadata_location().to_string();
    single.register_table("t", Arc::new(written)).unwrap();
    let select =
        "SELECT CAST(id AS BIGINT) AS id, category, CAST(id % 3 AS BIGINT) AS k FROM deletes_eq";
    assert_eq!(
        answers(&single, "SELECT * FROM t").await,
        answers(&single, select).await
    );
    read_back_elsewhere(&single, select, &metadata).await;
}

/// PyIceberg and DuckDB read the table at `metadata` as the rows `select` gives (when
/// `ICEFLOE_PYTHON` names a Python with them; otherwise the check says it was not run).
pub async fn read_back_elsewhere(ctx: &SessionContext, select: &str, metadata: &str) {
    let Some(python) = std::env::var_os("ICEFLOE_PYTHON") else {
        eprintln!(
            "distributed INSERT: ICEFLOE_PYTHON is not set: the PyIceberg/DuckDB read-back was NOT run"
        );
        return;
    };
    let script = format!(
        "{}/tests/distributed/read_back.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let output = std::process::Command::new(python)
        .args([script.as_str(), metadata, "id", "category", "k"])
        .output()
        .expect("python runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let read: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let batches = ctx.sql(select).await.unwrap().collect().await.unwrap();
    let mut expected: Vec<serde_json::Value> = Vec::new();
    for batch in &batches {
        use datafusion::arrow::array::AsArray;
        use datafusion::arrow::datatypes::Int64Type;
        let ids = batch.column(0).as_primitive::<Int64Type>();
        let categories = datafusion::arrow::compute::cast(
            batch.column(1),
            &datafusion::arrow::datatypes::DataType::Utf8,
        )
        .unwrap();
        let categories = categories.as_string::<i32>();
        let ks = batch.column(2).as_primitive::<Int64Type>();
        for i in 0..batch.num_rows() {
            expected.push(serde_json::json!([
                ids.value(i),
                categories.value(i),
                ks.value(i)
            ]));
        }
    }
    expected.sort_by_key(|v| v.to_string());
    for engine in ["pyiceberg", "duckdb"] {
        let mut rows: Vec<serde_json::Value> = read[engine].as_array().unwrap().clone();
        rows.sort_by_key(|v| v.to_string());
        assert_eq!(rows, expected, "{engine} reads the rows inserted");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insert_with_a_lost_worker_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = Cluster::start(2);
    let ctx = cluster.coordinator();
    register_tables(&ctx).await;
    let create = CREATE.replace("{dir}", dir.path().to_str().unwrap());
    ctx.sql(&create).await.unwrap().collect().await.unwrap();
    cluster.kill(1);
    let run = async { ctx.sql(INSERT).await?.collect().await };
    let outcome = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the INSERT ends within 120 s");
    assert!(
        outcome.is_err(),
        "an INSERT with a task on a lost worker fails"
    );
    let location = dir.path().join("t");
    let single = SessionContext::new();
    let table =
        IcebergTableProvider::open(&single, location.to_str().unwrap(), TableOptions::default())
            .await
            .unwrap();
    assert!(
        table.table().metadata().snapshots.is_empty(),
        "nothing is committed"
    );
    assert_eq!(
        files_under(&location.join("data")),
        0,
        "no data file is left"
    );
}

/// EXPLAIN ANALYZE on the coordinator shows each task's scan with the files it read and the
/// rows it returned: every file of the table is read by one task, and the rows add up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_analyze_shows_which_task_read_which_files() {
    let cluster = Cluster::start(2);
    let ctx = cluster.coordinator();
    register_tables(&ctx).await;
    let batches = ctx
        .sql("EXPLAIN ANALYZE SELECT * FROM deletes_mor")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let shown = pretty_format_batches(&batches).unwrap().to_string();
    // Each task's scan: `tN: DataSourceExec: file_groups={k groups: [[path:start..end, ...]]}`.
    let mut ranges: Vec<(String, u64, u64, String)> = Vec::new();
    for line in shown.lines() {
        let Some((task, rest)) = line.split_once(": DataSourceExec: file_groups={") else {
            continue;
        };
        let task = task.rsplit(' ').next().unwrap().to_string();
        let groups = rest.split("]]}").next().unwrap();
        let groups = groups.split_once(": ").map_or(groups, |(_, g)| g);
        for item in groups.split(", ") {
            let item = item.trim_matches(|c| c == '[' || c == ']');
            let (path, range) = item.rsplit_once(':').expect("a byte range");
            let (start, end) = range.split_once("..").unwrap();
            ranges.push((
                path.to_string(),
                start.parse().unwrap(),
                end.parse().unwrap(),
                task.clone(),
            ));
        }
    }
    let tasks: std::collections::BTreeSet<&str> = ranges.iter().map(|r| r.3.as_str()).collect();
    assert_eq!(tasks.len(), 2, "two tasks read the table: {shown}");
    // Every file is read once: its ranges, across tasks, tile it without overlap.
    ranges.sort();
    let mut files = std::collections::BTreeMap::new();
    for (path, start, end, _) in &ranges {
        let covered = files.entry(path.clone()).or_insert(0u64);
        assert_eq!(
            *covered, *start,
            "{path} read from {start} after {covered}: {shown}"
        );
        *covered = *end;
    }
    for (path, covered) in &files {
        let size = std::fs::metadata(format!("/{path}")).unwrap().len();
        assert_eq!(*covered, size, "{path} read to {covered} of {size} bytes");
    }
    let single = SessionContext::new();
    register_tables(&single).await;
    let rows = answers(&single, "SELECT count(*) FROM deletes_mor").await;
    let rows = rows[0].trim_matches(|c| c == '|' || c == ' ');
    assert!(
        shown.contains(&format!(
            "DistributedLeafExec:, metrics=[output_rows={rows},"
        )),
        "{shown}"
    );
}

/// A worker killed while an INSERT's tasks run: the statement fails within the timeout,
/// commits nothing, and the files written so far are deleted, the dead worker's too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_insert_fails_it_and_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().to_str().unwrap();
    // A table big enough that writing a copy takes the workers a while: 2M rows, one file.
    let single = SessionContext::new();
    icefloe::sql::register(&single);
    for statement in [
        format!("CREATE EXTERNAL TABLE big (id BIGINT, s VARCHAR) STORED AS ICEBERG LOCATION '{at}/big'"),
        "INSERT INTO big SELECT value, concat('row number ', value) FROM generate_series(1, 2000000)".to_string(),
    ] {
        single.sql(&statement).await.unwrap().collect().await.unwrap();
    }
    let mut cluster = Cluster::start(2);
    let ctx = cluster.coordinator();
    for statement in [
        format!("CREATE EXTERNAL TABLE big STORED AS ICEBERG LOCATION '{at}/big'"),
        // Small files: the writers close files (which then exist) long before they finish.
        format!(
            "CREATE EXTERNAL TABLE copy (id BIGINT, s VARCHAR) STORED AS ICEBERG \
             LOCATION '{at}/copy' OPTIONS ('write.target-file-size-bytes' '100000')"
        ),
    ] {
        ctx.sql(&statement).await.unwrap().collect().await.unwrap();
    }
    let insert = ctx
        .sql("INSERT INTO copy SELECT id, s FROM big")
        .await
        .unwrap();
    let running = tokio::spawn(async move { insert.collect().await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !running.is_finished(),
        "the INSERT ran for less than 300 ms: nothing to interrupt"
    );
    cluster.kill(1);
    let outcome = tokio::time::timeout(Duration::from_secs(120), running)
        .await
        .expect("the INSERT ends within 120 s")
        .unwrap();
    let err = outcome
        .expect_err("an INSERT whose worker was killed fails")
        .to_string();
    let lost = ["connection", "broken pipe", "transport", "h2 protocol"];
    assert!(lost.iter().any(|l| err.to_lowercase().contains(l)), "{err}");
    let copy = IcebergTableProvider::open(&single, &format!("{at}/copy"), TableOptions::default())
        .await
        .unwrap();
    assert!(
        copy.table().metadata().snapshots.is_empty(),
        "nothing is committed: {err} {:?}",
        copy.table()
            .metadata()
            .snapshots
            .first()
            .map(|s| &s.summary)
    );
}

/// icefloe's functions run in the workers' stage (the workers' sessions have them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn icefloe_functions_run_on_the_workers() {
    let cluster = Cluster::start(2);
    let ctx = cluster.coordinator();
    register_tables(&ctx).await;
    let single = SessionContext::new();
    icefloe::sql::register(&single);
    register_tables(&single).await;
    let query = "SELECT id, variant_to_json(parse_json(concat('{\"c\": \"', category, '\"}'))) \
                 FROM deletes_eq";
    let (shown, stage) = workers_stage(&ctx, query).await;
    assert!(stage.contains("parse_json"), "{shown}");
    let expected = answers(&single, query).await;
    assert!(!expected.is_empty());
    assert_eq!(answers(&ctx, query).await, expected);
}
