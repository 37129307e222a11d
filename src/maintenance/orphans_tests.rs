//! Orphan file removal on real tables: written through the write path, with orphans made the
//! way failures make them (data files of a writer that died before its commit, a manifest and a
//! metadata file of a lost commit), aged with `File::set_modified`.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use datafusion::arrow::array::{Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;

use super::{OrphanFiles, remove_orphan_files};
use crate::error::Error;
use crate::spec::SnapshotSelector;
use crate::to_arrow::schema_to_arrow;
use crate::transaction::WriteTarget;
use crate::write::{AppendWriter, TableCreation, append_batches};
use crate::{FileIO, IcebergTableProvider, Table};

const DAY: Duration = Duration::from_secs(86_400);

/// A table at `location` (`id long`, bucketed in two), with one commit per slice of ids.
async fn table(location: &str, commits: &[&[i64]]) -> Table {
    let io = FileIO::default();
    let schema = Arc::new(ArrowSchema::new(vec![Field::new(
        "id",
        DataType::Int64,
        false,
    )]));
    let mut table = TableCreation::from_arrow(schema)
        .with_partitioning("bucket(2, id)")
        .unwrap()
        .create_at(&io, location)
        .await
        .unwrap();
    for ids in commits {
        let target = WriteTarget::directory(&io, location).unwrap();
        table = append_batches(&target, &[batch(&table, ids)], "main")
            .await
            .unwrap();
    }
    table
}

fn batch(table: &Table, ids: &[i64]) -> RecordBatch {
    let schema = schema_to_arrow(table.metadata().current_schema()).unwrap();
    RecordBatch::try_new(
        Arc::new(schema),
        vec![Arc::new(Int64Array::from(ids.to_vec()))],
    )
    .unwrap()
}

async fn load(location: &str) -> Table {
    Table::load_for_write(FileIO::default(), location)
        .await
        .unwrap()
}

/// A writer that dies after writing its data files, before any commit: their locations.
async fn crashed_write(table: &Table, ids: &[i64]) -> BTreeSet<String> {
    let m = table.metadata();
    let mut writer = AppendWriter::new(table.io(), m, m.current_schema()).unwrap();
    writer.write(&batch(table, ids)).await.unwrap();
    let files: BTreeSet<String> = writer
        .finish()
        .await
        .unwrap()
        .into_iter()
        .map(|(_, f)| f.file_path)
        .collect();
    assert!(!files.is_empty());
    files
}

/// A lost commit's manifest (a copy of a real one) and metadata file (a copy of the current
/// one, under a name no reader takes for a version): their locations.
fn lost_commit_files(location: &str) -> BTreeSet<String> {
    let metadata_dir = Path::new(location).join("metadata");
    let manifest = manifests(&metadata_dir).into_iter().next().unwrap();
    let stray_manifest = metadata_dir.join("e7c0ffee-0000-stray-m0.avro");
    std::fs::copy(manifest, &stray_manifest).unwrap();
    let current = load_hint_file(&metadata_dir);
    let stray_metadata = metadata_dir.join("e7c0ffee-1111-stray.metadata.json");
    std::fs::copy(current, &stray_metadata).unwrap();
    [stray_manifest, stray_metadata]
        .iter()
        .map(|p| p.display().to_string())
        .collect()
}

/// The manifests (not manifest lists) in a metadata directory.
fn manifests(metadata_dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(metadata_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            name.ends_with(".avro") && !name.starts_with("snap-")
        })
        .collect();
    found.sort();
    assert!(
        !found.is_empty(),
        "no manifest in {}",
        metadata_dir.display()
    );
    found
}

/// The metadata file the version hint names.
fn load_hint_file(metadata_dir: &Path) -> std::path::PathBuf {
    let hint = std::fs::read_to_string(metadata_dir.join("version-hint.text")).unwrap();
    metadata_dir.join(format!("v{}.metadata.json", hint.trim()))
}

/// Every file under `dir`, as display paths.
fn files_under(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.insert(path.display().to_string());
        }
    }
    out
}

/// Sets the modification time of every file under `dir` to `age` ago.
fn age_all(dir: &Path, age: Duration) {
    for file in files_under(dir) {
        age_file(&file, age);
    }
}

fn age_file(file: &str, age: Duration) {
    let f = std::fs::File::options().write(true).open(file).unwrap();
    f.set_modified(SystemTime::now() - age).unwrap();
}

/// `count(*)` and `sum(id)` of the table at a state, rendered.
async fn answer(location: &str, selector: SnapshotSelector) -> String {
    let ctx = SessionContext::new();
    let provider = IcebergTableProvider::try_new(load(location).await, selector).unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let sql = "SELECT count(*) AS n, sum(id) AS s FROM t";
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

fn set(files: &[String]) -> BTreeSet<String> {
    files.iter().cloned().collect()
}

#[tokio::test]
async fn the_dry_run_lists_exactly_the_orphans_and_the_run_deletes_exactly_them() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().display().to_string();
    let committed = table(&location, &[&[1, 2, 3], &[4, 5]]).await;
    let mut orphans = crashed_write(&committed, &[100, 101, 102]).await;
    orphans.extend(lost_commit_files(&location));
    // Hidden files are never orphans (Java's rule).
    for hidden in ["data/_SUCCESS", "metadata/.v1.metadata.json.crc"] {
        std::fs::write(dir.path().join(hidden), b"x").unwrap();
    }
    age_all(dir.path(), 10 * DAY);
    let before = answer(&location, SnapshotSelector::Current).await;
    let all = files_under(dir.path());

    let table = load(&location).await;
    let listed = remove_orphan_files(&table, &OrphanFiles::new().dry_run())
        .await
        .unwrap();
    assert_eq!(set(&listed.orphan_files), orphans);
    assert_eq!(listed.deleted, 0);
    assert_eq!(listed.recent_unreferenced, 0);
    assert_eq!(listed.listed, all.len());
    assert_eq!(files_under(dir.path()), all, "a dry run deletes nothing");

    let removed = remove_orphan_files(&table, &OrphanFiles::new())
        .await
        .unwrap();
    assert_eq!(removed.orphan_files, listed.orphan_files);
    assert_eq!(removed.deleted, orphans.len());
    let kept: BTreeSet<String> = all.difference(&orphans).cloned().collect();
    assert_eq!(files_under(dir.path()), kept);
    assert_eq!(answer(&location, SnapshotSelector::Current).await, before);
    let first = table.metadata().snapshots[0].snapshot_id;
    let at_first = answer(&location, SnapshotSelector::SnapshotId(first)).await;
    assert!(at_first.contains("| 3 | 6 |"), "{at_first}");

    let again = remove_orphan_files(&load(&location).await, &OrphanFiles::new())
        .await
        .unwrap();
    assert!(again.orphan_files.is_empty(), "{again:?}");
}

#[tokio::test]
async fn young_orphans_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().display().to_string();
    let committed = table(&location, &[&[1, 2]]).await;
    let old = crashed_write(&committed, &[7]).await;
    age_all(dir.path(), 4 * DAY);
    let young = crashed_write(&committed, &[8, 9]).await;
    age_file(young.iter().next().unwrap(), Duration::from_secs(3600));

    let report = remove_orphan_files(&load(&location).await, &OrphanFiles::new())
        .await
        .unwrap();
    assert_eq!(set(&report.orphan_files), old);
    assert_eq!(report.recent_unreferenced, young.len());
    assert!(young.iter().all(|f| Path::new(f).exists()));
    assert!(old.iter().all(|f| !Path::new(f).exists()));

    // An explicit threshold in the future makes every unreferenced file old enough.
    let later = OrphanFiles::new().with_older_than_ms(i64::MAX);
    let report = remove_orphan_files(&load(&location).await, &later)
        .await
        .unwrap();
    assert_eq!(set(&report.orphan_files), young);
}

/// A rollback to the first snapshot: the second one stays in the metadata, reachable only by
/// time travel, so its manifest list, manifest and data files are not orphans.
#[tokio::test]
async fn files_reachable_only_from_an_older_snapshot_are_not_orphans() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().display().to_string();
    let committed = table(&location, &[&[1, 2], &[3, 4, 5]]).await;
    let (first, second) = {
        let s = &committed.metadata().snapshots;
        (s[0].snapshot_id, s[1].snapshot_id)
    };
    let current = committed.metadata_location().to_string();
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&current).unwrap()).unwrap();
    json["current-snapshot-id"] = first.into();
    json["refs"]["main"]["snapshot-id"] = first.into();
    let logged =
        serde_json::json!({"timestamp-ms": json["last-updated-ms"], "metadata-file": current});
    json["metadata-log"].as_array_mut().unwrap().push(logged);
    // Statistics files are referenced too (their bytes do not matter here).
    let statistics = format!("{location}/metadata/{second}-stats.puffin");
    let partition_statistics = format!("{location}/metadata/partition-stats-{second}.parquet");
    json["statistics"] = serde_json::json!([{"snapshot-id": second,
        "statistics-path": statistics, "file-size-in-bytes": 1,
        "file-footer-size-in-bytes": 1, "blob-metadata": []}]);
    json["partition-statistics"] = serde_json::json!([{"snapshot-id": second,
        "statistics-path": partition_statistics, "file-size-in-bytes": 1}]);
    std::fs::write(&statistics, b"x").unwrap();
    std::fs::write(&partition_statistics, b"x").unwrap();
    let rolled_back = format!("{location}/metadata/v99.metadata.json");
    std::fs::write(&rolled_back, serde_json::to_vec(&json).unwrap()).unwrap();
    std::fs::write(dir.path().join("metadata/version-hint.text"), "99").unwrap();
    let orphans = crashed_write(&committed, &[6]).await;
    age_all(dir.path(), 10 * DAY);

    let table = load(&location).await;
    assert_eq!(table.metadata_location(), rolled_back);
    let at_second = answer(&location, SnapshotSelector::SnapshotId(second)).await;
    let report = remove_orphan_files(&table, &OrphanFiles::new())
        .await
        .unwrap();
    assert_eq!(set(&report.orphan_files), orphans);
    assert!(Path::new(&statistics).exists() && Path::new(&partition_statistics).exists());
    let current = answer(&location, SnapshotSelector::Current).await;
    assert!(current.contains("| 2 | 3 |"), "{current}");
    assert_eq!(
        answer(&location, SnapshotSelector::SnapshotId(second)).await,
        at_second
    );
    assert!(at_second.contains("| 5 | 15 |"), "{at_second}");
}

/// Metadata written with `file://` locations and a location given as a bare path name the
/// same files: only the crashed writer's files are orphans, reported in the table's style.
#[tokio::test]
async fn file_urls_and_bare_paths_are_the_same_files() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().display().to_string();
    let location = format!("file://{bare}");
    let committed = table(&location, &[&[1, 2, 3]]).await;
    let orphans = crashed_write(&committed, &[4]).await;
    assert!(
        orphans.iter().all(|f| f.starts_with("file:///")),
        "{orphans:?}"
    );
    age_all(dir.path(), 10 * DAY);

    let options = OrphanFiles::new().dry_run().with_location(bare.as_str());
    let report = remove_orphan_files(&load(&bare).await, &options)
        .await
        .unwrap();
    assert_eq!(set(&report.orphan_files), orphans);
    assert_eq!(report.location, bare);
}

#[tokio::test]
async fn locations_outside_the_table_or_without_its_metadata_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let location = root.path().join("t").display().to_string();
    let committed = table(&location, &[&[1]]).await;
    let orphans = crashed_write(&committed, &[2]).await;
    let elsewhere = root.path().join("other.bin");
    std::fs::write(&elsewhere, b"x").unwrap();
    age_all(root.path(), 10 * DAY);

    let parent = root.path().display().to_string();
    let data = format!("{location}/data");
    for bad in [parent.as_str(), data.as_str(), "/somewhere/else"] {
        let options = OrphanFiles::new().with_location(bad);
        let err = remove_orphan_files(&committed, &options).await.unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
        assert!(err.to_string().contains(&location), "{err}");
    }
    // A table whose metadata names another location than where its metadata file lives.
    let mut moved = (**committed.metadata()).clone();
    moved.location = format!("{parent}/moved");
    let moved = Table::from_parts(
        FileIO::default(),
        committed.metadata_location().to_string(),
        Arc::new(moved),
    );
    let err = remove_orphan_files(&moved, &OrphanFiles::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
    assert!(err.to_string().contains("current metadata file"), "{err}");

    assert!(elsewhere.exists());
    assert!(orphans.iter().all(|f| Path::new(f).exists()));
}

#[tokio::test]
async fn an_unreadable_manifest_fails_the_call_and_deletes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().display().to_string();
    let committed = table(&location, &[&[1, 2, 3]]).await;
    let orphans = crashed_write(&committed, &[4]).await;
    let manifest = manifests(&dir.path().join("metadata")).remove(0);
    std::fs::write(&manifest, b"not avro").unwrap();
    age_all(dir.path(), 10 * DAY);
    let all = files_under(dir.path());

    let err = remove_orphan_files(&load(&location).await, &OrphanFiles::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&manifest.display().to_string()),
        "{err}"
    );
    assert_eq!(files_under(dir.path()), all);
    assert!(orphans.iter().all(|f| Path::new(f).exists()));

    std::fs::remove_file(&manifest).unwrap();
    let err = remove_orphan_files(&load(&location).await, &OrphanFiles::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert!(orphans.iter().all(|f| Path::new(f).exists()));
}

/// Embedders spawn maintenance on multi-threaded runtimes: the future must be `Send` (checked
/// when this compiles).
#[allow(dead_code)]
fn the_future_is_send(table: &Table, options: &OrphanFiles) {
    fn assert_send<T: Send>(_: &T) {}
    assert_send(&remove_orphan_files(table, options));
    assert_send(&crate::maintenance::reachable_files(table));
}

#[test]
fn a_referenced_file_in_another_store_under_the_same_path_is_refused() {
    use datafusion::execution::object_store::ObjectStoreUrl;
    use datafusion::execution::runtime_env::RuntimeEnv;
    let runtime = RuntimeEnv::default();
    let memory = ObjectStoreUrl::parse("memory://").unwrap();
    runtime.register_object_store(
        memory.as_ref(),
        Arc::new(object_store::memory::InMemory::new()),
    );
    let io = FileIO::new(Arc::new(runtime), crate::Relocation::default());
    let root = io.resolve("/tmp/t").unwrap();
    let check =
        |file: &str| super::check_same_store(&io.resolve(file).unwrap(), &root, file, "/tmp/t");
    let err = check("memory:///tmp/t/data/a.parquet").unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
    assert!(
        err.to_string().contains("memory:///tmp/t/data/a.parquet"),
        "{err}"
    );
    check("file:///tmp/t/data/a.parquet").unwrap();
    check("/tmp/t/data/a.parquet").unwrap();
    check("memory:///elsewhere/a.parquet").unwrap();
}
