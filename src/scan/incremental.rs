//! Incremental reads: the data files appended by the snapshots after one snapshot up to and
//! including a later one on the same branch (spec: snapshot `parent-snapshot-id`,
//! `summary.operation`, manifest `added_snapshot_id`, entry `status` and `snapshot_id`).
//!
//! Choosing the snapshots is pure ([`IncrementalRange::resolve`]); planning reads, for each
//! chosen snapshot, its manifest list, the manifests that snapshot wrote (stage 1:
//! `added_snapshot_id`), and their `ADDED` entries written by it. Going through each snapshot's
//! own list, not only the last one's, keeps files whose entries a later merge-append rewrote as
//! `EXISTING`.

#[cfg(test)]
mod tests;

use futures::{StreamExt, TryStreamExt, stream};

use super::plan::{FileScanTask, MANIFEST_CONCURRENCY};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::spec::snapshot::Operation;
use crate::spec::{
    DataContentType, ManifestContent, ManifestFile, ManifestStatus, Snapshot, SnapshotSelector,
    TableMetadata,
};
use crate::table::{read_manifest, read_manifest_list};

/// The snapshots an incremental read covers: those after `from_exclusive` up to and including
/// `to`, on `to`'s parent chain, all of them appends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncrementalRange {
    /// The snapshot whose rows (and its ancestors' rows) are left out.
    pub from_exclusive: i64,
    /// The last snapshot whose appended rows are read.
    pub to: i64,
    /// The snapshots in `(from_exclusive, to]`, oldest first; empty when `from == to`.
    pub snapshot_ids: Vec<i64>,
}

impl IncrementalRange {
    /// Chooses the snapshots of an incremental read of `metadata` (`table` names the table in
    /// errors).
    ///
    /// `to` is the current snapshot, a snapshot id, a branch, or a timestamp (the snapshot
    /// current then). Errors: an unknown snapshot or ref is [`Error::NotFound`]; a tag, a
    /// `from` that is not an ancestor of `to`, and a snapshot in between that is not an
    /// `append` are [`Error::InvalidArgument`] naming them.
    pub fn resolve(
        metadata: &TableMetadata,
        table: &str,
        from_exclusive: i64,
        to: &SnapshotSelector,
    ) -> Result<Self> {
        let to = resolve_to(metadata, table, to)?;
        if metadata.snapshot_by_id(from_exclusive).is_none() {
            return Err(Error::not_found(format!(
                "snapshot {from_exclusive} in table {table}"
            )));
        }
        let mut between = Vec::new();
        let mut reached = false;
        for snapshot in metadata.ancestors_of(Some(to)) {
            if snapshot.snapshot_id == from_exclusive {
                reached = true;
                break;
            }
            between.push(snapshot);
        }
        if !reached {
            return Err(Error::invalid(
                read_of(table),
                format_args!(
                    "snapshot {from_exclusive} is not an ancestor of snapshot {}: an \
                     incremental read goes from an older snapshot to a newer one on one branch",
                    to.snapshot_id
                ),
            ));
        }
        between.reverse();
        for snapshot in &between {
            require_append(snapshot, table)?;
        }
        Ok(Self {
            from_exclusive,
            to: to.snapshot_id,
            snapshot_ids: between.iter().map(|s| s.snapshot_id).collect(),
        })
    }
}

/// The snapshot `to` names; a tag is refused (an incremental read follows a branch).
fn resolve_to<'a>(
    metadata: &'a TableMetadata,
    table: &str,
    to: &SnapshotSelector,
) -> Result<&'a Snapshot> {
    let missing = |what: String| Error::not_found(format!("{what} in table {table}"));
    let snapshot = |id: i64| {
        metadata
            .snapshot_by_id(id)
            .ok_or_else(|| missing(format!("snapshot {id}")))
    };
    match to {
        SnapshotSelector::Current => metadata
            .current_snapshot()
            .ok_or_else(|| missing("a current snapshot (the table has none)".to_string())),
        SnapshotSelector::SnapshotId(id) => snapshot(*id),
        SnapshotSelector::AsOfTimestamp(ts) => metadata.snapshot_as_of(*ts).map_err(|e| match e {
            Error::NotFound { what, .. } => missing(what),
            other => other,
        }),
        SnapshotSelector::Ref(name) => {
            let reference = metadata
                .refs
                .get(name)
                .ok_or_else(|| missing(format!("ref '{name}'")))?;
            if !reference.is_branch() {
                return Err(Error::invalid(
                    read_of(table),
                    format_args!(
                        "tag '{name}' cannot be used where a branch is needed: an incremental \
                         read follows a branch's history"
                    ),
                ));
            }
            snapshot(reference.snapshot_id)
        }
    }
}

fn require_append(snapshot: &Snapshot, table: &str) -> Result<()> {
    let id = snapshot.snapshot_id;
    let what = match snapshot.summary.as_ref().map(|s| &s.operation) {
        Some(Operation::Append) => return Ok(()),
        Some(operation) => {
            let name = operation.as_str();
            let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            format!("is {article} {name}")
        }
        None => "has no operation in its summary".to_string(),
    };
    Err(Error::invalid(
        read_of(table),
        format_args!("snapshot {id} {what}; only append snapshots can be read incrementally"),
    ))
}

/// What an incremental read's errors are about.
fn read_of(table: &str) -> String {
    format!("incremental read of table {table}")
}

/// The data files the snapshots of `range` added, oldest snapshot first.
pub async fn plan_incremental_files(
    io: &FileIO,
    metadata: &TableMetadata,
    range: &IncrementalRange,
) -> Result<Vec<FileScanTask>> {
    let own_manifests: Vec<Vec<ManifestFile>> = stream::iter(range.snapshot_ids.iter().copied())
        .map(|id| async move { manifests_written_by(io, metadata, id).await })
        .buffered(MANIFEST_CONCURRENCY)
        .try_collect()
        .await?;
    let per_manifest: Vec<Vec<FileScanTask>> = stream::iter(own_manifests.into_iter().flatten())
        .map(|m| async move { added_files(io, metadata, &m).await })
        .buffered(MANIFEST_CONCURRENCY)
        .try_collect()
        .await?;
    Ok(per_manifest.into_iter().flatten().collect())
}

/// The data manifests snapshot `snapshot_id` wrote itself; a delete manifest it wrote with
/// files in it is refused (appends add no delete files, and deleted rows must never be
/// returned).
async fn manifests_written_by(
    io: &FileIO,
    metadata: &TableMetadata,
    snapshot_id: i64,
) -> Result<Vec<ManifestFile>> {
    let snapshot = metadata
        .snapshot_by_id(snapshot_id)
        .ok_or_else(|| Error::not_found(format!("snapshot {snapshot_id}")))?;
    let mut own = Vec::new();
    for manifest in read_manifest_list(io, metadata, snapshot).await?.iter() {
        if manifest.added_snapshot_id != snapshot_id {
            continue;
        }
        if manifest.content == ManifestContent::Deletes {
            if manifest.added_files_count != Some(0) {
                return Err(deletes_unsupported(snapshot_id, &manifest.manifest_path));
            }
            continue;
        }
        own.push(manifest.clone());
    }
    Ok(own)
}

/// The `ADDED` data entries of a manifest written by the snapshot that added it.
async fn added_files(
    io: &FileIO,
    metadata: &TableMetadata,
    manifest_file: &ManifestFile,
) -> Result<Vec<FileScanTask>> {
    let snapshot_id = manifest_file.added_snapshot_id;
    let manifest = read_manifest(io, metadata, manifest_file).await?;
    let mut tasks = Vec::new();
    for entry in manifest.entries {
        if entry.status != ManifestStatus::Added || entry.snapshot_id != Some(snapshot_id) {
            continue;
        }
        if entry.data_file.content != DataContentType::Data {
            return Err(deletes_unsupported(snapshot_id, &entry.data_file.file_path));
        }
        tasks.push(FileScanTask::new(manifest_file, entry));
    }
    Ok(tasks)
}

/// An append snapshot that adds delete files is not an append: incremental reads refuse it.
fn deletes_unsupported(snapshot_id: i64, file: &str) -> Error {
    Error::Unsupported(format!(
        "snapshot {snapshot_id} adds row-level delete files (e.g. {file}); an incremental read \
         covers appended rows only"
    ))
}
