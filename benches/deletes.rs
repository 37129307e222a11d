//! Position deletes: the same table read without deletes and with 10% of its rows deleted by
//! one position delete file, side by side in one run.
//!
//! Table: as in `read_path`, `external/duckdb_lineitem_gz_v1` (TPC-H lineitem, 111,968 rows)
//! when `ICEFLOE_FIXTURES` (or `../shared/fixtures`) has it, else the in-repo
//! `pyiceberg/wh1/db.row_groups`. At start the table is copied twice into a temporary
//! directory. Copy A stays as it is; copy B gets a new snapshot (format version 2 at least)
//! that adds one Parquet position delete file deleting every 10th row (positions 9, 19, ...)
//! of every data file, its delete manifest (written with
//! [`icefloe::spec::manifest_writer::write_manifest`]) and a manifest list listing the
//! table's manifests plus that one ([`icefloe::spec::manifest_writer::write_manifest_list`]).
//! Paths inside the new files keep the table's own path style, so the relocation rule that
//! reads the copy applies to them as to the original ones.
//!
//! Before benching, `count(*)` of both copies is checked against the row counts in the data
//! files' Parquet footers. Each iteration opens the table in a fresh `SessionContext`.
//!
//! Run: `cargo bench --bench deletes`.

#[path = "support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::arrow::array::{Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};
use datafusion::prelude::SessionContext;
use icefloe::spec::manifest::parse_manifest;
use icefloe::spec::manifest_list::parse_manifest_list;
use icefloe::spec::manifest_writer::{write_manifest, write_manifest_list};
use icefloe::spec::snapshot::Operation;
use icefloe::spec::{
    DataContentType, DataFile, FileFormat, FormatVersion, ManifestContent, ManifestEntry,
    ManifestFile, ManifestStatus, MetadataLogEntry, Snapshot, SnapshotLogEntry, SnapshotReference,
    Summary,
};
use icefloe::{FileIO, IcebergTableProvider, Relocation, Table, TableOptions};
use support::run;
use tokio::runtime::Runtime;

/// The reserved field ids of a position delete file's columns (spec: "Position Delete Files").
const FILE_PATH_FIELD_ID: &str = "2147483546";
const POS_FIELD_ID: &str = "2147483545";

/// Every `DELETE_EVERY`th row of each data file is deleted.
const DELETE_EVERY: i64 = 10;

/// The fixture table to copy, and how its paths map onto a copy.
struct Source {
    name: &'static str,
    dir: PathBuf,
    /// Where the table directory goes inside a copy root.
    copy_to: &'static str,
    /// The path prefix the metadata uses; a copy reads it under `root/relocate_to`.
    relocate_from: &'static str,
    relocate_to: &'static str,
    aggregate: &'static str,
}

fn source() -> Source {
    let shared = std::env::var_os("ICEFLOE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/fixtures"));
    let lineitem = shared.join("external/duckdb_lineitem_gz_v1/lineitem_iceberg_gz");
    if lineitem.is_dir() {
        return Source {
            name: "lineitem_gz_v1 (111,968 rows)",
            dir: lineitem,
            copy_to: "lineitem_iceberg_gz",
            relocate_from: "lineitem_iceberg_gz",
            relocate_to: "lineitem_iceberg_gz",
            aggregate: "SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice), \
                        avg(l_discount), count(*) FROM t GROUP BY 1, 2",
        };
    }
    Source {
        name: "db.row_groups (in-repo)",
        dir: Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/pyiceberg/wh1/db/row_groups"),
        copy_to: "db/row_groups",
        relocate_from: "file:///data/lake/wh1",
        relocate_to: "",
        aggregate: "SELECT count(*), sum(id), min(id), max(id) FROM t",
    }
}

/// One copy of the table: where to open it and how to relocate its paths.
struct BenchTable {
    /// The metadata file to open.
    metadata_file: String,
    relocation: Relocation,
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create dir");
    for entry in fs::read_dir(from).expect("read dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

/// Copies the source table under `root` and loads it.
async fn copy_table(src: &Source, root: &Path) -> Table {
    copy_dir(&src.dir, &root.join(src.copy_to));
    let relocation = Relocation::new().with_rule(
        src.relocate_from,
        root.join(src.relocate_to).to_string_lossy().to_string(),
    );
    let io = FileIO::new(SessionContext::new().runtime_env(), relocation);
    let location = root.join(src.copy_to).to_string_lossy().to_string();
    Table::load(io, &location).await.expect("load the copy")
}

fn bench_table(table: &Table, metadata_file: String) -> BenchTable {
    BenchTable {
        metadata_file,
        relocation: table.io().relocation().clone(),
    }
}

/// The local file a table path is read from.
fn local(table: &Table, path: &str) -> PathBuf {
    let relocated = table.io().relocation().apply(path).into_owned();
    PathBuf::from(relocated.strip_prefix("file://").unwrap_or(&relocated))
}

/// The directory part of a table path (`a/b/c.avro` -> `a/b`).
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// The current snapshot's manifests (with counts filled in where a v1 list left them out)
/// and its live data files.
async fn current_files(table: &Table) -> (Vec<ManifestFile>, Vec<DataFile>) {
    let md = table.metadata();
    let snapshot = md.current_snapshot().expect("a current snapshot");
    let list_path = snapshot.manifest_list.as_deref().expect("a manifest list");
    let list = table
        .io()
        .read(list_path)
        .await
        .expect("read manifest list");
    let mut manifests = parse_manifest_list(&list, md.format_version).expect("manifest list");
    let mut data_files = Vec::new();
    for m in &mut manifests {
        let spec = md.partition_spec_by_id(m.partition_spec_id).expect("spec");
        assert!(
            spec.is_unpartitioned(),
            "one delete file needs an unpartitioned table"
        );
        let partition_type = spec.partition_type(md.current_schema()).expect("type");
        let bytes = table
            .io()
            .read(&m.manifest_path)
            .await
            .expect("read manifest");
        let entries = parse_manifest(&bytes, m, &partition_type)
            .expect("manifest")
            .entries;
        fill_counts(m, &entries);
        if m.content == ManifestContent::Data {
            data_files.extend(
                entries
                    .into_iter()
                    .filter(ManifestEntry::is_alive)
                    .map(|e| e.data_file),
            );
        }
    }
    data_files.sort_by(|a, b| a.file_path.cmp(&b.file_path));
    (manifests, data_files)
}

/// v2 manifest lists require the file and row counts that v1 lists may leave out.
fn fill_counts(m: &mut ManifestFile, entries: &[ManifestEntry]) {
    let of = |status: ManifestStatus| entries.iter().filter(move |e| e.status == status);
    let files = |s| i32::try_from(of(s).count()).expect("file count");
    let rows = |s| of(s).map(|e| e.data_file.record_count).sum::<i64>();
    m.added_files_count
        .get_or_insert(files(ManifestStatus::Added));
    m.existing_files_count
        .get_or_insert(files(ManifestStatus::Existing));
    m.deleted_files_count
        .get_or_insert(files(ManifestStatus::Deleted));
    m.added_rows_count
        .get_or_insert(rows(ManifestStatus::Added));
    m.existing_rows_count
        .get_or_insert(rows(ManifestStatus::Existing));
    m.deleted_rows_count
        .get_or_insert(rows(ManifestStatus::Deleted));
}

/// The row count in a Parquet file's footer.
fn parquet_rows(path: &Path) -> i64 {
    let file = fs::File::open(path).expect("open data file");
    let reader = SerializedFileReader::new(file).expect("parquet footer");
    reader.metadata().file_metadata().num_rows()
}

/// Writes the position delete file: `(file_path, pos)` for every `DELETE_EVERY`th row of each
/// data file, sorted by path then position. Returns the number of rows written.
fn write_position_deletes(path: &Path, data_files: &[(String, i64)]) -> i64 {
    let field = |name: &str, ty: DataType, id: &str| {
        Field::new(name, ty, false).with_metadata(HashMap::from([(
            "PARQUET:field_id".to_string(),
            id.to_string(),
        )]))
    };
    let schema = Arc::new(ArrowSchema::new(vec![
        field("file_path", DataType::Utf8, FILE_PATH_FIELD_ID),
        field("pos", DataType::Int64, POS_FIELD_ID),
    ]));
    let (mut paths, mut positions) = (Vec::new(), Vec::new());
    for (data_path, rows) in data_files {
        for pos in (DELETE_EVERY - 1..*rows).step_by(DELETE_EVERY as usize) {
            paths.push(data_path.as_str());
            positions.push(pos);
        }
    }
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(StringArray::from(paths)),
            Arc::new(Int64Array::from(positions)),
        ],
    )
    .expect("delete batch");
    let file = fs::File::create(path).expect("create delete file");
    let mut writer = ArrowWriter::try_new(file, schema, None).expect("parquet writer");
    writer.write(&batch).expect("write deletes");
    writer.close().expect("close delete file");
    i64::try_from(batch.num_rows()).expect("row count")
}

fn now_ms() -> i64 {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis();
    i64::try_from(ms).expect("time")
}

/// Adds the delete snapshot to copy B; returns the new metadata file (local path) and the
/// number of deleted rows.
async fn add_position_deletes(table: &Table) -> (String, i64) {
    let md = table.metadata();
    let snapshot = md.current_snapshot().expect("a current snapshot");
    let (mut manifests, data_files) = current_files(table).await;
    let meta_dir = parent(snapshot.manifest_list.as_deref().expect("a manifest list")).to_string();
    let data_dir = parent(&data_files[0].file_path).to_string();
    let snapshot_id = snapshot.snapshot_id.wrapping_add(1);
    let sequence_number = md.last_sequence_number + 1;

    // The delete file, with the data file paths exactly as the manifests write them.
    let targets: Vec<(String, i64)> = data_files
        .iter()
        .map(|f| (f.file_path.clone(), f.record_count))
        .collect();
    let delete_path = format!("{data_dir}/bench-position-deletes.parquet");
    let deleted = write_position_deletes(&local(table, &delete_path), &targets);
    let delete_file = DataFile {
        referenced_data_file: (data_files.len() == 1).then(|| data_files[0].file_path.clone()),
        ..DataFile::new(
            DataContentType::PositionDeletes,
            delete_path.clone(),
            FileFormat::Parquet,
            deleted,
            file_size(&local(table, &delete_path)),
        )
    };

    // New metadata: at least v2 (position deletes), one more snapshot.
    let mut new_md = md.as_ref().clone();
    new_md.format_version = new_md.format_version.max(FormatVersion::V2);
    let schema = new_md.current_schema().clone();
    let spec = new_md
        .default_partition_spec()
        .expect("default spec")
        .clone();

    let entry = ManifestEntry {
        status: ManifestStatus::Added,
        snapshot_id: Some(snapshot_id),
        sequence_number: Some(sequence_number),
        file_sequence_number: Some(sequence_number),
        data_file: delete_file,
    };
    let manifest = write_manifest(&new_md, &schema, &spec, ManifestContent::Deletes, &[entry])
        .expect("write delete manifest");
    let manifest_path = format!("{meta_dir}/bench-deletes-m0.avro");
    fs::write(local(table, &manifest_path), &manifest).expect("write manifest");
    let mut delete_manifest = ManifestFile::new(
        &manifest_path,
        i64::try_from(manifest.len()).expect("length"),
        spec.spec_id,
        ManifestContent::Deletes,
        snapshot_id,
    );
    delete_manifest.sequence_number = sequence_number;
    delete_manifest.min_sequence_number = sequence_number;
    delete_manifest.added_files_count = Some(1);
    delete_manifest.existing_files_count = Some(0);
    delete_manifest.deleted_files_count = Some(0);
    delete_manifest.added_rows_count = Some(deleted);
    delete_manifest.existing_rows_count = Some(0);
    delete_manifest.deleted_rows_count = Some(0);
    delete_manifest.partitions = Some(Vec::new());
    manifests.push(delete_manifest);

    let list = write_manifest_list(
        new_md.format_version,
        snapshot_id,
        Some(snapshot.snapshot_id),
        sequence_number,
        &manifests,
    )
    .expect("write manifest list");
    let list_path = format!("{meta_dir}/snap-{snapshot_id}-bench-deletes.avro");
    fs::write(local(table, &list_path), &list).expect("write manifest list");

    let timestamp_ms = now_ms().max(md.last_updated_ms + 1);
    let mut summary = Summary::new(Operation::Delete, Default::default());
    for (key, value) in [
        ("added-delete-files", 1),
        ("added-position-delete-files", 1),
        ("added-position-deletes", deleted),
    ] {
        summary
            .properties_mut()
            .insert(key.into(), value.to_string());
    }
    new_md.snapshots.push(Snapshot {
        snapshot_id,
        parent_snapshot_id: Some(snapshot.snapshot_id),
        sequence_number,
        timestamp_ms,
        manifest_list: Some(list_path),
        manifests: None,
        summary: Some(summary),
        schema_id: Some(schema.schema_id),
        first_row_id: None,
        added_rows: None,
        key_id: None,
    });
    new_md.current_snapshot_id = Some(snapshot_id);
    new_md.last_sequence_number = sequence_number;
    new_md.last_updated_ms = timestamp_ms;
    new_md.refs.insert(
        SnapshotReference::MAIN_BRANCH.into(),
        SnapshotReference::branch(snapshot_id),
    );
    new_md.snapshot_log.push(SnapshotLogEntry {
        snapshot_id,
        timestamp_ms,
    });
    let previous = table.metadata_location();
    let previous_name = previous.rsplit('/').next().unwrap_or(previous);
    new_md.metadata_log.push(MetadataLogEntry {
        metadata_file: format!("{meta_dir}/{previous_name}"),
        timestamp_ms: md.last_updated_ms,
    });

    // vN.metadata.json after the existing metadata files, and the version hint naming it.
    let local_meta = local(table, &meta_dir);
    let version = fs::read_dir(&local_meta)
        .expect("metadata dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("metadata.json"))
        .count()
        + 1;
    let metadata_file = local_meta.join(format!("v{version}.metadata.json"));
    let json = serde_json::to_vec_pretty(&new_md.to_json()).expect("metadata json");
    fs::write(&metadata_file, json).expect("write metadata");
    let hint = local_meta.join("version-hint.text");
    let _ = fs::remove_file(&hint); // copied read-only from the fixture
    fs::write(&hint, version.to_string()).expect("write version hint");
    (metadata_file.to_string_lossy().into_owned(), deleted)
}

fn file_size(path: &Path) -> i64 {
    i64::try_from(fs::metadata(path).expect("stat").len()).expect("size")
}

async fn open(t: &BenchTable) -> SessionContext {
    let ctx = SessionContext::new();
    let options = TableOptions::default().with_relocation_rules(t.relocation.clone());
    let provider = IcebergTableProvider::open(&ctx, &t.metadata_file, options)
        .await
        .expect("open the iceberg table");
    ctx.register_table("t", Arc::new(provider))
        .expect("register");
    ctx
}

async fn count(t: &BenchTable) -> i64 {
    let batches = open(t)
        .await
        .sql("SELECT count(*) FROM t")
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("count(*) is an Int64")
        .value(0)
}

/// Builds both copies and checks `count(*)` of each against the data files' footers.
async fn setup(src: &Source, tmp: &Path) -> (BenchTable, BenchTable) {
    let a = copy_table(src, &tmp.join("a")).await;
    let b = copy_table(src, &tmp.join("b")).await;
    let (_, data_files) = current_files(&b).await;
    let footer_rows: Vec<i64> = data_files
        .iter()
        .map(|f| parquet_rows(&local(&b, &f.file_path)))
        .collect();
    let total: i64 = footer_rows.iter().sum();
    let expected_deleted: i64 = footer_rows.iter().map(|rows| rows / DELETE_EVERY).sum();
    let (metadata_file, deleted) = add_position_deletes(&b).await;
    assert_eq!(deleted, expected_deleted, "delete file rows");

    let a = bench_table(&a, a.metadata_location().to_string());
    let b = bench_table(&b, metadata_file);
    assert_eq!(count(&a).await, total, "count(*) without deletes");
    assert_eq!(
        count(&b).await,
        total - expected_deleted,
        "count(*) with deletes"
    );
    eprintln!(
        "{} data file(s), {total} rows, {expected_deleted} deleted ({:.1}%)",
        data_files.len(),
        100.0 * expected_deleted as f64 / total as f64
    );
    (a, b)
}

fn deletes(c: &mut Criterion) {
    let rt = Runtime::new().expect("tokio runtime");
    let src = source();
    let tmp = tempfile::tempdir().expect("temp dir");
    let (a, b) = rt.block_on(setup(&src, tmp.path()));
    let queries = [
        ("count", "SELECT count(*) FROM t"),
        ("aggregate", src.aggregate),
    ];
    for (label, sql) in queries {
        let mut group = c.benchmark_group(format!("deletes {label} {}", src.name));
        group.sample_size(20);
        for (name, t) in [("no_deletes", &a), ("position_deletes_10pct", &b)] {
            group.bench_function(name, |bench| {
                bench
                    .to_async(&rt)
                    .iter(|| async { run(&open(t).await, sql).await })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, deletes);
criterion_main!(benches);
