//! Committing a snapshot to table metadata: the pure part of a commit. Given the base metadata
//! and a new snapshot, the next metadata: the snapshot added, the branch moved, the logs
//! extended, the sequence number and (v3) row ids advanced. Writing the file and swapping the
//! catalog pointer happen elsewhere.

use super::{FormatVersion, TableMetadata};
use crate::error::{Error, Result};
use crate::spec::{
    ApplyContext, MetadataLogEntry, Snapshot, SnapshotReference, SnapshotRetention, TableUpdate,
};

/// The table property bounding how many previous metadata files the metadata log keeps.
pub const PREVIOUS_VERSIONS_MAX: &str = "write.metadata.previous-versions-max";

/// Its default (Java's).
pub const PREVIOUS_VERSIONS_MAX_DEFAULT: usize = 100;

/// A positive snapshot id unlikely to collide: the two halves of a random UUID folded together
/// (as Java does), with the sign bit cleared.
pub fn new_snapshot_id() -> i64 {
    let (high, low) = uuid::Uuid::new_v4().as_u64_pair();
    ((high ^ low) & (i64::MAX as u64)) as i64
}

impl TableMetadata {
    /// The sequence number the next snapshot gets (v1 tables have none: 0).
    pub fn next_sequence_number(&self) -> i64 {
        match self.format_version {
            FormatVersion::V1 => 0,
            _ => self.last_sequence_number + 1,
        }
    }

    /// The head of `branch` (`None`: the branch does not exist yet).
    pub fn branch_head(&self, branch: &str) -> Option<i64> {
        self.refs
            .get(branch)
            .filter(|r| matches!(r.retention, SnapshotRetention::Branch { .. }))
            .map(|r| r.snapshot_id)
    }

    /// The metadata after committing `snapshot` to `branch`: `previous_file` is the metadata
    /// file this one replaces (it joins the metadata log, trimmed to
    /// `write.metadata.previous-versions-max`).
    ///
    /// The snapshot must be the branch's next one: its parent the branch head, its sequence
    /// number [`Self::next_sequence_number`], its id new. Committing to `main` also makes it
    /// the current snapshot and adds it to the snapshot log. In v3 the snapshot's
    /// `first-row-id` is set to the table's `next-row-id`, which advances by its
    /// `added-rows`. A branch keeps its retention settings; a tag of that name is an error.
    ///
    /// The change is the updates `add-snapshot` + `set-snapshot-ref` applied at the
    /// snapshot's timestamp ([`TableMetadata::apply`]); this adds the checks that make the
    /// snapshot the branch's next one.
    pub fn with_snapshot(
        &self,
        mut snapshot: Snapshot,
        branch: &str,
        previous_file: Option<&str>,
    ) -> Result<TableMetadata> {
        let id = snapshot.snapshot_id;
        let existing = self.refs.get(branch);
        if existing.is_some_and(|r| !r.is_branch()) {
            return Err(Error::invalid(
                format!("snapshot {id}"),
                format!("'{branch}' is a tag; commits go to branches"),
            ));
        }
        let head = self.branch_head(branch);
        if snapshot.parent_snapshot_id != head {
            return Err(Error::invalid(
                format!("snapshot {id}"),
                format!(
                    "its parent is {:?}, but branch '{branch}' is at {head:?}",
                    snapshot.parent_snapshot_id
                ),
            ));
        }
        let sequence = self.next_sequence_number();
        if snapshot.sequence_number != sequence {
            return Err(Error::invalid(
                format!("snapshot {id}"),
                format!(
                    "its sequence number is {}, the table's next is {sequence}",
                    snapshot.sequence_number
                ),
            ));
        }
        if self.format_version >= FormatVersion::V3 {
            snapshot.first_row_id = Some(self.next_row_id.unwrap_or(0));
        }
        let retention = match existing {
            Some(existing) => existing.retention.clone(),
            None => SnapshotReference::branch(id).retention,
        };
        let mut ctx = ApplyContext::new(snapshot.timestamp_ms);
        ctx.previous_file = previous_file.map(str::to_string);
        let updates = [
            TableUpdate::AddSnapshot { snapshot },
            TableUpdate::set_ref(
                branch,
                SnapshotReference {
                    snapshot_id: id,
                    retention,
                },
            ),
        ];
        self.apply(&updates, &ctx)
    }

    /// Adds `previous` (the metadata file this metadata replaces, last updated at
    /// `previous_updated_ms`) to the metadata log, trimmed to
    /// `write.metadata.previous-versions-max` entries.
    pub fn log_previous_file(&mut self, previous: &str, previous_updated_ms: i64) {
        self.metadata_log.push(MetadataLogEntry {
            metadata_file: previous.to_string(),
            timestamp_ms: previous_updated_ms,
        });
        let keep = self
            .property(PREVIOUS_VERSIONS_MAX)
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(PREVIOUS_VERSIONS_MAX_DEFAULT)
            .max(1);
        let excess = self.metadata_log.len().saturating_sub(keep);
        self.metadata_log.drain(..excess);
    }
}

#[cfg(test)]
#[path = "update_tests.rs"]
mod tests;
