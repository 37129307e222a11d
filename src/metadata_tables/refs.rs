//! `refs`: the table's branches and tags with their retention, as PyIceberg's
//! `inspect.refs()`.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, DictionaryArray, Int32Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};

use super::arrow_util::batch;
use crate::error::Result;
use crate::spec::TableMetadata;
use crate::spec::snapshot::{SnapshotReference, SnapshotRetention};

/// `name`, `type` (`BRANCH` or `TAG`, dictionary-encoded as in PyIceberg), `snapshot_id`,
/// `max_reference_age_in_ms`, `min_snapshots_to_keep`, `max_snapshot_age_in_ms`.
pub(super) fn schema() -> SchemaRef {
    let dictionary = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("type", dictionary, false),
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("max_reference_age_in_ms", DataType::Int64, true),
        Field::new("min_snapshots_to_keep", DataType::Int32, true),
        Field::new("max_snapshot_age_in_ms", DataType::Int64, true),
    ]))
}

/// Retention of one ref: (type, max ref age, min snapshots to keep, max snapshot age).
fn retention(r: &SnapshotReference) -> (&'static str, Option<i64>, Option<i32>, Option<i64>) {
    match &r.retention {
        SnapshotRetention::Branch {
            min_snapshots_to_keep,
            max_snapshot_age_ms,
            max_ref_age_ms,
        } => (
            "BRANCH",
            *max_ref_age_ms,
            *min_snapshots_to_keep,
            *max_snapshot_age_ms,
        ),
        SnapshotRetention::Tag { max_ref_age_ms } => ("TAG", *max_ref_age_ms, None, None),
    }
}

/// One row per ref, by name.
pub(super) fn batches(metadata: &TableMetadata) -> Result<RecordBatch> {
    let refs: Vec<(&String, &SnapshotReference)> = metadata.refs.iter().collect();
    let kept: Vec<_> = refs.iter().map(|(_, r)| retention(r)).collect();
    let kinds: DictionaryArray<Int32Type> = kept.iter().map(|k| k.0).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            refs.iter().map(|(name, _)| name.as_str()),
        )),
        Arc::new(kinds),
        Arc::new(Int64Array::from_iter_values(
            refs.iter().map(|(_, r)| r.snapshot_id),
        )),
        Arc::new(Int64Array::from_iter(kept.iter().map(|k| k.1))),
        Arc::new(Int32Array::from_iter(kept.iter().map(|k| k.2))),
        Arc::new(Int64Array::from_iter(kept.iter().map(|k| k.3))),
    ];
    batch(&schema(), columns, "refs")
}
