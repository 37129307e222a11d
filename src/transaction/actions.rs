//! The actions of a [`Transaction`](super::Transaction): each one a change stated against the
//! metadata of a commit attempt, as requirements and updates.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;

use super::{Action, Changes, CommitContext, SnapshotProducer, ref_unchanged, set_ref};
use crate::error::{Error, Result};
use crate::scan::read_manifest_list;
use crate::spec::retention::{RetentionDefaults, retention};
use crate::spec::summary::append_summary;
use crate::spec::{
    DataFile, FormatVersion, ManifestFile, SnapshotReference, SnapshotRetention, TableMetadata,
    TableUpdate,
};

/// Appends data files to a branch as one new snapshot (`append`), reusing every manifest of
/// the branch head: one new manifest per partition spec, written once and listed again by
/// every attempt.
#[derive(Debug)]
pub struct FastAppend {
    files: Vec<(i32, DataFile)>,
    summary_properties: BTreeMap<String, String>,
    producer: SnapshotProducer,
    manifests: Option<Vec<ManifestFile>>,
}

impl FastAppend {
    /// An append of `files` (each with its partition spec id) to `main`.
    pub fn new(files: Vec<(i32, DataFile)>) -> Self {
        Self {
            files,
            summary_properties: BTreeMap::new(),
            producer: SnapshotProducer::new(SnapshotReference::MAIN_BRANCH),
            manifests: None,
        }
    }

    /// Appends to `branch` instead (created at the new snapshot when it does not exist).
    pub fn to_branch(mut self, branch: impl Into<String>) -> Self {
        self.producer = SnapshotProducer::new(branch);
        self
    }

    /// Adds a property to the new snapshot's summary (a cherry-pick's `source-snapshot-id`).
    pub fn with_summary_property(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        self.summary_properties.insert(key.into(), value.into());
        self
    }

    /// The new snapshot's id.
    pub fn snapshot_id(&self) -> i64 {
        self.producer.snapshot_id()
    }
}

#[async_trait]
impl Action for FastAppend {
    fn validate(&self, _base: &TableMetadata, current: &TableMetadata) -> Result<()> {
        let branch = self.producer.branch();
        if current.refs.get(branch).is_some_and(|r| !r.is_branch()) {
            return Err(Error::invalid(
                format!("ref '{branch}'"),
                "it is a tag; commits go to branches",
            ));
        }
        for (spec_id, _) in &self.files {
            if current.partition_spec_by_id(*spec_id).is_none() {
                return Err(Error::invalid(
                    format!("partition spec {spec_id}"),
                    "it is not in the table (was it removed by another commit?)",
                ));
            }
        }
        Ok(())
    }

    async fn stage(&mut self, context: &CommitContext<'_>, base: &TableMetadata) -> Result<()> {
        if self.manifests.is_none() {
            let written = self
                .producer
                .write_added(context.io, base, &self.files)
                .await?;
            self.manifests = Some(written);
        }
        Ok(())
    }

    async fn changes(
        &mut self,
        context: &CommitContext<'_>,
        current: &TableMetadata,
    ) -> Result<Changes> {
        self.stage(context, current).await?;
        let manifests = self.manifests.clone().unwrap_or_default();
        let parent = current
            .branch_head(self.producer.branch())
            .and_then(|id| current.snapshot_by_id(id));
        let kept = match parent {
            Some(parent) => read_manifest_list(context.io, current, parent)
                .await?
                .as_ref()
                .clone(),
            None => Vec::new(),
        };
        let added: Vec<(i32, &DataFile)> = self.files.iter().map(|(s, f)| (*s, f)).collect();
        let mut summary = append_summary(parent.and_then(|p| p.summary.as_ref()), &added);
        summary
            .properties_mut()
            .extend(self.summary_properties.clone());
        self.producer
            .produce(context, current, &manifests, kept, summary)
            .await
    }

    fn written(&self) -> Vec<String> {
        self.producer.written()
    }

    fn superseded(&self) -> Vec<String> {
        self.producer.superseded()
    }
}

/// A branch's retention settings (Java's `SnapshotRef` fields).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BranchRetention {
    /// `min-snapshots-to-keep`.
    pub min_snapshots_to_keep: Option<i32>,
    /// `max-snapshot-age-ms`.
    pub max_snapshot_age_ms: Option<i64>,
    /// `max-ref-age-ms`.
    pub max_ref_age_ms: Option<i64>,
}

/// What [`SetRef`] does.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RefChange {
    /// Create a branch with these settings (an existing ref of the name is an error).
    CreateBranch(BranchRetention),
    /// Create a tag (an existing ref of the name is an error).
    CreateTag { max_ref_age_ms: Option<i64> },
    /// Point an existing branch (`true`) or tag (`false`) elsewhere, keeping its settings.
    Replace { branch: bool },
}

/// Creates a branch or tag, or points an existing one at another snapshot.
#[derive(Debug, Clone)]
pub struct SetRef {
    name: String,
    snapshot_id: Option<i64>,
    change: RefChange,
}

impl SetRef {
    /// Creates branch `name` at `snapshot_id` (default: the current snapshot).
    pub fn create_branch(
        name: impl Into<String>,
        snapshot_id: Option<i64>,
        retention: BranchRetention,
    ) -> Self {
        Self {
            name: name.into(),
            snapshot_id,
            change: RefChange::CreateBranch(retention),
        }
    }

    /// Creates tag `name` at `snapshot_id` (default: the current snapshot).
    pub fn create_tag(
        name: impl Into<String>,
        snapshot_id: Option<i64>,
        max_ref_age_ms: Option<i64>,
    ) -> Self {
        Self {
            name: name.into(),
            snapshot_id,
            change: RefChange::CreateTag { max_ref_age_ms },
        }
    }

    /// Points the existing branch `name` at any snapshot (`main` moves the current snapshot).
    pub fn replace_branch(name: impl Into<String>, snapshot_id: i64) -> Self {
        Self {
            name: name.into(),
            snapshot_id: Some(snapshot_id),
            change: RefChange::Replace { branch: true },
        }
    }

    /// Points the existing tag `name` at another snapshot.
    pub fn replace_tag(name: impl Into<String>, snapshot_id: i64) -> Self {
        Self {
            name: name.into(),
            snapshot_id: Some(snapshot_id),
            change: RefChange::Replace { branch: false },
        }
    }
}

#[async_trait]
impl Action for SetRef {
    async fn changes(
        &mut self,
        _context: &CommitContext<'_>,
        current: &TableMetadata,
    ) -> Result<Changes> {
        let name = &self.name;
        let retention = match &self.change {
            RefChange::CreateBranch(_) | RefChange::CreateTag { .. }
                if current.refs.contains_key(name) =>
            {
                return Err(Error::AlreadyExists {
                    what: format!("ref '{name}'"),
                });
            }
            RefChange::CreateBranch(r) => SnapshotRetention::Branch {
                min_snapshots_to_keep: r.min_snapshots_to_keep,
                max_snapshot_age_ms: r.max_snapshot_age_ms,
                max_ref_age_ms: r.max_ref_age_ms,
            },
            RefChange::CreateTag { max_ref_age_ms } => SnapshotRetention::Tag {
                max_ref_age_ms: *max_ref_age_ms,
            },
            RefChange::Replace { branch } => {
                let kind = if *branch { "branch" } else { "tag" };
                current
                    .refs
                    .get(name)
                    .filter(|r| r.is_branch() == *branch)
                    .ok_or_else(|| Error::not_found(format!("{kind} '{name}'")))?
                    .retention
                    .clone()
            }
        };
        let snapshot_id = match self.snapshot_id.or(current.current_snapshot_id) {
            Some(id) => id,
            None => {
                return Err(Error::invalid(
                    format!("ref '{name}'"),
                    "the table has no current snapshot for it to point at",
                ));
            }
        };
        if current.snapshot_by_id(snapshot_id).is_none() {
            return Err(Error::not_found(format!(
                "snapshot {snapshot_id} (for ref '{name}')"
            )));
        }
        if name == SnapshotReference::MAIN_BRANCH
            && !matches!(retention, SnapshotRetention::Branch { .. })
        {
            return Err(Error::invalid("ref 'main'", "it must be a branch"));
        }
        let reference = SnapshotReference {
            snapshot_id,
            retention,
        };
        Ok(Changes {
            requirements: vec![ref_unchanged(current, name)],
            updates: vec![set_ref(name, &reference)],
        })
    }
}

/// Drops a branch or tag (never `main`).
#[derive(Debug, Clone)]
pub struct RemoveRef {
    name: String,
}

impl RemoveRef {
    /// Drops ref `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into() }
    }
}

#[async_trait]
impl Action for RemoveRef {
    async fn changes(
        &mut self,
        _context: &CommitContext<'_>,
        current: &TableMetadata,
    ) -> Result<Changes> {
        let name = &self.name;
        if name == SnapshotReference::MAIN_BRANCH {
            return Err(Error::invalid("branch 'main'", "it cannot be dropped"));
        }
        if !current.refs.contains_key(name) {
            return Err(Error::not_found(format!("ref '{name}'")));
        }
        Ok(Changes {
            requirements: vec![ref_unchanged(current, name)],
            updates: vec![TableUpdate::RemoveSnapshotRef {
                ref_name: name.clone(),
            }],
        })
    }
}

/// Where [`MoveBranch`] moves a branch.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// A snapshot.
    Snapshot(i64),
    /// The head of a ref.
    RefHead(String),
    /// The newest ancestor of the branch head committed at or before a time.
    AtOrBefore(i64),
}

/// Moves a branch: back to one of its ancestors (a rollback) or forward to a snapshot that
/// descends from its head (a fast-forward), keeping its settings.
#[derive(Debug, Clone)]
pub struct MoveBranch {
    branch: String,
    target: Target,
    backwards: bool,
}

impl MoveBranch {
    /// Makes `snapshot_id`, an ancestor of the current snapshot, current again.
    pub fn rollback_to_snapshot(snapshot_id: i64) -> Self {
        Self {
            branch: SnapshotReference::MAIN_BRANCH.to_string(),
            target: Target::Snapshot(snapshot_id),
            backwards: true,
        }
    }

    /// Makes current again the newest ancestor of the current snapshot committed at or before
    /// `timestamp_ms` (Java's `rollbackToTime`).
    pub fn rollback_to_time(timestamp_ms: i64) -> Self {
        Self {
            branch: SnapshotReference::MAIN_BRANCH.to_string(),
            target: Target::AtOrBefore(timestamp_ms),
            backwards: true,
        }
    }

    /// Moves `branch` forward to the head of ref `to`, which must descend from it.
    pub fn fast_forward(branch: impl Into<String>, to: impl Into<String>) -> Self {
        Self {
            branch: branch.into(),
            target: Target::RefHead(to.into()),
            backwards: false,
        }
    }
}

#[async_trait]
impl Action for MoveBranch {
    async fn changes(
        &mut self,
        _context: &CommitContext<'_>,
        current: &TableMetadata,
    ) -> Result<Changes> {
        let branch = &self.branch;
        let Some(reference) = current.refs.get(branch) else {
            return Err(Error::not_found(format!("branch '{branch}'")));
        };
        if !reference.is_branch() {
            return Err(Error::invalid(
                format!("ref '{branch}'"),
                "it is a tag, not a branch",
            ));
        }
        let head = reference.snapshot_id;
        let target = match &self.target {
            Target::Snapshot(id) => *id,
            Target::RefHead(name) => {
                current
                    .refs
                    .get(name)
                    .ok_or_else(|| Error::not_found(format!("ref '{name}'")))?
                    .snapshot_id
            }
            Target::AtOrBefore(ms) => {
                current
                    .ancestors_of(current.snapshot_by_id(head))
                    .find(|s| s.timestamp_ms <= *ms)
                    .ok_or_else(|| {
                        Error::not_found(format!(
                            "an ancestor of the head of '{branch}' committed at or before {ms}"
                        ))
                    })?
                    .snapshot_id
            }
        };
        if current.snapshot_by_id(target).is_none() {
            return Err(Error::not_found(format!("snapshot {target}")));
        }
        let (from, to) = match self.backwards {
            true => (head, target),
            false => (target, head),
        };
        if !current
            .ancestors_of(current.snapshot_by_id(from))
            .any(|s| s.snapshot_id == to)
        {
            return Err(Error::invalid(
                format!("snapshot {target}"),
                match self.backwards {
                    true => format!("it is not an ancestor of branch '{branch}' (at {head})"),
                    false => format!(
                        "branch '{branch}' (at {head}) is not an ancestor of it: the branch \
                         cannot be fast-forwarded there"
                    ),
                },
            ));
        }
        let moved = SnapshotReference {
            snapshot_id: target,
            retention: reference.retention.clone(),
        };
        Ok(Changes {
            requirements: vec![ref_unchanged(current, branch)],
            updates: vec![set_ref(branch, &moved)],
        })
    }
}

/// Sets and removes table properties (removing an absent one changes nothing).
#[derive(Debug, Clone, Default)]
pub struct UpdateProperties {
    updates: BTreeMap<String, String>,
    removals: Vec<String>,
}

impl UpdateProperties {
    /// Sets `properties`.
    pub fn set<K: Into<String>, V: Into<String>>(
        properties: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self::default().and_set(properties)
    }

    /// Removes `keys`.
    pub fn remove<K: Into<String>>(keys: impl IntoIterator<Item = K>) -> Self {
        Self::default().and_remove(keys)
    }

    /// Also sets `properties`.
    pub fn and_set<K: Into<String>, V: Into<String>>(
        mut self,
        properties: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let set = properties.into_iter().map(|(k, v)| (k.into(), v.into()));
        self.updates.extend(set);
        self
    }

    /// Also removes `keys`.
    pub fn and_remove<K: Into<String>>(mut self, keys: impl IntoIterator<Item = K>) -> Self {
        self.removals.extend(keys.into_iter().map(Into::into));
        self
    }
}

#[async_trait]
impl Action for UpdateProperties {
    fn validate(&self, _base: &TableMetadata, _current: &TableMetadata) -> Result<()> {
        match self.removals.iter().find(|k| self.updates.contains_key(*k)) {
            Some(key) => Err(Error::invalid(
                format!("table property {key}"),
                "it is both set and removed",
            )),
            None => Ok(()),
        }
    }

    async fn changes(
        &mut self,
        _context: &CommitContext<'_>,
        _current: &TableMetadata,
    ) -> Result<Changes> {
        let mut updates = Vec::new();
        if !self.updates.is_empty() {
            updates.push(TableUpdate::SetProperties {
                updates: self.updates.clone(),
            });
        }
        if !self.removals.is_empty() {
            updates.push(TableUpdate::RemoveProperties {
                removals: self.removals.clone(),
            });
        }
        Ok(Changes {
            requirements: Vec::new(),
            updates,
        })
    }
}

/// Upgrades the table's format version (`upgrade-format-version`; never down: an older
/// version is refused when committed). Upgrading to v3 starts row lineage (`next-row-id` 0):
/// rows written before have no `_row_id`.
#[derive(Debug, Clone)]
pub struct UpgradeFormatVersion {
    version: FormatVersion,
}

impl UpgradeFormatVersion {
    /// To `version`.
    pub fn to(version: FormatVersion) -> Self {
        Self { version }
    }
}

#[async_trait]
impl Action for UpgradeFormatVersion {
    async fn changes(
        &mut self,
        _context: &CommitContext<'_>,
        current: &TableMetadata,
    ) -> Result<Changes> {
        if self.version < current.format_version {
            return Err(Error::invalid(
                format_args!("format version {}", self.version.number()),
                format_args!(
                    "is older than the table's ({}): tables are never downgraded",
                    current.format_version.number()
                ),
            ));
        }
        let updates = match self.version == current.format_version {
            true => Vec::new(),
            false => vec![TableUpdate::UpgradeFormatVersion {
                format_version: self.version,
            }],
        };
        Ok(Changes {
            requirements: Vec::new(),
            updates,
        })
    }
}

/// Expires snapshots by the table's retention policy (`history.expire.*`, each ref's own
/// settings), with the options of [`crate::maintenance::ExpireSnapshots`]: the metadata change
/// only. Deleting the files that only expired snapshots reached is the caller's (after the
/// commit).
#[derive(Debug, Clone)]
pub struct ExpireSnapshots {
    older_than_ms: Option<i64>,
    retain_last: Option<i32>,
    snapshot_ids: Vec<i64>,
    now_ms: Option<i64>,
}

impl ExpireSnapshots {
    /// Expiration by the table's policy alone, at the commit's time.
    pub fn new() -> Self {
        Self {
            older_than_ms: None,
            retain_last: None,
            snapshot_ids: Vec::new(),
            now_ms: None,
        }
    }

    /// Expires snapshots older than `timestamp_ms` (instead of `history.expire.max-snapshot-age-ms`).
    pub fn with_older_than_ms(mut self, timestamp_ms: Option<i64>) -> Self {
        self.older_than_ms = timestamp_ms;
        self
    }

    /// Keeps at least `n` ancestors of each branch (instead of
    /// `history.expire.min-snapshots-to-keep`).
    pub fn with_retain_last(mut self, n: Option<i32>) -> Self {
        self.retain_last = n;
        self
    }

    /// Also expires these snapshots (none may be a ref's head).
    pub fn with_snapshot_ids(mut self, ids: Vec<i64>) -> Self {
        self.snapshot_ids = ids;
        self
    }

    /// Decides as if it were `now_ms` (tests, dry runs); default: the commit's time.
    pub fn with_now_ms(mut self, now_ms: Option<i64>) -> Self {
        self.now_ms = now_ms;
        self
    }

    /// The expired snapshot ids and removed refs on `metadata` at `now`.
    pub fn plan(&self, metadata: &TableMetadata, now: i64) -> Result<(Vec<i64>, Vec<String>)> {
        let mut defaults = RetentionDefaults::of(metadata, now)?;
        if let Some(older_than) = self.older_than_ms {
            defaults.max_snapshot_age_ms = now - older_than;
        }
        if let Some(n) = self.retain_last {
            if n < 1 {
                return Err(Error::invalid(
                    "retain-last",
                    format!("it must be at least 1, not {n}"),
                ));
            }
            defaults.min_snapshots_to_keep = n;
        }
        let mut decided = retention(metadata, &defaults)?;
        let heads: BTreeSet<i64> = decided.refs.values().map(|r| r.snapshot_id).collect();
        for id in &self.snapshot_ids {
            if metadata.snapshot_by_id(*id).is_none() {
                return Err(Error::not_found(format!("snapshot {id}")));
            }
            if heads.contains(id) {
                return Err(Error::invalid(
                    format!("snapshot {id}"),
                    "it cannot expire: a branch or tag points at it",
                ));
            }
            if decided.kept.remove(id) {
                decided.expired.push(*id);
            }
        }
        Ok((decided.expired, decided.removed_refs))
    }
}

impl Default for ExpireSnapshots {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Action for ExpireSnapshots {
    async fn changes(
        &mut self,
        context: &CommitContext<'_>,
        current: &TableMetadata,
    ) -> Result<Changes> {
        let now = self.now_ms.unwrap_or(context.now_ms);
        let (expired, removed_refs) = self.plan(current, now)?;
        // Every ref must be where it was: a ref moved by another writer onto a snapshot this
        // expiration removes would otherwise be dropped with it.
        let requirements = current
            .refs
            .keys()
            .map(|name| ref_unchanged(current, name))
            .collect();
        let mut updates: Vec<TableUpdate> = removed_refs
            .iter()
            .map(|name| TableUpdate::RemoveSnapshotRef {
                ref_name: name.clone(),
            })
            .collect();
        if !expired.is_empty() {
            updates.push(TableUpdate::RemoveSnapshots {
                snapshot_ids: expired,
            });
        }
        Ok(Changes {
            requirements,
            updates,
        })
    }
}
