//! Rewriting manifests: the live entries of the current snapshot's data manifests, per
//! partition spec, merged into manifests of about a target size, committed as a `replace`
//! snapshot (the data does not change). A table with thousands of streaming commits, one small
//! manifest each, then plans from a handful of manifests again.
//!
//! Entries keep their snapshot ids and data and file sequence numbers (written explicitly, as
//! EXISTING entries), so delete files apply to them exactly as before. Delete manifests are
//! kept as they are.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use bytes::Bytes;

use crate::commit::{commit_metadata_change, now_ms};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::manage::{Progress, SnapshotManager};
use crate::scan::read_manifests;
use crate::scan::{partition_type, read_manifest_list};
use crate::spec::manifest_writer::{write_manifest, write_manifest_list};
use crate::spec::metadata::update::new_snapshot_id;
use crate::spec::partition_summary::summarize;
use crate::spec::properties::MANIFEST_TARGET_SIZE_BYTES;
use crate::spec::snapshot::{Operation, Summary};
use crate::spec::{
    Literal, ManifestContent, ManifestEntry, ManifestFile, ManifestStatus, Snapshot,
};
use crate::table::Table;
use crate::write::WriteTarget;

/// What a rewrite did.
#[derive(Debug, Clone)]
pub struct RewriteReport {
    /// Data manifests replaced.
    pub rewritten: usize,
    /// Manifests written in their place.
    pub added: usize,
    /// The committed table (`None` when there was nothing to merge).
    pub table: Option<Table>,
}

/// Merges the current snapshot's data manifests of each partition spec into manifests of about
/// `target_size_bytes` (default: `commit.manifest.target-size-bytes`, else 8 MiB) and commits
/// the result as a `replace` snapshot on `main`. A spec with a single manifest no larger than
/// the target is left alone; a larger one is split. Entries are sorted by partition first.
/// When another writer commits first, the rewrite fails with [`Error::CommitConflict`] and
/// its files are deleted (run it again).
pub async fn rewrite_manifests(
    io: &FileIO,
    target: &WriteTarget,
    target_size_bytes: Option<u64>,
) -> Result<RewriteReport> {
    rewrite_manifests_with_progress(io, target, target_size_bytes, &Progress::default()).await
}

/// [`rewrite_manifests`], telling `progress` `(written, to write)` as manifests are written.
pub async fn rewrite_manifests_with_progress(
    io: &FileIO,
    target: &WriteTarget,
    target_size_bytes: Option<u64>,
    progress: &Progress,
) -> Result<RewriteReport> {
    let base = SnapshotManager::new(io.clone(), target.clone())
        .table()
        .await?;
    let metadata = base.metadata();
    let Some(parent) = metadata.current_snapshot() else {
        return Ok(RewriteReport {
            rewritten: 0,
            added: 0,
            table: None,
        });
    };
    let target_size = match target_size_bytes {
        Some(n) => n.max(1),
        None => MANIFEST_TARGET_SIZE_BYTES.get(metadata)?.max(1),
    };
    let listed = read_manifest_list(io, metadata, parent).await?;
    let mut by_spec: BTreeMap<i32, Vec<ManifestFile>> = BTreeMap::new();
    let mut kept = Vec::new();
    for manifest in listed.iter().cloned() {
        match manifest.content {
            ManifestContent::Data => by_spec
                .entry(manifest.partition_spec_id)
                .or_default()
                .push(manifest),
            ManifestContent::Deletes => kept.push(manifest),
        }
    }
    let snapshot_id = new_snapshot_id();
    let sequence_number = metadata.next_sequence_number();
    let schema = metadata.current_schema();
    let mut written: Vec<ManifestFile> = Vec::new();
    let mut rewritten = 0;
    for (spec_id, manifests) in by_spec {
        let too_big =
            |m: &ManifestFile| u64::try_from(m.manifest_length).unwrap_or(0) > target_size;
        if manifests.len() < 2 && !manifests.iter().any(too_big) {
            kept.extend(manifests);
            continue;
        }
        let spec = metadata
            .partition_spec_by_id(spec_id)
            .ok_or_else(|| Error::corrupt("", format!("partition spec {spec_id} is missing")))?;
        let ptype = partition_type(metadata, spec)?;
        let bytes: u64 = manifests
            .iter()
            .map(|m| u64::try_from(m.manifest_length).unwrap_or(0))
            .sum();
        let decoded = read_manifests(io, metadata, &manifests).await?;
        let mut entries: Vec<ManifestEntry> = decoded
            .into_iter()
            .flat_map(|m| m.entries)
            .filter(ManifestEntry::is_alive)
            .map(|mut e| {
                e.status = ManifestStatus::Existing;
                e
            })
            .collect();
        // Sorted by partition, each new manifest covers a narrow range that stage 1 can skip.
        entries.sort_by(|a, b| partition_order(&a.data_file.partition, &b.data_file.partition));
        rewritten += manifests.len();
        // Entries per new manifest, from the average size of an entry in the old ones.
        let per_entry = (bytes / (entries.len().max(1) as u64)).max(1);
        let per_manifest = usize::try_from(target_size / per_entry)
            .unwrap_or(usize::MAX)
            .max(1);
        let planned = written.len() + entries.len().div_ceil(per_manifest);
        for chunk in entries.chunks(per_manifest) {
            progress.report(written.len(), planned);
            let avro = write_manifest(metadata, schema, spec, ManifestContent::Data, chunk)?;
            let path = format!(
                "{}/metadata/{}-m{}.avro",
                metadata.location.trim_end_matches('/'),
                uuid::Uuid::new_v4(),
                written.len()
            );
            let length = i64::try_from(avro.len()).unwrap_or(i64::MAX);
            if let Err(e) = io.write(&path, Bytes::from(avro)).await {
                delete_manifests(io, &written).await;
                return Err(e);
            }
            let mut manifest =
                ManifestFile::new(path, length, spec_id, ManifestContent::Data, snapshot_id);
            manifest.sequence_number = sequence_number;
            manifest.min_sequence_number = chunk
                .iter()
                .filter_map(|e| e.sequence_number)
                .min()
                .unwrap_or(sequence_number);
            manifest.added_files_count = Some(0);
            manifest.existing_files_count = Some(i32::try_from(chunk.len()).unwrap_or(i32::MAX));
            manifest.deleted_files_count = Some(0);
            manifest.added_rows_count = Some(0);
            manifest.existing_rows_count =
                Some(chunk.iter().map(|e| e.data_file.record_count).sum());
            manifest.deleted_rows_count = Some(0);
            manifest.partitions = Some(summarize(
                &ptype,
                chunk.iter().map(|e| e.data_file.partition.as_slice()),
            ));
            written.push(manifest);
        }
    }
    if written.is_empty() {
        return Ok(RewriteReport {
            rewritten: 0,
            added: 0,
            table: None,
        });
    }
    let added = written.len();
    let mut list_entries = written.clone();
    list_entries.extend(kept.iter().cloned());
    let list = write_manifest_list(
        metadata.format_version,
        snapshot_id,
        Some(parent.snapshot_id),
        sequence_number,
        &list_entries,
    )?;
    let list_path = format!(
        "{}/metadata/snap-{snapshot_id}-{sequence_number}-{}.avro",
        metadata.location.trim_end_matches('/'),
        uuid::Uuid::new_v4()
    );
    if let Err(e) = io.write(&list_path, Bytes::from(list)).await {
        delete_manifests(io, &written).await;
        return Err(e);
    }
    let mut properties: BTreeMap<String, String> = parent
        .summary
        .as_ref()
        .map(|s| {
            s.properties()
                .iter()
                .filter(|(k, _)| k.starts_with("total-"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    properties.insert("manifests-created".into(), added.to_string());
    properties.insert("manifests-replaced".into(), rewritten.to_string());
    properties.insert("manifests-kept".into(), kept.len().to_string());
    properties.insert("engine-name".into(), "icefloe".into());
    let snapshot = Snapshot {
        snapshot_id,
        parent_snapshot_id: Some(parent.snapshot_id),
        sequence_number,
        timestamp_ms: now_ms().max(metadata.last_updated_ms),
        manifest_list: Some(list_path.clone()),
        manifests: None,
        summary: Some(Summary::new(Operation::Replace, properties)),
        schema_id: Some(metadata.current_schema_id),
        first_row_id: None,
        added_rows: None,
        key_id: None,
    };
    let planned_parent = parent.snapshot_id;
    let committed = commit_metadata_change(io, target.commit_target(), |current| {
        if current.current_snapshot_id != Some(planned_parent) {
            return Err(Error::CommitConflict {
                table: current.location.clone(),
                reason: "another commit came first; rewrite the manifests again".into(),
            });
        }
        current.with_snapshot(snapshot.clone(), "main", None)
    })
    .await;
    match committed {
        Ok(table) => Ok(RewriteReport {
            rewritten,
            added,
            table: Some(table),
        }),
        Err(e) => {
            delete_manifests(io, &written).await;
            let _ = io.delete(&list_path).await;
            Err(e)
        }
    }
}

/// Partition tuples in order: field by field, NULL first, values by their type's order.
fn partition_order(a: &[Option<Literal>], b: &[Option<Literal>]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let order = match (x, y) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => x.partial_cmp_same_type(y).unwrap_or(Ordering::Equal),
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

async fn delete_manifests(io: &FileIO, manifests: &[ManifestFile]) {
    for m in manifests {
        let _ = io.delete(&m.manifest_path).await;
    }
}

#[cfg(test)]
#[path = "rewrite_tests.rs"]
mod tests;
