//! SKELETON: owned by the file-level relations implementer.

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;

use super::{MetadataContext, ScanRequest};
use crate::error::Result;
use crate::spec::TableMetadata;

/// The Arrow schema of `partitions` for a table.
pub(crate) fn schema(metadata: &TableMetadata) -> Result<SchemaRef> {
    todo!("{}", metadata.location)
}

/// The rows of `partitions`.
pub(crate) async fn batches(
    ctx: MetadataContext<'_>,
    request: ScanRequest<'_>,
) -> Result<Vec<RecordBatch>> {
    todo!("{ctx:?}{request:?}")
}
