//! Committing a snapshot to table metadata: the pure part of a commit. Given the base metadata
//! and a new snapshot, the next metadata: the snapshot added, the branch moved, the logs
//! extended, the sequence number and (v3) row ids advanced. Writing the file and swapping the
//! catalog pointer happen elsewhere.

use super::{FormatVersion, TableMetadata};
use crate::error::{Error, Result};
use crate::spec::properties::METADATA_PREVIOUS_VERSIONS_MAX;
use crate::spec::{
    MetadataLogEntry, Snapshot, SnapshotLogEntry, SnapshotReference, SnapshotRetention,
};

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
    pub fn with_snapshot(
        &self,
        mut snapshot: Snapshot,
        branch: &str,
        previous_file: Option<&str>,
    ) -> Result<TableMetadata> {
        let id = snapshot.snapshot_id;
        if self.snapshot_by_id(id).is_some() {
            return Err(Error::InvalidArgument(format!(
                "snapshot id {id} is already in the table"
            )));
        }
        if self
            .refs
            .get(branch)
            .is_some_and(|r| self.branch_head(branch) != Some(r.snapshot_id))
        {
            return Err(Error::InvalidArgument(format!(
                "'{branch}' is a tag; commits go to branches"
            )));
        }
        let head = self.branch_head(branch);
        if snapshot.parent_snapshot_id != head {
            return Err(Error::InvalidArgument(format!(
                "snapshot {id} has parent {:?}, but branch '{branch}' is at {head:?}",
                snapshot.parent_snapshot_id
            )));
        }
        let sequence = self.next_sequence_number();
        if snapshot.sequence_number != sequence {
            return Err(Error::InvalidArgument(format!(
                "snapshot {id} has sequence number {}, the table's next is {sequence}",
                snapshot.sequence_number
            )));
        }
        let mut next = self.clone();
        if next.format_version == FormatVersion::V3 {
            let first = next.next_row_id.unwrap_or(0);
            snapshot.first_row_id = Some(first);
            next.next_row_id = Some(first + snapshot.added_rows.unwrap_or(0));
        }
        next.last_sequence_number = next.last_sequence_number.max(snapshot.sequence_number);
        next.last_updated_ms = next.last_updated_ms.max(snapshot.timestamp_ms);
        let retention = match self.refs.get(branch) {
            Some(existing) => existing.retention.clone(),
            None => SnapshotRetention::Branch {
                min_snapshots_to_keep: None,
                max_snapshot_age_ms: None,
                max_ref_age_ms: None,
            },
        };
        next.refs.insert(
            branch.to_string(),
            SnapshotReference {
                snapshot_id: id,
                retention,
            },
        );
        if branch == SnapshotReference::MAIN_BRANCH {
            next.current_snapshot_id = Some(id);
            next.snapshot_log.push(SnapshotLogEntry {
                snapshot_id: id,
                timestamp_ms: snapshot.timestamp_ms,
            });
        }
        if let Some(previous) = previous_file {
            next.log_previous_file(previous, self.last_updated_ms)?;
        }
        next.snapshots.push(snapshot);
        Ok(next)
    }

    /// Adds `previous` (the metadata file this metadata replaces, last updated at
    /// `previous_updated_ms`) to the metadata log, trimmed to
    /// `write.metadata.previous-versions-max` entries (at least 1, as Java keeps). A bad value
    /// of that property is an error naming it, and nothing is changed.
    pub fn log_previous_file(&mut self, previous: &str, previous_updated_ms: i64) -> Result<()> {
        let keep = METADATA_PREVIOUS_VERSIONS_MAX.get(self)?.max(1);
        self.metadata_log.push(MetadataLogEntry {
            metadata_file: previous.to_string(),
            timestamp_ms: previous_updated_ms,
        });
        let excess = self
            .metadata_log
            .len()
            .saturating_sub(usize::try_from(keep).unwrap_or(1));
        self.metadata_log.drain(..excess);
        Ok(())
    }
}

#[cfg(test)]
#[path = "update_tests.rs"]
mod tests;
