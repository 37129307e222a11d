//! Planning a snapshot's scan from metadata alone: the live data files of its manifests.

use futures::{StreamExt, TryStreamExt, stream};

use super::manifests::{read_manifest, read_manifest_list};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::spec::{
    DataContentType, DataFile, ManifestContent, ManifestEntry, ManifestFile, Snapshot,
    TableMetadata,
};

/// How many manifests are fetched and decoded at once.
pub(super) const MANIFEST_CONCURRENCY: usize = 16;

/// One live data file of a snapshot, ready to scan.
#[derive(Debug, Clone)]
pub struct FileScanTask {
    /// The data file (path, partition tuple, metrics).
    pub data_file: DataFile,
    /// The partition spec its manifest was written with.
    pub partition_spec_id: i32,
    /// Its data sequence number (0 for v1 tables).
    pub data_sequence_number: i64,
}

/// The live data files of `snapshot`, in manifest-list order.
///
/// A snapshot with live row-level delete files is [`Error::Unsupported`] until deletes are
/// applied: a scan must never return deleted rows.
pub async fn plan_files(
    io: &FileIO,
    metadata: &TableMetadata,
    snapshot: &Snapshot,
) -> Result<Vec<FileScanTask>> {
    let manifests = read_manifest_list(io, metadata, snapshot).await?;
    let (deletes, data): (Vec<_>, Vec<_>) = manifests
        .into_iter()
        .partition(|m| m.content == ManifestContent::Deletes);
    reject_live_deletes(io, metadata, snapshot, &deletes).await?;
    let per_manifest: Vec<Vec<FileScanTask>> = stream::iter(data)
        .map(|m| async move { manifest_tasks(io, metadata, snapshot, &m).await })
        .buffered(MANIFEST_CONCURRENCY)
        .try_collect()
        .await?;
    Ok(per_manifest.into_iter().flatten().collect())
}

async fn manifest_tasks(
    io: &FileIO,
    metadata: &TableMetadata,
    snapshot: &Snapshot,
    manifest_file: &ManifestFile,
) -> Result<Vec<FileScanTask>> {
    let manifest = read_manifest(io, metadata, manifest_file).await?;
    let mut tasks = Vec::with_capacity(manifest.entries.len());
    for entry in manifest.entries {
        if !entry.is_alive() {
            continue;
        }
        if entry.data_file.content != DataContentType::Data {
            return Err(deletes_unsupported(
                snapshot.snapshot_id,
                &entry.data_file.file_path,
            ));
        }
        tasks.push(FileScanTask::new(manifest_file, entry));
    }
    Ok(tasks)
}

impl FileScanTask {
    /// The task for a live data entry of `manifest_file`.
    pub(super) fn new(manifest_file: &ManifestFile, entry: ManifestEntry) -> Self {
        Self {
            partition_spec_id: manifest_file.partition_spec_id,
            data_sequence_number: entry.sequence_number.unwrap_or(0),
            data_file: entry.data_file,
        }
    }
}

async fn reject_live_deletes(
    io: &FileIO,
    metadata: &TableMetadata,
    snapshot: &Snapshot,
    delete_manifests: &[ManifestFile],
) -> Result<()> {
    for m in delete_manifests {
        let counted = m.added_files_count.zip(m.existing_files_count);
        if counted.is_some_and(|(added, existing)| added + existing == 0) {
            continue;
        }
        let manifest = read_manifest(io, metadata, m).await?;
        if let Some(entry) = manifest.entries.iter().find(|e| e.is_alive()) {
            return Err(deletes_unsupported(
                snapshot.snapshot_id,
                &entry.data_file.file_path,
            ));
        }
    }
    Ok(())
}

pub(super) fn deletes_unsupported(snapshot_id: i64, delete_file: &str) -> Error {
    Error::Unsupported(format!(
        "snapshot {snapshot_id} has row-level delete files (e.g. {delete_file}); applying position \
         deletes, equality deletes and deletion vectors is not supported yet, and icefloe \
         never returns deleted rows"
    ))
}
