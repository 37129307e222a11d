//! Snapshot management of one table: branches and tags, fast-forward, rollback, cherry-pick,
//! and snapshot expiration with the deletion of the files only expired snapshots reach. Each
//! change is a [`crate::transaction::Transaction`] of one action: atomic, retried on a lost
//! race by stating the action again on the new version.
//!
//! ```no_run
//! # async fn example(io: icefloe::FileIO) -> icefloe::Result<()> {
//! use icefloe::maintenance::{ExpireSnapshots, SnapshotManager};
//! let manager = SnapshotManager::new(icefloe::WriteTarget::directory(&io, "/wh/db/t")?);
//! manager.create_tag("v1", None, None).await?;
//! let report = manager
//!     .expire_snapshots(&ExpireSnapshots::new().with_retain_last(10))
//!     .await?;
//! println!("expired {:?}, deleted {} files", report.expired, report.deleted_files.len());
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use crate::commit::AppendFiles;
use crate::error::{Error, Result};
use crate::io::{FileIO, KeptReason, TableScope};
use crate::scan::{read_manifest, read_manifest_list};
use crate::spec::properties::GC_ENABLED;
use crate::spec::snapshot::Operation;
use crate::spec::{ManifestContent, ManifestStatus};
use crate::table::Table;
use crate::transaction::{Action, MoveBranch, RemoveRef, SetRef, WriteTarget};
use crate::write::reachable_files;

pub use crate::transaction::BranchRetention;

/// Manages the snapshots and refs of the table `target` names.
#[derive(Debug, Clone)]
pub struct SnapshotManager {
    target: WriteTarget,
}

/// A callback told `(done, total)` as long work advances (the CLI draws a progress bar).
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<dyn Fn(usize, usize) + Send + Sync>>);

impl Progress {
    /// A progress callback.
    pub fn new(report: impl Fn(usize, usize) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(report)))
    }

    /// Tells the callback, if any.
    pub fn report(&self, done: usize, total: usize) {
        if let Some(report) = &self.0 {
            report(done, total);
        }
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Progress(..)"
        } else {
            "Progress(none)"
        })
    }
}

/// What [`SnapshotManager::expire_snapshots`] expires beyond the retention policy, and how.
#[derive(Debug, Clone, Default)]
pub struct ExpireSnapshots {
    /// Snapshots older than this (epoch ms) may expire: the max-snapshot-age of every branch
    /// without its own setting (Java's `expireOlderThan`).
    pub older_than_ms: Option<i64>,
    /// The min-snapshots-to-keep of every branch without its own setting (Java's
    /// `retainLast`).
    pub retain_last: Option<i32>,
    /// Snapshots to expire by id, besides those the policy expires; a snapshot a ref points
    /// at cannot be one.
    pub snapshot_ids: Vec<i64>,
    /// Only say what would be expired and deleted.
    pub dry_run: bool,
    /// The time the policy is evaluated at (default: now).
    pub now_ms: Option<i64>,
    /// Told `(deleted, total)` while files are deleted.
    pub progress: Progress,
}

impl ExpireSnapshots {
    /// Expiration by the table's retention policy alone, now, deleting what it frees.
    pub fn new() -> Self {
        Self::default()
    }

    /// Snapshots older than `timestamp_ms` may expire (see [`Self::older_than_ms`]).
    pub fn with_older_than_ms(mut self, timestamp_ms: i64) -> Self {
        self.older_than_ms = Some(timestamp_ms);
        self
    }

    /// Each branch without its own setting keeps `n` snapshots (see [`Self::retain_last`]).
    pub fn with_retain_last(mut self, n: i32) -> Self {
        self.retain_last = Some(n);
        self
    }

    /// Also expires these snapshots.
    pub fn with_snapshot_ids(mut self, ids: impl IntoIterator<Item = i64>) -> Self {
        self.snapshot_ids = ids.into_iter().collect();
        self
    }

    /// Only reports what would be expired and deleted.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// Evaluates the policy as if it were `now_ms`.
    pub fn with_now_ms(mut self, now_ms: i64) -> Self {
        self.now_ms = Some(now_ms);
        self
    }

    /// Tells `progress` while files are deleted.
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = progress;
        self
    }
}

/// What an expiration did (or, dry, would do).
#[derive(Debug, Clone)]
pub struct ExpireReport {
    /// The expired snapshots.
    pub expired: Vec<i64>,
    /// The refs removed for their age.
    pub removed_refs: Vec<String>,
    /// The files no kept snapshot reaches any more that were deleted (or, dry, would be):
    /// manifest lists, manifests, data and delete files, statistics files.
    pub deleted_files: Vec<String>,
    /// The files no kept snapshot reaches any more that were kept, with the reason: outside
    /// the table location (a destructive operation deletes only under it), a symbolic link,
    /// or every file when the table's `gc.enabled` is `false`.
    pub kept_files: Vec<(String, KeptReason)>,
    /// The table after the commit (`None` for a dry run, or when nothing expired).
    pub table: Option<Table>,
}

impl SnapshotManager {
    /// A manager of the table `target` names.
    pub fn new(target: WriteTarget) -> Self {
        Self { target }
    }

    /// The IO the manager reads and writes through.
    pub fn io(&self) -> &FileIO {
        self.target.io()
    }

    /// Where the table's pointer lives.
    pub fn target(&self) -> &WriteTarget {
        &self.target
    }

    /// The table as its pointer says now, beyond doubt (for destructive operations).
    pub async fn table(&self) -> Result<Table> {
        self.target.load_for_write().await
    }

    /// The table's current snapshot, as its pointer says now.
    pub async fn current_snapshot_id(&self) -> Result<Option<i64>> {
        Ok(self.target.load().await?.metadata().current_snapshot_id)
    }

    /// Creates branch `name` at `snapshot_id` (default: the current snapshot). An existing
    /// ref of that name is [`Error::AlreadyExists`].
    pub async fn create_branch(
        &self,
        name: &str,
        snapshot_id: Option<i64>,
        retention: BranchRetention,
    ) -> Result<Table> {
        self.commit(SetRef::create_branch(name, snapshot_id, retention))
            .await
    }

    /// Creates tag `name` at `snapshot_id` (default: the current snapshot).
    pub async fn create_tag(
        &self,
        name: &str,
        snapshot_id: Option<i64>,
        max_ref_age_ms: Option<i64>,
    ) -> Result<Table> {
        self.commit(SetRef::create_tag(name, snapshot_id, max_ref_age_ms))
            .await
    }

    /// Points the existing tag `name` at `snapshot_id`, keeping its retention.
    pub async fn replace_tag(&self, name: &str, snapshot_id: i64) -> Result<Table> {
        self.commit(SetRef::replace_tag(name, snapshot_id)).await
    }

    /// Points branch `name` at any `snapshot_id` (not only an ancestor or a descendant),
    /// keeping its retention; `main` moves the current snapshot.
    pub async fn replace_branch(&self, name: &str, snapshot_id: i64) -> Result<Table> {
        self.commit(SetRef::replace_branch(name, snapshot_id)).await
    }

    /// Drops branch or tag `name`; `main` never.
    pub async fn drop_ref(&self, name: &str) -> Result<Table> {
        self.commit(RemoveRef::new(name)).await
    }

    /// Moves branch `branch` forward to the head of ref `to`, which must descend from it.
    pub async fn fast_forward(&self, branch: &str, to: &str) -> Result<Table> {
        self.commit(MoveBranch::fast_forward(branch, to)).await
    }

    /// Applies the append snapshot `snapshot_id` (typically staged on another branch, or left
    /// off main by a rollback) to `main` as a new snapshot adding the same data files, with
    /// `source-snapshot-id` in its summary. Only `append` snapshots can be cherry-picked, and
    /// not one that is already an ancestor of main or was already picked onto it.
    pub async fn cherry_pick(&self, snapshot_id: i64) -> Result<Table> {
        let table = self.target.load().await?;
        let metadata = table.metadata();
        let source = metadata
            .snapshot_by_id(snapshot_id)
            .ok_or_else(|| Error::not_found(format!("snapshot {snapshot_id}")))?;
        let operation = source.summary.as_ref().map(|s| &s.operation);
        if operation != Some(&Operation::Append) {
            return Err(Error::invalid(
                format!("snapshot {snapshot_id}"),
                format!(
                    "it is not an append ({}): only appends can be cherry-picked",
                    operation.map_or("no summary", |o| o.as_str())
                ),
            ));
        }
        let picked = snapshot_id.to_string();
        let already = metadata.ancestors_of_current().any(|s| {
            s.snapshot_id == snapshot_id
                || s.summary.as_ref().and_then(|x| x.get("source-snapshot-id"))
                    == Some(picked.as_str())
        });
        if already {
            return Err(Error::invalid(
                format!("snapshot {snapshot_id}"),
                "it is already on main",
            ));
        }
        let io = table.io();
        let mut files = Vec::new();
        for manifest in read_manifest_list(io, metadata, source).await?.iter() {
            if manifest.added_snapshot_id != snapshot_id
                || manifest.content != ManifestContent::Data
            {
                continue;
            }
            let read = read_manifest(io, metadata, manifest).await?;
            files.extend(
                read.entries
                    .into_iter()
                    .filter(|e| e.status == ManifestStatus::Added)
                    .map(|e| (manifest.partition_spec_id, e.data_file)),
            );
        }
        let mut append = AppendFiles::new(files);
        append
            .summary_properties
            .insert("source-snapshot-id".into(), picked);
        crate::commit::append_to(self.target.transaction(table), append).await
    }

    /// Makes `snapshot_id`, an ancestor of the current snapshot, current again.
    pub async fn rollback_to_snapshot(&self, snapshot_id: i64) -> Result<Table> {
        self.commit(MoveBranch::rollback_to_snapshot(snapshot_id))
            .await
    }

    /// Makes current again the newest ancestor of the current snapshot committed at or before
    /// `timestamp_ms` (Java's `rollbackToTime`).
    pub async fn rollback_to_time(&self, timestamp_ms: i64) -> Result<Table> {
        self.commit(MoveBranch::rollback_to_time(timestamp_ms))
            .await
    }

    /// Expires snapshots by the table's retention policy (and `options`), commits, then
    /// deletes the files that only expired snapshots reached. The files are found by
    /// reachability from the metadata before and after, never by listing. A dry run commits
    /// and deletes nothing.
    pub async fn expire_snapshots(&self, options: &ExpireSnapshots) -> Result<ExpireReport> {
        let before = self.target.load_for_write().await?;
        // Read now: a bad value must fail the expiration before it commits, not after.
        GC_ENABLED.get(before.metadata())?;
        let now = options.now_ms.unwrap_or_else(crate::catalog::now_ms);
        let action = crate::transaction::ExpireSnapshots::new()
            .with_older_than_ms(options.older_than_ms)
            .with_retain_last(options.retain_last)
            .with_snapshot_ids(options.snapshot_ids.clone())
            .with_now_ms(Some(now));
        let (expired, removed_refs) = action.plan(before.metadata(), now)?;
        if expired.is_empty() {
            return Ok(ExpireReport {
                expired,
                removed_refs,
                deleted_files: Vec::new(),
                kept_files: Vec::new(),
                table: None,
            });
        }
        let after = match options.dry_run {
            true => {
                let updates = removed_refs
                    .iter()
                    .map(|name| crate::spec::TableUpdate::RemoveSnapshotRef {
                        ref_name: name.clone(),
                    })
                    .chain(std::iter::once(crate::spec::TableUpdate::RemoveSnapshots {
                        snapshot_ids: expired.clone(),
                    }))
                    .collect::<Vec<_>>();
                let planned = before
                    .metadata()
                    .apply(&updates, &crate::spec::ApplyContext::new(now))?;
                Table::from_parts(
                    before.io().clone(),
                    before.metadata_location().to_string(),
                    Arc::new(planned),
                )
            }
            false => {
                self.target
                    .transaction(before.clone())
                    .with_action(action)
                    .commit()
                    .await?
            }
        };
        let committed = after.metadata();
        let expired: Vec<i64> = before
            .metadata()
            .snapshots
            .iter()
            .map(|s| s.snapshot_id)
            .filter(|id| committed.snapshot_by_id(*id).is_none())
            .collect();
        let removed_refs: Vec<String> = before
            .metadata()
            .refs
            .keys()
            .filter(|name| !committed.refs.contains_key(*name))
            .cloned()
            .collect();
        let kept = reachable_files(&after).await?;
        let unreachable: Vec<String> = reachable_files(&before)
            .await?
            .difference(&kept)
            .filter(|path| !is_metadata_file(path))
            .cloned()
            .collect();
        let (deleted_files, kept_files) = delete_unreachable(&after, unreachable, options).await?;
        Ok(ExpireReport {
            expired,
            removed_refs,
            deleted_files,
            kept_files,
            table: (!options.dry_run).then_some(after),
        })
    }

    /// Commits one action on the table's current version.
    async fn commit(&self, action: impl Action + 'static) -> Result<Table> {
        self.target
            .begin()
            .await?
            .with_action(action)
            .commit()
            .await
    }
}

/// Deletes (unless dry) the files expiration made unreachable that lie under the table
/// location ([`TableScope`]), none when `gc.enabled` is `false`; returns the deleted files and
/// the kept ones with their reasons.
async fn delete_unreachable(
    table: &Table,
    unreachable: Vec<String>,
    options: &ExpireSnapshots,
) -> Result<(Vec<String>, Vec<(String, KeptReason)>)> {
    let metadata = table.metadata();
    if !GC_ENABLED.get(metadata)? {
        let kept = unreachable.into_iter().map(|f| (f, KeptReason::GcDisabled));
        return Ok((Vec::new(), kept.collect()));
    }
    let scope = TableScope::new(table.io(), &metadata.location)?;
    let (mut deleted, mut kept) = (Vec::new(), Vec::new());
    let total = unreachable.len();
    for (done, path) in unreachable.into_iter().enumerate() {
        match scope.check(&path) {
            Err(reason) => kept.push((path, reason)),
            Ok(()) if options.dry_run => deleted.push(path),
            Ok(()) => {
                // Best effort: the commit stands; a file left behind is an orphan.
                let _ = scope.delete(&path).await;
                deleted.push(path);
            }
        }
        if !options.dry_run {
            options.progress.report(done + 1, total);
        }
    }
    Ok((deleted, kept))
}

/// Metadata files and the version hint: expiration leaves them to the metadata log's rules.
fn is_metadata_file(path: &str) -> bool {
    path.ends_with(".metadata.json")
        || path.ends_with(".metadata.json.gz")
        || path.ends_with(".gz.metadata.json")
        || path.ends_with("version-hint.text")
}

#[cfg(test)]
#[path = "snapshots_tests.rs"]
mod tests;
