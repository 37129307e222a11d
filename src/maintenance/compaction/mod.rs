//! Compaction: [`rewrite_data_files`] rewrites the current snapshot's small, oversized or
//! heavily deleted data files into files of the target size, as Iceberg Java's
//! `RewriteDataFiles` action does (its option names, defaults and commits):
//!
//! 1. **Plan** ([`plan`]): candidates by size and deletes, grouped by partition, groups worth
//!    rewriting; `where` limits it to files that may hold matching rows.
//! 2. **Rewrite** ([`execute`]): each group's live rows (deletes applied) read once and written
//!    in the default spec, `binpack` (as read) or `sort` (by the table's or a given sort order),
//!    several groups at once (`max-concurrent-file-group-rewrites`).
//! 3. **Commit**: one `replace` snapshot removing the group's files (and every delete file
//!    that applies to no other live data file: the rows are rewritten without what it
//!    deleted) and adding the new ones, which keep the
//!    starting snapshot's data sequence number (`use-starting-sequence-number`), so that
//!    equality deletes committed meanwhile still apply. Concurrent appends never conflict; a
//!    concurrent commit that removed a rewritten file or added a position delete or deletion
//!    vector that may apply to one fails the commit with [`Error::CommitConflict`] (a lost
//!    pointer race alone is retried). With `partial-progress.enabled` the groups are committed
//!    in up to `partial-progress.max-commits` commits as they finish, and a failed group or
//!    commit leaves the others committed; otherwise one commit, all or nothing.
//! 4. With `remove-dangling-deletes`, delete files that then apply to no live data file
//!    ([`dangling`]) are removed in one more `replace` snapshot.
//!
//! Whatever does not commit is deleted (data files of failed groups, of a failed commit, of a
//! cancelled run); after [`Error::CommitStateUnknown`] the files are kept, since they may be
//! committed.

mod dangling;
mod execute;
mod options;
pub(crate) mod plan;
mod position_deletes;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use datafusion::prelude::SessionConfig;
use futures::StreamExt;

use crate::error::{Error, Result};
use crate::scan::plan::Pruner;
use crate::scan::{FileScanTask, plan_files};
use crate::spec::snapshot::Operation;
use crate::spec::{DataFile, FormatVersion, Snapshot};
use crate::table::Table;
use crate::transaction::{Isolation, RowDelta, WriteTarget, delete_all};
pub use execute::Cancel;
use execute::Rewriter;
pub use options::{RewriteDataFiles, Strategy};
use plan::{Group, plan_groups};
pub use position_deletes::{
    RewritePositionDeletes, RewritePositionDeletesResult, rewrite_position_delete_files,
};

/// What a compaction did (Spark's `rewrite_data_files` output, and the snapshots it made).
#[derive(Debug, Clone, Default)]
pub struct RewriteDataFilesResult {
    /// Data files removed by committed rewrites.
    pub rewritten_data_files: usize,
    /// Data files written in their place.
    pub added_data_files: usize,
    /// The bytes of the rewritten files.
    pub rewritten_bytes: u64,
    /// The bytes of the files written.
    pub added_bytes: u64,
    /// Data files of groups that failed or did not commit (partial progress only).
    pub failed_data_files: usize,
    /// Delete files removed (of rewritten files, and dangling ones).
    pub removed_delete_files: usize,
    /// The snapshots committed, oldest first.
    pub snapshots: Vec<i64>,
    /// The table after the last commit (`None` when nothing was committed).
    pub table: Option<Table>,
}

/// A group rewritten: its input and the files written for it.
struct Rewritten {
    group: Group,
    files: Vec<(i32, DataFile)>,
}

/// Compacts the current snapshot of `main` of the table `target` names (see the module docs).
pub async fn rewrite_data_files(
    target: &WriteTarget,
    options: &RewriteDataFiles,
) -> Result<RewriteDataFilesResult> {
    let table = target.load().await?;
    table.ensure_writable()?;
    let metadata = Arc::clone(table.metadata());
    let Some(start) = metadata.current_snapshot().cloned() else {
        return Ok(RewriteDataFilesResult::default());
    };
    let limits = options.limits(&metadata)?;
    // Checked before planning: `sort` on an unsorted table fails even with nothing to rewrite.
    let order = options.order(&metadata)?;
    let pruner = match &options.filter {
        Some(filter) => Pruner::new(&metadata, metadata.current_schema(), filter.clone()),
        None => Pruner::none(&metadata),
    };
    // Every live file, to know which data files each delete file applies to; the filter
    // only chooses the candidates.
    let tasks = plan_files(table.io(), &metadata, &start).await?;
    let deletes = DeleteTargets::of(&tasks);
    let candidates = tasks.into_iter().filter(|t| {
        pruner.partition_may_match(t.partition_spec_id, &t.data_file)
            && pruner.metrics_may_match(&t.data_file)
    });
    let groups = plan_groups(candidates.collect(), &limits);
    let mut result = RewriteDataFilesResult::default();
    if !groups.is_empty() {
        let total: u64 = groups.iter().map(|g| g.bytes).sum();
        let rewriter = Rewriter {
            table: &table,
            order,
            target_size: limits.target,
            config: SessionConfig::new(),
            cancel: options.cancel.clone(),
            stop: Cancel::new(),
            progress: options.progress.clone(),
            progress_total: total,
            progress_done: Arc::new(AtomicU64::new(0)),
        };
        let mut commits = Commits {
            target,
            table: &table,
            start: &start,
            options,
            deletes,
            removed: HashSet::new(),
            result: &mut result,
        };
        let done = commits.run(&rewriter, groups).await;
        done.map_err(|e| after_commits(e, &result, &metadata.location))?;
    }
    if options.remove_dangling_deletes {
        let done = remove_dangling(target, options, &mut result).await;
        done.map_err(|e| after_commits(e, &result, &metadata.location))?;
    }
    Ok(result)
}

/// A cancellation after commits of partial progress says which of them stay.
fn after_commits(e: Error, result: &RewriteDataFilesResult, table: &str) -> Error {
    match e {
        Error::Cancelled(_) if !result.snapshots.is_empty() => {
            let snapshots: Vec<String> = result.snapshots.iter().map(i64::to_string).collect();
            Error::Cancelled(format!(
                "compaction of {table}: the {} commit(s) made before (snapshots {}: {} data \
                 file(s) rewritten into {}) stay; nothing more was committed and the files \
                 written since were deleted",
                result.snapshots.len(),
                snapshots.join(", "),
                result.rewritten_data_files,
                result.added_data_files
            ))
        }
        e => e,
    }
}

/// Which live data files each delete file applies to (by the scan's rules), so that a delete
/// file goes when every one of them is rewritten.
struct DeleteTargets(HashMap<(String, Option<i64>), (DataFile, HashSet<String>)>);

impl DeleteTargets {
    fn of(tasks: &[FileScanTask]) -> Self {
        let mut targets: HashMap<(String, Option<i64>), (DataFile, HashSet<String>)> =
            HashMap::new();
        for task in tasks {
            for delete in &task.deletes {
                let key = (delete.file.file_path.clone(), delete.file.content_offset);
                let entry = targets
                    .entry(key)
                    .or_insert_with(|| (delete.file.clone(), HashSet::new()));
                entry.1.insert(task.data_file.file_path.clone());
            }
        }
        Self(targets)
    }

    /// The delete files of `groups`' files that apply to no data file but those in `removed`.
    fn left_without_targets<'a>(
        &'a self,
        groups: &[Rewritten],
        removed: &HashSet<String>,
    ) -> Vec<&'a DataFile> {
        let mut keys = HashSet::new();
        for task in groups.iter().flat_map(|r| &r.group.tasks) {
            for delete in &task.deletes {
                keys.insert((delete.file.file_path.clone(), delete.file.content_offset));
            }
        }
        keys.into_iter()
            .filter_map(|key| self.0.get(&key))
            .filter(|(_, targets)| targets.is_subset(removed))
            .map(|(file, _)| file)
            .collect()
    }
}

/// The commits of one compaction: what they share, and the data files removed so far.
struct Commits<'a> {
    target: &'a WriteTarget,
    table: &'a Table,
    start: &'a Snapshot,
    options: &'a RewriteDataFiles,
    deletes: DeleteTargets,
    removed: HashSet<String>,
    result: &'a mut RewriteDataFilesResult,
}

impl Commits<'_> {
    /// Rewrites `groups` (several at once) and commits them: in batches as they finish with
    /// partial progress, else all in one commit once every group is rewritten.
    async fn run(&mut self, rewriter: &Rewriter<'_>, groups: Vec<Group>) -> Result<()> {
        let options = self.options;
        let batch = match options.partial_progress {
            true => groups.len().div_ceil(options.max_commits.max(1)),
            false => groups.len(),
        };
        let concurrency = options.max_concurrent_groups.max(1);
        let files_total: usize = groups.iter().map(|g| g.tasks.len()).sum();
        let mut files_done = 0;
        options.file_progress.report(files_done, files_total);
        let mut finished = futures::stream::iter(groups)
            .map(|group| async move {
                let files = rewriter.rewrite(&group).await;
                (group, files)
            })
            .buffer_unordered(concurrency);
        let mut pending: Vec<Rewritten> = Vec::new();
        let mut failure = None;
        while let Some((group, files)) = finished.next().await {
            files_done += group.tasks.len();
            options.file_progress.report(files_done, files_total);
            match files {
                Ok(files) => pending.push(Rewritten { group, files }),
                Err(e) if failure.is_some() => drop(e),
                Err(e) if options.partial_progress && !matches!(e, Error::Cancelled(_)) => {
                    self.result.failed_data_files += group.tasks.len();
                }
                Err(e) => {
                    // The groups still running stop at their next batch and delete their files.
                    rewriter.stop.cancel();
                    failure = Some(e);
                }
            }
            if pending.len() >= batch
                && failure.is_none()
                && let Err(e) = self.commit(std::mem::take(&mut pending)).await
            {
                // The groups still running are drained (and their files deleted), not dropped
                // with their files half written.
                rewriter.stop.cancel();
                failure = Some(e);
            }
        }
        if let Some(e) = failure {
            discard(self.table, pending).await;
            return Err(e);
        }
        if !pending.is_empty() {
            self.commit(pending).await?;
        }
        Ok(())
    }

    /// Commits rewritten groups as one `replace` snapshot (see the module docs). A failed
    /// commit deletes their files; with partial progress it only counts them as failed.
    async fn commit(&mut self, done: Vec<Rewritten>) -> Result<()> {
        let (table, options) = (self.table, self.options);
        if let Err(e) = options.cancel.check(&table.metadata().location) {
            discard(table, done).await;
            return Err(e);
        }
        let mut delta = RowDelta::new(Some(self.start.snapshot_id))
            .operation(Operation::Replace)
            .isolation(Isolation::Snapshot);
        let seq = self.start.sequence_number;
        if options.use_starting_sequence_number
            && table.metadata().format_version >= FormatVersion::V2
            && seq > 0
        {
            delta = delta.with_data_sequence_number(seq);
        }
        let mut removed = self.removed.clone();
        let (mut rewritten, mut bytes, mut added) = (0, 0u64, Vec::new());
        for Rewritten { group, files } in &done {
            for task in &group.tasks {
                delta = delta.remove_data_file(task.partition_spec_id, &task.data_file);
                removed.insert(task.data_file.file_path.clone());
            }
            rewritten += group.tasks.len();
            bytes += group.bytes;
            added.extend(files.iter().cloned());
        }
        let orphaned = self.deletes.left_without_targets(&done, &removed);
        for delete in &orphaned {
            delta = delta.remove_delete_file(delete);
        }
        let added_bytes: u64 = added
            .iter()
            .map(|(_, f)| u64::try_from(f.file_size_in_bytes).unwrap_or(0))
            .sum();
        let (added_count, removed_deletes) = (added.len(), orphaned.len());
        let paths: Vec<String> = added.iter().map(|(_, f)| f.file_path.clone()).collect();
        delta = delta.add_data_files(added);
        let snapshot_id = delta.snapshot_id();
        let committed = match self.target.load().await {
            Ok(base) => {
                self.target
                    .transaction(base)
                    .with_action(delta)
                    .commit()
                    .await
            }
            Err(e) => Err(e),
        };
        match committed {
            Ok(committed) => {
                let result = &mut *self.result;
                result.rewritten_data_files += rewritten;
                result.rewritten_bytes += bytes;
                result.added_data_files += added_count;
                result.added_bytes += added_bytes;
                result.removed_delete_files += removed_deletes;
                result.snapshots.push(snapshot_id);
                result.table = Some(committed);
                self.removed = removed;
                Ok(())
            }
            Err(e @ Error::CommitStateUnknown { .. }) => Err(e),
            Err(e) => {
                delete_all(table.io(), &paths).await;
                match options.partial_progress {
                    true => {
                        self.result.failed_data_files += rewritten;
                        Ok(())
                    }
                    false => Err(e),
                }
            }
        }
    }
}

/// Deletes the files written for groups that will not be committed.
async fn discard(table: &Table, done: Vec<Rewritten>) {
    let paths: Vec<String> = done
        .iter()
        .flat_map(|r| r.files.iter().map(|(_, f)| f.file_path.clone()))
        .collect();
    delete_all(table.io(), &paths).await;
}

/// Removes the delete files of the current snapshot that apply to no live data file, in one
/// `replace` snapshot.
async fn remove_dangling(
    target: &WriteTarget,
    options: &RewriteDataFiles,
    result: &mut RewriteDataFilesResult,
) -> Result<()> {
    let table = target.load().await?;
    options.cancel.check(&table.metadata().location)?;
    let Some(current) = table.metadata().current_snapshot().cloned() else {
        return Ok(());
    };
    let dangling = dangling::dangling_deletes(table.io(), table.metadata(), &current).await?;
    if dangling.is_empty() {
        return Ok(());
    }
    let mut delta = RowDelta::new(Some(current.snapshot_id))
        .operation(Operation::Replace)
        .isolation(Isolation::Snapshot);
    for (_, file) in &dangling {
        delta = delta.remove_delete_file(file);
    }
    let snapshot_id = delta.snapshot_id();
    let committed = target
        .transaction(table)
        .with_action(delta)
        .commit()
        .await?;
    result.removed_delete_files += dangling.len();
    result.snapshots.push(snapshot_id);
    result.table = Some(committed);
    Ok(())
}

#[cfg(test)]
mod tests;
