//! A table of many small commits, as a streaming writer leaves it, written directly as a
//! metadata tree (no commit code involved): a format-v2 table partitioned by `day(ts)` with
//! one snapshot per commit, each a fast append of ONE manifest holding ONE 50-row Parquet
//! file (`id long` unique and increasing across files, `category string`, `ts timestamptz`;
//! commit `i`'s rows all fall on day `2024-01-01 + i`). Every snapshot's manifest list lists
//! all the manifests so far. Data files carry partition values, value/null counts and
//! lower/upper bounds, so both pruning stages can work. Used by the planning and commit
//! benches; the compaction bench uses another [`Layout`] (bigger files, many commits a day).

// Each bench uses some of these.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::TimestampMicrosecondArray;
use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringViewArray};
use datafusion::parquet::arrow::ArrowWriter;
use icefloe::spec::manifest::{
    DataContentType, DataFile, FileFormat, ManifestEntry, ManifestStatus,
};
use icefloe::spec::manifest_writer::{write_manifest, write_manifest_list};
use icefloe::spec::partition_summary::summarize;
use icefloe::spec::{
    FormatVersion, Literal, ManifestContent, ManifestFile, NestedField, PartitionField,
    PartitionSpec, PrimitiveType, Schema, TableMetadata, Transform,
};
use icefloe::to_arrow::schema_to_arrow;
use serde_json::json;

/// Rows in each data file.
pub const ROWS_PER_FILE: i64 = 50;
/// Commit 0's day: 2024-01-01 as days since the epoch.
const FIRST_DAY: i32 = 19_723;
/// Commit `i` is snapshot `FIRST_SNAPSHOT_ID + i`.
const FIRST_SNAPSHOT_ID: i64 = 1_000_000;
/// Commit 0's timestamp in ms; later commits are a second apart.
const FIRST_COMMIT_MS: i64 = 1_704_067_200_000;
const MICROS_PER_DAY: i64 = 86_400_000_000;
const CATEGORIES: [&str; 5] = ["alpha", "beta", "gamma", "delta", "epsilon"];

fn schema() -> Schema {
    Schema::new(
        0,
        vec![
            NestedField::required(1, "id", PrimitiveType::Long),
            NestedField::optional(2, "category", PrimitiveType::String),
            NestedField::optional(3, "ts", PrimitiveType::Timestamptz),
        ],
    )
}

/// `day(ts)`.
fn spec() -> PartitionSpec {
    PartitionSpec {
        spec_id: 0,
        fields: vec![PartitionField {
            source_id: 3,
            field_id: 1000,
            name: "ts_day".into(),
            transform: Transform::Day,
        }],
    }
}

/// The metadata of the empty table, parsed from JSON as a catalog would write it.
fn empty_metadata(location: &str) -> TableMetadata {
    let json = json!({
        "format-version": 2,
        "table-uuid": "6f0b6a36-5d0f-4a8e-9b1f-2d0c3c1c0a01",
        "location": location,
        "last-sequence-number": 0,
        "last-updated-ms": FIRST_COMMIT_MS,
        "last-column-id": 3,
        "current-schema-id": 0,
        "schemas": [schema().to_json()],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": spec().fields_json()}],
        "last-partition-id": 1000,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {},
        "snapshots": [],
        "snapshot-log": [],
        "metadata-log": [],
    });
    TableMetadata::parse(json.to_string().as_bytes()).expect("template metadata")
}

/// The shape of the generated table: rows in each commit's file, commits falling on one day.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub rows_per_file: i64,
    pub commits_per_day: i64,
}

impl Default for Layout {
    /// [`ROWS_PER_FILE`] rows a commit, a day each.
    fn default() -> Self {
        Self {
            rows_per_file: ROWS_PER_FILE,
            commits_per_day: 1,
        }
    }
}

impl Layout {
    fn first_id(&self, commit: i64) -> i64 {
        commit * self.rows_per_file
    }

    fn day_of(&self, commit: i64) -> i32 {
        FIRST_DAY + (commit / self.commits_per_day) as i32
    }

    /// Rows are this far apart (one a minute while a day holds them).
    fn row_step_micros(&self) -> i64 {
        (MICROS_PER_DAY / self.rows_per_file.max(1)).min(60_000_000)
    }
}

pub fn first_id(commit: i64) -> i64 {
    Layout::default().first_id(commit)
}

pub fn day_of(commit: i64) -> i32 {
    Layout::default().day_of(commit)
}

fn category(row: i64) -> &'static str {
    CATEGORIES[(row % CATEGORIES.len() as i64) as usize]
}

/// Writes commit `i`'s Parquet file; returns its path and data file entry (partition, counts,
/// bounds).
fn write_data_file(location: &str, commit: i64, layout: Layout) -> DataFile {
    let rows = layout.rows_per_file;
    let arrow_schema = Arc::new(schema_to_arrow(&schema()).expect("arrow schema"));
    let ids: Vec<i64> = (0..rows).map(|r| layout.first_id(commit) + r).collect();
    let categories: Vec<&str> = (0..rows).map(category).collect();
    let day_start = i64::from(layout.day_of(commit)) * MICROS_PER_DAY;
    // From 00:00, every row on the commit's day.
    let ts: Vec<i64> = (0..rows)
        .map(|r| day_start + r * layout.row_step_micros())
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids.clone())),
        Arc::new(StringViewArray::from(categories.clone())),
        Arc::new(TimestampMicrosecondArray::from(ts.clone()).with_timezone("+00:00")),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&arrow_schema), columns).expect("batch");
    let path = format!("{location}/data/{commit:05}-0-data.parquet");
    let file = std::fs::File::create(&path).expect("create data file");
    let mut writer = ArrowWriter::try_new(file, arrow_schema, None).expect("parquet writer");
    writer.write(&batch).expect("write batch");
    writer.close().expect("close parquet");
    let size = std::fs::metadata(&path).expect("stat").len() as i64;

    let mut data_file = DataFile::new(DataContentType::Data, path, FileFormat::Parquet, rows, size);
    data_file.partition = vec![Some(Literal::Date(layout.day_of(commit)))];
    let counts: HashMap<i32, i64> = [(1, rows), (2, rows), (3, rows)].into_iter().collect();
    data_file.value_counts = counts;
    data_file.null_value_counts = [(1, 0), (2, 0), (3, 0)].into_iter().collect();
    let min_category = categories.iter().min().expect("rows").to_string();
    let max_category = categories.iter().max().expect("rows").to_string();
    data_file.lower_bounds = Some(
        [
            (1, Literal::Long(ids[0]).to_bytes()),
            (2, Literal::String(min_category).to_bytes()),
            (3, Literal::Timestamptz(ts[0]).to_bytes()),
        ]
        .into_iter()
        .collect(),
    );
    data_file.upper_bounds = Some(
        [
            (1, Literal::Long(ids[ids.len() - 1]).to_bytes()),
            (2, Literal::String(max_category).to_bytes()),
            (3, Literal::Timestamptz(ts[ts.len() - 1]).to_bytes()),
        ]
        .into_iter()
        .collect(),
    );
    data_file
}

/// Writes commit `i`'s data file and manifest; returns its manifest-list entry.
fn write_commit(
    metadata: &TableMetadata,
    location: &str,
    commit: i64,
    layout: Layout,
) -> ManifestFile {
    let snapshot_id = FIRST_SNAPSHOT_ID + commit;
    let sequence_number = commit + 1;
    let data_file = write_data_file(location, commit, layout);
    let partition = data_file.partition.clone();
    let entry = ManifestEntry {
        status: ManifestStatus::Added,
        snapshot_id: Some(snapshot_id),
        sequence_number: Some(sequence_number),
        file_sequence_number: Some(sequence_number),
        data_file,
    };
    let (schema, spec) = (schema(), spec());
    let bytes = write_manifest(metadata, &schema, &spec, ManifestContent::Data, &[entry])
        .expect("write manifest");
    let path = format!("{location}/metadata/{commit:05}-m0.avro");
    std::fs::write(&path, &bytes).expect("write manifest file");

    let partition_type = spec.partition_type(&schema).expect("partition type");
    let mut manifest = ManifestFile::new(
        path,
        bytes.len() as i64,
        0,
        ManifestContent::Data,
        snapshot_id,
    );
    manifest.sequence_number = sequence_number;
    manifest.min_sequence_number = sequence_number;
    manifest.added_files_count = Some(1);
    manifest.existing_files_count = Some(0);
    manifest.deleted_files_count = Some(0);
    manifest.added_rows_count = Some(layout.rows_per_file);
    manifest.existing_rows_count = Some(0);
    manifest.deleted_rows_count = Some(0);
    manifest.partitions = Some(summarize(&partition_type, [partition.as_slice()]));
    manifest
}

fn manifest_list_path(location: &str, commit: i64) -> String {
    format!(
        "{location}/metadata/snap-{}-1-list.avro",
        FIRST_SNAPSHOT_ID + commit
    )
}

/// Writes the manifest lists of commits `commits`, commit `i`'s listing `manifests[..=i]`
/// newest first, as a fast append leaves them.
fn write_manifest_lists(location: &str, manifests: &[ManifestFile], commits: &[i64]) {
    for &commit in commits {
        let listed: Vec<ManifestFile> = manifests[..=commit as usize]
            .iter()
            .rev()
            .cloned()
            .collect();
        let parent = (commit > 0).then(|| FIRST_SNAPSHOT_ID + commit - 1);
        let bytes = write_manifest_list(
            FormatVersion::V2,
            FIRST_SNAPSHOT_ID + commit,
            parent,
            commit + 1,
            &listed,
        )
        .expect("write manifest list");
        std::fs::write(manifest_list_path(location, commit), bytes).expect("write list file");
    }
}

/// The final metadata: 2,000 snapshots, snapshot log, `main` at the last one.
fn final_metadata(location: &str, commits: i64, rows_per_file: i64) -> TableMetadata {
    let snapshots: Vec<_> = (0..commits)
        .map(|commit| {
            let mut snapshot = json!({
                "snapshot-id": FIRST_SNAPSHOT_ID + commit,
                "sequence-number": commit + 1,
                "timestamp-ms": FIRST_COMMIT_MS + commit * 1000,
                "manifest-list": manifest_list_path(location, commit),
                "schema-id": 0,
                "summary": {
                    "operation": "append",
                    "added-data-files": "1",
                    "added-records": rows_per_file.to_string(),
                    "total-data-files": (commit + 1).to_string(),
                    "total-records": ((commit + 1) * rows_per_file).to_string(),
                    "total-delete-files": "0",
                    "total-position-deletes": "0",
                    "total-equality-deletes": "0",
                },
            });
            if commit > 0 {
                snapshot["parent-snapshot-id"] = json!(FIRST_SNAPSHOT_ID + commit - 1);
            }
            snapshot
        })
        .collect();
    let log: Vec<_> = (0..commits)
        .map(|commit| {
            json!({
                "snapshot-id": FIRST_SNAPSHOT_ID + commit,
                "timestamp-ms": FIRST_COMMIT_MS + commit * 1000,
            })
        })
        .collect();
    let current = FIRST_SNAPSHOT_ID + commits - 1;
    let mut json = empty_metadata(location).to_json();
    json["snapshots"] = json!(snapshots);
    json["snapshot-log"] = json!(log);
    json["current-snapshot-id"] = json!(current);
    json["refs"] = json!({"main": {"snapshot-id": current, "type": "branch"}});
    json["last-sequence-number"] = json!(commits);
    json["last-updated-ms"] = json!(FIRST_COMMIT_MS + (commits - 1) * 1000);
    TableMetadata::parse(json.to_string().as_bytes()).expect("final metadata")
}

/// Generates the table under `dir`; returns its location.
pub fn generate_table(dir: &Path, commits: i64) -> String {
    generate_table_with(dir, commits, Layout::default())
}

/// Generates the table of `layout` under `dir`; returns its location.
pub fn generate_table_with(dir: &Path, commits: i64, layout: Layout) -> String {
    let location = dir.display().to_string();
    std::fs::create_dir_all(dir.join("data")).expect("data dir");
    std::fs::create_dir_all(dir.join("metadata")).expect("metadata dir");
    let template = empty_metadata(&location);
    let start = Instant::now();
    let all: Vec<i64> = (0..commits).collect();
    // Two threads: the machine has two cores.
    let halves: Vec<&[i64]> = all.chunks(all.len().div_ceil(2)).collect();
    let manifests: Vec<ManifestFile> = std::thread::scope(|s| {
        let handles: Vec<_> = halves
            .iter()
            .map(|half| {
                let (template, location) = (&template, &location);
                s.spawn(move || {
                    half.iter()
                        .map(|&c| write_commit(template, location, c, layout))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("writer thread"))
            .collect()
    });
    let files_written = start.elapsed();
    // Interleave the lists between the threads: later lists are longer.
    let (even, odd): (Vec<i64>, Vec<i64>) = all.iter().partition(|c| *c % 2 == 0);
    std::thread::scope(|s| {
        for part in [&even, &odd] {
            let (manifests, location) = (&manifests, &location);
            s.spawn(move || write_manifest_lists(location, manifests, part));
        }
    });
    println!(
        "generation: data files + manifests {:.1} s, manifest lists {:.1} s",
        files_written.as_secs_f64(),
        (start.elapsed() - files_written).as_secs_f64()
    );
    let metadata = final_metadata(&location, commits, layout.rows_per_file);
    std::fs::write(
        dir.join("metadata/v1.metadata.json"),
        metadata.to_json().to_string(),
    )
    .expect("write metadata");
    // As a file-system (Hadoop) catalog leaves it: the hint names the current version.
    std::fs::write(dir.join("metadata/version-hint.text"), "1").expect("write version hint");
    location
}
