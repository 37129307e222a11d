//! Metadata tables: the table's metadata tree as SQL relations, with PyIceberg's (0.12
//! `table.inspect`) column names, order and Arrow types (Spark's for `all_entries`).
//!
//! [`IcebergMetadataTable`] is the DataFusion table of one relation ([`MetadataTableKind`]).
//! The table-level relations (`snapshots`, `history`, `metadata_log_entries`, `refs`) come from
//! the metadata file alone; `manifests` and `all_manifests` from manifest lists; the file-level
//! ones (entries, files, partitions) from manifests, through [`file_level_schema`] and
//! [`file_level_batches`]; `partitions` from the snapshot's partition statistics file instead
//! when it has one that answers (spec: "Partition Statistics"; `partitions/stats_file.rs`,
//! which also computes the files `crate::statistics::compute_partition_stats` commits).

mod arrow_util;
mod entries;
pub(crate) mod exec;
mod files;
mod manifests;
mod metadata_log;
mod partitions;
mod provider;
mod pushdown;
mod refs;
mod snapshots;
mod statistics;
pub(crate) mod walk;

pub(crate) use partitions::stats_file::compute as partition_statistics_file;
pub use provider::IcebergMetadataTable;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::logical_expr::Expr;

use crate::error::Result;
use crate::spec::{Schema, Snapshot, TableMetadata};
use crate::table::Table;

#[cfg(test)]
mod tests;

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
    /// The table's statistics files (Puffin blobs and partition statistics files).
    Statistics,
}

impl MetadataTableKind {
    /// Every relation, in the order the README lists them.
    pub const ALL: [Self; 16] = [
        Self::Snapshots,
        Self::History,
        Self::MetadataLogEntries,
        Self::Refs,
        Self::Manifests,
        Self::AllManifests,
        Self::Entries,
        Self::AllEntries,
        Self::Files,
        Self::DataFiles,
        Self::DeleteFiles,
        Self::AllFiles,
        Self::AllDataFiles,
        Self::AllDeleteFiles,
        Self::Partitions,
        Self::Statistics,
    ];

    /// The relation of a name (`snapshots`, `all_data_files`, ...; any case).
    ///
    /// ```
    /// use icefloe::metadata_tables::MetadataTableKind;
    /// assert_eq!(MetadataTableKind::parse("FILES"), Some(MetadataTableKind::Files));
    /// assert_eq!(MetadataTableKind::parse("branch_x"), None);
    /// ```
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.name().eq_ignore_ascii_case(name))
    }

    /// The relation's name, as PyIceberg's `inspect` method (Spark's for `all_entries`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Snapshots => "snapshots",
            Self::History => "history",
            Self::MetadataLogEntries => "metadata_log_entries",
            Self::Refs => "refs",
            Self::Manifests => "manifests",
            Self::AllManifests => "all_manifests",
            Self::Entries => "entries",
            Self::AllEntries => "all_entries",
            Self::Files => "files",
            Self::DataFiles => "data_files",
            Self::DeleteFiles => "delete_files",
            Self::AllFiles => "all_files",
            Self::AllDataFiles => "all_data_files",
            Self::AllDeleteFiles => "all_delete_files",
            Self::Partitions => "partitions",
            Self::Statistics => "statistics",
        }
    }

    /// Whether the relation shows one snapshot (and so can be read at another one: time travel
    /// on metadata tables); the others cover the whole table.
    pub fn per_snapshot(self) -> bool {
        matches!(
            self,
            Self::Manifests
                | Self::Entries
                | Self::Files
                | Self::DataFiles
                | Self::DeleteFiles
                | Self::Partitions
        )
    }
}

impl std::fmt::Display for MetadataTableKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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
