//! The changes themselves (REST `TableUpdate`, discriminator `action`): one variant per action
//! of the OpenAPI's `TableUpdate`, each holding the same fields under the spec's names.

use std::collections::BTreeMap;

use crate::spec::metadata::{FormatVersion, PartitionStatisticsFile, StatisticsFile};
use crate::spec::{PartitionSpec, Schema, Snapshot, SnapshotReference, SortOrder};

/// The id that `set-current-schema`, `set-default-spec` and `set-default-sort-order` use for
/// "the one added last in this list of updates".
pub const LAST_ADDED: i32 = -1;

/// One change to a table's metadata (REST `TableUpdate`; JSON in [`super::json`]).
///
/// A list of them is applied in order by [`crate::spec::TableMetadata::apply`]; the rules of
/// each (which ids are assigned, what is refused) are documented there.
#[derive(Debug, Clone, PartialEq)]
pub enum TableUpdate {
    /// `assign-uuid`: sets `table-uuid` (done when a table is created).
    AssignUuid {
        /// `uuid`.
        uuid: String,
    },
    /// `upgrade-format-version`: raises `format-version` (never lowers it).
    UpgradeFormatVersion {
        /// `format-version`.
        format_version: FormatVersion,
    },
    /// `add-schema`: adds a schema; its id is assigned (an identical schema's, or the
    /// highest + 1) and `last-column-id` becomes at least its highest field id.
    AddSchema {
        /// `schema`.
        schema: Schema,
        /// `last-column-id` (deprecated, optional): a floor for the table's `last-column-id`.
        last_column_id: Option<i32>,
    },
    /// `set-current-schema`: `schema-id`, or [`LAST_ADDED`].
    SetCurrentSchema {
        /// `schema-id`.
        schema_id: i32,
    },
    /// `add-spec`: adds a partition spec; its id is assigned (a compatible spec's, or the
    /// highest + 1) and `last-partition-id` follows its field ids.
    AddSpec {
        /// `spec`.
        spec: PartitionSpec,
    },
    /// `set-default-spec`: `spec-id`, or [`LAST_ADDED`].
    SetDefaultSpec {
        /// `spec-id`.
        spec_id: i32,
    },
    /// `add-sort-order`: adds a sort order; its id is assigned (an identical order's, 0 for the
    /// unsorted order, or the highest + 1).
    AddSortOrder {
        /// `sort-order`.
        sort_order: SortOrder,
    },
    /// `set-default-sort-order`: `sort-order-id`, or [`LAST_ADDED`].
    SetDefaultSortOrder {
        /// `sort-order-id`.
        sort_order_id: i32,
    },
    /// `add-snapshot`: adds a snapshot (refs are moved by `set-snapshot-ref`).
    AddSnapshot {
        /// `snapshot`.
        snapshot: Snapshot,
    },
    /// `set-snapshot-ref`: creates or replaces a branch or tag; `main` also moves the current
    /// snapshot.
    SetSnapshotRef {
        /// `ref-name`.
        ref_name: String,
        /// `snapshot-id`, `type` and the retention fields.
        reference: SnapshotReference,
    },
    /// `remove-snapshots`: drops snapshots, their statistics and the refs left dangling.
    RemoveSnapshots {
        /// `snapshot-ids`.
        snapshot_ids: Vec<i64>,
    },
    /// `remove-snapshot-ref`: drops a branch or tag (`main` clears the current snapshot).
    RemoveSnapshotRef {
        /// `ref-name`.
        ref_name: String,
    },
    /// `set-location`: the table's base location.
    SetLocation {
        /// `location`.
        location: String,
    },
    /// `set-properties`: properties added or replaced.
    SetProperties {
        /// `updates`.
        updates: BTreeMap<String, String>,
    },
    /// `remove-properties`: properties removed (absent ones are ignored).
    RemoveProperties {
        /// `removals`.
        removals: Vec<String>,
    },
    /// `set-statistics`: the statistics file of a snapshot (replacing the one it had).
    SetStatistics {
        /// `statistics` (its `snapshot-id` names the snapshot; the update's deprecated
        /// `snapshot-id` is written from it and ignored when read).
        statistics: StatisticsFile,
    },
    /// `remove-statistics`: drops a snapshot's statistics file.
    RemoveStatistics {
        /// `snapshot-id`.
        snapshot_id: i64,
    },
    /// `set-partition-statistics`: the partition statistics file of a snapshot.
    SetPartitionStatistics {
        /// `partition-statistics`.
        partition_statistics: PartitionStatisticsFile,
    },
    /// `remove-partition-statistics`: drops a snapshot's partition statistics file.
    RemovePartitionStatistics {
        /// `snapshot-id`.
        snapshot_id: i64,
    },
    /// `remove-partition-specs`: drops partition specs (never the default one).
    RemovePartitionSpecs {
        /// `spec-ids`.
        spec_ids: Vec<i32>,
    },
    /// `remove-schemas`: drops schemas (never the current one).
    RemoveSchemas {
        /// `schema-ids`.
        schema_ids: Vec<i32>,
    },
}

impl TableUpdate {
    /// The `action` of this update, as the REST OpenAPI names it (`add-schema`, ...).
    pub fn action(&self) -> &'static str {
        match self {
            Self::AssignUuid { .. } => "assign-uuid",
            Self::UpgradeFormatVersion { .. } => "upgrade-format-version",
            Self::AddSchema { .. } => "add-schema",
            Self::SetCurrentSchema { .. } => "set-current-schema",
            Self::AddSpec { .. } => "add-spec",
            Self::SetDefaultSpec { .. } => "set-default-spec",
            Self::AddSortOrder { .. } => "add-sort-order",
            Self::SetDefaultSortOrder { .. } => "set-default-sort-order",
            Self::AddSnapshot { .. } => "add-snapshot",
            Self::SetSnapshotRef { .. } => "set-snapshot-ref",
            Self::RemoveSnapshots { .. } => "remove-snapshots",
            Self::RemoveSnapshotRef { .. } => "remove-snapshot-ref",
            Self::SetLocation { .. } => "set-location",
            Self::SetProperties { .. } => "set-properties",
            Self::RemoveProperties { .. } => "remove-properties",
            Self::SetStatistics { .. } => "set-statistics",
            Self::RemoveStatistics { .. } => "remove-statistics",
            Self::SetPartitionStatistics { .. } => "set-partition-statistics",
            Self::RemovePartitionStatistics { .. } => "remove-partition-statistics",
            Self::RemovePartitionSpecs { .. } => "remove-partition-specs",
            Self::RemoveSchemas { .. } => "remove-schemas",
        }
    }

    /// `set-snapshot-ref` of `name` to `reference`.
    pub fn set_ref(name: impl Into<String>, reference: SnapshotReference) -> Self {
        Self::SetSnapshotRef {
            ref_name: name.into(),
            reference,
        }
    }
}
