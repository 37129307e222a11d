//! v3 row lineage through row-level changes (spec: "Row Lineage", "Row lineage assignment").
//!
//! Rows keep their identity when a statement moves them to a new data file: a copy-on-write
//! rewrite writes each copied row's `_row_id` and `_last_updated_sequence_number` explicitly,
//! with the values the row had (stored in its file, else inherited from the file: its
//! `first_row_id` plus the row's position, its data sequence number). The rewrite reads and
//! writes the table's columns followed by the two lineage columns ([`with_lineage_columns`]);
//! files that lack them read them as NULL and [`Inherited::resolve`] fills them in.
//!
//! UPDATE and MERGE write the new versions of the rows they change with the ids of the rows
//! they replace and a NULL sequence number; MERGE's inserted rows get NULL for both
//! ([`ChangedRowIds`]).
//!
//! Only v3 tables carry lineage ([`carries_lineage`]); other tables are rewritten as before.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, Int64Builder, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::ParquetFileReaderFactory;
use datafusion::datasource::physical_plan::parquet::DefaultParquetFileReaderFactory;
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};
use datafusion::parquet::errors::ParquetError;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::StreamExt;

use super::for_each_run;
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::scan::reader::SizeCheckingReaderFactory;
use crate::scan::{FileScanTask, plan_files};
use crate::spec::{FormatVersion, NestedField, PrimitiveType, Schema, TableMetadata};
use crate::to_arrow::{FIELD_ID_KEY, schema_to_arrow};

/// The reserved field id of `_row_id` (spec: "Reserved Field IDs").
pub const ROW_ID_FIELD_ID: i32 = 2_147_483_540;
/// The name of the `_row_id` metadata column.
pub const ROW_ID: &str = "_row_id";
/// The reserved field id of `_last_updated_sequence_number` (spec: "Reserved Field IDs").
pub const LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID: i32 = 2_147_483_539;
/// The name of the `_last_updated_sequence_number` metadata column.
pub const LAST_UPDATED_SEQUENCE_NUMBER: &str = "_last_updated_sequence_number";

/// Whether rows of the table `metadata` describes carry lineage (format version 3 or later).
pub(crate) fn carries_lineage(metadata: &TableMetadata) -> bool {
    metadata.format_version >= FormatVersion::V3
}

/// `schema` with the two lineage columns appended: `_row_id` and
/// `_last_updated_sequence_number`, optional longs with their reserved field ids (which
/// become the Parquet field ids of the columns written).
pub(crate) fn with_lineage_columns(schema: &Schema) -> Schema {
    let mut fields: Vec<NestedField> = schema.columns().iter().map(|f| (**f).clone()).collect();
    fields.push(NestedField::optional(
        ROW_ID_FIELD_ID,
        ROW_ID,
        PrimitiveType::Long,
    ));
    fields.push(NestedField::optional(
        LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID,
        LAST_UPDATED_SEQUENCE_NUMBER,
        PrimitiveType::Long,
    ));
    Schema::from_struct(
        schema.schema_id,
        schema.identifier_field_ids.clone(),
        crate::spec::StructType::new(fields),
    )
}

/// What each data file passes down to its rows that store no lineage of their own: its
/// `first_row_id` (after inheritance; `None` for files from before an upgrade to v3, whose
/// rows have no id) and its data sequence number, by `file_path`.
#[derive(Debug, Default)]
pub(crate) struct Inherited {
    by_file: HashMap<String, (Option<i64>, i64)>,
}

impl Inherited {
    /// The lineage the data files of `tasks` pass down.
    pub(crate) fn new(tasks: &[FileScanTask]) -> Arc<Self> {
        let by_file = tasks
            .iter()
            .map(|t| {
                let inherited = (t.data_file.first_row_id, t.data_sequence_number);
                (t.data_file.file_path.clone(), inherited)
            })
            .collect();
        Arc::new(Self { by_file })
    }

    /// `batch` (columns: the table's, `_row_id`, `_last_updated_sequence_number` as stored,
    /// then `_file`, `_pos`) with each row's lineage resolved: a stored value is kept, a NULL
    /// `_row_id` becomes its file's `first_row_id + _pos` (NULL when the file has none), a
    /// NULL `_last_updated_sequence_number` its file's data sequence number. A row of a file
    /// the rewrite did not plan, or lineage columns of another type, are
    /// [`Error::InvalidArgument`].
    pub(crate) fn resolve(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let width = batch.num_columns();
        let Some(row_id_column) = width.checked_sub(4) else {
            return Err(bad_rows(
                "it has fewer columns than the lineage and row identity",
            ));
        };
        let (sequence_column, file, pos) = (row_id_column + 1, width - 2, width - 1);
        let stored_ids = long_column(&batch, row_id_column, ROW_ID)?;
        let stored_sequences = long_column(&batch, sequence_column, LAST_UPDATED_SEQUENCE_NUMBER)?;
        let mut row_ids = Int64Builder::with_capacity(batch.num_rows());
        let mut sequences = Int64Builder::with_capacity(batch.num_rows());
        let mut unknown: Option<String> = None;
        let mut row = 0;
        for_each_run(&batch, file, pos, |path, positions| {
            let (first_row_id, sequence) = match self.by_file.get(path) {
                Some((first, sequence)) => (*first, Some(*sequence)),
                None => {
                    unknown.get_or_insert_with(|| path.to_string());
                    (None, None)
                }
            };
            for position in positions {
                let inherited_id = first_row_id
                    .zip(i64::try_from(*position).ok())
                    .and_then(|(first, position)| first.checked_add(position));
                row_ids.append_option(stored(stored_ids, row).or(inherited_id));
                sequences.append_option(stored(stored_sequences, row).or(sequence));
                row += 1;
            }
        })?;
        if let Some(path) = unknown {
            return Err(bad_rows(format_args!(
                "a row names data file {path}, which the rewrite did not plan"
            )));
        }
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        columns[row_id_column] = Arc::new(row_ids.finish());
        columns[sequence_column] = Arc::new(sequences.finish());
        RecordBatch::try_new(batch.schema(), columns).map_err(bad_rows)
    }
}

/// The lineage of the new versions of the rows an UPDATE or MERGE changes: each keeps the
/// `_row_id` of the row it replaces (stored in that row's data file, else its file's
/// `first_row_id + _pos`) and gets a NULL `_last_updated_sequence_number`, so that it inherits
/// the sequence number of the statement's commit; rows a MERGE inserts (no `_file`) get NULL
/// for both. A data file's stored `_row_id` column is read once, the first time one of its
/// rows is changed (only that column); the files are those the statement's scan planned,
/// else those of the snapshot it read (planned on the first changed row).
pub(crate) struct ChangedRowIds {
    change: super::RowWrites,
    /// The lineage schema's Arrow form: the table's columns, then the two lineage columns.
    arrow_schema: SchemaRef,
    /// Each data file's `first_row_id` and `file_size_in_bytes`, by `file_path` (planned
    /// when first needed).
    files: Option<HashMap<String, (Option<i64>, i64)>>,
    /// Each data file's stored `_row_id` values by position (`None`: it stores none).
    stored: HashMap<String, Option<Vec<Option<i64>>>>,
}

impl ChangedRowIds {
    /// For the rows `change` changes, written in the schema [`with_lineage_columns`] gives.
    pub(crate) fn new(change: &super::RowWrites) -> Result<Self> {
        let schema = with_lineage_columns(&change.schema);
        Ok(Self {
            change: change.clone(),
            arrow_schema: Arc::new(schema_to_arrow(&schema)?),
            files: None,
            stored: HashMap::new(),
        })
    }

    /// `values` (new rows in the table's Arrow schema) with their lineage appended; `files`
    /// and `positions` are the `_file` and `_pos` of the rows they replace (NULL: inserted).
    pub(crate) async fn attach(
        &mut self,
        values: RecordBatch,
        files: &ArrayRef,
        positions: &ArrayRef,
    ) -> Result<RecordBatch> {
        let files = cast(files, &DataType::Utf8).map_err(bad_rows)?;
        let files = files.as_string::<i32>();
        let positions = cast(positions, &DataType::Int64).map_err(bad_rows)?;
        let positions = positions.as_primitive::<Int64Type>();
        let mut row_ids = Int64Builder::with_capacity(values.num_rows());
        for row in 0..values.num_rows() {
            if files.is_null(row) || positions.is_null(row) {
                row_ids.append_null();
                continue;
            }
            let row_id = self.row_id(files.value(row), positions.value(row)).await?;
            row_ids.append_option(row_id);
        }
        let mut columns = values.columns().to_vec();
        columns.push(Arc::new(row_ids.finish()));
        columns.push(Arc::new(Int64Array::new_null(values.num_rows())));
        RecordBatch::try_new(Arc::clone(&self.arrow_schema), columns).map_err(bad_rows)
    }

    /// The `_row_id` of the row at `position` of the data file `path`.
    async fn row_id(&mut self, path: &str, position: i64) -> Result<Option<i64>> {
        let Some((first_row_id, size)) = self.files().await?.get(path).copied() else {
            return Err(bad_rows(format_args!(
                "a changed row names data file {path}, which is not live in the snapshot read"
            )));
        };
        if !self.stored.contains_key(path) {
            let stored = stored_row_ids(self.change.table.io(), path, size).await?;
            self.stored.insert(path.to_string(), stored);
        }
        let stored = self
            .stored
            .get(path)
            .and_then(|ids| ids.as_ref())
            .and_then(|ids| ids.get(usize::try_from(position).ok()?).copied().flatten());
        if stored.is_some() {
            return Ok(stored);
        }
        Ok(first_row_id.and_then(|first| first.checked_add(position)))
    }

    async fn files(&mut self) -> Result<&HashMap<String, (Option<i64>, i64)>> {
        if self.files.is_none() {
            let change = &self.change;
            let planned;
            let tasks: &[FileScanTask] = match &change.scanned_files {
                Some(tasks) => tasks,
                None => {
                    let metadata = change.table.metadata();
                    planned = match change
                        .base_snapshot
                        .and_then(|id| metadata.snapshot_by_id(id))
                    {
                        Some(snapshot) => plan_files(change.table.io(), metadata, snapshot).await?,
                        None => Vec::new(),
                    };
                    &planned
                }
            };
            let by_file = tasks
                .iter()
                .map(|t| {
                    let file = &t.data_file;
                    let facts = (file.first_row_id, file.file_size_in_bytes);
                    (file.file_path.clone(), facts)
                })
                .collect();
            self.files = Some(by_file);
        }
        Ok(self.files.get_or_insert_with(HashMap::new))
    }
}

/// The values of the `_row_id` column (by its reserved field id) of the Parquet data file at
/// `path` (`size` bytes, as its manifest says; a wrong size is survived as by scans), by
/// position; `None` when the file has no such column. Unreadable files are
/// [`Error::Corrupt`] naming them.
async fn stored_row_ids(io: &FileIO, path: &str, size: i64) -> Result<Option<Vec<Option<i64>>>> {
    let unreadable = |e: ParquetError| Error::corrupt_with(path, e.to_string(), e);
    let location = io.resolve(path)?;
    let store = location.store;
    let readers = SizeCheckingReaderFactory::new(
        Arc::new(DefaultParquetFileReaderFactory::new(Arc::clone(&store))),
        store,
    );
    let mut file = PartitionedFile::new(String::new(), u64::try_from(size).unwrap_or(0));
    // Set the parsed path directly: a round trip through a string would escape `%` again.
    file.object_meta.location = location.path;
    let reader = readers
        .create_reader(0, file, None, &ExecutionPlanMetricsSet::new())
        .map_err(|e| Error::corrupt_with(path, e.to_string(), e))?;
    let reader: Box<dyn AsyncFileReader> = reader;
    let builder = ParquetRecordBatchStreamBuilder::new(reader)
        .await
        .map_err(unreadable)?;
    let id = ROW_ID_FIELD_ID.to_string();
    let Some(column) = builder
        .schema()
        .fields()
        .iter()
        .position(|f| f.metadata().get(FIELD_ID_KEY) == Some(&id))
    else {
        return Ok(None);
    };
    let mask = ProjectionMask::roots(builder.parquet_schema(), [column]);
    let mut batches = builder.with_projection(mask).build().map_err(unreadable)?;
    let mut ids = Vec::new();
    while let Some(batch) = batches.next().await {
        let batch = batch.map_err(unreadable)?;
        let values = cast(batch.column(0), &DataType::Int64)
            .map_err(|e| Error::corrupt_with(path, e.to_string(), e))?;
        ids.extend(values.as_primitive::<Int64Type>().iter());
    }
    Ok(Some(ids))
}

/// The value at `row` of a lineage column, when it is stored (not NULL).
fn stored(column: &Int64Array, row: usize) -> Option<i64> {
    column.is_valid(row).then(|| column.value(row))
}

fn long_column<'a>(batch: &'a RecordBatch, index: usize, name: &str) -> Result<&'a Int64Array> {
    let column = batch.column(index);
    column.as_primitive_opt::<Int64Type>().ok_or_else(|| {
        bad_rows(format_args!(
            "the {name} column has type {}",
            column.data_type()
        ))
    })
}

fn bad_rows(reason: impl std::fmt::Display) -> Error {
    Error::invalid("the rows copied by a copy-on-write rewrite", reason)
}

#[cfg(test)]
#[path = "lineage_tests.rs"]
mod tests;
