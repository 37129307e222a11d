//! Metadata tables: the table's metadata tree as SQL relations, with PyIceberg's (0.12
//! `table.inspect`) column names, order and Arrow types (Spark's for `all_entries`).
//!
//! SKELETON: the framework (this file, the provider, SQL names) is being written by one
//! person, the file-level relations (entries.rs, files.rs, partitions.rs) by another. The
//! signatures below are the contract between them.

mod entries;
mod files;
mod partitions;


use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::logical_expr::Expr;

use crate::error::Result;
use crate::spec::{Schema, Snapshot, TableMetadata};
use crate::table::Table;

/// The metadata relations of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetadataTableKind {
    /// One row per snapshot.
    Snapshots,
    /// The snapshot log, with `is_current_ancestor`.
    History,
    /// The metadata log plus the current metadata file.
    MetadataLogEntries,
    /// Branches and tags.
    Refs,
    /// The manifests of the (selected) snapshot.
    Manifests,
    /// The manifests of every snapshot.
    AllManifests,
    /// The manifest entries (live and deleted) of the (selected) snapshot's manifests.
    Entries,
    /// The manifest entries of every snapshot's manifests.
    AllEntries,
    /// The live data and delete files of the (selected) snapshot.
    Files,
    /// The live data files.
    DataFiles,
    /// The live delete files.
    DeleteFiles,
    /// The files of every snapshot.
    AllFiles,
    /// The data files of every snapshot.
    AllDataFiles,
    /// The delete files of every snapshot.
    AllDeleteFiles,
    /// Counts and sizes per partition value, across specs.
    Partitions,
}

/// What a file-level relation is computed from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MetadataContext<'a> {
    /// The table (metadata and IO).
    pub(crate) table: &'a Table,
    /// The selected snapshot (`None`: the table has none) for the per-snapshot relations.
    pub(crate) snapshot: Option<&'a Snapshot>,
    /// The schema `readable_metrics` decodes bounds with (the selected snapshot's).
    pub(crate) schema: &'a Schema,
}

/// Pushed-down parts of a scan a relation may use to read less (it must stay correct when it
/// ignores them: DataFusion re-applies filters and the limit).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScanRequest<'a> {
    /// Filters over the relation's columns.
    pub(crate) filters: &'a [Expr],
    /// At most this many rows are needed.
    pub(crate) limit: Option<usize>,
}

/// The Arrow schema and the rows of the file-level relations; each module implements
/// `schema(kind, metadata, read_schema)` and `batches(kind, ctx, request)`.
pub(crate) fn file_level_schema(
    kind: MetadataTableKind,
    metadata: &TableMetadata,
    schema: &Schema,
) -> Result<SchemaRef> {
    use MetadataTableKind as K;
    match kind {
        K::Entries | K::AllEntries => entries::schema(kind, metadata, schema),
        K::Partitions => partitions::schema(metadata),
        _ => files::schema(kind, metadata, schema),
    }
}

/// The rows of a file-level relation.
pub(crate) async fn file_level_batches(
    kind: MetadataTableKind,
    ctx: MetadataContext<'_>,
    request: ScanRequest<'_>,
) -> Result<Vec<RecordBatch>> {
    use MetadataTableKind as K;
    match kind {
        K::Entries | K::AllEntries => entries::batches(kind, ctx, request).await,
        K::Partitions => partitions::batches(ctx, request).await,
        _ => files::batches(kind, ctx, request).await,
    }
}

