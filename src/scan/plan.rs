//! Planning a snapshot's scan from metadata alone: the live data files of its manifests.

use futures::{StreamExt, TryStreamExt, stream};

use super::manifests::{read_manifest, read_manifest_list};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::spec::{
    DataContentType, DataFile, ManifestContent, ManifestFile, Snapshot, TableMetadata,
};

/// How many manifests are fetched and decoded at once.
const MANIFEST_CONCURRENCY: usize = 16;

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
            return Err(deletes_unsupported(snapshot, &entry.data_file.file_path));
        }
        tasks.push(FileScanTask {
            partition_spec_id: manifest_file.partition_spec_id,
            data_sequence_number: entry.sequence_number.unwrap_or(0),
            data_file: entry.data_file,
        });
    }
    Ok(tasks)
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
            return Err(deletes_unsupported(snapshot, &entry.data_file.file_path));
        }
    }
    Ok(())
}

fn deletes_unsupported(snapshot: &Snapshot, delete_file: &str) -> Error {
    Error::Unsupported(format!(
        "snapshot {} has row-level delete files (e.g. {delete_file}); applying position \
         deletes, equality deletes and deletion vectors is not supported yet, and icefloe \
         never returns deleted rows",
        snapshot.snapshot_id
    ))
}
