//! The consistency rules of table metadata (spec: "Table Metadata Fields", "Snapshot
//! References"), as Java's `TableMetadata` enforces them when it reads a file: every id a field
//! names exists, ids are unique, the `main` branch is the current snapshot, and the
//! `last-*` counters are not behind the ids in use. A file that breaks one is refused with a
//! message saying which rule, instead of being read with the first of two snapshots or the
//! wrong one of two current snapshots.

use std::collections::HashSet;
use std::fmt::Display;

use super::TableMetadata;
use crate::error::{Error, Result};
use crate::spec::snapshot::SnapshotReference;

/// See [`TableMetadata::validate`].
pub(super) fn validate(m: &TableMetadata) -> Result<()> {
    unique(
        "snapshot id",
        "snapshots",
        m.snapshots.iter().map(|s| s.snapshot_id),
    )?;
    unique(
        "schema id",
        "schemas",
        m.schemas.iter().map(|s| s.schema_id),
    )?;
    unique(
        "partition spec id",
        "partition-specs",
        m.partition_specs.iter().map(|s| s.spec_id),
    )?;
    unique(
        "sort order id",
        "sort-orders",
        m.sort_orders.iter().map(|o| o.order_id),
    )?;
    current_ids(m)?;
    refs(m)?;
    last_ids(m)?;
    sequence_numbers(m)
}

fn inconsistent(reason: impl Display) -> Error {
    Error::corrupt("", format!("inconsistent table metadata: {reason}"))
}

/// Each id once in its list (Java builds a map of each list and refuses a repeated key).
fn unique<T: Eq + std::hash::Hash + Display + Copy>(
    what: &str,
    list: &str,
    ids: impl Iterator<Item = T>,
) -> Result<()> {
    let mut seen = HashSet::new();
    for id in ids {
        if !seen.insert(id) {
            return Err(inconsistent(format!(
                "{what} {id} appears more than once in '{list}'"
            )));
        }
    }
    Ok(())
}

/// `current-schema-id`, `default-spec-id`, `default-sort-order-id` and `current-snapshot-id`
/// name entries of their lists (the unsorted order 0 needs no entry; a current snapshot id
/// of -1 already reads as none).
fn current_ids(m: &TableMetadata) -> Result<()> {
    if m.schema_by_id(m.current_schema_id).is_none() {
        return Err(inconsistent(format!(
            "current-schema-id {} is not in 'schemas'",
            m.current_schema_id
        )));
    }
    if m.partition_spec_by_id(m.default_spec_id).is_none() {
        return Err(inconsistent(format!(
            "default-spec-id {} is not in 'partition-specs'",
            m.default_spec_id
        )));
    }
    if m.default_sort_order_id != 0 && m.default_sort_order().is_none() {
        return Err(inconsistent(format!(
            "default-sort-order-id {} is not in 'sort-orders'",
            m.default_sort_order_id
        )));
    }
    match m.current_snapshot_id {
        Some(id) if m.snapshot_by_id(id).is_none() => Err(inconsistent(format!(
            "current-snapshot-id {id} is not in 'snapshots'"
        ))),
        _ => Ok(()),
    }
}

/// Every ref names a snapshot of the table, and `main` is the current snapshot: "must be the
/// same as the current ID of the main branch in refs" (Java: "Current snapshot ID does not
/// match main branch", "Current snapshot is not set, but main branch exists").
fn refs(m: &TableMetadata) -> Result<()> {
    for (name, r) in &m.refs {
        if m.snapshot_by_id(r.snapshot_id).is_none() {
            return Err(inconsistent(format!(
                "ref '{name}' points at snapshot {}, which is not in 'snapshots'",
                r.snapshot_id
            )));
        }
    }
    let main = m.refs.get(SnapshotReference::MAIN_BRANCH);
    match (m.current_snapshot_id, main) {
        (Some(current), Some(main)) if main.snapshot_id != current => Err(inconsistent(format!(
            "current-snapshot-id {current} does not match the main branch in 'refs' \
             (snapshot {}); the spec requires them to be the same",
            main.snapshot_id
        ))),
        (None, Some(main)) => Err(inconsistent(format!(
            "current-snapshot-id is not set, but the main branch in 'refs' points at \
             snapshot {}; the spec requires them to be the same",
            main.snapshot_id
        ))),
        (_, Some(main)) if !main.is_branch() => Err(inconsistent(
            "'refs' has a tag named main, which must be a branch",
        )),
        _ => Ok(()),
    }
}

/// `last-column-id` and `last-partition-id` are "the highest assigned" ids: an id above them
/// would be handed out again to the next new column or partition field.
fn last_ids(m: &TableMetadata) -> Result<()> {
    if let Some(schema) = m
        .schemas
        .iter()
        .find(|s| s.highest_field_id() > m.last_column_id)
    {
        return Err(inconsistent(format!(
            "schema {} uses field id {}, above last-column-id {}",
            schema.schema_id,
            schema.highest_field_id(),
            m.last_column_id
        )));
    }
    let highest = |s: &&crate::spec::PartitionSpec| s.highest_field_id().unwrap_or(i32::MIN);
    match m.partition_specs.iter().max_by_key(highest) {
        Some(spec) if highest(&spec) > m.last_partition_id => Err(inconsistent(format!(
            "partition spec {} uses field id {}, above last-partition-id {}",
            spec.spec_id,
            highest(&spec),
            m.last_partition_id
        ))),
        _ => Ok(()),
    }
}

/// No snapshot is newer than `last-sequence-number` (Java: "Invalid snapshot with sequence
/// number ... greater than last sequence number").
fn sequence_numbers(m: &TableMetadata) -> Result<()> {
    match m
        .snapshots
        .iter()
        .find(|s| s.sequence_number > m.last_sequence_number)
    {
        Some(s) => Err(inconsistent(format!(
            "snapshot {} has sequence-number {}, above last-sequence-number {}",
            s.snapshot_id, s.sequence_number, m.last_sequence_number
        ))),
        None => Ok(()),
    }
}
