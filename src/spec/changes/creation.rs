//! A whole table metadata as the updates that build it from nothing: what a create
//! transaction commits (with `assert-create`), and what a REST catalog's create sends.

use super::update::{LAST_ADDED, TableUpdate};
use crate::spec::TableMetadata;

impl TableMetadata {
    /// The updates that [`TableMetadata::from_updates`] turns back into this metadata:
    /// `assign-uuid`, `upgrade-format-version`, every schema (`add-schema`, with this
    /// table's `last-column-id`), `set-current-schema`, every spec, `set-default-spec`, every
    /// sort order, `set-default-sort-order`, `set-location`, `set-properties`, then the
    /// history: every snapshot (`add-snapshot`, in order), every ref, every statistics file.
    /// The current schema, default spec and sort order are named `-1` when they are the last
    /// added, as Java's create transaction names them.
    ///
    /// What updates cannot say is not carried: the snapshot and metadata logs (a ref to `main`
    /// logs its snapshot once), `last-updated-ms`, `unknown_fields`, a `last-sequence-number`,
    /// `last-partition-id` or `next-row-id` beyond what the snapshots and specs give. And the
    /// updates assign ids ([`TableMetadata::apply`]), so a metadata whose schema, spec or sort
    /// order ids are not 0, 1, 2, ... in list order (1, 2, ... for sort orders besides the
    /// unsorted 0) comes back renumbered.
    pub fn creation_updates(&self) -> Vec<TableUpdate> {
        let mut updates = Vec::new();
        if let Some(uuid) = &self.table_uuid {
            updates.push(TableUpdate::AssignUuid { uuid: uuid.clone() });
        }
        updates.push(TableUpdate::UpgradeFormatVersion {
            format_version: self.format_version,
        });
        updates.extend(self.schemas.iter().map(|schema| TableUpdate::AddSchema {
            schema: schema.clone(),
            last_column_id: Some(self.last_column_id),
        }));
        let last_schema = self.schemas.last().map(|s| s.schema_id);
        updates.push(TableUpdate::SetCurrentSchema {
            schema_id: last_added_or(self.current_schema_id, last_schema),
        });
        updates.extend(
            self.partition_specs
                .iter()
                .map(|spec| TableUpdate::AddSpec { spec: spec.clone() }),
        );
        let last_spec = self.partition_specs.last().map(|s| s.spec_id);
        updates.push(TableUpdate::SetDefaultSpec {
            spec_id: last_added_or(self.default_spec_id, last_spec),
        });
        updates.extend(
            self.sort_orders
                .iter()
                .map(|order| TableUpdate::AddSortOrder {
                    sort_order: order.clone(),
                }),
        );
        let last_order = self.sort_orders.last().map(|o| o.order_id);
        updates.push(TableUpdate::SetDefaultSortOrder {
            sort_order_id: last_added_or(self.default_sort_order_id, last_order),
        });
        updates.push(TableUpdate::SetLocation {
            location: self.location.clone(),
        });
        if !self.properties.is_empty() {
            updates.push(TableUpdate::SetProperties {
                updates: self.properties.clone(),
            });
        }
        self.history_updates(&mut updates);
        updates
    }

    /// Snapshots, refs and statistics files as updates.
    fn history_updates(&self, updates: &mut Vec<TableUpdate>) {
        updates.extend(
            self.snapshots
                .iter()
                .map(|snapshot| TableUpdate::AddSnapshot {
                    snapshot: snapshot.clone(),
                }),
        );
        updates.extend(
            self.refs
                .iter()
                .map(|(name, reference)| TableUpdate::set_ref(name, reference.clone())),
        );
        updates.extend(
            self.statistics
                .iter()
                .map(|statistics| TableUpdate::SetStatistics {
                    statistics: statistics.clone(),
                }),
        );
        updates.extend(self.partition_statistics.iter().map(|file| {
            TableUpdate::SetPartitionStatistics {
                partition_statistics: file.clone(),
            }
        }));
    }
}

/// [`LAST_ADDED`] when `id` is the last one added, else `id`.
fn last_added_or(id: i32, last: Option<i32>) -> i32 {
    if last == Some(id) { LAST_ADDED } else { id }
}

#[cfg(test)]
#[path = "creation_tests.rs"]
mod tests;
