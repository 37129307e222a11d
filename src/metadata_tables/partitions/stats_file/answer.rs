//! `"t$partitions"` from a partition statistics file (issue 19, item 7): the selected
//! snapshot's own file answers without its manifests, when it can be trusted to give the
//! relation's rows. Statistics are informational (spec: "Partition Statistics"), so every
//! doubt declines and the manifests answer: no file for the snapshot, a file that cannot be
//! read or decoded, a size other than recorded, totals other than the snapshot summary's.
//!
//! The file counts every entry of the snapshot's manifests, as Java does: DELETED entries
//! move `last_updated`, while the relation (as PyIceberg) sees live entries only. The two
//! agree unless a partition's newest change is a deletion, so when the manifest list says
//! some manifests hold DELETED entries, those manifests (and the ones their deleting
//! snapshots added) are read: a row last updated by a deleting snapshot is the relation's
//! only when that snapshot also added a live file to the partition. Rows without live files
//! (partitions whose files were all deleted) are not the relation's and are left out.

use std::collections::HashSet;

use futures::StreamExt;

use super::super::super::files::file_rows::{self, EntryRow, Scope};
use super::super::super::files::partition_struct::UnifiedPartition;
use super::super::super::{MetadataContext, walk};
use super::super::counts::{self, Grouping, PartitionCounts};
use super::decode;
use crate::error::Result;
use crate::scan::guard::catch_decoder;
use crate::spec::statistics::partition_statistics_for;
use crate::spec::{Literal, ManifestFile, Snapshot};

/// The rows of `"t$partitions"` (grouped as the relation groups them) from the selected
/// snapshot's partition statistics file, or `None` when the manifests must answer.
pub(crate) async fn answer(
    ctx: &MetadataContext<'_>,
    partition: &UnifiedPartition,
) -> Option<Vec<PartitionCounts>> {
    let snapshot = ctx.snapshot?;
    let metadata = ctx.table.metadata();
    let file = partition_statistics_for(metadata, snapshot.snapshot_id)?;
    if partition.is_empty() {
        return None;
    }
    let path = &file.statistics_path;
    let size = u64::try_from(file.file_size_in_bytes).ok()?;
    let bytes = ctx.table.io().read_bounded(path, size).await.ok()?;
    if u64::try_from(bytes.len()).ok()? != size {
        return None;
    }
    let rows = catch_decoder(path, || decode(path, bytes, partition)).ok()?;
    if !agrees_with_summary(&rows, snapshot) {
        return None;
    }
    let live: Vec<PartitionCounts> = rows.into_iter().filter(|r| r.has_live_files()).collect();
    if !last_updates_agree(ctx, &live).await.ok()? {
        return None;
    }
    Some(counts::regroup(&live, metadata, Grouping::ByFields))
}

/// Whether the rows add up to the snapshot summary's totals, where it has them.
fn agrees_with_summary(rows: &[PartitionCounts], snapshot: &Snapshot) -> bool {
    let Some(summary) = snapshot.summary.as_ref() else {
        return true;
    };
    let sum = |f: fn(&PartitionCounts) -> i64| rows.iter().map(f).sum::<i64>();
    let totals = [
        ("total-records", sum(|r| r.data_record_count)),
        ("total-data-files", sum(|r| r.data_file_count.into())),
        (
            "total-position-deletes",
            sum(|r| r.position_delete_record_count),
        ),
        (
            "total-equality-deletes",
            sum(|r| r.equality_delete_record_count),
        ),
        (
            "total-delete-files",
            sum(|r| {
                i64::from(r.position_delete_file_count)
                    + i64::from(r.dv_count)
                    + i64::from(r.equality_delete_file_count)
            }),
        ),
    ];
    totals.iter().all(|(key, ours)| {
        summary
            .get(key)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .is_none_or(|recorded| recorded == *ours)
    })
}

/// Whether every row's `last_updated` is the newest live entry's (see the module docs).
async fn last_updates_agree(ctx: &MetadataContext<'_>, rows: &[PartitionCounts]) -> Result<bool> {
    let listed = file_rows::manifests(ctx, Scope::Selected).await?;
    let (with_deleted, others): (Vec<ManifestFile>, Vec<ManifestFile>) = listed
        .into_iter()
        .partition(|m| m.deleted_files_count != Some(0));
    if with_deleted.is_empty() {
        return Ok(true);
    }
    let mut entries = entries_of(ctx, with_deleted).await?;
    let deleting: HashSet<i64> = entries
        .iter()
        .filter(|e| !e.entry.is_alive())
        .filter_map(|e| e.entry.snapshot_id)
        .collect();
    let added: Vec<ManifestFile> = others
        .into_iter()
        .filter(|m| deleting.contains(&m.added_snapshot_id))
        .collect();
    entries.extend(entries_of(ctx, added).await?);
    // (spec, tuple, snapshot) of each live file a deleting snapshot added.
    let added_by_deleting: HashSet<String> = entries
        .iter()
        .filter(|e| e.entry.is_alive())
        .filter_map(|e| {
            let id = e.entry.snapshot_id.filter(|id| deleting.contains(id))?;
            Some(key(e.spec_id, &e.entry.data_file.partition, id))
        })
        .collect();
    Ok(rows.iter().all(|r| match r.last_updated {
        Some((_, id)) if deleting.contains(&id) => {
            added_by_deleting.contains(&key(r.spec_id, &r.tuple, id))
        }
        _ => true,
    }))
}

fn key(spec_id: i32, tuple: &[Option<Literal>], snapshot_id: i64) -> String {
    format!("{spec_id}{tuple:?}{snapshot_id}")
}

/// Every entry of `manifests`.
async fn entries_of(
    ctx: &MetadataContext<'_>,
    manifests: Vec<ManifestFile>,
) -> Result<Vec<EntryRow>> {
    let metadata = ctx.table.metadata();
    let mut decoded = walk::manifest_contents(ctx.table.io(), metadata, manifests);
    let mut rows = Vec::new();
    while let Some((listed, manifest)) = decoded.next().await {
        let spec_id = listed.partition_spec_id;
        rows.extend(
            manifest?
                .entries
                .into_iter()
                .map(|entry| EntryRow { spec_id, entry }),
        );
    }
    Ok(rows)
}
