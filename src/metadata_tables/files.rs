//! SKELETON: owned by the file-level relations implementer.

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;

use super::{MetadataContext, MetadataTableKind, ScanRequest};
use crate::error::Result;
use crate::spec::{Schema, TableMetadata};

/// The Arrow schema of `kind` for a table.
pub(crate) fn schema(kind: MetadataTableKind, metadata: &TableMetadata, schema: &Schema) -> Result<SchemaRef> {
    todo!("{kind:?}{}{}", metadata.location, schema.schema_id)
}

/// The rows of `kind`.
pub(crate) async fn batches(
    kind: MetadataTableKind,
    ctx: MetadataContext<'_>,
    request: ScanRequest<'_>,
) -> Result<Vec<RecordBatch>> {
    todo!("{kind:?}{ctx:?}{request:?}")
}
