//! [`IcebergMetadataTable`]: one metadata relation of a table as a DataFusion table.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::Result as DFResult;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

use super::exec::MetadataScanExec;
use super::{
    MetadataContext, MetadataTableKind, ScanRequest, file_level_batches, file_level_schema,
    manifests, metadata_log, refs, snapshots, statistics,
};
use crate::error::{Error, Result};
use crate::io::{FileIO, StorageProperties};
use crate::spec::{Schema, SnapshotSelector, TableMetadata};
use crate::table::{Table, TableOptions};

/// A metadata relation (`snapshots`, `files`, ...) of an Iceberg table as a DataFusion table.
///
/// The relations that show one snapshot ([`MetadataTableKind::per_snapshot`]: `manifests`,
/// `entries`, `files`, `data_files`, `delete_files`, `partitions`) read the state a
/// [`SnapshotSelector`] names; the others cover the whole table and only take
/// [`SnapshotSelector::Current`].
///
/// A scan is an `IcebergMetadataScanExec` that, when run, computes the rows from the metadata
/// tree (manifest lists and manifests read concurrently, each once) and applies the projection
/// and the limit. Filters are handed to the relation so it may read less;
/// DataFusion still applies them (`Inexact`).
///
/// ```no_run
/// # async fn example() -> icefloe::Result<()> {
/// use datafusion::prelude::SessionContext;
/// use icefloe::metadata_tables::{IcebergMetadataTable, MetadataTableKind};
/// use std::sync::Arc;
///
/// let ctx = SessionContext::new();
/// let kind = MetadataTableKind::Snapshots;
/// let table = IcebergMetadataTable::open(&ctx, "/data/warehouse/db/orders", kind, Default::default()).await?;
/// ctx.register_table("orders_snapshots", Arc::new(table))?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct IcebergMetadataTable {
    table: Table,
    kind: MetadataTableKind,
    selector: SnapshotSelector,
    arrow_schema: SchemaRef,
}

impl IcebergMetadataTable {
    /// The relation `kind` of a loaded table at the state `selector` names. Errors: a selector
    /// other than `Current` for a whole-table relation ([`Error::InvalidArgument`]), an unknown
    /// snapshot or ref ([`Error::NotFound`]).
    pub fn try_new(
        table: Table,
        kind: MetadataTableKind,
        selector: SnapshotSelector,
    ) -> Result<Self> {
        if !kind.per_snapshot() && selector != SnapshotSelector::Current {
            return Err(Error::invalid(
                format_args!("the {kind} metadata table"),
                format_args!(
                    "cannot be read at {}: it covers every snapshot; time travel applies to \
                     manifests, entries, files, data_files, delete_files and partitions",
                    describe(&selector)
                ),
            ));
        }
        let metadata = table.metadata();
        let resolved = metadata.resolve(&selector)?;
        let arrow_schema = schema_of(kind, metadata, resolved.schema)?;
        Ok(Self {
            table,
            kind,
            selector,
            arrow_schema,
        })
    }

    /// Opens the table at `location` (a metadata file or a table directory) through the
    /// stores registered in `ctx`, and takes its relation `kind` at `options.snapshot`.
    pub async fn open(
        ctx: &SessionContext,
        location: &str,
        kind: MetadataTableKind,
        options: TableOptions,
    ) -> Result<Self> {
        let storage = StorageProperties::of_session(ctx.state().config()).merged(&options.storage);
        let io = FileIO::new(ctx.runtime_env(), options.relocation.clone()).with_storage(storage);
        let table = Table::load(io, location).await?;
        Self::try_new(table, kind, options.snapshot)
    }

    /// The same relation at another state (see [`Self::try_new`]).
    pub fn at(&self, selector: SnapshotSelector) -> Result<Self> {
        Self::try_new(self.table.clone(), self.kind, selector)
    }

    /// The relation.
    pub fn kind(&self) -> MetadataTableKind {
        self.kind
    }

    /// The table it describes.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The state it shows.
    pub fn selector(&self) -> &SnapshotSelector {
        &self.selector
    }

    /// The relation's Arrow schema.
    pub(crate) fn arrow_schema(&self) -> SchemaRef {
        Arc::clone(&self.arrow_schema)
    }

    /// All rows of the relation (filters and `limit` are hints: rows may not match them).
    pub async fn batches(
        &self,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Vec<RecordBatch>> {
        use MetadataTableKind as K;
        let table = &self.table;
        let metadata = table.metadata();
        let resolved = metadata.resolve(&self.selector)?;
        let request = ScanRequest { filters, limit };
        let batch = match self.kind {
            K::Snapshots => snapshots::snapshots(metadata)?,
            K::History => snapshots::history(metadata)?,
            K::MetadataLogEntries => metadata_log::batches(table)?,
            K::Refs => refs::batches(metadata)?,
            K::Statistics => statistics::batches(metadata)?,
            K::Manifests => manifests::manifests(table, resolved.snapshot).await?,
            K::AllManifests => manifests::all_manifests(table, request).await?,
            kind => {
                let ctx = MetadataContext {
                    table,
                    snapshot: resolved.snapshot,
                    schema: resolved.schema,
                };
                return file_level_batches(kind, ctx, request).await;
            }
        };
        Ok(vec![batch])
    }
}

/// A selector as words, for errors.
fn describe(selector: &SnapshotSelector) -> String {
    match selector {
        SnapshotSelector::Current => "the current snapshot".to_string(),
        SnapshotSelector::SnapshotId(id) => format!("snapshot {id}"),
        SnapshotSelector::Ref(name) => format!("ref '{name}'"),
        SnapshotSelector::AsOfTimestamp(ms) => format!("timestamp {ms} ms"),
    }
}

/// The Arrow schema of `kind`; `schema` is the one `readable_metrics` decodes with.
fn schema_of(
    kind: MetadataTableKind,
    metadata: &TableMetadata,
    schema: &Schema,
) -> Result<SchemaRef> {
    use MetadataTableKind as K;
    Ok(match kind {
        K::Snapshots => snapshots::snapshots_schema(),
        K::History => snapshots::history_schema(),
        K::MetadataLogEntries => metadata_log::schema(),
        K::Refs => refs::schema(),
        K::Statistics => statistics::schema(),
        K::Manifests => manifests::schema(false),
        K::AllManifests => manifests::schema(true),
        kind => return file_level_schema(kind, metadata, schema),
    })
}

#[async_trait]
impl TableProvider for IcebergMetadataTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.arrow_schema)
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DFResult<Vec<TableProviderFilterPushDown>> {
        // Relations may use filters to read fewer manifests; DataFusion still applies them.
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let exec = MetadataScanExec::new(self, projection, filters, limit)?;
        Ok(Arc::new(exec))
    }
}
