//! Reading the manifest entries the file-level relations are made of: the manifests of one
//! snapshot or the distinct manifests of every snapshot, decoded concurrently (bounded, through
//! [`super::super::walk`]), each manifest at most once per call.

use futures::{StreamExt, TryStreamExt};

use super::super::{MetadataContext, walk};
use super::entry_filter::EntryFilter;
use crate::error::Result;
use crate::spec::{ManifestContent, ManifestEntry, ManifestFile, Snapshot};

/// One manifest entry with the partition spec of the manifest it came from.
#[derive(Debug, Clone)]
pub(crate) struct EntryRow {
    /// The manifest's `partition_spec_id` (the data file's spec).
    pub(crate) spec_id: i32,
    /// The entry, inheritance applied.
    pub(crate) entry: ManifestEntry,
}

/// Which snapshots' manifests a relation reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The selected snapshot's manifests.
    Selected,
    /// The distinct manifests of every snapshot of the table.
    AllSnapshots,
}

/// What to read: the scope, which manifests (by content) and entries to keep, and how many
/// rows are enough.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadPlan<'a> {
    /// The snapshots whose manifests are read.
    pub(crate) scope: Scope,
    /// Only manifests of this content (`None`: both).
    pub(crate) content: Option<ManifestContent>,
    /// Whether DELETED entries are kept.
    pub(crate) keep_deleted: bool,
    /// Pushed-down filters on the entries.
    pub(crate) filter: &'a EntryFilter,
    /// Stop reading manifests once this many rows were kept (applied only when the filter
    /// is exact).
    pub(crate) limit: Option<usize>,
}

/// The manifests of the plan's scope, in manifest-list order (for all snapshots: snapshots
/// in metadata order, each manifest path once, where first seen).
pub(crate) async fn manifests(
    ctx: &MetadataContext<'_>,
    scope: Scope,
) -> Result<Vec<ManifestFile>> {
    let snapshots: Vec<Snapshot> = match scope {
        Scope::Selected => ctx.snapshot.into_iter().cloned().collect(),
        Scope::AllSnapshots => ctx.table.metadata().snapshots.clone(),
    };
    let lists: Vec<std::sync::Arc<Vec<ManifestFile>>> =
        walk::manifest_lists(ctx.table.io(), ctx.table.metadata(), snapshots)
            .map(|(_, listed)| listed)
            .try_collect()
            .await?;
    Ok(walk::distinct_manifests(
        lists.iter().flat_map(|l| l.iter()),
    ))
}

/// The entries of the plan's manifests, in manifest order then file order.
pub(crate) async fn read_entries(
    ctx: &MetadataContext<'_>,
    plan: ReadPlan<'_>,
) -> Result<Vec<EntryRow>> {
    let manifests: Vec<ManifestFile> = manifests(ctx, plan.scope)
        .await?
        .into_iter()
        .filter(|m| plan.content.is_none_or(|c| c == m.content) && plan.filter.may_contain(m))
        .collect();
    let mut decoded = walk::manifest_contents(ctx.table.io(), ctx.table.metadata(), manifests)
        .map(|(m, manifest)| manifest.map(|manifest| (m.partition_spec_id, manifest)));
    let mut rows = Vec::new();
    while let Some((spec_id, manifest)) = decoded.try_next().await? {
        let kept = manifest
            .entries
            .into_iter()
            .filter(|e| (plan.keep_deleted || e.is_alive()) && plan.filter.keeps(spec_id, e))
            .map(|entry| EntryRow { spec_id, entry });
        rows.extend(kept);
        if plan.filter.is_exact() && plan.limit.is_some_and(|n| rows.len() >= n) {
            break;
        }
    }
    Ok(rows)
}
