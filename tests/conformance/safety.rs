//! Issue 14, items 4 and the gc rule: destructive operations delete only files under the
//! table's location, whatever paths its metadata names, and nothing when `gc.enabled` is
//! `false`. Each test crafts metadata naming victims outside the table (an absolute path, a
//! `file://` URI, `<location>/data/../../victim/..`) in manifest entries, the manifest list,
//! the metadata log, statistics and partition-statistics files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch};
use icefloe::catalog::SqliteCatalog;
use icefloe::commit::{AppendFiles, append};
use icefloe::io::KeptReason;
use icefloe::maintenance::{ExpireSnapshots, SnapshotManager};
use icefloe::scan::{read_manifest, read_manifest_list};
use icefloe::spec::{DataFile, NestedField, PrimitiveType, Schema};
use icefloe::to_arrow::schema_to_arrow;
use icefloe::write::append_batches;
use icefloe::{FileIO, Table, TableCreation, WriteTarget};

fn creation(properties: &[(&str, &str)]) -> TableCreation {
    let schema = Schema::new(0, vec![NestedField::required(1, "id", PrimitiveType::Long)]);
    TableCreation::new(schema).with_properties(properties.iter().copied())
}

fn batch(table: &Table, ids: &[i64]) -> RecordBatch {
    let schema = schema_to_arrow(table.metadata().current_schema()).expect("arrow schema");
    RecordBatch::try_new(
        Arc::new(schema),
        vec![Arc::new(Int64Array::from(ids.to_vec()))],
    )
    .expect("batch")
}

/// A new directory table at `location` with `properties` and one row, committed.
async fn one_row(io: &FileIO, location: &str, properties: &[(&str, &str)]) -> Table {
    let created = creation(properties)
        .create_at(io, location)
        .await
        .expect("create");
    let target = WriteTarget::directory(io, location).unwrap();
    append_batches(&target, &[batch(&created, &[1])], "main")
        .await
        .expect("append")
}

/// Victim files outside the table, each named by metadata in one of the ways a crafted table
/// can: their paths and the spellings the metadata uses for them.
struct Victims {
    dir: PathBuf,
    made: std::sync::Mutex<Vec<PathBuf>>,
}

impl Victims {
    fn new(parent: &Path) -> Self {
        let dir = parent.join("victim");
        std::fs::create_dir_all(&dir).expect("victim dir");
        Self {
            dir,
            made: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Creates `victim/<name>` and returns its path.
    fn file(&self, name: &str) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, b"keep me").expect("victim");
        self.made.lock().expect("victims").push(path.clone());
        path
    }

    /// Whether every victim made so far is still there.
    fn all_exist(&self) -> bool {
        let made = self.made.lock().expect("victims");
        !made.is_empty() && made.iter().all(|p| p.exists())
    }

    fn count(&self) -> usize {
        std::fs::read_dir(&self.dir).expect("victims").count()
    }
}

/// The data file the table's current snapshot added.
async fn first_data_file(table: &Table) -> DataFile {
    let metadata = table.metadata();
    let snapshot = metadata.current_snapshot().expect("a snapshot");
    let list = read_manifest_list(table.io(), metadata, snapshot)
        .await
        .expect("list");
    let manifest = read_manifest(table.io(), metadata, &list[0])
        .await
        .expect("manifest");
    manifest.entries[0].data_file.clone()
}

/// Appends crafted data files naming `victims` (three spellings of paths outside).
async fn append_victims(
    target: WriteTarget,
    like: &DataFile,
    victims: &Victims,
    location: &str,
) -> Table {
    let absolute = victims.file("absolute.parquet");
    let uri = victims.file("uri.parquet");
    victims.file("dotdot.parquet");
    let paths = [
        absolute.display().to_string(),
        format!("file://{}", uri.display()),
        format!("{location}/data/../../victim/dotdot.parquet"),
    ];
    let files = paths
        .iter()
        .map(|p| {
            let mut f = like.clone();
            f.file_path = p.clone();
            (0, f)
        })
        .collect();
    append(&target, AppendFiles::new(files))
        .await
        .expect("append victims")
}

/// Rewrites the current metadata file of `table` in place (a crafted table).
fn edit_metadata(table: &Table, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = table
        .metadata_location()
        .trim_start_matches("file://")
        .to_string();
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("metadata")).expect("json");
    edit(&mut json);
    std::fs::write(&path, serde_json::to_vec_pretty(&json).expect("json")).expect("write");
}

/// Points snapshot `id`'s manifest list at a copy outside the table, and gives it statistics
/// and partition statistics files outside, and the log an old metadata file outside.
fn craft_outside_references(table: &Table, id: i64, victims: &Victims) {
    let snapshot = table
        .metadata()
        .snapshot_by_id(id)
        .expect("snapshot")
        .clone();
    let list = snapshot.manifest_list.expect("a list");
    let outside_list = victims.dir.join("snap-list.avro");
    std::fs::copy(list.trim_start_matches("file://"), &outside_list).expect("copy list");
    victims
        .made
        .lock()
        .expect("victims")
        .push(outside_list.clone());
    let stats = victims.file("stats.puffin");
    let partition_stats = victims.file("partition-stats.parquet");
    let old = victims.file("v0.metadata.json");
    edit_metadata(table, |json| {
        for s in json["snapshots"].as_array_mut().expect("snapshots") {
            if s["snapshot-id"] == id {
                s["manifest-list"] = outside_list.display().to_string().into();
            }
        }
        json["statistics"] = serde_json::json!([{
            "snapshot-id": id, "statistics-path": stats.display().to_string(),
            "file-size-in-bytes": 7, "file-footer-size-in-bytes": 7, "blob-metadata": []
        }]);
        json["partition-statistics"] = serde_json::json!([{
            "snapshot-id": id, "statistics-path": partition_stats.display().to_string(),
            "file-size-in-bytes": 7
        }]);
        json["metadata-log"].as_array_mut().expect("log").insert(
            0,
            serde_json::json!({"timestamp-ms": 1, "metadata-file": old.display().to_string()}),
        );
    });
}

#[tokio::test]
async fn expire_deletes_only_under_the_table_location() {
    let tmp = tempfile::tempdir().expect("tmp");
    let io = FileIO::default();
    let location = tmp.path().join("t").display().to_string();
    let victims = Victims::new(tmp.path());
    let first = one_row(&io, &location, &[]).await;
    let target = WriteTarget::directory(&io, &location).unwrap();
    let keep = first.metadata().current_snapshot_id.expect("snapshot");
    let like = first_data_file(&first).await;
    let crafted = append_victims(target, &like, &victims, &location).await;
    let doomed = crafted.metadata().current_snapshot_id.expect("snapshot");
    craft_outside_references(&crafted, doomed, &victims);
    let inside_manifest = read_manifest_list(
        &io,
        crafted.metadata(),
        crafted.metadata().current_snapshot().expect("s"),
    )
    .await
    .expect("list")
    .iter()
    .find(|m| m.added_snapshot_id == doomed)
    .expect("the crafted snapshot's manifest")
    .manifest_path
    .clone();

    let manager = SnapshotManager::new(WriteTarget::directory(&io, &location).unwrap());
    manager.rollback_to_snapshot(keep).await.expect("rollback");
    let options = ExpireSnapshots {
        snapshot_ids: vec![doomed],
        ..Default::default()
    };
    let report = manager.expire_snapshots(&options).await.expect("expire");
    assert_eq!(report.expired, vec![doomed]);
    assert!(
        victims.all_exist(),
        "a victim outside the table was deleted"
    );
    let kept: Vec<&str> = report.kept_files.iter().map(|(f, _)| f.as_str()).collect();
    // Three data files, the list, statistics and partition statistics.
    assert_eq!(kept.len(), 6, "{kept:?}");
    assert!(
        report
            .kept_files
            .iter()
            .all(|(_, r)| *r == KeptReason::OutsideTable)
    );
    assert_eq!(report.deleted_files, vec![inside_manifest.clone()]);
    assert!(!Path::new(&inside_manifest).exists());
    assert_eq!(victims.count(), 7);
}

#[tokio::test]
async fn delete_after_commit_deletes_only_under_the_table_location() {
    let tmp = tempfile::tempdir().expect("tmp");
    let io = FileIO::default();
    let location = tmp.path().join("t").display().to_string();
    let victims = Victims::new(tmp.path());
    let properties = [
        ("write.metadata.delete-after-commit.enabled", "true"),
        ("write.metadata.previous-versions-max", "1"),
    ];
    let first = one_row(&io, &location, &properties).await;
    let target = WriteTarget::directory(&io, &location).unwrap();
    let id = first.metadata().current_snapshot_id.expect("snapshot");
    craft_outside_references(&first, id, &victims);
    // Two more commits push the crafted log entry (and v1) out of the kept log.
    for n in 2..4 {
        append_batches(&target, &[batch(&first, &[n])], "main")
            .await
            .expect("append");
    }
    assert!(
        victims.all_exist(),
        "delete-after-commit deleted a file outside the table"
    );
    assert!(!Path::new(&format!("{location}/metadata/v1.metadata.json")).exists());
}

#[tokio::test]
async fn gc_disabled_expiration_deletes_nothing() {
    let tmp = tempfile::tempdir().expect("tmp");
    let io = FileIO::default();
    let location = tmp.path().join("t").display().to_string();
    let first = one_row(&io, &location, &[("gc.enabled", "false")]).await;
    let target = WriteTarget::directory(&io, &location).unwrap();
    let keep = first.metadata().current_snapshot_id.expect("snapshot");
    let second = append_batches(&target, &[batch(&first, &[2])], "main")
        .await
        .expect("b");
    let doomed = second.metadata().current_snapshot_id.expect("snapshot");
    let manager = SnapshotManager::new(WriteTarget::directory(&io, &location).unwrap());
    manager.rollback_to_snapshot(keep).await.expect("rollback");
    let before = all_files(Path::new(&location));
    let options = ExpireSnapshots {
        snapshot_ids: vec![doomed],
        ..Default::default()
    };
    let report = manager.expire_snapshots(&options).await.expect("expire");
    assert_eq!(report.expired, vec![doomed]);
    assert!(
        report.deleted_files.is_empty(),
        "{:?}",
        report.deleted_files
    );
    assert_eq!(report.kept_files.len(), 3, "{:?}", report.kept_files);
    assert!(
        report
            .kept_files
            .iter()
            .all(|(_, r)| *r == KeptReason::GcDisabled)
    );
    let after = all_files(Path::new(&location));
    assert!(
        before.iter().all(|f| after.contains(f)),
        "a file was deleted"
    );
}

#[tokio::test]
async fn purge_deletes_only_under_the_table_location_and_nothing_without_gc() {
    let tmp = tempfile::tempdir().expect("tmp");
    let io = FileIO::default();
    let victims = Victims::new(tmp.path());
    let catalog = SqliteCatalog::create(tmp.path().join("c.db"), "c", io.clone()).expect("catalog");
    catalog
        .create_namespace("db", &Default::default())
        .expect("namespace");
    for (name, gc) in [("t", "true"), ("shared", "false")] {
        let location = tmp.path().join(name).display().to_string();
        let created = catalog
            .create_table_at("db", name, &creation(&[("gc.enabled", gc)]), &location)
            .await
            .expect("create");
        let target = WriteTarget::sqlite(Arc::new(catalog.reopen().expect("catalog")), "db", name)
            .expect("target");
        let first = append_batches(&target, &[batch(&created, &[1])], "main")
            .await
            .expect("append");
        let like = first_data_file(&first).await;
        append_victims(target, &like, &victims, &location).await;
    }
    let shared = all_files(&tmp.path().join("shared"));
    catalog.drop_table("db", "t", true).await.expect("purge");
    assert!(
        victims.all_exist(),
        "purge deleted a file outside the table"
    );
    assert_eq!(victims.count(), 3);
    assert!(
        all_files(&tmp.path().join("t")).is_empty(),
        "{:?}",
        all_files(&tmp.path().join("t"))
    );
    catalog
        .drop_table("db", "shared", true)
        .await
        .expect("purge");
    assert_eq!(
        all_files(&tmp.path().join("shared")),
        shared,
        "gc.enabled=false: nothing deleted"
    );
}

/// Every regular file under `dir`, sorted.
fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let entry = entry.expect("entry");
            if entry.file_type().expect("type").is_dir() {
                pending.push(entry.path());
            } else {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    found
}
