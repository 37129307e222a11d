//! Which data files a compaction rewrites, in which groups (Iceberg Java's
//! `BinPackRewriteFilePlanner` / `SizeBasedFileRewritePlanner`), decided from the scan tasks
//! alone (no IO):
//!
//! 1. A file is a candidate when it is smaller than `min-file-size-bytes` or larger than
//!    `max-file-size-bytes`, when at least `delete-file-threshold` delete files apply to it,
//!    when its file-scoped deletes (deletion vectors, position deletes of it alone) remove at
//!    least `delete-ratio-threshold` of its rows, or always with `rewrite-all`.
//! 2. Candidates are grouped by partition (spec id and partition tuple) and, within one, packed
//!    in scan order into groups of at most `max-file-group-size-bytes`.
//! 3. A group is rewritten when it has at least `min-input-files` files (and more than one),
//!    more than one file holding more than the target size together, more than
//!    `max-file-size-bytes` in all (a file to split), a file with too many deletes, or with
//!    `rewrite-all`.
//!
//! A group's expected number of output files follows Java's `numOutputFiles`: its bytes over
//! the target size, rounded up when the remainder is worth a file of its own.

use std::collections::BTreeMap;

use crate::scan::FileScanTask;
use crate::spec::{DataContentType, DataFile};

/// The size and delete limits of a compaction (Java's option names in the docs).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Limits {
    /// `target-file-size-bytes`: what each output file aims at.
    pub(crate) target: u64,
    /// `min-file-size-bytes`: smaller files are rewritten (default 75 % of the target).
    pub(crate) min: u64,
    /// `max-file-size-bytes`: larger files are rewritten (default 180 % of the target).
    pub(crate) max: u64,
    /// `min-input-files`: a group of this many files is rewritten (default 5).
    pub(crate) min_input_files: usize,
    /// `delete-file-threshold`: a file with this many delete files is rewritten.
    pub(crate) delete_file_threshold: usize,
    /// `delete-ratio-threshold`: a file whose known deletes remove this share of its rows is
    /// rewritten (default 0.3).
    pub(crate) delete_ratio_threshold: f64,
    /// `max-file-group-size-bytes`: the most one group holds (default 100 GiB).
    pub(crate) max_group_bytes: u64,
    /// `rewrite-all`: every file, whatever its size.
    pub(crate) rewrite_all: bool,
}

impl Limits {
    /// Java's defaults around a target size.
    pub(crate) fn around(target: u64) -> Self {
        Self {
            target,
            min: target / 4 * 3,
            max: target / 10 * 18,
            min_input_files: 5,
            delete_file_threshold: usize::MAX,
            delete_ratio_threshold: 0.3,
            max_group_bytes: 100 * 1024 * 1024 * 1024,
            rewrite_all: false,
        }
    }

    /// The largest file a writer should make (Java's `writeMaxFileSize`: halfway between the
    /// target and the maximum).
    fn write_max(&self) -> u64 {
        self.target + self.max.saturating_sub(self.target) / 2
    }

    fn wrongly_sized(&self, task: &FileScanTask) -> bool {
        let size = file_bytes(task);
        size < self.min || size > self.max
    }

    fn too_many_deletes(&self, task: &FileScanTask) -> bool {
        task.deletes.len() >= self.delete_file_threshold
    }

    /// Deletes known to remove rows of this file alone, over its rows.
    fn too_high_delete_ratio(&self, task: &FileScanTask) -> bool {
        let rows = task.data_file.record_count;
        if task.deletes.is_empty() || rows <= 0 {
            return false;
        }
        let path = task.data_file.file_path.as_str();
        let known: i64 = task
            .deletes
            .iter()
            .filter(|d| d.file.content == DataContentType::PositionDeletes)
            .filter(|d| d.file.referenced_data_file.as_deref() == Some(path))
            .map(|d| d.file.record_count)
            .sum();
        known.min(rows) as f64 / rows as f64 >= self.delete_ratio_threshold
    }

    fn is_candidate(&self, task: &FileScanTask) -> bool {
        self.rewrite_all
            || self.wrongly_sized(task)
            || self.too_many_deletes(task)
            || self.too_high_delete_ratio(task)
    }

    fn should_rewrite(&self, group: &[FileScanTask]) -> bool {
        let bytes: u64 = group.iter().map(file_bytes).sum();
        let several = group.len() > 1;
        self.rewrite_all
            || (several && group.len() >= self.min_input_files)
            || (several && bytes > self.target)
            || bytes > self.max
            || group.iter().any(|t| self.too_many_deletes(t))
            || group.iter().any(|t| self.too_high_delete_ratio(t))
    }

    /// Java's `numOutputFiles`: how many files of about the target size `bytes` make.
    pub(crate) fn output_files(&self, bytes: u64) -> usize {
        let target = self.target.max(1);
        if bytes < target {
            return 1;
        }
        let (floor, remainder) = (bytes / target, bytes % target);
        let ceil = floor + u64::from(remainder > 0);
        let files = if remainder > self.min {
            ceil
        } else if (bytes / floor) < (target + target / 10).min(self.write_max()) {
            floor
        } else {
            ceil
        };
        usize::try_from(files).unwrap_or(usize::MAX)
    }
}

fn file_bytes(task: &FileScanTask) -> u64 {
    u64::try_from(task.data_file.file_size_in_bytes).unwrap_or(0)
}

/// Files to rewrite together: of one partition, written again as `output_files` files.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub(crate) tasks: Vec<FileScanTask>,
    pub(crate) bytes: u64,
    pub(crate) output_files: usize,
}

/// The groups a compaction with `limits` rewrites from the live files `tasks` (see the module
/// docs), ordered by partition.
pub(crate) fn plan_groups(tasks: Vec<FileScanTask>, limits: &Limits) -> Vec<Group> {
    let mut by_partition: BTreeMap<PartitionKey, Vec<FileScanTask>> = BTreeMap::new();
    for task in tasks.into_iter().filter(|t| limits.is_candidate(t)) {
        let key = partition_key(task.partition_spec_id, &task.data_file);
        by_partition.entry(key).or_default().push(task);
    }
    let mut groups = Vec::new();
    for tasks in by_partition.into_values() {
        for bin in pack(tasks, limits.max_group_bytes) {
            if limits.should_rewrite(&bin) {
                let bytes = bin.iter().map(file_bytes).sum();
                let output_files = limits.output_files(bytes);
                groups.push(Group {
                    tasks: bin,
                    bytes,
                    output_files,
                });
            }
        }
    }
    groups
}

/// A partition: a spec id and the binary single values of its tuple (comparable).
pub(crate) type PartitionKey = (i32, Vec<Option<Vec<u8>>>);

/// The partition of `file`, written with spec `spec_id`.
pub(crate) fn partition_key(spec_id: i32, file: &DataFile) -> PartitionKey {
    let tuple = file.partition.iter();
    (
        spec_id,
        tuple.map(|v| v.as_ref().map(|v| v.to_bytes())).collect(),
    )
}

/// Packs `tasks` in order into bins of at most `max_bytes` (a file larger than that is a bin
/// of its own): Java's `ListPacker` with a lookback of one.
fn pack(tasks: Vec<FileScanTask>, max_bytes: u64) -> Vec<Vec<FileScanTask>> {
    let mut bins: Vec<Vec<FileScanTask>> = Vec::new();
    let mut open_bytes = 0u64;
    for task in tasks {
        let bytes = file_bytes(&task);
        match bins.last_mut() {
            Some(bin) if open_bytes.saturating_add(bytes) <= max_bytes => {
                bin.push(task);
                open_bytes += bytes;
            }
            _ => {
                bins.push(vec![task]);
                open_bytes = bytes;
            }
        }
    }
    bins
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
