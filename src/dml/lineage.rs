//! v3 row lineage through row-level changes (spec: "Row Lineage", "Row lineage assignment").
//!
//! Rows keep their identity when a statement moves them to a new data file: a copy-on-write
//! rewrite writes each copied row's `_row_id` and `_last_updated_sequence_number` explicitly,
//! with the values the row had (stored in its file, else inherited from the file: its
//! `first_row_id` plus the row's position, its data sequence number). The rewrite reads and
//! writes the table's columns followed by the two lineage columns ([`with_lineage_columns`]);
//! files that lack them read them as NULL and [`Inherited::resolve`] fills them in.
//!
//! Only v3 tables carry lineage ([`carries_lineage`]); other tables are rewritten as before.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, Int64Builder, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;

use super::for_each_run;
use crate::error::{Error, Result};
use crate::scan::FileScanTask;
use crate::spec::{FormatVersion, NestedField, PrimitiveType, Schema, TableMetadata};

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
        RecordBatch::try_new(batch.schema(), columns).map_err(|e| bad_rows(e))
    }
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
