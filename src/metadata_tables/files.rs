//! `files`, `data_files`, `delete_files` (the live entries of the selected snapshot's
//! manifests) and `all_files`, `all_data_files`, `all_delete_files` (the live entries of the
//! distinct manifests of every snapshot), as PyIceberg 0.12's `inspect` returns them: the data
//! file's fields with `spec_id` after `file_format`, then `readable_metrics`; then, as Spark
//! shows them, the v3 fields `referenced_data_file`, `content_offset`, `content_size_in_bytes`
//! (which data file a position delete or deletion vector applies to).

#[path = "data_file_columns.rs"]
pub(super) mod data_file_columns;
#[path = "entry_filter.rs"]
pub(super) mod entry_filter;
#[path = "file_rows.rs"]
pub(super) mod file_rows;
#[path = "partition_filter.rs"]
pub(super) mod partition_filter;
#[path = "partition_struct.rs"]
pub(super) mod partition_struct;
#[path = "readable_metrics.rs"]
pub(super) mod readable_metrics;
#[cfg(test)]
#[path = "file_level_tests.rs"]
mod tests;

use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::common::DataFusionError;

use super::{MetadataContext, MetadataTableKind, ScanRequest};
use crate::error::{Error, Result};
use crate::spec::{DataContentType, ManifestContent, Schema, TableMetadata};
use data_file_columns::{FileRow, Layout};
use entry_filter::{EntryFilter, FilterColumn};
use file_rows::{ReadPlan, Scope};
use partition_struct::UnifiedPartition;

/// The Arrow schema of `kind` for a table.
pub(crate) fn schema(
    _kind: MetadataTableKind,
    metadata: &TableMetadata,
    schema: &Schema,
) -> Result<SchemaRef> {
    let partition = UnifiedPartition::new(metadata)?;
    let mut fields = data_file_columns::fields(Layout::Files, &partition);
    fields.push(Field::new(
        "readable_metrics",
        readable_metrics::data_type(schema)?,
        true,
    ));
    // The v3 delete-file fields (Spark shows them too; PyIceberg 0.12 does not): which data
    // file a position delete file or deletion vector applies to, and where a vector's blob is.
    fields.extend([
        Field::new("referenced_data_file", DataType::Utf8, true),
        Field::new("content_offset", DataType::Int64, true),
        Field::new("content_size_in_bytes", DataType::Int64, true),
    ]);
    Ok(Arc::new(ArrowSchema::new(fields)))
}

/// The rows of `kind`.
pub(crate) async fn batches(
    kind: MetadataTableKind,
    ctx: MetadataContext<'_>,
    request: ScanRequest<'_>,
) -> Result<Vec<RecordBatch>> {
    use MetadataTableKind as K;
    let scope = match kind {
        K::AllFiles | K::AllDataFiles | K::AllDeleteFiles => Scope::AllSnapshots,
        _ => Scope::Selected,
    };
    let content = match kind {
        K::DataFiles | K::AllDataFiles => Some(ManifestContent::Data),
        K::DeleteFiles | K::AllDeleteFiles => Some(ManifestContent::Deletes),
        _ => None,
    };
    let metadata = ctx.table.metadata();
    let partition = UnifiedPartition::new(metadata)?;
    let filter = EntryFilter::new(
        request.filters,
        &[FilterColumn::Content, FilterColumn::FilePath],
        Some((&partition, &["partition"])),
    );
    let plan = ReadPlan {
        scope,
        content,
        keep_deleted: false,
        filter: &filter,
        limit: request.limit,
    };
    let rows = file_rows::read_entries(&ctx, plan).await?;
    let files: Vec<FileRow<'_>> = rows
        .iter()
        .map(|r| FileRow {
            spec_id: r.spec_id,
            file: &r.entry.data_file,
        })
        .filter(|r| content_matches(content, r.file.content))
        .collect();
    let schema = schema(kind, metadata, ctx.schema)?;
    let mut columns = data_file_columns::arrays(Layout::Files, &partition, &files)?;
    let data_files: Vec<_> = files.iter().map(|r| r.file).collect();
    columns.push(readable_metrics::array(ctx.schema, &data_files)?);
    columns.push(Arc::new(
        data_files
            .iter()
            .map(|f| f.referenced_data_file.as_deref())
            .collect::<StringArray>(),
    ));
    columns.push(Arc::new(
        data_files
            .iter()
            .map(|f| f.content_offset)
            .collect::<Int64Array>(),
    ));
    columns.push(Arc::new(
        data_files
            .iter()
            .map(|f| f.content_size_in_bytes)
            .collect::<Int64Array>(),
    ));
    let batch = RecordBatch::try_new(schema, columns).map_err(arrow_error)?;
    Ok(vec![batch])
}

/// Whether a file's content belongs to a relation reading manifests of `content` (a data
/// manifest holds only data files, a delete manifest only delete files; this guards
/// against writers that mix them).
fn content_matches(content: Option<ManifestContent>, file: DataContentType) -> bool {
    match content {
        None => true,
        Some(ManifestContent::Data) => file == DataContentType::Data,
        Some(ManifestContent::Deletes) => file != DataContentType::Data,
    }
}

/// An Arrow error as icefloe's error.
pub(crate) fn arrow_error(err: ArrowError) -> Error {
    Error::from(DataFusionError::from(err))
}
