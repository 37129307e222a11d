//! DELETE, UPDATE and MERGE through a coordinator: the rows to change are found by the workers,
//! the files that change them (copies, position delete files, deletion vectors, new rows) are
//! written by the workers, and the one commit happens on the coordinator. Each statement is
//! checked against the same statement run in one process on a twin table.

use std::sync::Arc;
use std::time::Duration;

use datafusion::prelude::SessionContext;
use icefloe::{IcebergTableProvider, TableOptions};

use crate::cluster::Cluster;
use crate::queries::{
    INSERT, answers, files_under, read_back_elsewhere, register_tables, workers_stage,
};

/// A statement of a check, `{t}` standing for the table's location.
enum Step {
    /// Run by the coordinator on the cluster's table, and in one process on its twin.
    Both(&'static str),
    /// As `Both`, where datafusion-distributed places it: a statement over few bytes may run
    /// on the coordinator alone.
    Placed(&'static str),
    /// Run in one process on both tables (to set up what the next steps change).
    Local(&'static str),
}

/// A session of one process with `t` the table at `at`.
async fn one_process(at: &str) -> SessionContext {
    let ctx = SessionContext::new();
    icefloe::sql::register(&ctx);
    register_tables(&ctx).await;
    let create = format!("CREATE EXTERNAL TABLE t STORED AS ICEBERG LOCATION '{at}'");
    ctx.sql(&create).await.unwrap().collect().await.unwrap();
    ctx
}

/// Runs `steps` on a table that the coordinator of two worker processes creates with `create`,
/// and on a twin made in one process. Each row-level statement of the coordinator runs its
/// writers in a workers' stage (the commit alone on the coordinator) and returns the count
/// the twin's returns; the tables end with the same rows, and PyIceberg and DuckDB read the
/// cluster's so. `after` is called with the cluster table's location after each step.
async fn same_as_one_process(create: &str, steps: &[Step], mut after: impl FnMut(usize, &str)) {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(2);
    let distributed = &cluster.coordinator();
    register_tables(distributed).await;
    let cluster_at = format!("{}/cluster", dir.path().display());
    let single_at = format!("{}/single", dir.path().display());
    let single = SessionContext::new();
    icefloe::sql::register(&single);
    register_tables(&single).await;
    for (ctx, at) in [(distributed, &cluster_at), (&single, &single_at)] {
        let create = create.replace("{t}", at);
        ctx.sql(&create).await.unwrap().collect().await.unwrap();
    }
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Both(sql) | Step::Placed(sql) => {
                if !sql.starts_with("INSERT") && matches!(step, Step::Both(_)) {
                    let (shown, _) = workers_stage(distributed, sql).await;
                    let (root, stages) = shown.split_once("Stage ").unwrap_or((&shown, ""));
                    assert!(root.contains("IcebergChangeCommitExec"), "{sql}: {shown}");
                    assert!(!root.contains("IcebergChangeWriteExec"), "{sql}: {shown}");
                    assert!(stages.contains("IcebergChangeWriteExec"), "{sql}: {shown}");
                }
                let on_cluster = answers(distributed, sql).await;
                let in_one = answers(&single, sql).await;
                assert_eq!(on_cluster, in_one, "{sql}: the rows changed");
            }
            Step::Local(sql) => {
                for at in [&cluster_at, &single_at] {
                    answers(&one_process(at).await, sql).await;
                }
                // The coordinator reads the table as the local change left it.
                distributed.deregister_table("t").unwrap();
                let create =
                    format!("CREATE EXTERNAL TABLE t STORED AS ICEBERG LOCATION '{cluster_at}'");
                distributed
                    .sql(&create)
                    .await
                    .unwrap()
                    .collect()
                    .await
                    .unwrap();
            }
        }
        after(i, &cluster_at);
    }
    let rows = |at: &str| {
        let at = at.to_string();
        async move { answers(&one_process(&at).await, "SELECT id, category, k FROM t").await }
    };
    let (on_cluster, in_one) = (rows(&cluster_at).await, rows(&single_at).await);
    assert!(!on_cluster.is_empty());
    assert_eq!(on_cluster, in_one, "the tables' rows");
    let read = SessionContext::new();
    let table = IcebergTableProvider::open(&read, &cluster_at, TableOptions::default())
        .await
        .unwrap();
    let metadata = table.table().metadata_location().to_string();
    read.register_table("t", Arc::new(table)).unwrap();
    read_back_elsewhere(&read, "SELECT id, category, k FROM t", &metadata).await;
}

/// The live delete files of the table at `at`: (file name, the data file it applies to).
fn delete_files(at: &str) -> Vec<(String, String)> {
    live_files(at, "delete_files")
}

/// The live files of metadata table `relation` (`data_files`, `delete_files`) of the table at
/// `at`: (file name, the data file it applies to, if any).
fn live_files(at: &str, relation: &str) -> Vec<(String, String)> {
    let (at, relation) = (at.to_string(), relation.to_string());
    let run = async move {
        let ctx = one_process(&at).await;
        let sql = format!(
            "SELECT file_path, coalesce(referenced_data_file, '') FROM \
             iceberg_metadata('{at}', '{relation}')"
        );
        let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
        let mut files = Vec::new();
        for batch in &batches {
            use datafusion::arrow::array::AsArray;
            let cast = |i: usize| {
                datafusion::arrow::compute::cast(
                    batch.column(i),
                    &datafusion::arrow::datatypes::DataType::Utf8,
                )
                .unwrap()
            };
            let (paths, referenced) = (cast(0), cast(1));
            for row in 0..batch.num_rows() {
                let path = paths.as_string::<i32>().value(row);
                let name = path.rsplit('/').next().unwrap().to_string();
                files.push((name, referenced.as_string::<i32>().value(row).to_string()));
            }
        }
        files
    };
    on_own_runtime(run)
}

/// What `work` gives, run on a runtime of its own (from a callback of a running test).
fn on_own_runtime<T: Send + 'static>(work: impl Future<Output = T> + Send + 'static) -> T {
    std::thread::spawn(move || tokio::runtime::Runtime::new().unwrap().block_on(work))
        .join()
        .unwrap()
}

/// Whether `name` is that of a file a writer of a distributed statement wrote:
/// `<token>-<partition>-<uuid>...` (a token of 32 hex digits, then the partition's number).
fn written_by_a_writer(name: &str) -> bool {
    let mut parts = name.split('-');
    let token = parts.next().unwrap_or_default();
    let partition = parts.next().unwrap_or_default();
    token.len() == 32
        && token.chars().all(|c| c.is_ascii_hexdigit())
        && !partition.is_empty()
        && partition.chars().all(|c| c.is_ascii_digit())
}

const MERGE: &str = "MERGE INTO t USING (SELECT CAST(id AS BIGINT) AS id FROM deletes_mor \
    WHERE id < 60) s ON t.id = s.id \
    WHEN MATCHED AND t.id < 12 THEN DELETE \
    WHEN MATCHED THEN UPDATE SET category = 'merged' \
    WHEN NOT MATCHED THEN INSERT (id, category, k) VALUES (s.id + 1000, 'inserted', s.id % 3)";

/// A v2 table: DELETE by position delete files, UPDATE by copies, MERGE (delete, update and
/// insert) by position delete files and new rows: all written by the workers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_changes_are_written_by_the_workers_and_leave_the_single_process_rows() {
    let create = "CREATE EXTERNAL TABLE t (id BIGINT, category VARCHAR, k BIGINT) STORED AS \
        ICEBERG LOCATION '{t}' OPTIONS ('partitioning' 'bucket(4, k)', 'format-version' '2', \
        'write.delete.mode' 'merge-on-read', 'write.update.mode' 'copy-on-write', \
        'write.merge.mode' 'merge-on-read')";
    let steps = [
        Step::Both(INSERT),
        Step::Both("DELETE FROM t WHERE id % 4 = 1"),
        Step::Both("UPDATE t SET category = 'updated' WHERE id < 20"),
        Step::Both(MERGE),
        Step::Placed(
            "MERGE INTO t USING (SELECT value AS id FROM generate_series(5000, 5999)) s \
             ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, category, k) \
             VALUES (s.id, 'bulk', s.id % 3)",
        ),
    ];
    let mut deletes_after_delete = Vec::new();
    let mut inserted = 0;
    let mut data_files_before_bulk = Vec::new();
    let mut data_files_after_bulk = Vec::new();
    same_as_one_process(create, &steps, |i, at| match i {
        1 => deletes_after_delete = delete_files(at),
        3 => {
            data_files_before_bulk = live_files(at, "data_files");
            let at = at.to_string();
            let count = on_own_runtime(async move {
                let sql = "SELECT count(*) AS n FROM t WHERE category = 'inserted'";
                answers(&one_process(&at).await, sql).await
            });
            inserted = count[0]
                .trim_matches(|c| c == '|' || c == ' ')
                .parse()
                .unwrap();
        }
        4 => data_files_after_bulk = live_files(at, "data_files"),
        _ => {}
    })
    .await;
    // The DELETE's position delete files were written by the workers' writers.
    assert!(!deletes_after_delete.is_empty());
    for (name, _) in &deletes_after_delete {
        assert!(written_by_a_writer(name), "{name}");
        assert!(name.ends_with("-deletes.parquet"), "{name}");
    }
    assert!(inserted > 0, "the MERGE inserted rows");
    // The rows the last MERGE inserts (no `_file`) are spread over several writers (wherever
    // they run): its new files come from more than one writer's partition.
    let new: Vec<&String> = data_files_after_bulk
        .iter()
        .map(|(name, _)| name)
        .filter(|name| !data_files_before_bulk.iter().any(|(n, _)| n == *name))
        .collect();
    assert!(new.iter().all(|n| written_by_a_writer(n)), "{new:?}");
    let mut writers: Vec<&str> = new.iter().map(|n| n.split('-').nth(1).unwrap()).collect();
    writers.sort();
    writers.dedup();
    assert!(writers.len() > 1, "{new:?}");
}

/// A v3 table, merge-on-read: deletion vectors written by the workers, one per data file. A
/// statement that replaces one vector of a Puffin file holding others has the others carried
/// into a new Puffin file by the coordinator (no live Puffin file keeps a replaced vector).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v3_deletion_vectors_are_written_by_the_workers_and_carried_once() {
    let create = "CREATE EXTERNAL TABLE t (id BIGINT, category VARCHAR, k BIGINT) STORED AS \
        ICEBERG LOCATION '{t}' OPTIONS ('partitioning' 'identity(k)', 'format-version' '3', \
        'write.delete.mode' 'merge-on-read', 'write.update.mode' 'merge-on-read', \
        'write.merge.mode' 'merge-on-read')";
    let steps = [
        Step::Both(INSERT),
        // One process: one Puffin file with a vector for every data file.
        Step::Local("DELETE FROM t WHERE id % 4 = 1"),
        // Changes one data file: the other vectors of that Puffin file are carried.
        Step::Both("DELETE FROM t WHERE id = 12"),
        Step::Both("UPDATE t SET category = 'updated' WHERE id < 20"),
        Step::Both(MERGE),
    ];
    let mut after_local = Vec::new();
    let mut after_carry = Vec::new();
    let mut one_vector_each = true;
    same_as_one_process(create, &steps, |i, at| {
        let files = delete_files(at);
        let mut referenced: Vec<&str> = files.iter().map(|(_, r)| r.as_str()).collect();
        referenced.sort();
        referenced.dedup();
        one_vector_each &= referenced.len() == files.len();
        match i {
            1 => after_local = files,
            2 => after_carry = files,
            _ => {}
        }
    })
    .await;
    assert!(one_vector_each, "a data file has one live deletion vector");
    let puffins = |files: &[(String, String)]| {
        let mut names: Vec<String> = files.iter().map(|(n, _)| n.clone()).collect();
        names.sort();
        names.dedup();
        names
    };
    assert_eq!(puffins(&after_local).len(), 1, "{after_local:?}");
    assert!(after_local.len() > 1, "{after_local:?}");
    // After the one-row DELETE: the changed file's vector by a writer, the others carried by
    // the commit, and the one-process Puffin file no longer live.
    let names = puffins(&after_carry);
    assert_eq!(names.len(), 2, "{after_carry:?}");
    assert!(names.iter().all(|n| n.ends_with("-deletes.puffin")));
    assert!(names.iter().any(|n| written_by_a_writer(n)), "{names:?}");
    assert!(names.iter().any(|n| n.contains("-commit-")), "{names:?}");
    assert!(!names.contains(&puffins(&after_local)[0]));
    assert_eq!(after_carry.len(), after_local.len());
}

/// A worker killed while an UPDATE's writers copy files: the statement fails within the
/// timeout, commits nothing, and the files written so far are deleted, the dead worker's too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_update_fails_it_and_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let at = format!("{}/big", dir.path().display());
    // Files big enough that copying them takes the workers a while: 2M rows, a dozen files.
    let single = SessionContext::new();
    icefloe::sql::register(&single);
    for statement in [
        format!(
            "CREATE EXTERNAL TABLE big (id BIGINT, s VARCHAR) STORED AS ICEBERG LOCATION '{at}' \
             OPTIONS ('write.target-file-size-bytes' '200000', 'write.update.mode' 'copy-on-write')"
        ),
        "INSERT INTO big SELECT value, concat('row number ', value) FROM generate_series(1, 2000000)"
            .to_string(),
    ] {
        single.sql(&statement).await.unwrap().collect().await.unwrap();
    }
    let data = std::path::Path::new(&at).join("data");
    let files_before = files_under(&data);
    assert!(files_before > 2, "{files_before} files");
    let mut cluster = Cluster::start(2);
    let ctx = cluster.coordinator();
    let create = format!("CREATE EXTERNAL TABLE big STORED AS ICEBERG LOCATION '{at}'");
    ctx.sql(&create).await.unwrap().collect().await.unwrap();
    let update = ctx
        .sql("UPDATE big SET s = 'changed' WHERE id % 2 = 0")
        .await
        .unwrap();
    let running = tokio::spawn(async move { update.collect().await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !running.is_finished(),
        "the UPDATE ran for less than 300 ms: nothing to interrupt"
    );
    cluster.kill(1);
    let outcome = tokio::time::timeout(Duration::from_secs(120), running)
        .await
        .expect("the UPDATE ends within 120 s")
        .unwrap();
    let err = outcome
        .expect_err("an UPDATE whose worker was killed fails")
        .to_string();
    let lost = ["connection", "broken pipe", "transport", "h2 protocol"];
    assert!(lost.iter().any(|l| err.to_lowercase().contains(l)), "{err}");
    let table = IcebergTableProvider::open(&single, &at, TableOptions::default())
        .await
        .unwrap();
    assert_eq!(
        table.table().metadata().snapshots.len(),
        1,
        "nothing is committed"
    );
    assert_eq!(files_under(&data), files_before, "no file written is left");
}
