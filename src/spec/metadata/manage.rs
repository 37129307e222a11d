//! Snapshot management as pure metadata changes: setting and removing refs, fast-forwarding
//! and rolling back a branch, and removing expired snapshots. Each is a list of
//! [`TableUpdate`]s applied to the metadata ([`TableMetadata::apply`]) plus the checks of the
//! operation, and returns the next metadata; committing it (the metadata log entry, the
//! pointer swap) happens in `crate::commit`.

use super::TableMetadata;
use crate::error::{Error, Result};
use crate::spec::retention::Retention;
use crate::spec::{ApplyContext, SnapshotReference, SnapshotRetention, TableUpdate};

impl TableMetadata {
    /// The metadata with ref `name` set to `reference` (created, or replaced whatever it was):
    /// the update `set-snapshot-ref` at `now_ms` ([`TableMetadata::apply`]). The snapshot
    /// must exist ([`Error::NotFound`] otherwise). Setting `main` makes its snapshot current
    /// (a new snapshot-log entry at `now_ms`, as a rollback or fast-forward records it);
    /// `main` must stay a branch.
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
        let update = TableUpdate::set_ref(name, reference);
        self.apply(&[update], &ApplyContext::new(now_ms))
    }

    /// The metadata without ref `name`: the update `remove-snapshot-ref` at `now_ms`. `main`
    /// can never be dropped here; an unknown ref is [`Error::NotFound`].
    pub fn without_ref(&self, name: &str, now_ms: i64) -> Result<TableMetadata> {
        if name == SnapshotReference::MAIN_BRANCH {
            return Err(Error::invalid(
                "ref 'main'",
                "the branch 'main' cannot be dropped",
            ));
        }
        if !self.refs.contains_key(name) {
            return Err(Error::not_found(format!("ref '{name}'")));
        }
        let update = TableUpdate::RemoveSnapshotRef {
            ref_name: name.to_string(),
        };
        self.apply(&[update], &ApplyContext::new(now_ms))
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
            return Err(Error::InvalidArgument(format!(
                "'{branch}' is a tag, not a branch"
            )));
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
            return Err(Error::InvalidArgument(match must_be_ancestor {
                true => format!(
                    "snapshot {snapshot_id} is not an ancestor of branch '{branch}' (at {head})"
                ),
                false => format!(
                    "branch '{branch}' (at {head}) is not an ancestor of snapshot {snapshot_id}: \
                     it cannot be fast-forwarded there"
                ),
            }));
        }
        let moved = SnapshotReference {
            snapshot_id: target.snapshot_id,
            retention: reference.retention.clone(),
        };
        self.with_ref(branch, moved, now_ms)
    }

    /// The metadata after expiration: the updates `remove-snapshot-ref` of every ref that
    /// `retention` does not keep, then `remove-snapshots` of the snapshots it expires, at
    /// `now_ms` ([`TableMetadata::apply`]'s rules): their statistics files go with them, and
    /// the snapshot log is cut as Java cuts it (an entry for a removed snapshot drops every
    /// entry before it too, so the log stays a history of snapshots that exist).
    /// `retention.refs` must be refs of this table (as [`crate::spec::retention::retention`]
    /// leaves them); they are kept as they are.
    pub fn with_expired(&self, retention: &Retention, now_ms: i64) -> TableMetadata {
        let dropped: Vec<&str> = self
            .refs
            .keys()
            .filter(|name| !retention.refs.contains_key(*name))
            .map(String::as_str)
            .collect();
        self.with_removed(&dropped, &retention.expired, now_ms)
    }
}

#[cfg(test)]
#[path = "manage_tests.rs"]
mod tests;
