//! Computing partition statistics (spec: "Partition Statistics", "Partition Statistics
//! File"): the counts of every partition of a snapshot, as Java's `PartitionStatsHandler`
//! computes them (`crate::metadata_tables` holds the one aggregation, shared with
//! `"t$partitions"`), written as a Parquet file under the table's `metadata/` directory and
//! registered by a `set-partition-statistics` commit. A failed commit deletes the file.

use crate::error::{Error, Result};
use crate::metadata_tables::partition_statistics_file;
use crate::spec::SnapshotSelector;
use crate::spec::metadata::PartitionStatisticsFile;
use crate::table::Table;
use crate::transaction::{SetPartitionStatistics, WriteTarget};

/// What [`compute_partition_stats`] computes: the partitions of which snapshot (default: the
/// current one).
#[derive(Debug, Clone, Default)]
pub struct ComputePartitionStats {
    snapshot_id: Option<i64>,
}

impl ComputePartitionStats {
    /// The partitions of the current snapshot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Of this snapshot instead of the current one.
    pub fn with_snapshot_id(mut self, snapshot_id: i64) -> Self {
        self.snapshot_id = Some(snapshot_id);
        self
    }
}

/// What [`compute_partition_stats`] wrote and committed.
#[derive(Debug, Clone)]
pub struct PartitionStatsReport {
    /// The snapshot the statistics describe.
    pub snapshot_id: i64,
    /// The partition statistics file; `None` when the snapshot's manifests hold no entry,
    /// so that there was nothing to write (nor commit), as in Java.
    pub statistics_path: Option<String>,
    /// Its rows: one per partition spec and partition tuple.
    pub partitions: usize,
    /// The table as committed.
    pub table: Table,
}

/// Computes the partition statistics of a snapshot, writes them as a Parquet file
/// (`<location>/metadata/partition-stats-<snapshot id>-<uuid>.parquet`, as Java names it) and
/// commits `set-partition-statistics`, replacing the snapshot's partition statistics file.
///
/// Each row is one partition spec id and tuple of the snapshot's manifest entries: the live
/// data files' record and file counts and size, the position deletes (`dv_count` for deletion
/// vectors), the equality deletes, `total_record_count` where metadata knows it (no equality
/// deletes and no position delete files), and the newest snapshot that added or deleted a
/// file there (`last_updated_at`, `last_updated_snapshot_id`).
///
/// Errors: a table without snapshots or an unknown snapshot, a table none of whose specs has a
/// partition field ([`Error::InvalidArgument`]), and those of reading and committing.
pub async fn compute_partition_stats(
    target: &WriteTarget,
    options: &ComputePartitionStats,
) -> Result<PartitionStatsReport> {
    let table = target.load().await?;
    let metadata = table.metadata();
    let selector = match options.snapshot_id {
        Some(id) => SnapshotSelector::SnapshotId(id),
        None => SnapshotSelector::Current,
    };
    let Some(snapshot) = metadata.resolve(&selector)?.snapshot else {
        return Err(Error::invalid(
            format_args!("table {}", target.name()),
            "it has no snapshot to compute partition statistics of",
        ));
    };
    let snapshot_id = snapshot.snapshot_id;
    let Some(encoded) = partition_statistics_file(&table, snapshot).await? else {
        return Ok(PartitionStatsReport {
            snapshot_id,
            statistics_path: None,
            partitions: 0,
            table: table.clone(),
        });
    };
    let path = format!(
        "{}/metadata/partition-stats-{snapshot_id}-{}.parquet",
        metadata.location.trim_end_matches('/'),
        uuid::Uuid::new_v4()
    );
    let file = PartitionStatisticsFile {
        snapshot_id,
        statistics_path: path.clone(),
        file_size_in_bytes: i64::try_from(encoded.bytes.len()).unwrap_or(i64::MAX),
    };
    table.io().write(&path, encoded.bytes).await?;
    let committed = target
        .transaction(table.clone())
        .with_action(SetPartitionStatistics::new(file))
        .commit()
        .await?;
    Ok(PartitionStatsReport {
        snapshot_id,
        statistics_path: Some(path),
        partitions: encoded.partitions,
        table: committed,
    })
}
