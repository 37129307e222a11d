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

use async_trait::async_trait;

use crate::error::{Error, Result};
use crate::maintenance::Progress;
use crate::scan::read_manifest_list;
use crate::scan::read_manifests;
use crate::spec::properties::MANIFEST_TARGET_SIZE_BYTES;
use crate::spec::snapshot::{Operation, Summary};
use crate::spec::{
    Literal, ManifestContent, ManifestEntry, ManifestFile, ManifestStatus, TableMetadata,
};
use crate::table::Table;
use crate::transaction::{Action, Changes, CommitContext, SnapshotProducer, WriteTarget};

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
    target: &WriteTarget,
    target_size_bytes: Option<u64>,
) -> Result<RewriteReport> {
    rewrite_manifests_with_progress(target, target_size_bytes, &Progress::default()).await
}

/// [`rewrite_manifests`], telling `progress` `(written, to write)` as manifests are written.
pub async fn rewrite_manifests_with_progress(
    target: &WriteTarget,
    target_size_bytes: Option<u64>,
    progress: &Progress,
) -> Result<RewriteReport> {
    let base = target.load().await?;
    let (io, metadata) = (base.io().clone(), std::sync::Arc::clone(base.metadata()));
    let nothing = RewriteReport {
        rewritten: 0,
        added: 0,
        table: None,
    };
    let Some(parent) = metadata.current_snapshot() else {
        return Ok(nothing);
    };
    let target_size = match target_size_bytes {
        Some(n) => n.max(1),
        None => MANIFEST_TARGET_SIZE_BYTES.get(metadata.as_ref())?.max(1),
    };
    let listed = read_manifest_list(&io, &metadata, parent).await?;
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
    let mut producer = SnapshotProducer::new("main");
    let mut written: Vec<ManifestFile> = Vec::new();
    let mut rewritten = 0;
    for (spec_id, manifests) in by_spec {
        let too_big =
            |m: &ManifestFile| u64::try_from(m.manifest_length).unwrap_or(0) > target_size;
        if manifests.len() < 2 && !manifests.iter().any(too_big) {
            kept.extend(manifests);
            continue;
        }
        let bytes: u64 = manifests
            .iter()
            .map(|m| u64::try_from(m.manifest_length).unwrap_or(0))
            .sum();
        let decoded = read_manifests(&io, &metadata, &manifests).await?;
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
            let content = ManifestContent::Data;
            match producer
                .write_manifest(&io, &metadata, spec_id, content, chunk)
                .await
            {
                Ok(manifest) => written.push(manifest),
                Err(e) => {
                    crate::transaction::delete_all(&io, &producer.written()).await;
                    return Err(e);
                }
            }
        }
    }
    if written.is_empty() {
        return Ok(nothing);
    }
    let added = written.len();
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
    let action = RewriteManifests {
        producer,
        added: written,
        kept,
        parent: parent.snapshot_id,
        summary: Summary::new(Operation::Replace, properties),
    };
    let table = target
        .transaction(base)
        .with_action(action)
        .commit()
        .await?;
    Ok(RewriteReport {
        rewritten,
        added,
        table: Some(table),
    })
}

/// The commit of a rewrite: a `replace` snapshot of the merged manifests on `main`, valid only
/// while `main` is still the snapshot whose manifests were merged.
#[derive(Debug)]
struct RewriteManifests {
    producer: SnapshotProducer,
    added: Vec<ManifestFile>,
    kept: Vec<ManifestFile>,
    parent: i64,
    summary: Summary,
}

#[async_trait]
impl Action for RewriteManifests {
    fn validate(&self, _base: &TableMetadata, current: &TableMetadata) -> Result<()> {
        match current.current_snapshot_id == Some(self.parent) {
            true => Ok(()),
            false => Err(Error::CommitConflict {
                table: current.location.clone(),
                reason: "another commit came first; rewrite the manifests again".into(),
            }),
        }
    }

    async fn changes(
        &mut self,
        context: &CommitContext<'_>,
        current: &TableMetadata,
    ) -> Result<Changes> {
        let summary = self.summary.clone();
        let kept = self.kept.clone();
        self.producer
            .produce(context, current, &self.added, kept, summary)
            .await
    }

    fn written(&self) -> Vec<String> {
        self.producer.written()
    }

    fn superseded(&self) -> Vec<String> {
        self.producer.superseded()
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

#[cfg(test)]
#[path = "rewrite_tests.rs"]
mod tests;
