//! Applying a list of [`TableUpdate`]s to table metadata: the rules of Java's
//! `TableMetadata.Builder`, pure (the time comes in the [`ApplyContext`]).
//!
//! The updates apply in order to a working copy ([`MetadataBuilder`]); each either changes it,
//! changes nothing (setting what is already set, removing what is absent: no error, as in
//! Java), or is refused, which refuses the whole list. Then, once, the list's effects on the
//! logs and timestamps are settled ([`MetadataBuilder::finish`]) and the result is checked
//! with [`TableMetadata::validate`].

use std::collections::BTreeMap;
use std::fmt;

use super::update::TableUpdate;
use crate::error::{Error, Result};
use crate::spec::TableMetadata;
use crate::spec::metadata::FormatVersion;
use crate::spec::partition::PARTITION_DATA_ID_START;

/// What applying updates needs besides the updates: the time, and the metadata file being
/// replaced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyContext {
    /// The time of the change, in epoch milliseconds (the commit's clock: applying never reads
    /// one).
    pub now_ms: i64,
    /// The metadata file the result replaces: it joins the metadata log. `None` for a new
    /// table (and for callers that log it themselves).
    pub previous_file: Option<String>,
}

impl ApplyContext {
    /// A context at `now_ms`, without a previous metadata file.
    pub fn new(now_ms: i64) -> Self {
        Self {
            now_ms,
            previous_file: None,
        }
    }

    /// The metadata file the result replaces (see [`ApplyContext::previous_file`]).
    pub fn with_previous_file(mut self, path: impl Into<String>) -> Self {
        self.previous_file = Some(path.into());
        self
    }
}

impl TableMetadata {
    /// The metadata after `updates`, applied in order with the rules of Java's
    /// `TableMetadata.Builder` (each update's rules are on its variant and below).
    ///
    /// - `add-schema` / `add-spec` / `add-sort-order` reuse the id of an identical schema /
    ///   compatible spec (same fields, transforms and names; field ids aside) / identical order
    ///   already in the table, and otherwise take the highest id + 1 (the unsorted order is
    ///   always 0); `last-column-id` and `last-partition-id` become the highest ids in use.
    ///   `-1` in `set-current-schema` / `set-default-spec` / `set-default-sort-order` is the
    ///   one the last `add-*` of that kind in this list resolved to (an error without one;
    ///   where that `add-*` reused an entry already in the table, Java refuses `-1`, icefloe
    ///   takes the reused entry).
    ///   A new spec or sort order must bind to the current schema; in v1, spec field ids must be
    ///   1000, 1001, ... in order; a schema with v3 types or defaults needs a v3 table.
    /// - `add-snapshot`: the id must be new; from v2 the sequence number must be above
    ///   `last-sequence-number` unless the snapshot has no parent; from v3 `first-row-id` must
    ///   be set and at least `next-row-id`, which becomes `first-row-id + added-rows`.
    ///   Snapshots are added before the refs that point at them.
    /// - `set-snapshot-ref`: the snapshot must exist and `main` must be a branch. Setting
    ///   `main` makes the snapshot current and logs it in the snapshot log, at the snapshot's
    ///   own timestamp when this list added it, else at the time of the change. A snapshot
    ///   this list added and made current that a later update of the list replaced as current
    ///   is left out of the log (Java's "intermediate snapshots").
    /// - `remove-snapshots` drops the snapshots (unknown ids are ignored), their statistics,
    ///   and the refs left pointing at nothing (`main` too, which clears the current snapshot);
    ///   a snapshot-log entry of a snapshot that no longer exists drops the entries before it
    ///   as well. `remove-snapshot-ref` of `main` clears the current snapshot.
    /// - `upgrade-format-version` never downgrades; to v3 it starts `next-row-id` at 0.
    /// - `remove-partition-specs` / `remove-schemas` never remove the default spec / current
    ///   schema; statistics are set and removed by snapshot id; properties and the location
    ///   are set as given.
    ///
    /// Updates that change nothing are allowed. When no update changes anything the result is
    /// this metadata, unchanged (no metadata-log entry, the same `last-updated-ms`). Otherwise
    /// `last-updated-ms` becomes the latest of this metadata's, `ctx.now_ms` and the added
    /// snapshots' timestamps (it never goes back), and `ctx.previous_file` joins the metadata
    /// log (at this metadata's `last-updated-ms`), trimmed to
    /// `write.metadata.previous-versions-max` entries.
    ///
    /// Errors: [`Error::InvalidArgument`] naming the update (`updates[2] (set-current-schema)`)
    /// and why it cannot apply, or, when the result would break a rule of
    /// [`TableMetadata::validate`] or lack a location (or, from v2, a uuid), naming the rule.
    pub fn apply(&self, updates: &[TableUpdate], ctx: &ApplyContext) -> Result<TableMetadata> {
        let mut builder = MetadataBuilder::new(Some(self), self.clone(), ctx.now_ms);
        builder.apply_all(updates)?;
        if !builder.changed {
            return Ok(self.clone());
        }
        builder.finish(ctx.previous_file.as_deref())
    }

    /// A new table's metadata, built from nothing by `updates` (as a create transaction
    /// does: `assign-uuid`, `upgrade-format-version`, `add-schema`, `set-current-schema -1`,
    /// `add-spec`, `set-default-spec -1`, `add-sort-order`, `set-default-sort-order -1`,
    /// `set-location`, `set-properties`, ...), with the rules of [`TableMetadata::apply`].
    ///
    /// The table starts at the format version of the first `upgrade-format-version` (v2
    /// without one, as in Java), with nothing else; `ctx.previous_file` is not used (a new
    /// table has no metadata log). The updates must give it a uuid, a location, a current
    /// schema, a default spec and a default sort order.
    pub fn from_updates(updates: &[TableUpdate], ctx: &ApplyContext) -> Result<TableMetadata> {
        let format_version = updates
            .iter()
            .find_map(|u| match u {
                TableUpdate::UpgradeFormatVersion { format_version } => Some(*format_version),
                _ => None,
            })
            .unwrap_or(FormatVersion::V2);
        let mut builder = MetadataBuilder::new(None, empty(format_version), ctx.now_ms);
        builder.apply_all(updates)?;
        builder.finish(None)
    }
}

/// Metadata with nothing in it: no schema, spec or sort order (their ids name none), no
/// location, at `format_version`.
fn empty(format_version: FormatVersion) -> TableMetadata {
    TableMetadata {
        format_version,
        table_uuid: None,
        location: String::new(),
        last_sequence_number: 0,
        last_updated_ms: 0,
        last_column_id: 0,
        schemas: Vec::new(),
        current_schema_id: -1,
        partition_specs: Vec::new(),
        default_spec_id: -1,
        last_partition_id: PARTITION_DATA_ID_START - 1,
        properties: BTreeMap::new(),
        current_snapshot_id: None,
        snapshots: Vec::new(),
        snapshot_log: Vec::new(),
        metadata_log: Vec::new(),
        sort_orders: Vec::new(),
        default_sort_order_id: -1,
        refs: BTreeMap::new(),
        statistics: Vec::new(),
        partition_statistics: Vec::new(),
        next_row_id: (format_version >= FormatVersion::V3).then_some(0),
        unknown_fields: serde_json::Map::new(),
    }
}

/// Why one update cannot apply (turned into [`Error::InvalidArgument`] naming the update).
#[derive(Debug)]
pub(super) struct Refused(pub(super) String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Refuses with `reason`.
pub(super) fn refuse<T>(reason: impl Into<String>) -> Result<T, Refused> {
    Err(Refused(reason.into()))
}

/// An update's outcome: whether it changed the metadata.
pub(super) type Outcome = Result<bool, Refused>;

/// The metadata being changed by a list of updates, and what the list did so far.
pub(super) struct MetadataBuilder<'a> {
    /// The metadata the updates started from (`None`: a new table).
    pub(super) base: Option<&'a TableMetadata>,
    /// The working copy.
    pub(super) next: TableMetadata,
    /// The time of the change: `now`, but never before the base's `last-updated-ms`.
    pub(super) change_ms: i64,
    /// The id the last `add-schema` resolved to.
    pub(super) last_added_schema: Option<i32>,
    /// The id the last `add-spec` resolved to.
    pub(super) last_added_spec: Option<i32>,
    /// The id the last `add-sort-order` resolved to.
    pub(super) last_added_order: Option<i32>,
    /// The snapshots this list added, with their timestamps.
    pub(super) added_snapshots: Vec<(i64, i64)>,
    /// The added snapshots `main` was set to, in order.
    pub(super) main_moves: Vec<i64>,
    /// Whether a `remove-snapshots` removed something.
    pub(super) removed_snapshots: bool,
    /// Whether a schema, spec or sort order was added or made current.
    pub(super) structure_changed: bool,
    /// Whether any update changed anything.
    pub(super) changed: bool,
}

impl<'a> MetadataBuilder<'a> {
    /// A builder over `next` (a copy of `base`, or an empty table).
    pub(super) fn new(base: Option<&'a TableMetadata>, next: TableMetadata, now_ms: i64) -> Self {
        let change_ms = base.map_or(now_ms, |b| b.last_updated_ms.max(now_ms));
        Self {
            base,
            next,
            change_ms,
            last_added_schema: None,
            last_added_spec: None,
            last_added_order: None,
            added_snapshots: Vec::new(),
            main_moves: Vec::new(),
            removed_snapshots: false,
            structure_changed: false,
            changed: false,
        }
    }

    /// Applies `updates` in order; the first refused one is the error, naming it.
    pub(super) fn apply_all(&mut self, updates: &[TableUpdate]) -> Result<()> {
        for (i, update) in updates.iter().enumerate() {
            let changed = self
                .update(update)
                .map_err(|r| Error::invalid(format!("updates[{i}] ({})", update.action()), r))?;
            self.changed |= changed;
        }
        Ok(())
    }

    fn update(&mut self, update: &TableUpdate) -> Outcome {
        use TableUpdate as U;
        match update {
            U::AssignUuid { uuid } => self.assign_uuid(uuid),
            U::UpgradeFormatVersion { format_version } => self.upgrade_format(*format_version),
            U::AddSchema {
                schema,
                last_column_id,
            } => self.add_schema(schema, *last_column_id),
            U::SetCurrentSchema { schema_id } => self.set_current_schema(*schema_id),
            U::AddSpec { spec } => self.add_spec(spec),
            U::SetDefaultSpec { spec_id } => self.set_default_spec(*spec_id),
            U::AddSortOrder { sort_order } => self.add_sort_order(sort_order),
            U::SetDefaultSortOrder { sort_order_id } => self.set_default_sort_order(*sort_order_id),
            U::AddSnapshot { snapshot } => self.add_snapshot(snapshot),
            U::SetSnapshotRef {
                ref_name,
                reference,
            } => self.set_ref(ref_name, reference),
            U::RemoveSnapshots { snapshot_ids } => Ok(self.remove_snapshots(snapshot_ids)),
            U::RemoveSnapshotRef { ref_name } => Ok(self.remove_ref(ref_name)),
            U::SetLocation { location } => Ok(self.set_location(location)),
            U::SetProperties { updates } => Ok(self.set_properties(updates)),
            U::RemoveProperties { removals } => Ok(self.remove_properties(removals)),
            U::SetStatistics { statistics } => Ok(self.set_statistics(statistics)),
            U::RemoveStatistics { snapshot_id } => Ok(self.remove_statistics(*snapshot_id)),
            U::SetPartitionStatistics {
                partition_statistics,
            } => Ok(self.set_partition_statistics(partition_statistics)),
            U::RemovePartitionStatistics { snapshot_id } => {
                Ok(self.remove_partition_statistics(*snapshot_id))
            }
            U::RemovePartitionSpecs { spec_ids } => self.remove_specs(spec_ids),
            U::RemoveSchemas { schema_ids } => self.remove_schemas(schema_ids),
        }
    }

    /// `assign-uuid`: any UUID (Java lets a commit reassign it; assert-table-uuid is what
    /// protects a table from a commit meant for another).
    fn assign_uuid(&mut self, uuid: &str) -> Outcome {
        if uuid::Uuid::parse_str(uuid).is_err() {
            return refuse(format!("'{uuid}' is not a UUID"));
        }
        if self.next.table_uuid.as_deref() == Some(uuid) {
            return Ok(false);
        }
        self.next.table_uuid = Some(uuid.to_string());
        Ok(true)
    }

    fn set_location(&mut self, location: &str) -> bool {
        if self.next.location == location {
            return false;
        }
        self.next.location = location.to_string();
        true
    }

    fn set_properties(&mut self, updates: &BTreeMap<String, String>) -> bool {
        self.next
            .properties
            .extend(updates.iter().map(|(k, v)| (k.clone(), v.clone())));
        !updates.is_empty()
    }

    fn remove_properties(&mut self, removals: &[String]) -> bool {
        for key in removals {
            self.next.properties.remove(key);
        }
        !removals.is_empty()
    }

    /// Settles what the list did as a whole (snapshot log, `last-updated-ms`, metadata log),
    /// then checks the result.
    pub(super) fn finish(self, previous_file: Option<&str>) -> Result<TableMetadata> {
        let structure_changed = self.structure_changed;
        let next = self.settle(previous_file)?;
        check_complete(&next, structure_changed)?;
        next.validate().map_err(|e| match e {
            Error::Corrupt { reason, .. } => Error::invalid("table updates", reason),
            other => other,
        })?;
        Ok(next)
    }

    /// The snapshot log, `last-updated-ms` and the metadata log after the whole list.
    pub(super) fn settle(mut self, previous_file: Option<&str>) -> Result<TableMetadata> {
        self.settle_snapshot_log();
        let newest_added = self.added_snapshots.iter().map(|(_, at)| *at).max();
        let mut next = self.next;
        next.last_updated_ms = newest_added.map_or(self.change_ms, |at| at.max(self.change_ms));
        if let (Some(base), Some(previous)) = (self.base, previous_file) {
            next.log_previous_file(previous, base.last_updated_ms)?;
        }
        Ok(next)
    }
}

/// What [`TableMetadata::validate`] does not check but a table needs: a location, a uuid from
/// v2, `next-row-id` in v3, and (when this list changed them) a default spec and sort order
/// that bind to the current schema.
fn check_complete(m: &TableMetadata, structure_changed: bool) -> Result<()> {
    let refused = |reason: String| Err(Error::invalid("table updates", reason));
    if m.location.is_empty() {
        return refused("the table has no location (set-location)".into());
    }
    if m.format_version >= FormatVersion::V2 && m.table_uuid.is_none() {
        return refused(format!(
            "a v{} table needs a table-uuid (assign-uuid)",
            m.format_version.number()
        ));
    }
    if !structure_changed {
        return Ok(());
    }
    let Some(schema) = m.schema_by_id(m.current_schema_id) else {
        return Ok(()); // validate() names the missing schema
    };
    let defaults = m
        .default_partition_spec()
        .map(|spec| super::schemas::spec_binds(spec, schema))
        .into_iter()
        .chain(
            m.default_sort_order()
                .map(|o| super::schemas::order_binds(o, schema)),
        );
    for check in defaults {
        if let Err(r) = check {
            return refused(format!("with the current schema {}: {r}", schema.schema_id));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
