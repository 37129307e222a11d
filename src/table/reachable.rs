//! What a table's metadata reaches, walked from the metadata alone.

use std::collections::{BTreeMap, BTreeSet};

use futures::{StreamExt, TryStreamExt, stream};

use super::{read_manifest, read_manifest_list};
use crate::error::Result;
use crate::spec::ManifestFile;
use crate::table::Table;

/// How many manifest lists or manifests are read at a time.
const READ_CONCURRENCY: usize = 16;

/// Every file a table's metadata reaches: the current metadata file and those of the
/// metadata log, each snapshot's manifest list (or v1 embedded manifests), every manifest and
/// every data and delete file they list (live or deleted entries, deletion-vector Puffin files
/// included), and the statistics and partition-statistics files.
///
/// Locations are returned as the metadata writes them (before relocation). Found from the
/// metadata alone, never by listing directories, so files of other tables or other writers
/// under the same location are never included.
///
/// Errors: any manifest list or manifest that cannot be read or decoded fails the whole walk
/// (an incomplete set would make live files look unreferenced); the error names the file or
/// the snapshot.
pub async fn reachable_files(table: &Table) -> Result<BTreeSet<String>> {
    let io = table.io();
    let metadata = table.metadata();
    let mut files = BTreeSet::from([table.metadata_location().to_string()]);
    files.extend(
        metadata
            .metadata_log
            .iter()
            .map(|e| e.metadata_file.clone()),
    );
    files.extend(
        metadata
            .statistics
            .iter()
            .map(|s| s.statistics_path.clone()),
    );
    files.extend(
        metadata
            .partition_statistics
            .iter()
            .map(|s| s.statistics_path.clone()),
    );
    files.extend(
        metadata
            .snapshots
            .iter()
            .filter_map(|s| s.manifest_list.clone()),
    );
    // Owned items: a closure over borrowed ones makes the future not `Send` (a rustc
    // limitation with higher-ranked lifetimes).
    let lists: Vec<std::sync::Arc<Vec<ManifestFile>>> =
        stream::iter(metadata.snapshots.iter().cloned())
            .map(|snapshot| async move { read_manifest_list(io, metadata, &snapshot).await })
            .buffer_unordered(READ_CONCURRENCY)
            .try_collect()
            .await?;
    let manifests: BTreeMap<String, ManifestFile> = lists
        .iter()
        .flat_map(|list| list.iter())
        .map(|m| (m.manifest_path.clone(), m.clone()))
        .collect();
    let entries: Vec<Vec<String>> = stream::iter(manifests.values().cloned())
        .map(|manifest| async move {
            let read = read_manifest(io, metadata, &manifest).await?;
            Ok::<_, crate::Error>(
                read.entries
                    .into_iter()
                    .map(|e| e.data_file.file_path)
                    .collect(),
            )
        })
        .buffer_unordered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    files.extend(entries.into_iter().flatten());
    files.extend(manifests.into_keys());
    Ok(files)
}
