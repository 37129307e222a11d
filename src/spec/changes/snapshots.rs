//! The updates of a table's history: snapshots, refs, the snapshot log and statistics files,
//! with the rules of Java's `TableMetadata.Builder`.

use std::collections::HashSet;

use super::apply::{MetadataBuilder, Outcome, refuse};
use crate::spec::metadata::{FormatVersion, PartitionStatisticsFile, StatisticsFile};
use crate::spec::{Snapshot, SnapshotLogEntry, SnapshotReference, SnapshotRetention};

impl MetadataBuilder<'_> {
    /// `add-snapshot`.
    pub(super) fn add_snapshot(&mut self, snapshot: &Snapshot) -> Outcome {
        let m = &self.next;
        let id = snapshot.snapshot_id;
        if m.schemas.is_empty() || m.partition_specs.is_empty() || m.sort_orders.is_empty() {
            return refuse(format!(
                "snapshot {id} cannot be added before a schema, a partition spec and a sort \
                 order"
            ));
        }
        if m.snapshot_by_id(id).is_some() {
            return refuse(format!("snapshot id {id} is already in the table"));
        }
        let sequence = snapshot.sequence_number;
        if m.format_version >= FormatVersion::V2
            && sequence <= m.last_sequence_number
            && snapshot.parent_snapshot_id.is_some()
        {
            return refuse(format!(
                "snapshot {id} has sequence number {sequence}, not above the table's \
                 last-sequence-number {}",
                m.last_sequence_number
            ));
        }
        if m.format_version >= FormatVersion::V3 {
            let next_row_id = m.next_row_id.unwrap_or(0);
            let first = match snapshot.first_row_id {
                None => return refuse(format!("snapshot {id} has no first-row-id (v3)")),
                Some(first) if first < next_row_id => {
                    return refuse(format!(
                        "snapshot {id} has first-row-id {first}, behind the table's \
                         next-row-id {next_row_id}"
                    ));
                }
                Some(first) => first,
            };
            // Spec: next-row-id "must be incremented by at least the number of newly assigned
            // row ids"; an absent added-rows counts 0.
            let Some(next) = first.checked_add(snapshot.added_rows.unwrap_or(0)) else {
                return refuse(format!(
                    "snapshot {id}: first-row-id + added-rows overflows"
                ));
            };
            self.next.next_row_id = Some(next);
        }
        self.next.last_sequence_number = self.next.last_sequence_number.max(sequence);
        self.next.snapshots.push(snapshot.clone());
        self.added_snapshots.push((id, snapshot.timestamp_ms));
        Ok(true)
    }

    /// `set-snapshot-ref`.
    pub(super) fn set_ref(&mut self, name: &str, reference: &SnapshotReference) -> Outcome {
        if self.next.refs.get(name) == Some(reference) {
            return Ok(false);
        }
        let id = reference.snapshot_id;
        let Some(snapshot) = self.next.snapshot_by_id(id) else {
            return refuse(format!(
                "snapshot {id} (for ref '{name}') is not in the table"
            ));
        };
        if name == SnapshotReference::MAIN_BRANCH {
            if matches!(reference.retention, SnapshotRetention::Tag { .. }) {
                return refuse("'main' must be a branch");
            }
            let added = self.added_snapshots.iter().any(|(added, _)| *added == id);
            let timestamp_ms = match added {
                true => snapshot.timestamp_ms,
                false => self.change_ms,
            };
            if added {
                self.main_moves.push(id);
            }
            self.next.current_snapshot_id = Some(id);
            self.next.snapshot_log.push(SnapshotLogEntry {
                snapshot_id: id,
                timestamp_ms,
            });
        }
        self.next.refs.insert(name.to_string(), reference.clone());
        Ok(true)
    }

    /// `remove-snapshot-ref`: an absent ref changes nothing; `main` clears the current
    /// snapshot.
    pub(super) fn remove_ref(&mut self, name: &str) -> bool {
        let mut changed = self.next.refs.remove(name).is_some();
        if name == SnapshotReference::MAIN_BRANCH {
            changed |= self.next.current_snapshot_id.take().is_some();
        }
        changed
    }

    /// `remove-snapshots`: unknown ids are ignored (as in Java); the removed snapshots'
    /// statistics and the refs left dangling go with them.
    pub(super) fn remove_snapshots(&mut self, snapshot_ids: &[i64]) -> bool {
        let gone: HashSet<i64> = snapshot_ids.iter().copied().collect();
        let before = self.next.snapshots.len();
        self.next
            .snapshots
            .retain(|s| !gone.contains(&s.snapshot_id));
        if self.next.snapshots.len() == before {
            return false;
        }
        self.removed_snapshots = true;
        let m = &mut self.next;
        m.statistics.retain(|s| !gone.contains(&s.snapshot_id));
        m.partition_statistics
            .retain(|s| !gone.contains(&s.snapshot_id));
        let dangling: Vec<String> = m
            .refs
            .iter()
            .filter(|(_, r)| gone.contains(&r.snapshot_id))
            .map(|(name, _)| name.clone())
            .collect();
        for name in dangling {
            self.remove_ref(&name);
        }
        true
    }

    /// `set-statistics`: replaces the snapshot's statistics file.
    pub(super) fn set_statistics(&mut self, statistics: &StatisticsFile) -> bool {
        let list = &mut self.next.statistics;
        list.retain(|s| s.snapshot_id != statistics.snapshot_id);
        list.push(statistics.clone());
        true
    }

    /// `remove-statistics`: an absent file changes nothing.
    pub(super) fn remove_statistics(&mut self, snapshot_id: i64) -> bool {
        let list = &mut self.next.statistics;
        let before = list.len();
        list.retain(|s| s.snapshot_id != snapshot_id);
        list.len() != before
    }

    /// `set-partition-statistics`: replaces the snapshot's partition statistics file.
    pub(super) fn set_partition_statistics(&mut self, file: &PartitionStatisticsFile) -> bool {
        let list = &mut self.next.partition_statistics;
        list.retain(|s| s.snapshot_id != file.snapshot_id);
        list.push(file.clone());
        true
    }

    /// `remove-partition-statistics`: an absent file changes nothing.
    pub(super) fn remove_partition_statistics(&mut self, snapshot_id: i64) -> bool {
        let list = &mut self.next.partition_statistics;
        let before = list.len();
        list.retain(|s| s.snapshot_id != snapshot_id);
        list.len() != before
    }

    /// The snapshot log after the whole list (Java's `updateSnapshotLog`): entries of
    /// snapshots this list added and made current but then replaced as current are left out,
    /// and after a removal an entry of a snapshot that no longer exists drops every entry
    /// before it, so that the log never claims a snapshot was current over a gap.
    pub(super) fn settle_snapshot_log(&mut self) {
        let current = self.next.current_snapshot_id;
        let intermediate: HashSet<i64> = self
            .main_moves
            .iter()
            .copied()
            .filter(|id| Some(*id) != current)
            .collect();
        if intermediate.is_empty() && !self.removed_snapshots {
            return;
        }
        let existing: HashSet<i64> = self.next.snapshots.iter().map(|s| s.snapshot_id).collect();
        let mut log = Vec::with_capacity(self.next.snapshot_log.len());
        for entry in &self.next.snapshot_log {
            if existing.contains(&entry.snapshot_id) {
                if !intermediate.contains(&entry.snapshot_id) {
                    log.push(*entry);
                }
            } else if self.removed_snapshots {
                log.clear();
            }
        }
        self.next.snapshot_log = log;
    }
}

#[cfg(test)]
#[path = "snapshots_tests.rs"]
mod tests;
