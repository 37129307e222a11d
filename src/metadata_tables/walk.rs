//! Walking a table's metadata tree below the metadata file: snapshots' manifest lists, then
//! manifests. Every manifest-backed relation (`manifests`, `all_manifests`, the entries, files
//! and partitions relations) and `icefloe tree` read through these two streams, so reads are
//! concurrent (bounded) and ordered the same way everywhere.
//!
//! Each item carries its own result: the relations stop at the first error, `icefloe tree`
//! keeps errors in place and goes on.

use std::collections::HashSet;
use std::sync::Arc;

use futures::{Stream, StreamExt, stream};

use crate::error::Result;
use crate::io::FileIO;
use crate::scan::{read_manifest, read_manifest_list};
use crate::spec::{Manifest, ManifestFile, Snapshot, TableMetadata};

/// How many manifest lists or manifests are read at once.
pub(crate) const CONCURRENCY: usize = 8;

/// The manifest list of each snapshot, in the order given; reading stops when the stream is
/// dropped.
pub(crate) fn manifest_lists(
    io: &FileIO,
    metadata: &Arc<TableMetadata>,
    snapshots: Vec<Snapshot>,
) -> impl Stream<Item = (Snapshot, Result<Arc<Vec<ManifestFile>>>)> + Send + use<> {
    let (io, metadata) = (io.clone(), Arc::clone(metadata));
    stream::iter(snapshots)
        .map(move |snapshot| {
            let (io, metadata) = (io.clone(), Arc::clone(&metadata));
            async move {
                let listed = read_manifest_list(&io, &metadata, &snapshot).await;
                (snapshot, listed)
            }
        })
        .buffered(CONCURRENCY)
}

/// Each manifest decoded (inheritance applied), in the order given; reading stops when the
/// stream is dropped.
pub(crate) fn manifest_contents(
    io: &FileIO,
    metadata: &Arc<TableMetadata>,
    manifests: Vec<ManifestFile>,
) -> impl Stream<Item = (ManifestFile, Result<Manifest>)> + Send + use<> {
    let (io, metadata) = (io.clone(), Arc::clone(metadata));
    stream::iter(manifests)
        .map(move |manifest| {
            let (io, metadata) = (io.clone(), Arc::clone(&metadata));
            async move {
                let decoded = read_manifest(&io, &metadata, &manifest).await;
                (manifest, decoded)
            }
        })
        .buffered(CONCURRENCY)
}

/// The manifests of `lists` with each path once, where first seen (manifests are shared
/// between snapshots: a fast append lists its parent's manifests again).
pub(crate) fn distinct_manifests<'a>(
    lists: impl IntoIterator<Item = &'a ManifestFile>,
) -> Vec<ManifestFile> {
    let mut seen = HashSet::new();
    lists
        .into_iter()
        .filter(|m| seen.insert(m.manifest_path.as_str()))
        .cloned()
        .collect()
}
