//! `partitions`: per partition value (of the spec a file was written under) of the selected
//! snapshot, its live data files' record and file counts and sizes, its position and equality
//! delete counts, and the last snapshot that added a file to it, as PyIceberg 0.12's
//! `inspect.partitions`. A table none of whose specs has a partition field has no `partition`
//! and `spec_id` columns (one row, or none without live files), as in PyIceberg.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Int32Array, Int64Array, RecordBatch, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef, TimeUnit};

use super::files::arrow_error;
use super::files::entry_filter::EntryFilter;
use super::files::file_rows::{self, EntryRow, ReadPlan, Scope};
use super::files::partition_struct::UnifiedPartition;
use super::{MetadataContext, ScanRequest};
use crate::error::Result;
use crate::spec::{DataContentType, Literal, TableMetadata};

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

/// The counts of one partition value.
#[derive(Debug, Clone)]
struct PartitionRow {
    spec_id: i32,
    tuple: Vec<Option<Literal>>,
    record_count: i64,
    file_count: i32,
    total_data_file_size_in_bytes: i64,
    position_delete_record_count: i64,
    position_delete_file_count: i32,
    equality_delete_record_count: i64,
    equality_delete_file_count: i32,
    /// `(timestamp ms, snapshot id)` of the newest snapshot that added a live file.
    last_updated: Option<(i64, i64)>,
}

impl PartitionRow {
    fn new(spec_id: i32, tuple: Vec<Option<Literal>>) -> Self {
        Self {
            spec_id,
            tuple,
            record_count: 0,
            file_count: 0,
            total_data_file_size_in_bytes: 0,
            position_delete_record_count: 0,
            position_delete_file_count: 0,
            equality_delete_record_count: 0,
            equality_delete_file_count: 0,
            last_updated: None,
        }
    }

    fn add(&mut self, row: &EntryRow, metadata: &TableMetadata) {
        let file = &row.entry.data_file;
        match file.content {
            DataContentType::Data => {
                self.record_count += file.record_count;
                self.file_count += 1;
                self.total_data_file_size_in_bytes += file.file_size_in_bytes;
            }
            DataContentType::PositionDeletes => {
                self.position_delete_record_count += file.record_count;
                self.position_delete_file_count += 1;
            }
            DataContentType::EqualityDeletes => {
                self.equality_delete_record_count += file.record_count;
                self.equality_delete_file_count += 1;
            }
        }
        let snapshot = row
            .entry
            .snapshot_id
            .and_then(|id| metadata.snapshot_by_id(id));
        if let Some(s) = snapshot
            && self.last_updated.is_none_or(|(at, _)| s.timestamp_ms > at)
        {
            self.last_updated = Some((s.timestamp_ms, s.snapshot_id));
        }
    }
}

/// The rows of `partitions`.
pub(crate) async fn batches(
    ctx: MetadataContext<'_>,
    request: ScanRequest<'_>,
) -> Result<Vec<RecordBatch>> {
    let metadata = ctx.table.metadata();
    let partition = UnifiedPartition::new(metadata)?;
    // A partition value's row holds only entries with that value: filtering entries on
    // partition fields is exact for the rows (the limit is not: rows are groups).
    let filter = EntryFilter::new(request.filters, &[], Some((&partition, &["partition"])));
    let plan = ReadPlan {
        scope: Scope::Selected,
        content: None,
        keep_deleted: false,
        filter: &filter,
        limit: None,
    };
    let entries = file_rows::read_entries(&ctx, plan).await?;
    let rows = group(&entries, metadata);
    let batch = RecordBatch::try_new(schema_of(&partition), columns(&partition, &rows)?)
        .map_err(arrow_error)?;
    Ok(vec![batch])
}

/// The entries grouped by partition value, in order of first appearance. Values are keyed by
/// the spec's partition field ids and values (two specs with the same fields share a row).
fn group(entries: &[EntryRow], metadata: &TableMetadata) -> Vec<PartitionRow> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut rows: Vec<PartitionRow> = Vec::new();
    for entry in entries {
        let tuple = &entry.entry.data_file.partition;
        let field_ids: Vec<i32> = metadata
            .partition_spec_by_id(entry.spec_id)
            .map(|s| s.fields.iter().map(|f| f.field_id).collect())
            .unwrap_or_default();
        let key = format!("{field_ids:?}{tuple:?}");
        let at = *index.entry(key).or_insert_with(|| {
            rows.push(PartitionRow::new(entry.spec_id, tuple.clone()));
            rows.len() - 1
        });
        rows[at].add(entry, metadata);
    }
    rows
}

fn columns(partition: &UnifiedPartition, rows: &[PartitionRow]) -> Result<Vec<ArrayRef>> {
    let mut columns: Vec<ArrayRef> = Vec::new();
    if !partition.is_empty() {
        columns.push(partition.array(rows.iter().map(|r| (r.spec_id, r.tuple.as_slice())))?);
        columns.push(Arc::new(
            rows.iter().map(|r| r.spec_id).collect::<Int32Array>(),
        ));
    }
    let long = |f: fn(&PartitionRow) -> i64| -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<Int64Array>())
    };
    let int = |f: fn(&PartitionRow) -> i32| -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<Int32Array>())
    };
    columns.extend([
        long(|r| r.record_count),
        int(|r| r.file_count),
        long(|r| r.total_data_file_size_in_bytes),
        long(|r| r.position_delete_record_count),
        int(|r| r.position_delete_file_count),
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
