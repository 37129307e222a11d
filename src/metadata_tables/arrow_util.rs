//! Small Arrow helpers the table-level relations share: PyIceberg's types for timestamps and
//! string maps, and a batch from columns that reports a mismatch as a typed error.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, MapBuilder, MapFieldNames, RecordBatch, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Fields, SchemaRef, TimeUnit};
use datafusion::arrow::error::ArrowError;

use datafusion::error::DataFusionError;

use crate::error::{Error, Result};

/// `timestamp[ms]` without a zone, as PyIceberg types `committed_at`, `made_current_at` and
/// `timestamp`.
pub(super) fn timestamp_ms() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, None)
}

/// `map<string, string>` with pyarrow's field names (`entries`, `key`, `value`).
pub(super) fn string_map() -> DataType {
    let entries = Fields::from(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, true),
    ]);
    DataType::Map(
        Arc::new(Field::new("entries", DataType::Struct(entries), false)),
        false,
    )
}

/// A builder for [`string_map`] columns.
pub(super) fn string_map_builder() -> MapBuilder<StringBuilder, StringBuilder> {
    let names = MapFieldNames {
        entry: "entries".to_string(),
        key: "key".to_string(),
        value: "value".to_string(),
    };
    MapBuilder::new(Some(names), StringBuilder::new(), StringBuilder::new())
}

/// One batch of `columns` under `schema`; a mismatch (a bug) is an error naming the relation.
pub(super) fn batch(
    schema: &SchemaRef,
    columns: Vec<ArrayRef>,
    relation: &str,
) -> Result<RecordBatch> {
    RecordBatch::try_new(Arc::clone(schema), columns).map_err(|e| {
        Error::DataFusion(DataFusionError::from(e).context(format!("building {relation}")))
    })
}

/// An Arrow error while building a relation.
pub(super) fn arrow_error(e: ArrowError) -> Error {
    Error::DataFusion(DataFusionError::from(e))
}
