//! `snapshots` (one row per snapshot of the metadata) and `history` (one row per
//! `snapshot-log` entry), as PyIceberg's `inspect.snapshots()` and `inspect.history()`.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use super::arrow_util::{arrow_error, batch, string_map, string_map_builder, timestamp_ms};
use crate::error::Result;
use crate::spec::TableMetadata;

/// `committed_at`, `snapshot_id`, `parent_id`, `operation`, `manifest_list`, `summary`.
pub(super) fn snapshots_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("committed_at", timestamp_ms(), false),
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("parent_id", DataType::Int64, true),
        Field::new("operation", DataType::Utf8, true),
        Field::new("manifest_list", DataType::Utf8, true),
        Field::new("summary", string_map(), true),
    ]))
}

/// The snapshots in metadata order; `summary` holds the summary without `operation`.
pub(super) fn snapshots(metadata: &TableMetadata) -> Result<RecordBatch> {
    let snapshots = &metadata.snapshots;
    let mut summary = string_map_builder();
    for snapshot in snapshots {
        if let Some(s) = &snapshot.summary {
            for (key, value) in s.properties() {
                summary.keys().append_value(key);
                summary.values().append_value(value);
            }
        }
        summary
            .append(snapshot.summary.is_some())
            .map_err(arrow_error)?;
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(TimestampMillisecondArray::from_iter_values(
            snapshots.iter().map(|s| s.timestamp_ms),
        )),
        Arc::new(Int64Array::from_iter_values(
            snapshots.iter().map(|s| s.snapshot_id),
        )),
        Arc::new(Int64Array::from_iter(
            snapshots.iter().map(|s| s.parent_snapshot_id),
        )),
        Arc::new(StringArray::from_iter(snapshots.iter().map(|s| {
            s.summary.as_ref().map(|summary| summary.operation.as_str())
        }))),
        Arc::new(StringArray::from_iter(
            snapshots.iter().map(|s| s.manifest_list.as_deref()),
        )),
        Arc::new(summary.finish()),
    ];
    batch(&snapshots_schema(), columns, "snapshots")
}

/// `made_current_at`, `snapshot_id`, `parent_id`, `is_current_ancestor`.
pub(super) fn history_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("made_current_at", timestamp_ms(), false),
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("parent_id", DataType::Int64, true),
        Field::new("is_current_ancestor", DataType::Boolean, false),
    ]))
}

/// The snapshot-log entries; `parent_id` is null for an expired snapshot, and
/// `is_current_ancestor` says whether the snapshot is on the current snapshot's parent chain.
pub(super) fn history(metadata: &TableMetadata) -> Result<RecordBatch> {
    let log = &metadata.snapshot_log;
    let ancestors: HashSet<i64> = metadata
        .ancestors_of_current()
        .map(|s| s.snapshot_id)
        .collect();
    let parent = |id: i64| metadata.snapshot_by_id(id)?.parent_snapshot_id;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(TimestampMillisecondArray::from_iter_values(
            log.iter().map(|e| e.timestamp_ms),
        )),
        Arc::new(Int64Array::from_iter_values(
            log.iter().map(|e| e.snapshot_id),
        )),
        Arc::new(Int64Array::from_iter(
            log.iter().map(|e| parent(e.snapshot_id)),
        )),
        Arc::new(BooleanArray::from_iter(
            log.iter().map(|e| Some(ancestors.contains(&e.snapshot_id))),
        )),
    ];
    batch(&history_schema(), columns, "history")
}
