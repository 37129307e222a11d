//! The snapshot retention policy (spec: "Snapshot Retention Policy"), as a pure function of
//! the table metadata, the time and the defaults: which refs survive, which snapshots are kept
//! and which expire. Expiring snapshots (and deleting the files only they reach) builds on it.
//!
//! The spec's steps, in order:
//! 1. start with an empty set of snapshots to keep;
//! 2. remove every ref but `main` whose snapshot is older than the ref's `max-ref-age-ms`;
//! 3. keep the snapshot of every remaining branch and tag;
//! 4. for every remaining branch, keep its ancestors (its head first) until one is both older
//!    than the branch's `max-snapshot-age-ms` and not among the branch's first
//!    `min-snapshots-to-keep` snapshots (the head counted);
//! 5. expire every snapshot not kept.
//!
//! A ref's own setting wins; otherwise the table's `history.expire.*` properties, which an
//! expiration call may override (Iceberg Java's `expireOlderThan` / `retainLast` act as the
//! max-snapshot-age and min-snapshots-to-keep of every branch without its own setting).
//! "Older than" is strict: a snapshot exactly `max-snapshot-age-ms` old is kept, as a ref
//! exactly `max-ref-age-ms` old is.

use std::collections::{BTreeMap, BTreeSet};

use super::TableMetadata;
use super::snapshot::{SnapshotReference, SnapshotRetention};
use crate::error::{Error, Result};
use crate::spec::properties::{MAX_REF_AGE_MS, MAX_SNAPSHOT_AGE_MS, MIN_SNAPSHOTS_TO_KEEP};

/// The defaults that apply to refs without their own retention settings, and the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionDefaults {
    /// The time the policy is evaluated at, in epoch milliseconds.
    pub now_ms: i64,
    /// Default `max-snapshot-age-ms` of branches.
    pub max_snapshot_age_ms: i64,
    /// Default `min-snapshots-to-keep` of branches (at least 1).
    pub min_snapshots_to_keep: i32,
    /// Default `max-ref-age-ms` of refs; `None`: refs do not age out.
    pub max_ref_age_ms: Option<i64>,
}

impl RetentionDefaults {
    /// The defaults a table's `history.expire.*` properties set (Java's defaults where unset,
    /// see [`crate::spec::properties`]), at `now_ms`. A property that is not a positive number
    /// is an error naming it.
    pub fn of(metadata: &TableMetadata, now_ms: i64) -> Result<Self> {
        Ok(Self {
            now_ms,
            max_snapshot_age_ms: MAX_SNAPSHOT_AGE_MS.get(metadata)?,
            min_snapshots_to_keep: MIN_SNAPSHOTS_TO_KEEP.get(metadata)?,
            max_ref_age_ms: MAX_REF_AGE_MS.get(metadata)?,
        })
    }
}

/// What the policy decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    /// The refs that stay.
    pub refs: BTreeMap<String, SnapshotReference>,
    /// The refs removed for their age (step 2), by name.
    pub removed_refs: Vec<String>,
    /// The snapshots kept.
    pub kept: BTreeSet<i64>,
    /// The snapshots that expire, in metadata order.
    pub expired: Vec<i64>,
}

/// Applies the retention policy to `metadata` (see the module docs). A ref whose snapshot is
/// missing from the metadata is removed with the aged ones (it names nothing to keep; never
/// `main`, whose missing snapshot is an error: the metadata is broken).
pub fn retention(metadata: &TableMetadata, defaults: &RetentionDefaults) -> Result<Retention> {
    let now = defaults.now_ms;
    let mut refs = BTreeMap::new();
    let mut removed_refs = Vec::new();
    for (name, reference) in &metadata.refs {
        let Some(snapshot) = metadata.snapshot_by_id(reference.snapshot_id) else {
            if name == SnapshotReference::MAIN_BRANCH {
                return Err(Error::corrupt(
                    "",
                    format!(
                        "branch main points at snapshot {}, which the metadata does not have",
                        reference.snapshot_id
                    ),
                ));
            }
            removed_refs.push(name.clone());
            continue;
        };
        let max_ref_age = match reference.retention {
            SnapshotRetention::Branch { max_ref_age_ms, .. }
            | SnapshotRetention::Tag { max_ref_age_ms } => {
                max_ref_age_ms.or(defaults.max_ref_age_ms)
            }
        };
        let too_old = max_ref_age.is_some_and(|max| now - snapshot.timestamp_ms > max);
        if too_old && name != SnapshotReference::MAIN_BRANCH {
            removed_refs.push(name.clone());
        } else {
            refs.insert(name.clone(), reference.clone());
        }
    }
    let mut kept = BTreeSet::new();
    for reference in refs.values() {
        kept.insert(reference.snapshot_id);
        let SnapshotRetention::Branch {
            min_snapshots_to_keep,
            max_snapshot_age_ms,
            ..
        } = reference.retention
        else {
            continue;
        };
        let min_keep = min_snapshots_to_keep.unwrap_or(defaults.min_snapshots_to_keep);
        let oldest_kept = now - max_snapshot_age_ms.unwrap_or(defaults.max_snapshot_age_ms);
        let head = metadata.snapshot_by_id(reference.snapshot_id);
        for (position, snapshot) in metadata.ancestors_of(head).enumerate() {
            let within_count = i64::try_from(position).unwrap_or(i64::MAX) < i64::from(min_keep);
            if !within_count && snapshot.timestamp_ms < oldest_kept {
                break;
            }
            kept.insert(snapshot.snapshot_id);
        }
    }
    let expired = metadata
        .snapshots
        .iter()
        .map(|s| s.snapshot_id)
        .filter(|id| !kept.contains(id))
        .collect();
    Ok(Retention {
        refs,
        removed_refs,
        kept,
        expired,
    })
}

#[cfg(test)]
#[path = "retention_tests.rs"]
mod tests;
