//! What a commit needs of table metadata besides its updates ([`TableMetadata::apply`]): new
//! snapshot ids, the next sequence number, branch heads, and the metadata log's trimming.

use super::{FormatVersion, TableMetadata};
use crate::error::Result;
use crate::spec::properties::METADATA_PREVIOUS_VERSIONS_MAX;
use crate::spec::{MetadataLogEntry, SnapshotRetention};

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
