//! Planning a snapshot's scan from metadata alone: the live data files of its manifests and the
//! delete files that apply to each.

use std::sync::Arc;

use super::deletes::{DeleteFileTask, DeleteIndex};
pub(crate) use super::prune::Pruner;
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::spec::{
    DataContentType, DataFile, Manifest, ManifestContent, ManifestEntry, ManifestFile, Snapshot,
    TableMetadata,
};
use crate::table::{read_manifest_list, read_manifests};

pub(super) use crate::table::MANIFEST_CONCURRENCY;

/// How many manifests planning reads before turning them into tasks and dropping them.
const MANIFEST_GROUP: usize = 512;

/// One live data file of a snapshot, ready to scan, with the delete files that apply to it.
#[derive(Debug, Clone)]
pub struct FileScanTask {
    /// The data file (path, partition tuple, metrics).
    pub data_file: DataFile,
    /// The partition spec its manifest was written with.
    pub partition_spec_id: i32,
    /// Its data sequence number (0 for v1 tables).
    pub data_sequence_number: i64,
    /// The delete files that apply to it (deletion vectors first), by the spec's rules.
    pub deletes: Vec<Arc<DeleteFileTask>>,
}

/// What planning did, for EXPLAIN ANALYZE (see [`super::exec`] for the metric names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanStats {
    /// Manifests in the snapshot's manifest list (data and delete).
    pub manifests_total: usize,
    /// Manifests skipped by their partition summaries (stage 1), never read.
    pub manifests_pruned: usize,
    /// Live data files in the manifests that were read.
    pub data_files_total: usize,
    /// Data files skipped by their partition tuple (stage 2).
    pub data_files_pruned_by_partition: usize,
    /// Data files skipped by their column metrics (stage 2).
    pub data_files_pruned_by_metrics: usize,
    /// Data files left to scan.
    pub data_files_scanned: usize,
    /// Distinct delete files that apply to a scanned data file.
    pub delete_files_matched: usize,
    /// The bytes of the data files left to scan.
    pub bytes_scanned: u64,
    /// Wall time spent planning.
    pub planning_time: std::time::Duration,
}

/// A planned scan: the data files to read and what planning skipped.
#[derive(Debug, Clone, Default)]
pub struct ScanPlan {
    /// The data files, each with the delete files that apply to it.
    pub tasks: Vec<FileScanTask>,
    /// Counts of what was read and skipped.
    pub stats: PlanStats,
}

/// The live data files of `snapshot`, in manifest-list order, each with the live delete files
/// that apply to it. Data and delete manifests are read concurrently.
pub async fn plan_files(
    io: &FileIO,
    metadata: &TableMetadata,
    snapshot: &Snapshot,
) -> Result<Vec<FileScanTask>> {
    let pruner = Pruner::none(metadata);
    Ok(plan_scan(io, metadata, snapshot, &pruner).await?.tasks)
}

/// Whether a manifest may hold live (ADDED or EXISTING) entries: unless both counts are
/// known to be 0 (they are optional in v1 manifest lists).
fn may_hold_live_files(manifest: &ManifestFile) -> bool {
    let none = |count: Option<i32>| count == Some(0);
    !(none(manifest.added_files_count) && none(manifest.existing_files_count))
}

/// [`plan_files`], skipping what `pruner` proves cannot match: manifests by their partition
/// summaries before they are read, then files by their partition tuple and column metrics.
/// Manifests whose counts say they hold no live file (only DELETED entries, as a compaction
/// leaves them) are skipped unread too, as Java's `ManifestGroup` does, and counted as pruned.
pub(crate) async fn plan_scan(
    io: &FileIO,
    metadata: &TableMetadata,
    snapshot: &Snapshot,
    pruner: &Pruner<'_>,
) -> Result<ScanPlan> {
    let started = std::time::Instant::now();
    let mut stats = PlanStats::default();
    let manifests = read_manifest_list(io, metadata, snapshot).await?;
    stats.manifests_total = manifests.len();
    let kept: Vec<ManifestFile> = manifests
        .iter()
        .filter(|m| may_hold_live_files(m) && pruner.manifest_may_match(m))
        .cloned()
        .collect();
    stats.manifests_pruned = stats.manifests_total - kept.len();
    let mut data = Vec::new();
    let mut deletes = Vec::new();
    // Read in groups, so that only one group's decoded manifests are held besides the cache.
    let mut per_manifest = Vec::new();
    for group in kept.chunks(MANIFEST_GROUP) {
        let manifests = read_manifests(io, metadata, group).await.map_err(|e| {
            match &snapshot.manifest_list {
                Some(list) => e.named_by(list),
                None => e.named_by(&format!("snapshot {}", snapshot.snapshot_id)),
            }
        })?;
        per_manifest.clear();
        for (manifest_file, manifest) in group.iter().zip(manifests) {
            per_manifest.push((
                manifest_file.content,
                manifest_tasks(manifest_file, manifest)?,
            ));
        }
        for (content, tasks) in per_manifest.drain(..) {
            match content {
                ManifestContent::Data => {
                    stats.data_files_total += tasks.len();
                    for task in tasks {
                        if !pruner.partition_may_match(task.partition_spec_id, &task.data_file) {
                            stats.data_files_pruned_by_partition += 1;
                        } else if !pruner.metrics_may_match(&task.data_file) {
                            stats.data_files_pruned_by_metrics += 1;
                        } else {
                            data.push(task);
                        }
                    }
                }
                // A delete file applies only within its partition (or everywhere, when its spec
                // is unpartitioned, which projects to "may match"): one in a partition no
                // matching row can be in deletes nothing the scan returns.
                ManifestContent::Deletes => deletes.extend(
                    tasks
                        .into_iter()
                        .filter(|t| pruner.partition_may_match(t.partition_spec_id, &t.data_file))
                        .map(|t| DeleteFileTask {
                            file: t.data_file,
                            partition_spec_id: t.partition_spec_id,
                            data_sequence_number: t.data_sequence_number,
                        }),
                ),
            }
        }
    }
    let index = DeleteIndex::new(io, metadata, deletes);
    if !index.is_empty() {
        let mut matched = std::collections::HashSet::new();
        for task in &mut data {
            task.deletes = index.deletes_for(io, task);
            matched.extend(task.deletes.iter().map(|d| Arc::as_ptr(d) as usize));
        }
        stats.delete_files_matched = matched.len();
    }
    stats.data_files_scanned = data.len();
    stats.bytes_scanned = data
        .iter()
        .map(|t| u64::try_from(t.data_file.file_size_in_bytes).unwrap_or(0))
        .sum();
    stats.planning_time = started.elapsed();
    Ok(ScanPlan { tasks: data, stats })
}

/// The live entries of a manifest whose content matches the manifest's.
fn manifest_tasks(manifest_file: &ManifestFile, manifest: Manifest) -> Result<Vec<FileScanTask>> {
    let mut tasks = Vec::with_capacity(manifest.entries.len());
    for entry in manifest.entries {
        if !entry.is_alive() {
            continue;
        }
        let is_data = entry.data_file.content == DataContentType::Data;
        if is_data != (manifest_file.content == ManifestContent::Data) {
            return Err(Error::corrupt(
                manifest_file.manifest_path.clone(),
                format!(
                    "{:?} entry {} in a {:?} manifest",
                    entry.data_file.content, entry.data_file.file_path, manifest_file.content
                ),
            ));
        }
        tasks.push(FileScanTask::new(manifest_file, entry));
    }
    Ok(tasks)
}

impl FileScanTask {
    /// The task for a live entry of `manifest_file` (no deletes attached yet).
    pub(super) fn new(manifest_file: &ManifestFile, entry: ManifestEntry) -> Self {
        Self {
            partition_spec_id: manifest_file.partition_spec_id,
            data_sequence_number: entry.sequence_number.unwrap_or(0),
            data_file: entry.data_file,
            deletes: Vec::new(),
        }
    }
}
