//! Partition statistics end to end on directory tables written through SQL: the file
//! `iceberg_compute_partition_stats` commits answers `"t$partitions"` with the rows the
//! manifests give (partitioned, with position deletes, deletion vectors, whole-file and
//! copy-on-write deletes, evolved specs), without the manifests; a file that is missing,
//! broken or of another snapshot leaves the manifests to answer; the file is the spec's.

use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::prelude::SessionContext;

use crate::catalog::SqliteCatalog;
use crate::catalog::test_support::copy_dir;
use crate::metadata_tables::{IcebergMetadataTable, MetadataTableKind};
use crate::scan::read_manifest_list;
use crate::spec::SnapshotSelector;
use crate::{FileIO, Relocation, Table};

async fn run(ctx: &SessionContext, sql: &str) {
    crate::sql::sql(ctx, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

async fn load(location: &Path) -> Table {
    let ctx = SessionContext::new();
    let io = FileIO::new(ctx.runtime_env(), Default::default());
    Table::load(io, &location.display().to_string())
        .await
        .unwrap()
}

/// `"t$partitions"` at `selector` as sorted text lines (the two sources order rows
/// differently; a relation has no order).
async fn partitions_at(table: Table, selector: SnapshotSelector) -> Vec<String> {
    let relation =
        IcebergMetadataTable::try_new(table, MetadataTableKind::Partitions, selector).unwrap();
    let batches = relation.batches(&[], None).await.unwrap();
    let text = pretty_format_batches(&batches).unwrap().to_string();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// A query's rows as sorted text lines (the header lines first).
async fn text(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let batches = crate::sql::sql(ctx, sql)
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let text = pretty_format_batches(&batches).unwrap().to_string();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

async fn partitions(location: &Path) -> Vec<String> {
    partitions_at(load(location).await, SnapshotSelector::Current).await
}

async fn compute(ctx: &SessionContext) {
    run(ctx, "SELECT * FROM iceberg_compute_partition_stats('db.p')").await;
}

/// A copy of the table at `to` without the manifests (not the manifest lists) that `keep`
/// refuses: a read of a removed one fails.
async fn copy_without_manifests(from: &Path, to: &Path, keep: impl Fn(&str) -> bool) -> usize {
    copy_dir(from, to);
    let mut removed = 0;
    for entry in std::fs::read_dir(to.join("metadata")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if name.ends_with(".avro") && !name.starts_with("snap-") && !keep(&name) {
            std::fs::remove_file(to.join("metadata").join(&name)).unwrap();
            removed += 1;
        }
    }
    removed
}

/// A session over a SQLite catalog in `dir` with a namespace `db`.
async fn session(dir: &Path) -> SessionContext {
    let db = dir.join("catalog.db");
    SqliteCatalog::create(&db, "default", FileIO::default()).unwrap();
    let ctx = SessionContext::new();
    crate::session::register_catalog_as_default(&ctx, &db, Relocation::default())
        .await
        .unwrap();
    crate::sql::register(&ctx);
    run(&ctx, "CREATE SCHEMA db").await;
    ctx
}

/// `db.p`, partitioned by region: rows in three regions and a NULL one over two inserts,
/// then the statements given; its location.
async fn table(ctx: &SessionContext, dir: &Path, properties: &str, statements: &[&str]) -> PathBuf {
    let create = format!(
        "CREATE TABLE db.p (id BIGINT NOT NULL, region VARCHAR, n INT) PARTITION BY (region) \
         TBLPROPERTIES ({properties})"
    );
    run(ctx, &create).await;
    run(ctx, "INSERT INTO db.p VALUES (1, 'eu', 1), (2, 'eu', 2), (3, 'us', 3), (4, NULL, 4), (5, 'ap', 5)").await;
    run(
        ctx,
        "INSERT INTO db.p VALUES (6, 'eu', 6), (7, 'us', 7), (8, 'ap', 8)",
    )
    .await;
    for statement in statements {
        run(ctx, statement).await;
    }
    dir.canonicalize().unwrap().join("db").join("p")
}

/// Merge-on-read deletes (position delete files in v2, deletion vectors in v3) and an
/// evolved spec add no DELETED entries: the file answers alone, with no manifest left.
#[tokio::test]
async fn the_file_answers_partitions_without_manifests() {
    for version in ["2", "3"] {
        let dir = tempfile::tempdir().unwrap();
        let ctx = session(dir.path()).await;
        let options = format!(
            "'format-version' = '{version}', 'write.delete.mode' = 'merge-on-read', \
             'write.update.mode' = 'merge-on-read'"
        );
        // No file loses all its rows (that would be a whole-file delete).
        let statements = [
            "DELETE FROM db.p WHERE id = 1",
            "ALTER TABLE db.p ADD PARTITION FIELD bucket(2, n) AS n_bucket",
            "INSERT INTO db.p VALUES (9, 'eu', 9), (10, NULL, 10), (11, 'ap', 11), (12, 'eu', 9)",
            "UPDATE db.p SET n = n + 100 WHERE id = 9",
        ];
        let location = table(&ctx, dir.path(), &options, &statements).await;
        let from_manifests = partitions(&location).await;
        compute(&ctx).await;
        assert_eq!(partitions(&location).await, from_manifests, "v{version}");

        let copy = dir.path().join("copy");
        let removed = copy_without_manifests(&location, &copy, |_| false).await;
        assert!(removed >= 4, "v{version}: {removed} manifests removed");
        assert_eq!(
            partitions(&copy).await,
            from_manifests,
            "v{version} without manifests"
        );
        // Without the file the copy's relation has nothing to answer from.
        std::fs::remove_dir_all(&copy).unwrap();
        copy_without_manifests(&location, &copy, |_| false).await;
        for entry in std::fs::read_dir(copy.join("metadata")).unwrap() {
            let path = entry.unwrap().path();
            if path.to_string_lossy().ends_with(".parquet") {
                std::fs::remove_file(path).unwrap();
            }
        }
        let relation = IcebergMetadataTable::try_new(
            load(&copy).await,
            MetadataTableKind::Partitions,
            SnapshotSelector::Current,
        )
        .unwrap();
        assert!(relation.batches(&[], None).await.is_err(), "v{version}");
    }
}

/// Copy-on-write and whole-file deletes leave DELETED entries, which move Java's
/// `last_updated` but not the relation's: the file still answers, reading only the
/// manifests the deleting snapshots wrote, and a partition whose newest change removed a
/// file without adding one in it is left to the manifests. Either way the rows are the
/// manifests'.
#[tokio::test]
async fn deleted_entries_read_only_the_deleting_snapshots_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = session(dir.path()).await;
    // Copy-on-write: each partition the DELETE touches gets a rewritten file.
    // eu's file of 1 and 2 is rewritten, its file of 6 deleted whole; then a new partition.
    let statements = [
        "DELETE FROM db.p WHERE id IN (1, 6)",
        "INSERT INTO db.p VALUES (9, 'new', 9)",
    ];
    let location = table(&ctx, dir.path(), "'format-version' = '2'", &statements).await;
    let from_manifests = partitions(&location).await;
    compute(&ctx).await;
    assert_eq!(partitions(&location).await, from_manifests);

    let table = load(&location).await;
    let current = table.metadata().current_snapshot().unwrap().clone();
    let deleting = current.parent_snapshot_id.unwrap();
    let listed = read_manifest_list(table.io(), table.metadata(), &current)
        .await
        .unwrap();
    let written_by_delete: Vec<String> = listed
        .iter()
        .filter(|m| m.added_snapshot_id == deleting)
        .map(|m| m.manifest_path.rsplit('/').next().unwrap().to_string())
        .collect();
    assert!(!written_by_delete.is_empty() && listed.len() > written_by_delete.len());
    let copy = dir.path().join("copy");
    copy_without_manifests(&location, &copy, |name| {
        written_by_delete.iter().any(|k| k == name)
    })
    .await;
    assert_eq!(partitions(&copy).await, from_manifests);

    // A whole-file delete in a partition that keeps other files: its newest live file is
    // older than the deletion, so the manifests answer (with the same rows).
    run(&ctx, "INSERT INTO db.p VALUES (12, 'ap', 12)").await;
    run(&ctx, "DELETE FROM db.p WHERE id = 12").await;
    let from_manifests = partitions(&location).await;
    compute(&ctx).await;
    assert_eq!(partitions(&location).await, from_manifests);
    let copy = dir.path().join("copy2");
    copy_without_manifests(&location, &copy, |_| false).await;
    let relation = IcebergMetadataTable::try_new(
        load(&copy).await,
        MetadataTableKind::Partitions,
        SnapshotSelector::Current,
    )
    .unwrap();
    assert!(relation.batches(&[], None).await.is_err());
}

/// A file for another snapshot is not used; a missing or broken one leaves the manifests to
/// answer, never an error.
#[tokio::test]
async fn a_missing_broken_or_older_file_leaves_the_manifests_to_answer() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = session(dir.path()).await;
    let location = table(&ctx, dir.path(), "'format-version' = '2'", &[]).await;
    let first = load(&location)
        .await
        .metadata()
        .current_snapshot_id
        .unwrap();
    let at_first = partitions(&location).await;
    compute(&ctx).await;
    run(
        &ctx,
        "INSERT INTO db.p VALUES (20, 'eu', 20), (21, 'new', 21)",
    )
    .await;
    // The current snapshot has no file: its rows are the data's, not the older file's.
    let counted = "SELECT partition.region AS region, record_count AS n FROM db.\"p$partitions\"";
    let data = "SELECT region, count(*) AS n FROM db.p GROUP BY region";
    assert_eq!(text(&ctx, counted).await, text(&ctx, data).await);
    let selector = SnapshotSelector::SnapshotId(first);
    assert_eq!(
        partitions_at(load(&location).await, selector.clone()).await,
        at_first
    );

    let stats = stats_file(&location);
    let size = std::fs::metadata(&stats).unwrap().len();
    std::fs::write(&stats, vec![b'x'; usize::try_from(size).unwrap()]).unwrap();
    assert_eq!(
        partitions_at(load(&location).await, selector.clone()).await,
        at_first
    );
    std::fs::remove_file(&stats).unwrap();
    assert_eq!(
        partitions_at(load(&location).await, selector).await,
        at_first
    );
}

/// The table's one partition statistics file.
fn stats_file(location: &Path) -> std::path::PathBuf {
    let found: Vec<_> = std::fs::read_dir(location.join("metadata"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".parquet"))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

/// The file holds the spec's schema (field ids, requiredness, `dv_count` in v3) and Java's
/// rows: sorted by partition with nulls first, a row of zero counts for a partition whose
/// files were all deleted (last updated by that deletion), `total_record_count` known where
/// there are no position delete files or equality deletes.
#[tokio::test]
async fn the_file_is_the_specs() {
    for version in [2, 3] {
        let dir = tempfile::tempdir().unwrap();
        let ctx = session(dir.path()).await;
        let options =
            format!("'format-version' = '{version}', 'write.delete.mode' = 'merge-on-read'");
        let statements = [
            "DELETE FROM db.p WHERE id = 2",
            "DELETE FROM db.p WHERE id IN (3, 7)",
        ];
        let location = table(&ctx, dir.path(), &options, &statements).await;
        compute(&ctx).await;
        let table = load(&location).await;
        let deleting = table.metadata().current_snapshot().unwrap().clone();
        let bytes = std::fs::read(stats_file(&location)).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes)).unwrap();
        let fields: Vec<(String, i32, bool)> = reader
            .parquet_schema()
            .root_schema()
            .get_fields()
            .iter()
            .map(|f| {
                let info = f.get_basic_info();
                let required =
                    info.repetition() == datafusion::parquet::basic::Repetition::REQUIRED;
                (info.name().to_string(), info.id(), required)
            })
            .collect();
        let deletes_required = version == 3;
        let mut expected = vec![
            ("partition".to_string(), 1, true),
            ("spec_id".to_string(), 2, true),
            ("data_record_count".to_string(), 3, true),
            ("data_file_count".to_string(), 4, true),
            ("total_data_file_size_in_bytes".to_string(), 5, true),
            (
                "position_delete_record_count".to_string(),
                6,
                deletes_required,
            ),
            (
                "position_delete_file_count".to_string(),
                7,
                deletes_required,
            ),
        ];
        if version == 3 {
            expected.push(("dv_count".to_string(), 13, true));
        }
        expected.extend([
            (
                "equality_delete_record_count".to_string(),
                8,
                deletes_required,
            ),
            (
                "equality_delete_file_count".to_string(),
                9,
                deletes_required,
            ),
            ("total_record_count".to_string(), 10, false),
            ("last_updated_at".to_string(), 11, false),
            ("last_updated_snapshot_id".to_string(), 12, false),
        ]);
        assert_eq!(fields, expected, "v{version}");
        let batch: RecordBatch = reader.build().unwrap().next().unwrap().unwrap();
        let region = batch
            .column(0)
            .as_struct()
            .column(0)
            .as_string::<i32>()
            .clone();
        let regions: Vec<Option<&str>> = (0..region.len())
            .map(|i| region.is_valid(i).then(|| region.value(i)))
            .collect();
        // us lost both its files (3 in the first, 7 in the second insert) whole.
        assert_eq!(
            regions,
            [None, Some("ap"), Some("eu"), Some("us")],
            "v{version}"
        );
        let long = |name: &str| -> Vec<Option<i64>> {
            let c = batch.column_by_name(name).unwrap();
            let c =
                datafusion::arrow::compute::cast(c, &datafusion::arrow::datatypes::DataType::Int64)
                    .unwrap();
            let c = c.as_primitive::<Int64Type>();
            (0..c.len())
                .map(|i| c.is_valid(i).then(|| c.value(i)))
                .collect()
        };
        assert_eq!(
            long("data_file_count"),
            [Some(1), Some(2), Some(2), Some(0)]
        );
        assert_eq!(
            long("data_record_count"),
            [Some(1), Some(2), Some(3), Some(0)]
        );
        assert_eq!(
            long("position_delete_record_count"),
            [Some(0), Some(0), Some(1), Some(0)]
        );
        let (files, dvs) = match version {
            3 => (0, Some(1)),
            _ => (1, None),
        };
        assert_eq!(
            long("position_delete_file_count"),
            [Some(0), Some(0), Some(files), Some(0)]
        );
        if let Some(dvs) = dvs {
            assert_eq!(long("dv_count"), [Some(0), Some(0), Some(dvs), Some(0)]);
        }
        // Known without data: no deletes, or deletion vectors only.
        let eu_total = (version == 3).then_some(2);
        assert_eq!(
            long("total_record_count"),
            [Some(1), Some(2), eu_total, Some(0)]
        );
        let last = long("last_updated_snapshot_id");
        assert_eq!(last[3], Some(deleting.snapshot_id), "v{version}");
        assert_eq!(long("last_updated_at")[3], Some(deleting.timestamp_ms));
    }
}
