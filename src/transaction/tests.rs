//! Tests of the commit loop: appends to a real table directory and SQLite catalog, real
//! Parquet files read back through the provider; concurrent writers; lost races and what is
//! deleted after them; an outcome that cannot be known.

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::prelude::SessionContext;

use super::*;
use crate::catalog::{DirectoryCatalog, SqliteCatalog};
use crate::commit::AppendFiles;
use crate::provider::IcebergTableProvider;
use crate::scan::read_manifest_list;
use crate::spec::{DataContentType, FileFormat, Snapshot, SnapshotSelector};
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
pub(super) fn new_table(dir: &std::path::Path) -> String {
    let location = dir.display().to_string();
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let json = METADATA.replace("LOCATION", &location);
    std::fs::write(dir.join("metadata/v1.metadata.json"), json).unwrap();
    location
}

/// A Parquet data file of `ids` in the table's data directory.
pub(super) fn data_file(location: &str, ids: &[i64]) -> (i32, DataFile) {
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

pub(super) async fn count_and_sum(location: &str) -> (i64, i64) {
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

/// Appends `files` to the table directory `location` in one transaction.
pub(super) async fn append_dir(io: &FileIO, location: &str, files: Vec<(i32, DataFile)>) -> Table {
    let target = WriteTarget::directory(io, location).unwrap();
    crate::commit::append(&target, AppendFiles::new(files))
        .await
        .unwrap()
}

#[tokio::test]
async fn appends_commit_new_versions_that_reuse_earlier_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path());
    let io = FileIO::default();
    let first = append_dir(&io, &location, vec![data_file(&location, &[1, 2, 3])]).await;
    assert!(
        first
            .metadata_location()
            .ends_with("/metadata/v2.metadata.json")
    );
    let second = append_dir(&io, &location, vec![data_file(&location, &[10])]).await;
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
                append_dir(&io, &location, files).await;
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
    let io = FileIO::default();
    let committed = append_dir(&io, &location, vec![data_file(&location, &[1])]).await;
    assert_eq!(
        committed.metadata_location(),
        format!("{location}/metadata/v3.metadata.json")
    );
    let next = crate::catalog::sqlite::next_metadata_location(
        "/t/metadata/00007-0f0a.metadata.json",
        "/t/",
    );
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
            let catalog = Arc::new(SqliteCatalog::open(&db, None, io.clone()).unwrap());
            let target = WriteTarget::sqlite(catalog, "db", "t").unwrap();
            for i in 0..5 {
                let files = vec![data_file(&location, &[w * 100 + i])];
                crate::commit::append(&target, AppendFiles::new(files))
                    .await
                    .unwrap();
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
        last = Some(append_dir(&io, &location, files).await);
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

/// What [`Racy`] does to the commits it is handed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trouble {
    /// Before the first commit, another writer appends (so the first attempt loses).
    RaceOnce,
    /// Every commit's outcome is unknown (nothing reaches the table).
    Unknown,
}

/// A directory catalog whose commits meet trouble.
#[derive(Debug)]
struct Racy {
    inner: Arc<DirectoryCatalog>,
    trouble: Trouble,
    commits: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl Catalog for Racy {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn io(&self) -> &FileIO {
        self.inner.io()
    }
    async fn list_namespaces(
        &self,
        parent: &crate::catalog::Namespace,
    ) -> Result<Vec<crate::catalog::Namespace>> {
        self.inner.list_namespaces(parent).await
    }
    async fn namespace_exists(&self, namespace: &crate::catalog::Namespace) -> Result<bool> {
        self.inner.namespace_exists(namespace).await
    }
    async fn create_namespace(
        &self,
        namespace: &crate::catalog::Namespace,
        properties: std::collections::BTreeMap<String, String>,
    ) -> Result<()> {
        self.inner.create_namespace(namespace, properties).await
    }
    async fn namespace_properties(
        &self,
        namespace: &crate::catalog::Namespace,
    ) -> Result<std::collections::BTreeMap<String, String>> {
        self.inner.namespace_properties(namespace).await
    }
    async fn update_namespace_properties(
        &self,
        namespace: &crate::catalog::Namespace,
        removals: &[String],
        updates: std::collections::BTreeMap<String, String>,
    ) -> Result<()> {
        self.inner
            .update_namespace_properties(namespace, removals, updates)
            .await
    }
    async fn drop_namespace(&self, namespace: &crate::catalog::Namespace) -> Result<()> {
        self.inner.drop_namespace(namespace).await
    }
    async fn list_tables(&self, namespace: &crate::catalog::Namespace) -> Result<Vec<TableIdent>> {
        self.inner.list_tables(namespace).await
    }
    async fn table_exists(&self, ident: &TableIdent) -> Result<bool> {
        self.inner.table_exists(ident).await
    }
    async fn load_table(&self, ident: &TableIdent) -> Result<Table> {
        self.inner.load_table(ident).await
    }
    async fn create_table(
        &self,
        ident: &TableIdent,
        creation: &crate::write::TableCreation,
    ) -> Result<Table> {
        self.inner.create_table(ident, creation).await
    }
    async fn register_table(&self, ident: &TableIdent, location: &str) -> Result<Table> {
        self.inner.register_table(ident, location).await
    }
    async fn drop_table(&self, ident: &TableIdent, purge: bool) -> Result<()> {
        self.inner.drop_table(ident, purge).await
    }
    async fn rename_table(&self, from: &TableIdent, to: &TableIdent) -> Result<()> {
        self.inner.rename_table(from, to).await
    }
    async fn commit_table(
        &self,
        ident: &TableIdent,
        requirements: &[TableRequirement],
        updates: &[TableUpdate],
    ) -> Result<Table> {
        let n = self
            .commits
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        match self.trouble {
            Trouble::Unknown => {
                return Err(Error::CommitStateUnknown {
                    table: ident.to_string(),
                    reason: "the server answered 502".into(),
                    source: None,
                });
            }
            Trouble::RaceOnce if n == 0 => {
                let location = self.inner.table_location(ident).unwrap();
                let other = WriteTarget::directory(self.inner.io(), &location).unwrap();
                let files = vec![data_file(&location, &[1000])];
                crate::commit::append(&other, AppendFiles::new(files))
                    .await
                    .unwrap();
            }
            Trouble::RaceOnce => {}
        }
        self.inner.commit_table(ident, requirements, updates).await
    }
}

/// The files under `dir/metadata` by name.
fn metadata_files(dir: &std::path::Path) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(dir.join("metadata"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn racy(location: &str, trouble: Trouble) -> (Arc<dyn Catalog>, TableIdent) {
    let (inner, ident) = DirectoryCatalog::for_location(FileIO::default(), location).unwrap();
    let catalog = Racy {
        inner: Arc::new(inner),
        trouble,
        commits: Default::default(),
    };
    (Arc::new(catalog), ident)
}

#[tokio::test]
async fn a_lost_race_is_retried_on_the_new_version_reusing_the_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path());
    let (catalog, ident) = racy(&location, Trouble::RaceOnce);
    let before = metadata_files(dir.path());
    let committed = Transaction::load(catalog, ident)
        .await
        .unwrap()
        .fast_append(vec![data_file(&location, &[7])])
        .commit()
        .await
        .unwrap();
    // Both appends are there, ours on top of the other writer's.
    assert_eq!(count_and_sum(&location).await, (2, 1007));
    let m = committed.metadata();
    assert_eq!(m.snapshots.len(), 2);
    assert_eq!(
        m.snapshots[1].parent_snapshot_id,
        Some(m.snapshots[0].snapshot_id)
    );
    // Our retry reused its manifest and its lost attempt's manifest list is gone: the new
    // files are the other writer's (manifest, list, v2) and ours (manifest, list, v3).
    let added: Vec<String> = metadata_files(dir.path())
        .difference(&before)
        .cloned()
        .collect();
    let lists = added.iter().filter(|n| n.starts_with("snap-")).count();
    let manifests = added.iter().filter(|n| n.ends_with("-m0.avro")).count();
    assert_eq!((lists, manifests), (2, 2), "{added:?}");
    let io = FileIO::default();
    let ours = read_manifest_list(&io, m, &m.snapshots[1]).await.unwrap();
    assert_eq!(ours.len(), 2);
}

#[tokio::test]
async fn after_an_unknown_outcome_nothing_is_deleted_or_retried() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path());
    let (catalog, ident) = racy(&location, Trouble::Unknown);
    let before = metadata_files(dir.path());
    let err = Transaction::load(Arc::clone(&catalog), ident)
        .await
        .unwrap()
        .fast_append(vec![data_file(&location, &[7])])
        .commit()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::CommitStateUnknown { .. }), "{err}");
    // Tried once, and the manifest and manifest list it wrote are still there.
    let added: Vec<String> = metadata_files(dir.path())
        .difference(&before)
        .cloned()
        .collect();
    assert_eq!(added.len(), 2, "{added:?}");
}

#[tokio::test]
async fn a_final_failure_deletes_what_the_transaction_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path());
    let (catalog, ident) = DirectoryCatalog::for_location(FileIO::default(), &location).unwrap();
    let catalog: Arc<dyn Catalog> = Arc::new(catalog);
    let before = metadata_files(dir.path());
    // The second action fails (a tag on a table without snapshots) after the append wrote its
    // manifest and manifest list.
    let err = Transaction::load(catalog, ident)
        .await
        .unwrap()
        .fast_append(vec![data_file(&location, &[7])])
        .with_action(SetRef::create_tag("t", Some(12345), None))
        .commit()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert_eq!(metadata_files(dir.path()), before);
    assert_eq!(count_and_sum(&location).await, (0, 0));
}

#[tokio::test]
async fn actions_of_one_transaction_commit_as_one_version() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path());
    let io = FileIO::default();
    let target = WriteTarget::directory(&io, &location).unwrap();
    let first = append_dir(&io, &location, vec![data_file(&location, &[1])]).await;
    let committed = target
        .transaction(first.clone())
        .fast_append(vec![data_file(&location, &[2])])
        .create_tag("after", None, None)
        .set_properties([("owner", "me")])
        .commit()
        .await
        .unwrap();
    assert!(committed.metadata_location().ends_with("/v3.metadata.json"));
    let m = committed.metadata();
    // The tag points at the snapshot the same transaction appended.
    assert_eq!(m.refs["after"].snapshot_id, m.current_snapshot_id.unwrap());
    assert_ne!(m.current_snapshot_id, first.metadata().current_snapshot_id);
    assert_eq!(m.property("owner"), Some("me"));
    assert_eq!(count_and_sum(&location).await, (2, 3));
}
