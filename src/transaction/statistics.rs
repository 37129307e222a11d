//! Registering statistics files (spec: "Table Statistics", "Partition Statistics"):
//! `set-statistics` and `set-partition-statistics`, each replacing the file the snapshot had.
//! The file must already be written; when the transaction fails for good it is deleted (no
//! metadata names it), after an unknown outcome it is kept.

use async_trait::async_trait;

use super::{Action, Changes, CommitContext};
use crate::error::{Error, Result};
use crate::spec::metadata::{PartitionStatisticsFile, StatisticsFile};
use crate::spec::{TableMetadata, TableUpdate};

/// `set-statistics`: the Puffin file of table statistics of its snapshot.
#[derive(Debug, Clone)]
pub struct SetStatistics {
    file: StatisticsFile,
}

impl SetStatistics {
    /// Registers `file` (written by this transaction) for its `snapshot-id`.
    pub fn new(file: StatisticsFile) -> Self {
        Self { file }
    }
}

/// `set-partition-statistics`: the partition statistics file of its snapshot.
#[derive(Debug, Clone)]
pub struct SetPartitionStatistics {
    file: PartitionStatisticsFile,
}

impl SetPartitionStatistics {
    /// Registers `file` (written by this transaction) for its `snapshot-id`.
    pub fn new(file: PartitionStatisticsFile) -> Self {
        Self { file }
    }
}

/// The snapshot a statistics file describes must still exist (an expiration may have removed
/// it since the statistics were computed).
fn snapshot_exists(current: &TableMetadata, snapshot_id: i64, path: &str) -> Result<()> {
    match current.snapshot_by_id(snapshot_id) {
        Some(_) => Ok(()),
        None => Err(Error::invalid(
            format_args!("statistics file {path}"),
            format_args!("its snapshot {snapshot_id} is no longer in the table"),
        )),
    }
}

/// The change of a statistics action: `update`, once the snapshot the file describes is still
/// in the table.
fn statistics_change(
    current: &TableMetadata,
    snapshot_id: i64,
    path: &str,
    update: TableUpdate,
) -> Result<Changes> {
    snapshot_exists(current, snapshot_id, path)?;
    Ok(Changes {
        requirements: Vec::new(),
        updates: vec![update],
    })
}

#[async_trait]
impl Action for SetStatistics {
    fn validate(&self, _base: &TableMetadata, current: &TableMetadata) -> Result<()> {
        snapshot_exists(current, self.file.snapshot_id, &self.file.statistics_path)
    }

    async fn changes(
        &mut self,
        _context: &CommitContext<'_>,
        current: &TableMetadata,
    ) -> Result<Changes> {
        let file = &self.file;
        let update = TableUpdate::SetStatistics {
            statistics: file.clone(),
        };
        statistics_change(current, file.snapshot_id, &file.statistics_path, update)
    }

    fn written(&self) -> Vec<String> {
        vec![self.file.statistics_path.clone()]
    }
}

#[async_trait]
impl Action for SetPartitionStatistics {
    fn validate(&self, _base: &TableMetadata, current: &TableMetadata) -> Result<()> {
        snapshot_exists(current, self.file.snapshot_id, &self.file.statistics_path)
    }

    async fn changes(
        &mut self,
        _context: &CommitContext<'_>,
        current: &TableMetadata,
    ) -> Result<Changes> {
        let file = &self.file;
        let update = TableUpdate::SetPartitionStatistics {
            partition_statistics: file.clone(),
        };
        statistics_change(current, file.snapshot_id, &file.statistics_path, update)
    }

    fn written(&self) -> Vec<String> {
        vec![self.file.statistics_path.clone()]
    }
}
