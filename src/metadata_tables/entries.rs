//! `entries` (every entry, DELETED ones included, of the selected snapshot's manifests) and
//! `all_entries` (the same over the distinct manifests of every snapshot, as Spark's
//! `all_entries`): `status`, `snapshot_id`, the sequence numbers, the `data_file` struct and
//! `readable_metrics`, with PyIceberg 0.12's columns and types.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int8Array, Int64Array, RecordBatch, StructArray};
use datafusion::arrow::datatypes::{DataType, Field, Fields, Schema as ArrowSchema, SchemaRef};

use super::files::data_file_columns::{self, FileRow, Layout};
use super::files::entry_filter::{EntryFilter, FilterColumn};
use super::files::file_rows::{self, EntryRow, ReadPlan, Scope};
use super::files::partition_struct::UnifiedPartition;
use super::files::{arrow_error, readable_metrics};
use super::{MetadataContext, MetadataTableKind, ScanRequest};
use crate::error::Result;
use crate::spec::{Schema, TableMetadata};

/// The Arrow schema of `kind` for a table.
pub(crate) fn schema(
    _kind: MetadataTableKind,
    metadata: &TableMetadata,
    schema: &Schema,
) -> Result<SchemaRef> {
    let partition = UnifiedPartition::new(metadata)?;
    Ok(Arc::new(ArrowSchema::new(vec![
        Field::new("status", DataType::Int8, false),
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("sequence_number", DataType::Int64, true),
        Field::new("file_sequence_number", DataType::Int64, true),
        Field::new(
            "data_file",
            DataType::Struct(data_file_fields(&partition)),
            false,
        ),
        Field::new(
            "readable_metrics",
            readable_metrics::data_type(schema)?,
            true,
        ),
    ])))
}

fn data_file_fields(partition: &UnifiedPartition) -> Fields {
    Fields::from(data_file_columns::fields(Layout::Entries, partition))
}

/// The rows of `kind`.
pub(crate) async fn batches(
    kind: MetadataTableKind,
    ctx: MetadataContext<'_>,
    request: ScanRequest<'_>,
) -> Result<Vec<RecordBatch>> {
    let scope = match kind {
        MetadataTableKind::AllEntries => Scope::AllSnapshots,
        _ => Scope::Selected,
    };
    let partition = UnifiedPartition::new(ctx.table.metadata())?;
    let filter = EntryFilter::new(
        request.filters,
        &[FilterColumn::Status, FilterColumn::SnapshotId],
        Some((&partition, &["data_file", "partition"])),
    );
    let plan = ReadPlan {
        scope,
        content: None,
        keep_deleted: true,
        filter: &filter,
        limit: request.limit,
    };
    let rows = file_rows::read_entries(&ctx, plan).await?;
    let metadata = ctx.table.metadata();
    let schema = schema(kind, metadata, ctx.schema)?;
    let batch = RecordBatch::try_new(schema, columns(&ctx, &rows)?).map_err(arrow_error)?;
    Ok(vec![batch])
}

fn columns(ctx: &MetadataContext<'_>, rows: &[EntryRow]) -> Result<Vec<ArrayRef>> {
    let partition = UnifiedPartition::new(ctx.table.metadata())?;
    let files: Vec<FileRow<'_>> = rows
        .iter()
        .map(|r| FileRow {
            spec_id: r.spec_id,
            file: &r.entry.data_file,
        })
        .collect();
    let data_file = StructArray::try_new(
        data_file_fields(&partition),
        data_file_columns::arrays(Layout::Entries, &partition, &files)?,
        None,
    )
    .map_err(arrow_error)?;
    let data_files: Vec<_> = files.iter().map(|r| r.file).collect();
    let entries = rows.iter().map(|r| &r.entry);
    Ok(vec![
        Arc::new(
            entries
                .clone()
                .map(|e| e.status as i8)
                .collect::<Int8Array>(),
        ),
        Arc::new(
            entries
                .clone()
                .map(|e| e.snapshot_id)
                .collect::<Int64Array>(),
        ),
        Arc::new(
            entries
                .clone()
                .map(|e| e.sequence_number)
                .collect::<Int64Array>(),
        ),
        Arc::new(
            entries
                .map(|e| e.file_sequence_number)
                .collect::<Int64Array>(),
        ),
        Arc::new(data_file),
        readable_metrics::array(ctx.schema, &data_files)?,
    ])
}
