//! Tests of appends: a real table directory, real Parquet files, read back through the
//! provider; concurrent writers; a lost race.

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::prelude::SessionContext;

use super::*;
use crate::provider::IcebergTableProvider;
use crate::spec::{DataContentType, FileFormat, SnapshotSelector};
use crate::to_arrow::schema_to_arrow;

const METADATA: &str = r#"{
  "format-version": 2,
  "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
  "location": "LOCATION",
  "last-sequence-number": 0,
  "last-updated-ms": 1700000000000,
  "last-column-id": 1,
  "current-schema-id": 0,
  "schemas": [{"type": "struct", "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "required": false, "type": "long"}]}],
  "default-spec-id": 0,
  "partition-specs": [{"spec-id": 0, "fields": []}],
  "last-partition-id": 999,
  "default-sort-order-id": 0,
  "sort-orders": [{"order-id": 0, "fields": []}],
  "properties": {"commit.retry.num-retries": "50", "commit.retry.min-wait-ms": "1",
    "commit.retry.max-wait-ms": "20"},
  "current-snapshot-id": -1,
  "snapshots": [],
  "snapshot-log": [],
  "metadata-log": []
}"#;

/// An empty table directory with `v1.metadata.json`.
fn new_table(dir: &std::path::Path) -> String {
    let location = dir.display().to_string();
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let json = METADATA.replace("LOCATION", &location);
    std::fs::write(dir.join("metadata/v1.metadata.json"), json).unwrap();
    location
}

/// A Parquet data file of `ids` in the table's data directory.
fn data_file(location: &str, ids: &[i64]) -> (i32, DataFile) {
    let metadata = TableMetadata::parse(METADATA.replace("LOCATION", location).as_bytes()).unwrap();
    let schema = Arc::new(schema_to_arrow(metadata.current_schema()).unwrap());
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(Int64Array::from(ids.to_vec()))],
    )
    .unwrap();
    let path = format!("{location}/data/{}.parquet", uuid::Uuid::new_v4());
    let mut writer =
        ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let size = std::fs::metadata(&path).unwrap().len() as i64;
    let file = DataFile::new(
        DataContentType::Data,
        path,
        FileFormat::Parquet,
        ids.len() as i64,
        size,
    );
    (0, file)
}

async fn count_and_sum(location: &str) -> (i64, i64) {
    let ctx = SessionContext::new();
    let table = Table::load(FileIO::default(), location).await.unwrap();
    let provider = IcebergTableProvider::try_new(table, SnapshotSelector::Current).unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let batches = ctx
        .sql("SELECT count(*), coalesce(sum(id), 0) FROM t")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let value = |i: usize| batches[0].column(i).as_primitive::<Int64Type>().value(0);
    (value(0), value(1))
}

#[tokio::test]
async fn appends_commit_new_versions_that_reuse_earlier_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path());
    let io = FileIO::default();
    let first = append_to_directory(
        &io,
        &location,
        AppendFiles::new(vec![data_file(&location, &[1, 2, 3])]),
    )
    .await
    .unwrap();
    assert!(
        first
            .metadata_location()
            .ends_with("/metadata/v2.metadata.json")
    );
    let second = append_to_directory(
        &io,
        &location,
        AppendFiles::new(vec![data_file(&location, &[10])]),
    )
    .await
    .unwrap();
    assert!(
        second
            .metadata_location()
            .ends_with("/metadata/v3.metadata.json")
    );
    let hint = std::fs::read_to_string(dir.path().join("metadata/version-hint.text")).unwrap();
    assert_eq!(hint, "3");
    assert_eq!(count_and_sum(&location).await, (4, 16));

    let m = second.metadata();
    assert_eq!(m.snapshots.len(), 2);
    let (s1, s2) = (&m.snapshots[0], &m.snapshots[1]);
    assert_eq!(s2.parent_snapshot_id, Some(s1.snapshot_id));
    assert_eq!((s1.sequence_number, s2.sequence_number), (1, 2));
    let summary = s2.summary.as_ref().unwrap();
    assert_eq!(summary.get("added-records"), Some("1"));
    assert_eq!(summary.get("total-records"), Some("4"));
    // The second manifest list holds the new manifest and reuses the first one.
    let list1 = read_manifest_list(&io, m, s1).await.unwrap();
    let list2 = read_manifest_list(&io, m, s2).await.unwrap();
    assert_eq!(list2.len(), 2);
    assert!(
        list2
            .iter()
            .any(|f| f.manifest_path == list1[0].manifest_path)
    );
    // The first version is still readable, as it was.
    let old = Table::load_metadata_file(io.clone(), first.metadata_location().to_string())
        .await
        .unwrap();
    assert_eq!(old.metadata().snapshots.len(), 1);
    assert_eq!(m.metadata_log.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path());
    let writers = (0..4).map(|w| {
        let location = location.clone();
        tokio::spawn(async move {
            let io = FileIO::default();
            for i in 0..5 {
                let id = w * 100 + i;
                let files = vec![data_file(&location, &[id])];
                append_to_directory(&io, &location, AppendFiles::new(files))
                    .await
                    .unwrap();
            }
        })
    });
    for writer in writers.collect::<Vec<_>>() {
        writer.await.unwrap();
    }
    let expected_sum: i64 = (0..4).flat_map(|w| (0..5).map(move |i| w * 100 + i)).sum();
    assert_eq!(count_and_sum(&location).await, (20, expected_sum));
    let table = Table::load(FileIO::default(), &location).await.unwrap();
    let m = table.metadata();
    assert_eq!(m.snapshots.len(), 20);
    // A linear chain: every snapshot's parent is the one before it, sequence numbers 1..=20.
    let mut by_sequence: Vec<&Snapshot> = m.snapshots.iter().collect();
    by_sequence.sort_by_key(|s| s.sequence_number);
    for (i, s) in by_sequence.iter().enumerate() {
        assert_eq!(s.sequence_number, i as i64 + 1);
        let parent = i.checked_sub(1).map(|p| by_sequence[p].snapshot_id);
        assert_eq!(s.parent_snapshot_id, parent);
    }
}

#[tokio::test]
async fn an_attempt_on_a_stale_base_loses_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path());
    let io = FileIO::default();
    let target = CommitTarget::Directory {
        location: &location,
    };
    let base = target.load(&io).await.unwrap();
    let append = AppendFiles::new(vec![data_file(&location, &[7])]);
    let manifests = write_new_manifests(&io, &base.metadata, &append, 42)
        .await
        .unwrap();
    // Another writer commits v2 between our read of v1 and our swap.
    append_to_directory(
        &io,
        &location,
        AppendFiles::new(vec![data_file(&location, &[1])]),
    )
    .await
    .unwrap();
    let before = std::fs::read_dir(dir.path().join("metadata"))
        .unwrap()
        .count();
    let lost = commit_attempt(&io, &target, &base, &append, &manifests, 42).await;
    assert!(matches!(lost, Err(AttemptError::Lost)));
    // The attempt's manifest list is gone; the other writer's commit stands.
    let after = std::fs::read_dir(dir.path().join("metadata"))
        .unwrap()
        .count();
    assert_eq!(before, after);
    assert_eq!(count_and_sum(&location).await, (1, 1));
    // A retry on the new base commits both.
    let base = target.load(&io).await.unwrap();
    commit_attempt(&io, &target, &base, &append, &manifests, 42)
        .await
        .ok()
        .unwrap();
    assert_eq!(count_and_sum(&location).await, (2, 8));
}

#[test]
fn retry_waits_double_up_to_the_maximum() {
    let policy = RetryPolicy {
        retries: 4,
        min_wait: Duration::from_millis(100),
        max_wait: Duration::from_millis(350),
    };
    let waits: Vec<u128> = (0..4).map(|n| policy.wait(n).as_millis()).collect();
    assert_eq!(waits, [100, 200, 350, 350]);
    // Jittered: within [0.5, 1.5) of the wait, capped, and not all the same.
    let jittered: Vec<Duration> = (0..200).map(|_| policy.jittered_wait(1)).collect();
    assert!(
        jittered
            .iter()
            .all(|w| *w >= Duration::from_millis(100) && *w <= Duration::from_millis(300))
    );
    assert!(jittered.iter().any(|w| *w != jittered[0]));
}

#[tokio::test]
async fn a_directory_commit_after_a_catalog_style_name_creates_the_next_v_file() {
    // A catalog table handed over as a directory: its next version is `v3`, a fixed name,
    // so that create-if-absent decides between racing writers (a fresh uuid would not).
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path());
    let metadata = dir.path().join("metadata");
    std::fs::rename(
        metadata.join("v1.metadata.json"),
        metadata.join("00002-0f0a.metadata.json"),
    )
    .unwrap();
    let target = CommitTarget::Directory {
        location: &location,
    };
    let base = target.load(&FileIO::default()).await.unwrap();
    assert_eq!(
        base.next_location,
        format!("{location}/metadata/v3.metadata.json")
    );
    let next = catalog_metadata_location("/t/metadata/00007-0f0a.metadata.json", "/t/");
    assert!(
        next.starts_with("/t/metadata/00008-") && next.ends_with(".metadata.json"),
        "{next}"
    );
}

/// A SQLite catalog (PyIceberg / JdbcCatalog layout) whose `db.t` points at `metadata`.
fn catalog_with_table(dir: &std::path::Path, metadata: &str) -> std::path::PathBuf {
    let db = dir.join("catalog.db");
    let connection = rusqlite::Connection::open(&db).unwrap();
    connection
        .execute_batch(&format!(
            "CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL,
               table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL,
               metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000),
               iceberg_type VARCHAR(5),
               PRIMARY KEY (catalog_name, table_namespace, table_name));
             CREATE TABLE iceberg_namespace_properties (catalog_name VARCHAR(255) NOT NULL,
               namespace VARCHAR(255) NOT NULL, property_key VARCHAR(255) NOT NULL,
               property_value VARCHAR(1000), PRIMARY KEY (catalog_name, namespace, property_key));
             INSERT INTO iceberg_tables VALUES ('default', 'db', 't', '{metadata}', NULL, 'TABLE');
             INSERT INTO iceberg_namespace_properties VALUES ('default', 'db', 'exists', 'true');"
        ))
        .unwrap();
    db
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn catalog_commits_swap_the_pointer_and_concurrent_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let table_dir = dir.path().join("t");
    let location = new_table(&table_dir);
    let db = catalog_with_table(dir.path(), &format!("{location}/metadata/v1.metadata.json"));
    let writers = (0..4).map(|w| {
        let (location, db) = (location.clone(), db.clone());
        tokio::spawn(async move {
            let io = FileIO::default();
            let catalog = SqliteCatalog::open(&db, None, io.clone()).unwrap();
            for i in 0..5 {
                let files = vec![data_file(&location, &[w * 100 + i])];
                let target = CommitTarget::Catalog {
                    catalog: &catalog,
                    namespace: "db",
                    table: "t",
                };
                append(&io, target, AppendFiles::new(files)).await.unwrap();
            }
        })
    });
    for writer in writers.collect::<Vec<_>>() {
        writer.await.unwrap();
    }
    let catalog = SqliteCatalog::open(&db, None, FileIO::default()).unwrap();
    let table = catalog.load_table("db", "t").await.unwrap();
    let m = table.metadata();
    assert_eq!(m.snapshots.len(), 20);
    assert_eq!(m.last_sequence_number, 20);
    // Every commit names the previous one; the file it replaced is the previous pointer.
    let name = table
        .metadata_location()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    assert!(name.starts_with("00021-"), "{name}");
    let rows: i64 = m
        .snapshots
        .iter()
        .map(|s| {
            s.summary
                .as_ref()
                .unwrap()
                .get("added-records")
                .unwrap()
                .parse::<i64>()
                .unwrap()
        })
        .sum();
    assert_eq!(rows, 20);
    let ctx = SessionContext::new();
    let provider = IcebergTableProvider::try_new(table, SnapshotSelector::Current).unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let batches = ctx
        .sql("SELECT count(*) FROM t")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_eq!(
        batches[0].column(0).as_primitive::<Int64Type>().value(0),
        20
    );
}

/// Five appends to a table with `properties` added; returns the metadata files left in the
/// directory and the last metadata's log.
async fn five_appends_with(properties: &[(&str, &str)]) -> (Vec<String>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().display().to_string();
    std::fs::create_dir_all(dir.path().join("metadata")).unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    let mut json: serde_json::Value =
        serde_json::from_str(&METADATA.replace("LOCATION", &location)).unwrap();
    for (k, v) in properties {
        json["properties"][*k] = serde_json::json!(v);
    }
    std::fs::write(
        dir.path().join("metadata/v1.metadata.json"),
        json.to_string(),
    )
    .unwrap();
    let io = FileIO::default();
    let mut last = None;
    for i in 0..5 {
        let files = vec![data_file(&location, &[i])];
        last = Some(
            append_to_directory(&io, &location, AppendFiles::new(files))
                .await
                .unwrap(),
        );
    }
    let last = last.unwrap();
    assert_eq!(count_and_sum(&location).await, (5, 10));
    let mut on_disk: Vec<String> = std::fs::read_dir(dir.path().join("metadata"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".metadata.json"))
        .collect();
    on_disk.sort();
    let log = last
        .metadata()
        .metadata_log
        .iter()
        .map(|e| e.metadata_file.rsplit('/').next().unwrap().to_string())
        .collect();
    (on_disk, log)
}

#[tokio::test]
async fn old_metadata_files_leave_the_log_and_are_deleted_only_when_asked() {
    let names = |range: std::ops::RangeInclusive<i32>| -> Vec<String> {
        range.map(|v| format!("v{v}.metadata.json")).collect()
    };
    // v1..v6 written; the log of v6 keeps the two newest previous files (v4, v5).
    let (on_disk, log) = five_appends_with(&[("write.metadata.previous-versions-max", "2")]).await;
    assert_eq!(log, names(4..=5));
    assert_eq!(on_disk, names(1..=6));
    let (on_disk, log) = five_appends_with(&[
        ("write.metadata.previous-versions-max", "2"),
        ("write.metadata.delete-after-commit.enabled", "true"),
    ])
    .await;
    assert_eq!(log, names(4..=5));
    assert_eq!(on_disk, names(4..=6));
    // Java's default keeps 100 previous versions.
    let (on_disk, log) =
        five_appends_with(&[("write.metadata.delete-after-commit.enabled", "true")]).await;
    assert_eq!(log, names(1..=5));
    assert_eq!(on_disk, names(1..=6));
}
