//! `partitions`: per partition value (of the spec a file was written under) of the selected
//! snapshot, its live data files' record and file counts and sizes, its position and equality
//! delete counts, and the last snapshot that added a file to it, as PyIceberg 0.12's
//! `inspect.partitions`. A table none of whose specs has a partition field has no `partition`
//! and `spec_id` columns (one row, or none without live files), as in PyIceberg.
//!
//! When the snapshot has a partition statistics file (spec: "Partition Statistics"), the rows
//! come from it instead of the manifests ([`stats_file::answer`]); an absent, unreadable or
//! doubtful file leaves the manifests to answer. [`counts`] is the one aggregation both use,
//! and [`stats_file`] also writes the files `iceberg_compute_partition_stats` commits.

pub(crate) mod counts;
pub(crate) mod stats_file;

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Int32Array, Int64Array, RecordBatch, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef, TimeUnit};

use super::files::arrow_error;
use super::files::entry_filter::EntryFilter;
use super::files::file_rows::{self, ReadPlan, Scope};
use super::files::partition_struct::UnifiedPartition;
use super::{MetadataContext, ScanRequest};
use crate::error::Result;
use crate::spec::TableMetadata;
use counts::{Grouping, PartitionCounts};

/// The Arrow schema of `partitions` for a table.
pub(crate) fn schema(metadata: &TableMetadata) -> Result<SchemaRef> {
    let partition = UnifiedPartition::new(metadata)?;
    Ok(schema_of(&partition))
}

fn schema_of(partition: &UnifiedPartition) -> SchemaRef {
    let mut fields = Vec::new();
    if !partition.is_empty() {
        fields.push(Field::new("partition", partition.data_type(), false));
        fields.push(Field::new("spec_id", DataType::Int32, false));
    }
    fields.extend([
        Field::new("record_count", DataType::Int64, false),
        Field::new("file_count", DataType::Int32, false),
        Field::new("total_data_file_size_in_bytes", DataType::Int64, false),
        Field::new("position_delete_record_count", DataType::Int64, false),
        Field::new("position_delete_file_count", DataType::Int32, false),
        Field::new("equality_delete_record_count", DataType::Int64, false),
        Field::new("equality_delete_file_count", DataType::Int32, false),
        Field::new(
            "last_updated_at",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            true,
        ),
        Field::new("last_updated_snapshot_id", DataType::Int64, true),
    ]);
    Arc::new(ArrowSchema::new(fields))
}

/// The rows of `partitions`: from the snapshot's partition statistics file when it answers,
/// else from its manifests.
pub(crate) async fn batches(
    ctx: MetadataContext<'_>,
    request: ScanRequest<'_>,
) -> Result<Vec<RecordBatch>> {
    let metadata = ctx.table.metadata();
    let partition = UnifiedPartition::new(metadata)?;
    let rows = match stats_file::answer(&ctx, &partition).await {
        Some(rows) => rows,
        None => from_manifests(&ctx, &partition, request).await?,
    };
    let batch = RecordBatch::try_new(schema_of(&partition), columns(&partition, &rows)?)
        .map_err(arrow_error)?;
    Ok(vec![batch])
}

/// The rows from the live entries of the snapshot's manifests.
async fn from_manifests(
    ctx: &MetadataContext<'_>,
    partition: &UnifiedPartition,
    request: ScanRequest<'_>,
) -> Result<Vec<PartitionCounts>> {
    // A partition value's row holds only entries with that value: filtering entries on
    // partition fields is exact for the rows (the limit is not: rows are groups).
    let filter = EntryFilter::new(request.filters, &[], Some((partition, &["partition"])));
    let plan = ReadPlan {
        scope: Scope::Selected,
        content: None,
        keep_deleted: false,
        filter: &filter,
        limit: None,
    };
    let entries = file_rows::read_entries(ctx, plan).await?;
    Ok(counts::group(
        &entries,
        ctx.table.metadata(),
        Grouping::ByFields,
    ))
}

fn columns(partition: &UnifiedPartition, rows: &[PartitionCounts]) -> Result<Vec<ArrayRef>> {
    let mut columns: Vec<ArrayRef> = Vec::new();
    if !partition.is_empty() {
        columns.push(partition.array(rows.iter().map(|r| (r.spec_id, r.tuple.as_slice())))?);
        columns.push(Arc::new(
            rows.iter().map(|r| r.spec_id).collect::<Int32Array>(),
        ));
    }
    let long = |f: fn(&PartitionCounts) -> i64| -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<Int64Array>())
    };
    let int = |f: fn(&PartitionCounts) -> i32| -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<Int32Array>())
    };
    columns.extend([
        long(|r| r.data_record_count),
        int(|r| r.data_file_count),
        long(|r| r.total_data_file_size_in_bytes),
        long(|r| r.position_delete_record_count),
        // PyIceberg counts deletion vectors as position delete files.
        int(|r| r.position_delete_file_count + r.dv_count),
        long(|r| r.equality_delete_record_count),
        int(|r| r.equality_delete_file_count),
        Arc::new(
            rows.iter()
                .map(|r| r.last_updated.map(|(at, _)| at))
                .collect::<TimestampMillisecondArray>(),
        ),
        Arc::new(
            rows.iter()
                .map(|r| r.last_updated.map(|(_, id)| id))
                .collect::<Int64Array>(),
        ),
    ]);
    Ok(columns)
}
