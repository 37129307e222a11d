//! Reading a snapshot's manifest list and manifests through [`FileIO`], with errors that name
//! the file and the snapshot, through the process-wide [`ManifestCache`].

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, stream};

use super::cache::{Cached, ManifestCache};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::io::ReadLimits;
use crate::io::location_key;
use crate::spec::manifest::parse_manifest_metadata;
use crate::spec::manifest::parse_manifest_within;
use crate::spec::manifest_list::parse_manifest_list_within;
use crate::spec::{
    Manifest, ManifestContent, ManifestFile, ManifestStatus, PartitionSpec, Snapshot, StructType,
    TableMetadata,
};

/// How many manifests are fetched and decoded at once from a remote store.
pub(crate) const MANIFEST_CONCURRENCY: usize = 16;

/// The manifests of a snapshot: its manifest list, or for old v1 snapshots the embedded
/// `manifests` list (each manifest's spec id then comes from the manifest's own header).
/// Shared with the process-wide cache: a repeated read costs no copy.
pub async fn read_manifest_list(
    io: &FileIO,
    metadata: &TableMetadata,
    snapshot: &Snapshot,
) -> Result<Arc<Vec<ManifestFile>>> {
    if let Some(list) = &snapshot.manifest_list {
        let cache = ManifestCache::global();
        let key = format!(
            "list|{:?}|{}",
            metadata.format_version,
            location_key(io, list)
        );
        if let Some(Cached::List(cached)) = cache.get(&key) {
            return Ok(cached);
        }
        let limits = io.read_limits();
        let bytes = io
            .read_bounded(list, limits.manifest_list_bytes)
            .await
            .map_err(|e| in_snapshot(e, snapshot))?;
        let parsed = Arc::new(
            parse_manifest_list_within(&bytes, metadata.format_version, limits.decoded_bytes)
                .map_err(|e| e.in_file(list))?,
        );
        cache.insert(key, Cached::List(Arc::clone(&parsed)));
        return Ok(parsed);
    }
    let Some(paths) = &snapshot.manifests else {
        return Err(Error::corrupt(
            format!("snapshot {}", snapshot.snapshot_id),
            "has neither a manifest-list nor a manifests list",
        ));
    };
    let mut manifests = Vec::with_capacity(paths.len());
    for path in paths {
        let bytes = io
            .read_bounded(path, io.read_limits().manifest_bytes)
            .await
            .map_err(|e| in_snapshot(e, snapshot))?;
        let header = parse_manifest_metadata(&bytes).map_err(|e| e.in_file(path))?;
        manifests.push(ManifestFile::new(
            path.clone(),
            i64::try_from(bytes.len()).unwrap_or(i64::MAX),
            header.partition_spec_id.unwrap_or(metadata.default_spec_id),
            header.content.unwrap_or(ManifestContent::Data),
            snapshot.snapshot_id,
        ));
    }
    Ok(Arc::new(manifests))
}

/// Reads one manifest with inheritance from its manifest-list entry applied.
pub async fn read_manifest(
    io: &FileIO,
    metadata: &TableMetadata,
    manifest: &ManifestFile,
) -> Result<Manifest> {
    let (key, partition_type) =
        decoding_inputs(io, metadata, manifest, &mut PartitionTypes::default())?;
    let cache = ManifestCache::global();
    if let Some(Cached::Manifest(cached)) = cache.get(&key) {
        return Ok(cached.as_ref().clone());
    }
    let path = &manifest.manifest_path;
    let parsed = fetch_and_parse(io, manifest, (*partition_type).clone())
        .await
        .map_err(|e| e.in_file(path))?;
    cache.insert(key, Cached::Manifest(Arc::new(parsed.clone())));
    Ok(parsed)
}

/// Reads many manifests ([`read_manifest`] for each), in the given order, through the cache.
///
/// The ones not cached are read as cheaply as their store allows: files on the plain local
/// file system are read and decoded directly, a share of them per blocking task, one task
/// per core (a store request per file costs more in thread hand-offs than a small manifest
/// costs to decode); other stores get [`MANIFEST_CONCURRENCY`] requests at a time, each
/// decoded as a task of its own.
pub(crate) async fn read_manifests(
    io: &FileIO,
    metadata: &TableMetadata,
    manifests: &[ManifestFile],
) -> Result<Vec<Manifest>> {
    let cache = ManifestCache::global();
    let mut out: Vec<Option<Manifest>> = vec![None; manifests.len()];
    let mut misses = Vec::new();
    let mut types = PartitionTypes::default();
    for (slot, manifest) in out.iter_mut().zip(manifests) {
        let (key, partition_type) = decoding_inputs(io, metadata, manifest, &mut types)?;
        match cache.get(&key) {
            Some(Cached::Manifest(cached)) => *slot = Some(cached.as_ref().clone()),
            _ => misses.push(Miss {
                index: misses.len(),
                manifest: manifest.clone(),
                local: io.local_path(&manifest.manifest_path),
                shown: io.named(&manifest.manifest_path),
                key,
                partition_type,
            }),
        }
    }
    let all_local = misses.iter().all(|m| m.local.is_some());
    let limits = *io.read_limits();
    let decoded: Vec<(Miss, Manifest)> = match tokio::runtime::Handle::try_current() {
        Ok(runtime) if all_local && misses.len() > 1 => {
            read_local(&runtime, misses, limits).await?
        }
        _ => {
            stream::iter(misses)
                .map(|miss| async move {
                    let parsed =
                        fetch_and_parse(io, &miss.manifest, (*miss.partition_type).clone())
                            .await
                            .map_err(|e| e.in_file(&miss.manifest.manifest_path))?;
                    Ok::<_, Error>((miss, parsed))
                })
                .buffered(MANIFEST_CONCURRENCY)
                .try_collect()
                .await?
        }
    };
    let mut decoded = decoded.into_iter();
    for slot in out.iter_mut().filter(|slot| slot.is_none()) {
        let (miss, parsed) = decoded
            .next()
            .ok_or_else(|| Error::corrupt("", "a manifest read was lost"))?;
        cache.insert(miss.key, Cached::Manifest(Arc::new(parsed.clone())));
        *slot = Some(parsed);
    }
    Ok(out.into_iter().flatten().collect())
}

/// A manifest [`read_manifests`] must read.
struct Miss {
    /// Its place among the misses.
    index: usize,
    manifest: ManifestFile,
    /// Its local file, when its store is the plain local file system.
    local: Option<std::path::PathBuf>,
    /// The manifest as errors name it ([`FileIO::named`]).
    shown: String,
    key: String,
    partition_type: Arc<StructType>,
}

/// Reads and decodes local manifests in one blocking task per core; results in miss order.
async fn read_local(
    runtime: &tokio::runtime::Handle,
    misses: Vec<Miss>,
    limits: ReadLimits,
) -> Result<Vec<(Miss, Manifest)>> {
    let tasks = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(misses.len());
    let mut shares: Vec<Vec<Miss>> = (0..tasks).map(|_| Vec::new()).collect();
    for (i, miss) in misses.into_iter().enumerate() {
        shares[i % tasks].push(miss);
    }
    let handles: Vec<_> = shares
        .into_iter()
        .map(|share| {
            runtime.spawn_blocking(move || {
                share
                    .into_iter()
                    .map(|miss| {
                        let path = &miss.manifest.manifest_path;
                        let local = miss.local.as_deref().unwrap_or(std::path::Path::new(""));
                        let parsed = FileIO::read_local_bounded(local, path, limits.manifest_bytes)
                            .map_err(|e| match e {
                                Error::NotFound { source, .. } => Error::NotFound {
                                    what: miss.shown.clone(),
                                    source,
                                },
                                other => other,
                            })
                            .and_then(|bytes| {
                                let parsed = parse_manifest_within(
                                    &bytes,
                                    &miss.manifest,
                                    &miss.partition_type,
                                    limits.decoded_bytes,
                                );
                                check_length(&miss.manifest, bytes.len(), parsed)
                            })
                            .map_err(|e| e.in_file(path))?;
                        Ok((miss, parsed))
                    })
                    .collect::<Result<Vec<_>>>()
            })
        })
        .collect();
    let mut decoded = Vec::new();
    for handle in handles {
        match handle.await {
            Ok(share) => decoded.extend(share?),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(cancelled) => {
                return Err(Error::Io {
                    path: "manifests".into(),
                    source: Box::new(cancelled),
                });
            }
        }
    }
    decoded.sort_by_key(|(miss, _)| miss.index);
    Ok(decoded)
}

/// The partition types of a table's specs, each with the text the cache keys hold of it,
/// computed once per spec for the manifests of one read, not once per manifest (a manifest's
/// decoded form depends on its spec's partition type and on what its list entry passes down).
#[derive(Default)]
struct PartitionTypes(HashMap<i32, (Arc<StructType>, String)>);

/// The cache key of `manifest` and the partition type it is decoded with.
fn decoding_inputs(
    io: &FileIO,
    metadata: &TableMetadata,
    manifest: &ManifestFile,
    types: &mut PartitionTypes,
) -> Result<(String, Arc<StructType>)> {
    let path = &manifest.manifest_path;
    let (partition_type, shown) = match types.0.entry(manifest.partition_spec_id) {
        Entry::Occupied(known) => known.into_mut(),
        Entry::Vacant(slot) => {
            let spec = metadata
                .partition_spec_by_id(manifest.partition_spec_id)
                .ok_or_else(|| {
                    Error::corrupt(
                        path.clone(),
                        format!(
                            "partition spec {} is not in the table metadata",
                            manifest.partition_spec_id
                        ),
                    )
                })?;
            let partition_type = partition_type(metadata, spec).map_err(|e| e.in_file(path))?;
            let shown = format!("{partition_type:?}");
            slot.insert((Arc::new(partition_type), shown))
        }
    };
    let key = format!(
        "manifest|{}|{}|{}|{:?}|{shown}|{}",
        manifest.added_snapshot_id,
        manifest.sequence_number,
        manifest.min_sequence_number,
        manifest.first_row_id,
        location_key(io, path)
    );
    Ok((key, Arc::clone(partition_type)))
}

/// Reads and decodes a manifest, within the IO's [`ReadLimits`], and checks it against the
/// `manifest_length` its list entry records (see [`check_length`]). Decoding runs as its own
/// task, so manifests decode on every core.
async fn fetch_and_parse(
    io: &FileIO,
    manifest: &ManifestFile,
    partition_type: StructType,
) -> Result<Manifest> {
    let limits = io.read_limits();
    let bytes = io
        .read_bounded(&manifest.manifest_path, limits.manifest_bytes)
        .await?;
    let size = bytes.len();
    let parsed = decode(
        bytes,
        manifest,
        &Arc::new(partition_type),
        limits.decoded_bytes,
    )
    .await;
    check_length(manifest, size, parsed)
}

/// A manifest read in full is checked against the `manifest_length` (field 501) its list
/// entry records. The same length: the decoded manifest. Another length means the file was
/// cut short or replaced, or that its writer recorded a wrong length (rewrites that shorten
/// paths do: see the `duckdb_bigquery` fixture); so it is accepted only when it decodes and
/// holds exactly the ADDED, EXISTING and DELETED entries the list counts (fields 504-506),
/// and is [`Error::Corrupt`] naming both lengths otherwise (also when the list has no counts
/// to check, or records no length).
fn check_length(
    manifest: &ManifestFile,
    size: usize,
    parsed: Result<Manifest>,
) -> Result<Manifest> {
    let recorded = manifest.manifest_length;
    if i64::try_from(size).is_ok_and(|size| size == recorded) {
        return parsed;
    }
    let lengths = format!("the file is {size} bytes, its manifest list records {recorded}");
    let parsed = parsed.map_err(|e| match e {
        Error::Corrupt {
            path,
            reason,
            source,
        } => Error::Corrupt {
            path,
            reason: format!("{reason} ({lengths}: cut short or replaced?)"),
            source,
        },
        other => other,
    })?;
    let counted = [
        manifest.added_files_count,
        manifest.existing_files_count,
        manifest.deleted_files_count,
    ];
    let held = [
        ManifestStatus::Added,
        ManifestStatus::Existing,
        ManifestStatus::Deleted,
    ]
    .map(|status| parsed.entries.iter().filter(|e| e.status == status).count());
    let agree = counted
        .iter()
        .zip(held)
        .all(|(c, h)| c.is_some_and(|c| usize::try_from(c).is_ok_and(|c| c == h)));
    if agree {
        return Ok(parsed);
    }
    Err(Error::corrupt(
        "",
        format!(
            "{lengths}, and its entries (added, existing, deleted) are {held:?} where the list \
             counts {counted:?}: it was cut short or replaced"
        ),
    ))
}

/// [`parse_manifest_within`] as a task of the current Tokio runtime (inline outside one).
async fn decode(
    bytes: Bytes,
    manifest: &ManifestFile,
    partition_type: &Arc<StructType>,
    max_decoded: u64,
) -> Result<Manifest> {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return parse_manifest_within(&bytes, manifest, partition_type, max_decoded);
    };
    let (manifest, partition_type) = (manifest.clone(), Arc::clone(partition_type));
    let path = manifest.manifest_path.clone();
    match runtime
        .spawn(
            async move { parse_manifest_within(&bytes, &manifest, &partition_type, max_decoded) },
        )
        .await
    {
        Ok(parsed) => parsed,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(cancelled) => Err(Error::Io {
            path,
            source: Box::new(cancelled),
        }),
    }
}

/// The partition struct type of a spec, with source types from the current schema (so values
/// of promoted columns read as the current type), falling back to older schemas for source
/// columns that were dropped since.
pub fn partition_type(metadata: &TableMetadata, spec: &PartitionSpec) -> Result<StructType> {
    let current = metadata.current_schema();
    match spec.partition_type(current) {
        Ok(t) => Ok(t),
        Err(first) => metadata
            .schemas
            .iter()
            .rev()
            .find_map(|s| spec.partition_type(s).ok())
            .ok_or(first),
    }
}

fn in_snapshot(err: Error, snapshot: &Snapshot) -> Error {
    match err {
        Error::NotFound { what, source } => Error::NotFound {
            what: format!(
                "{what} (manifest list of snapshot {})",
                snapshot.snapshot_id
            ),
            source,
        },
        other => other,
    }
}

#[cfg(test)]
#[path = "manifests_tests.rs"]
mod tests;
