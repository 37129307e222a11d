//! Planning a snapshot's scan from metadata alone: the live data files of its manifests and the
//! delete files that apply to each.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt, stream};

use super::deletes::{DeleteFileTask, DeleteIndex};
use super::manifests::{read_manifest, read_manifest_list};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::spec::{
    DataContentType, DataFile, ManifestContent, ManifestEntry, ManifestFile, Snapshot,
    TableMetadata,
};

/// How many manifests are fetched and decoded at once.
pub(super) const MANIFEST_CONCURRENCY: usize = 16;

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

/// The live data files of `snapshot`, in manifest-list order, each with the live delete files
/// that apply to it. Data and delete manifests are read concurrently.
pub async fn plan_files(
    io: &FileIO,
    metadata: &TableMetadata,
    snapshot: &Snapshot,
) -> Result<Vec<FileScanTask>> {
    let manifests = read_manifest_list(io, metadata, snapshot).await?;
    let per_manifest: Vec<(ManifestContent, Vec<FileScanTask>)> = stream::iter(manifests)
        .map(|m| async move {
            let tasks = manifest_tasks(io, metadata, &m).await?;
            Ok::<_, Error>((m.content, tasks))
        })
        .buffered(MANIFEST_CONCURRENCY)
        .try_collect()
        .await?;
    let mut data = Vec::new();
    let mut deletes = Vec::new();
    for (content, tasks) in per_manifest {
        match content {
            ManifestContent::Data => data.extend(tasks),
            ManifestContent::Deletes => deletes.extend(tasks.into_iter().map(|t| DeleteFileTask {
                file: t.data_file,
                partition_spec_id: t.partition_spec_id,
                data_sequence_number: t.data_sequence_number,
            })),
        }
    }
    let index = DeleteIndex::new(io, metadata, deletes);
    if !index.is_empty() {
        for task in &mut data {
            task.deletes = index.deletes_for(io, task);
        }
    }
    Ok(data)
}

/// The live entries of a manifest whose content matches the manifest's.
async fn manifest_tasks(
    io: &FileIO,
    metadata: &TableMetadata,
    manifest_file: &ManifestFile,
) -> Result<Vec<FileScanTask>> {
    let manifest = read_manifest(io, metadata, manifest_file).await?;
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
