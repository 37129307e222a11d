//! `metadata_log_entries`: the `metadata-log` entries plus the current metadata file, each
//! with the snapshot current at its timestamp, as PyIceberg's `inspect.metadata_log_entries()`.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use super::arrow_util::{batch, timestamp_ms};
use crate::error::Result;
use crate::spec::{Snapshot, TableMetadata};
use crate::table::Table;

/// `timestamp`, `file`, `latest_snapshot_id`, `latest_schema_id`, `latest_sequence_number`.
pub(super) fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("timestamp", timestamp_ms(), false),
        Field::new("file", DataType::Utf8, false),
        Field::new("latest_snapshot_id", DataType::Int64, true),
        Field::new("latest_schema_id", DataType::Int32, true),
        Field::new("latest_sequence_number", DataType::Int64, true),
    ]))
}

/// One row per metadata file: the logged ones, then the current one (stamped with
/// `last-updated-ms`, named as written: see [`written_location`]). The `latest_*` columns describe the snapshot the
/// `snapshot-log` names as current at the row's timestamp (null before the first snapshot,
/// or when that snapshot has expired).
pub(super) fn batches(table: &Table) -> Result<RecordBatch> {
    let metadata = table.metadata();
    let metadata_location = written_location(table);
    let metadata_location = metadata_location.as_str();
    let rows: Vec<(i64, &str)> = metadata
        .metadata_log
        .iter()
        .map(|e| (e.timestamp_ms, e.metadata_file.as_str()))
        .chain([(metadata.last_updated_ms, metadata_location)])
        .collect();
    let latest: Vec<Option<&Snapshot>> = rows
        .iter()
        .map(|(ms, _)| logged_as_of(metadata, *ms))
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(TimestampMillisecondArray::from_iter_values(
            rows.iter().map(|(ms, _)| *ms),
        )),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|(_, f)| *f))),
        Arc::new(Int64Array::from_iter(
            latest.iter().map(|s| s.map(|s| s.snapshot_id)),
        )),
        Arc::new(Int32Array::from_iter(
            latest.iter().map(|s| s.and_then(|s| s.schema_id)),
        )),
        Arc::new(Int64Array::from_iter(
            latest.iter().map(|s| s.map(|s| s.sequence_number)),
        )),
    ];
    batch(&schema(), columns, "metadata_log_entries")
}

/// The snapshot of the last `snapshot-log` entry at or before `timestamp_ms`, if it exists.
/// (Only the log: a metadata file written before any logged snapshot had none current.)
fn logged_as_of(metadata: &TableMetadata, timestamp_ms: i64) -> Option<&Snapshot> {
    metadata
        .snapshot_log
        .iter()
        .rev()
        .find(|entry| entry.timestamp_ms <= timestamp_ms)
        .and_then(|entry| metadata.snapshot_by_id(entry.snapshot_id))
}

/// The current metadata file under the name its writer gave it: a file read from a relocated
/// place (`NEW/...` under a rule `OLD=NEW`) is named `OLD/...`, as the logged files are.
fn written_location(table: &Table) -> String {
    let read = table.metadata_location();
    let rules = table.io().relocation().rules();
    rules
        .iter()
        .find_map(|(old, new)| {
            let rest = read.strip_prefix(new.trim_end_matches('/'))?;
            let old = old.trim_end_matches('/');
            rest.starts_with('/').then(|| format!("{old}{rest}"))
        })
        .unwrap_or_else(|| read.to_string())
}
