//! Snapshot management as pure metadata changes: setting and removing refs, fast-forwarding
//! and rolling back a branch, and removing expired snapshots. Each returns the next metadata;
//! committing it (the metadata log entry, the pointer swap) happens in `crate::commit`.

use std::collections::HashSet;

use super::TableMetadata;
use crate::error::{Error, Result};
use crate::spec::retention::Retention;
use crate::spec::{SnapshotLogEntry, SnapshotReference, SnapshotRetention};

impl TableMetadata {
    /// The metadata with ref `name` set to `reference` (created, or replaced whatever it was).
    /// The snapshot must exist. Setting `main` makes its snapshot current (a new snapshot-log
    /// entry at `now_ms`, as a rollback or fast-forward records it); `main` must stay a branch.
    pub fn with_ref(
        &self,
        name: &str,
        reference: SnapshotReference,
        now_ms: i64,
    ) -> Result<TableMetadata> {
        let id = reference.snapshot_id;
        if self.snapshot_by_id(id).is_none() {
            return Err(Error::not_found(format!(
                "snapshot {id} (for ref '{name}')"
            )));
        }
        let is_main = name == SnapshotReference::MAIN_BRANCH;
        if is_main && matches!(reference.retention, SnapshotRetention::Tag { .. }) {
            return Err(Error::invalid("ref 'main'", "must be a branch, not a tag"));
        }
        let mut next = self.clone();
        next.last_updated_ms = next.last_updated_ms.max(now_ms);
        if is_main && self.current_snapshot_id != Some(id) {
            next.current_snapshot_id = Some(id);
            next.snapshot_log.push(SnapshotLogEntry {
                snapshot_id: id,
                timestamp_ms: next.last_updated_ms,
            });
        }
        next.refs.insert(name.to_string(), reference);
        Ok(next)
    }

    /// The metadata without ref `name`. `main` can never be dropped; an unknown ref is
    /// [`Error::NotFound`].
    pub fn without_ref(&self, name: &str, now_ms: i64) -> Result<TableMetadata> {
        if name == SnapshotReference::MAIN_BRANCH {
            return Err(Error::invalid("branch 'main'", "cannot be dropped"));
        }
        if !self.refs.contains_key(name) {
            return Err(Error::not_found(format!("ref '{name}'")));
        }
        let mut next = self.clone();
        next.refs.remove(name);
        next.last_updated_ms = next.last_updated_ms.max(now_ms);
        Ok(next)
    }

    /// The metadata with branch `branch` moved to `snapshot_id`, keeping its retention
    /// settings. With `must_be_ancestor`, the target must be an ancestor of the branch head (a
    /// rollback); otherwise the head must be an ancestor of the target (a fast-forward).
    pub fn with_branch_moved(
        &self,
        branch: &str,
        snapshot_id: i64,
        must_be_ancestor: bool,
        now_ms: i64,
    ) -> Result<TableMetadata> {
        let Some(reference) = self.refs.get(branch) else {
            return Err(Error::not_found(format!("branch '{branch}'")));
        };
        if !matches!(reference.retention, SnapshotRetention::Branch { .. }) {
            return Err(Error::invalid(
                format_args!("ref '{branch}'"),
                "is a tag, not a branch",
            ));
        }
        let head = reference.snapshot_id;
        let Some(target) = self.snapshot_by_id(snapshot_id) else {
            return Err(Error::not_found(format!("snapshot {snapshot_id}")));
        };
        let (from, to) = match must_be_ancestor {
            true => (head, snapshot_id),
            false => (snapshot_id, head),
        };
        let start = self.snapshot_by_id(from);
        if !self.ancestors_of(start).any(|s| s.snapshot_id == to) {
            let what = format!("snapshot {snapshot_id}");
            return Err(match must_be_ancestor {
                true => Error::invalid(
                    what,
                    format_args!("is not an ancestor of branch '{branch}' (at {head})"),
                ),
                false => Error::invalid(
                    what,
                    format_args!(
                        "branch '{branch}' (at {head}) is not its ancestor: it cannot be \
                         fast-forwarded there"
                    ),
                ),
            });
        }
        let moved = SnapshotReference {
            snapshot_id: target.snapshot_id,
            retention: reference.retention.clone(),
        };
        self.with_ref(branch, moved, now_ms)
    }

    /// The metadata after expiration: the snapshots `retention` expires removed with their
    /// statistics files, its refs in place of the old ones, and the snapshot log cut as Java
    /// cuts it (an entry for a removed snapshot drops every entry before it too, so the log
    /// stays a history of snapshots that exist).
    pub fn with_expired(&self, retention: &Retention, now_ms: i64) -> TableMetadata {
        let gone: HashSet<i64> = retention.expired.iter().copied().collect();
        let mut next = self.clone();
        next.snapshots.retain(|s| !gone.contains(&s.snapshot_id));
        next.refs = retention.refs.clone();
        next.statistics.retain(|s| !gone.contains(&s.snapshot_id));
        next.partition_statistics
            .retain(|s| !gone.contains(&s.snapshot_id));
        let remaining: HashSet<i64> = next.snapshots.iter().map(|s| s.snapshot_id).collect();
        let mut log = Vec::new();
        for entry in &self.snapshot_log {
            match remaining.contains(&entry.snapshot_id) {
                true => log.push(*entry),
                false => log.clear(),
            }
        }
        next.snapshot_log = log;
        next.last_updated_ms = next.last_updated_ms.max(now_ms);
        next
    }
}

#[cfg(test)]
#[path = "manage_tests.rs"]
mod tests;
