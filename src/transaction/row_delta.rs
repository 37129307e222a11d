//! [`RowDelta`]: one snapshot that removes data and delete files and adds others, the commit
//! of every row-level change (DELETE, UPDATE, MERGE, INSERT OVERWRITE, TRUNCATE), in either
//! mode: copy-on-write removes rewritten data files and adds their replacements,
//! merge-on-read adds delete files (and removes the deletion vectors they replace).
//!
//! Manifests of the branch head that hold a removed file are rewritten with that file's entry
//! DELETED (by the new snapshot) and every other live entry EXISTING (sequence numbers kept);
//! the others are listed as they are. Manifests whose every live file is removed are not
//! rewritten one by one: their DELETED entries go into one manifest per spec and content (a
//! compaction of many one-file commits removes thousands of such manifests; Java's manifest
//! merge leaves it one too). A rewrite depends only on the manifest (files never change), so
//! an attempt after a lost race reuses the rewrites of manifests still listed.
//!
//! # Conflicts (Iceberg Java's `validate*` checks of `OverwriteFiles` and `RowDelta`)
//!
//! The change was computed from the rows of one snapshot, its base. Before each attempt the
//! snapshots committed to the branch since are checked; each rule a commit breaks ends the
//! commit with [`Error::CommitConflict`] naming that snapshot (it is not retried):
//!
//! - a data file the change removes or adds deletes for was removed (compaction, another
//!   DELETE);
//! - a delete file was added that may apply to a data file the change reads (its rows would
//!   be lost by a rewrite, or deleted twice), except equality deletes when the added files
//!   keep the base's data sequence number ([`RowDelta::with_data_sequence_number`]: those
//!   deletes apply to them too);
//! - under `serializable` isolation, a data file was added whose rows may match the change's
//!   condition ([`RowDelta::conflict_filter`]; without one, any added data file): the change
//!   would not have seen them. `snapshot` isolation allows those.
//!
//! Anything else another writer did (appends elsewhere, property changes, other branches) is
//! allowed: the attempt is simply stated on the new head.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;

use super::{Action, Changes, CommitContext, SnapshotProducer};
use crate::error::{Error, Result};
use crate::expr::Predicate;
use crate::scan::plan::Pruner;
use crate::scan::{read_manifest_list, read_manifests};
use crate::spec::snapshot::Operation;
use crate::spec::summary::SummaryBuilder;
use crate::spec::{
    DataContentType, DataFile, Literal, ManifestContent, ManifestEntry, ManifestFile,
    ManifestStatus, SnapshotReference, TableMetadata,
};

/// Which concurrent commits a row-level change tolerates (`write.<op>.isolation-level`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// No concurrently added data file may hold rows matching the change's condition
    /// (Java's default).
    #[default]
    Serializable,
    /// Concurrently added data files are allowed; removed files and new deletes on the files
    /// read still conflict.
    Snapshot,
}

impl Isolation {
    /// Parses `serializable` or `snapshot` (any case).
    pub fn parse(value: &str) -> Result<Self> {
        match value.to_ascii_lowercase().as_str() {
            "serializable" => Ok(Self::Serializable),
            "snapshot" => Ok(Self::Snapshot),
            other => Err(Error::invalid(
                format_args!("isolation level '{other}'"),
                "expected 'serializable' or 'snapshot'",
            )),
        }
    }
}

/// A data file the change reads, by its partition (for delete files without a referenced
/// data file).
#[derive(Debug, Clone)]
struct Touched {
    spec_id: i32,
    partition: Vec<Option<Literal>>,
}

/// A manifest of the branch head rewritten without the removed files, and what it removed.
#[derive(Debug, Clone)]
struct Rewrite {
    /// `None`: the manifest holds no removed file and is listed as it is, or only removed
    /// files (their DELETED entries are written with those of the other such manifests of its
    /// spec and content).
    manifest: Option<ManifestFile>,
    /// The manifest's live entries, the removed files' ones DELETED; empty when it holds no
    /// removed file.
    entries: Vec<ManifestEntry>,
}

impl Rewrite {
    /// The files of the manifest this change removes.
    fn removed(&self) -> impl Iterator<Item = &DataFile> {
        self.entries
            .iter()
            .filter(|e| e.status == ManifestStatus::Deleted)
            .map(|e| &e.data_file)
    }
}

/// Removes data and delete files and adds others, as one snapshot of a branch (see the module
/// docs).
#[derive(Debug)]
pub struct RowDelta {
    producer: SnapshotProducer,
    added_data: Vec<(i32, DataFile)>,
    added_deletes: Vec<(i32, DataFile)>,
    removed_data: HashSet<String>,
    removed_deletes: HashSet<String>,
    base_snapshot: Option<i64>,
    isolation: Isolation,
    filter: Option<Predicate>,
    touched: HashMap<String, Touched>,
    operation: Option<Operation>,
    /// The data sequence number the added data files keep (a rewrite's), if not inherited.
    data_sequence_number: Option<i64>,
    summary_properties: BTreeMap<String, String>,
    staged: Option<Vec<ManifestFile>>,
    rewrites: HashMap<String, Rewrite>,
    /// The source manifests the last attempt rewrote.
    last_rewritten: HashSet<String>,
    /// The manifests of DELETED entries every attempt wrote, and those of the last one.
    combined: Vec<String>,
    last_combined: HashSet<String>,
}

impl RowDelta {
    /// A change of `main` computed from the rows of snapshot `base_snapshot` (`None`: the
    /// table had none).
    pub fn new(base_snapshot: Option<i64>) -> Self {
        Self {
            producer: SnapshotProducer::new(SnapshotReference::MAIN_BRANCH),
            added_data: Vec::new(),
            added_deletes: Vec::new(),
            removed_data: HashSet::new(),
            removed_deletes: HashSet::new(),
            base_snapshot,
            isolation: Isolation::default(),
            filter: None,
            touched: HashMap::new(),
            operation: None,
            data_sequence_number: None,
            summary_properties: BTreeMap::new(),
            staged: None,
            rewrites: HashMap::new(),
            last_rewritten: HashSet::new(),
            combined: Vec::new(),
            last_combined: HashSet::new(),
        }
    }

    /// Commits to `branch` instead (its head must be the base snapshot's descendant).
    pub fn to_branch(mut self, branch: impl Into<String>) -> Self {
        self.producer = SnapshotProducer::new(branch);
        self
    }

    /// Adds data files (each with its partition spec id).
    pub fn add_data_files(mut self, files: impl IntoIterator<Item = (i32, DataFile)>) -> Self {
        self.added_data.extend(files);
        self
    }

    /// Adds delete files (position deletes or deletion vectors, each with its spec id); the
    /// data files they reference are read by the change (see the module docs).
    pub fn add_delete_files(mut self, files: impl IntoIterator<Item = (i32, DataFile)>) -> Self {
        self.added_deletes.extend(files);
        self
    }

    /// Removes the live data file `file` (of spec `spec_id`); it is read by the change.
    pub fn remove_data_file(mut self, spec_id: i32, file: &DataFile) -> Self {
        self.removed_data.insert(file.file_path.clone());
        self.touch(spec_id, file)
    }

    /// Removes the live delete file `file` (a deletion vector: that blob of its Puffin file).
    pub fn remove_delete_file(mut self, file: &DataFile) -> Self {
        self.removed_deletes
            .insert(removal_key(ManifestContent::Deletes, file).into_owned());
        self
    }

    /// Marks data file `file` (of spec `spec_id`) as read by the change: a delete file or
    /// removal of it committed concurrently conflicts.
    pub fn touch(mut self, spec_id: i32, file: &DataFile) -> Self {
        self.touched.insert(
            file.file_path.clone(),
            Touched {
                spec_id,
                partition: file.partition.clone(),
            },
        );
        self
    }

    /// The isolation level the conflict checks use.
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// The change's condition over the table's current schema: under serializable isolation,
    /// only concurrently added data files that may hold matching rows conflict. Without one,
    /// every added data file does.
    pub fn conflict_filter(mut self, filter: Predicate) -> Self {
        self.filter = Some(filter);
        self
    }

    /// The snapshot's operation, instead of the one Java derives (`delete` when only files are
    /// removed or deletes added, `overwrite` when data files are also added, `append` when
    /// only data files are added).
    pub fn operation(mut self, operation: Operation) -> Self {
        self.operation = Some(operation);
        self
    }

    /// Gives the added data files the data sequence number `sequence_number` (that of the
    /// base snapshot, whose rows they copy) instead of the new snapshot's: equality deletes
    /// committed concurrently then still apply to them, so those no longer conflict (Java's
    /// `RewriteFiles.dataSequenceNumber`, what compaction commits).
    pub fn with_data_sequence_number(mut self, sequence_number: i64) -> Self {
        self.data_sequence_number = Some(sequence_number);
        self
    }

    /// Adds a property to the new snapshot's summary.
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

    /// Whether the change does nothing (no file added or removed).
    pub fn is_empty(&self) -> bool {
        self.added_data.is_empty()
            && self.added_deletes.is_empty()
            && self.removed_data.is_empty()
            && self.removed_deletes.is_empty()
    }

    fn derived_operation(&self) -> Operation {
        let adds_data = !self.added_data.is_empty();
        let removes_or_deletes = !self.removed_data.is_empty()
            || !self.added_deletes.is_empty()
            || !self.removed_deletes.is_empty();
        match (adds_data, removes_or_deletes) {
            (true, false) => Operation::Append,
            (false, _) => Operation::Delete,
            (true, true) => Operation::Overwrite,
        }
    }

    fn conflict(&self, context: &CommitContext<'_>, reason: String) -> Error {
        Error::CommitConflict {
            table: context.table.to_string(),
            reason,
        }
    }

    /// The conflict checks of the module docs, over the snapshots of the branch from its
    /// current head back to the base snapshot.
    async fn validate_since(
        &self,
        context: &CommitContext<'_>,
        current: &TableMetadata,
        head: Option<i64>,
    ) -> Result<()> {
        if head == self.base_snapshot {
            return Ok(());
        }
        let start = head.and_then(|id| current.snapshot_by_id(id));
        let mut newer = Vec::new();
        let mut reached = self.base_snapshot.is_none();
        for snapshot in current.ancestors_of(start) {
            if Some(snapshot.snapshot_id) == self.base_snapshot {
                reached = true;
                break;
            }
            newer.push(snapshot);
        }
        if !reached {
            return Err(self.conflict(
                context,
                format!(
                    "branch '{}' no longer descends from snapshot {} the change was computed \
                     from (it was rolled back or replaced)",
                    self.producer.branch(),
                    self.base_snapshot.unwrap_or_default()
                ),
            ));
        }
        let schema = current.current_schema();
        let pruner = self
            .filter
            .clone()
            .map(|filter| Pruner::new(current, schema, filter));
        for snapshot in newer.into_iter().rev() {
            let id = snapshot.snapshot_id;
            let operation = snapshot
                .summary
                .as_ref()
                .map_or("unknown".to_string(), |s| s.operation.as_str().to_string());
            let listed = read_manifest_list(context.io, current, snapshot).await?;
            let own: Vec<ManifestFile> = listed
                .iter()
                .filter(|m| m.added_snapshot_id == id)
                .cloned()
                .collect();
            let manifests = read_manifests(context.io, current, &own).await?;
            for (manifest_file, manifest) in own.iter().zip(manifests) {
                for entry in manifest
                    .entries
                    .iter()
                    .filter(|e| e.snapshot_id == Some(id))
                {
                    let file = &entry.data_file;
                    let path = &file.file_path;
                    let by = || format!("snapshot {id} ({operation})");
                    match (entry.status, file.content) {
                        (ManifestStatus::Deleted, DataContentType::Data)
                            if self.touched.contains_key(path) =>
                        {
                            return Err(self.conflict(
                                context,
                                format!(
                                    "{} removed data file {path}, which this change also \
                                     changes",
                                    by()
                                ),
                            ));
                        }
                        (ManifestStatus::Added, DataContentType::Data)
                            if self.isolation == Isolation::Serializable =>
                        {
                            let may_match = pruner.as_ref().is_none_or(|p| {
                                p.partition_may_match(manifest_file.partition_spec_id, file)
                                    && p.metrics_may_match(file)
                            });
                            if may_match {
                                return Err(self.conflict(
                                    context,
                                    format!(
                                        "{} added data file {path}, whose rows may match \
                                         this change's condition (isolation serializable)",
                                        by()
                                    ),
                                ));
                            }
                        }
                        (ManifestStatus::Added, DataContentType::EqualityDeletes)
                            if self.data_sequence_number.is_some() => {}
                        (ManifestStatus::Added, DataContentType::PositionDeletes)
                        | (ManifestStatus::Added, DataContentType::EqualityDeletes) => {
                            if let Some(target) = self.applies_to_touched(
                                current,
                                manifest_file.partition_spec_id,
                                file,
                            ) {
                                return Err(self.conflict(
                                    context,
                                    format!(
                                        "{} added delete file {path}, which may delete rows \
                                         of data file {target} that this change read",
                                        by()
                                    ),
                                ));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }

    /// The data file this change read that a new delete file may apply to.
    fn applies_to_touched<'a>(
        &'a self,
        current: &TableMetadata,
        spec_id: i32,
        delete: &DataFile,
    ) -> Option<&'a str> {
        if let Some(referenced) = &delete.referenced_data_file {
            return self
                .touched
                .get_key_value(referenced)
                .map(|(path, _)| path.as_str());
        }
        let global = current
            .partition_spec_by_id(spec_id)
            .is_none_or(|spec| spec.fields.is_empty());
        self.touched
            .iter()
            .find(|(_, t)| global || (t.spec_id == spec_id && t.partition == delete.partition))
            .map(|(path, _)| path.as_str())
    }

    /// The head's manifests that stay as they are, and those holding a removed file rewritten
    /// (see the module docs: written by the new snapshot, so they take its sequence number);
    /// [`Self::removed_files`] then names the files removed.
    async fn kept_manifests(
        &mut self,
        context: &CommitContext<'_>,
        current: &TableMetadata,
        listed: &[ManifestFile],
    ) -> Result<(Vec<ManifestFile>, Vec<ManifestFile>)> {
        let may_hold = |m: &ManifestFile| {
            let live = m.added_files_count.unwrap_or(1) + m.existing_files_count.unwrap_or(1);
            live > 0
                && match m.content {
                    ManifestContent::Data => !self.removed_data.is_empty(),
                    ManifestContent::Deletes => !self.removed_deletes.is_empty(),
                }
        };
        let unknown: Vec<ManifestFile> = listed
            .iter()
            .filter(|m| may_hold(m) && !self.rewrites.contains_key(&m.manifest_path))
            .cloned()
            .collect();
        let decoded = read_manifests(context.io, current, &unknown).await?;
        for (manifest_file, manifest) in unknown.iter().zip(decoded) {
            let removal = match manifest_file.content {
                ManifestContent::Data => &self.removed_data,
                ManifestContent::Deletes => &self.removed_deletes,
            };
            let rewrite = rewrite_manifest(
                &mut self.producer,
                removal,
                context,
                current,
                manifest_file,
                manifest.entries,
            )
            .await?;
            self.rewrites
                .insert(manifest_file.manifest_path.clone(), rewrite);
        }
        let mut kept = Vec::with_capacity(listed.len());
        let mut rewritten_manifests = Vec::new();
        // The DELETED entries of manifests left without a live file, by spec and content.
        let mut deleted: BTreeMap<(i32, u8), (ManifestContent, Vec<&ManifestEntry>)> =
            BTreeMap::new();
        self.last_rewritten.clear();
        for manifest in listed {
            match self.rewrites.get(&manifest.manifest_path) {
                Some(Rewrite {
                    manifest: Some(rewritten),
                    ..
                }) => {
                    self.last_rewritten.insert(manifest.manifest_path.clone());
                    rewritten_manifests.push(rewritten.clone());
                }
                Some(Rewrite {
                    manifest: None,
                    entries,
                }) if !entries.is_empty() => {
                    let key = (manifest.partition_spec_id, manifest.content as u8);
                    let group = deleted
                        .entry(key)
                        .or_insert_with(|| (manifest.content, Vec::new()));
                    group.1.extend(entries);
                }
                _ => kept.push(manifest.clone()),
            }
        }
        self.last_combined.clear();
        for ((spec_id, _), (content, entries)) in deleted {
            let written = self
                .producer
                .write_manifest(context.io, current, spec_id, content, &entries)
                .await?;
            self.combined.push(written.manifest_path.clone());
            self.last_combined.insert(written.manifest_path.clone());
            rewritten_manifests.push(written);
        }
        Ok((kept, rewritten_manifests))
    }

    /// The files removed from `listed` (the manifests [`Self::kept_manifests`] just went
    /// through), with their spec ids.
    fn removed_files<'a>(&'a self, listed: &'a [ManifestFile]) -> Vec<(i32, &'a DataFile)> {
        listed
            .iter()
            .filter_map(|m| Some((m.partition_spec_id, self.rewrites.get(&m.manifest_path)?)))
            .flat_map(|(spec_id, rewrite)| rewrite.removed().map(move |f| (spec_id, f)))
            .collect()
    }
}

/// How a removed file is known: data files by path; delete files by path and, for deletion
/// vectors (many in one Puffin file), blob offset.
fn removal_key(content: ManifestContent, file: &DataFile) -> Cow<'_, str> {
    match (content, file.content_offset) {
        (ManifestContent::Deletes, Some(offset)) => {
            Cow::Owned(format!("{}#{offset}", file.file_path))
        }
        _ => Cow::Borrowed(&file.file_path),
    }
}

/// `entries` (of `manifest`) without the files in `removal`, written by `producer`: no
/// manifest when it holds none, and none either when it holds only removed files (their
/// DELETED entries are kept, to be written with others).
async fn rewrite_manifest(
    producer: &mut SnapshotProducer,
    removal: &HashSet<String>,
    context: &CommitContext<'_>,
    current: &TableMetadata,
    manifest: &ManifestFile,
    entries: Vec<ManifestEntry>,
) -> Result<Rewrite> {
    let removes =
        |e: &ManifestEntry| removal.contains(removal_key(manifest.content, &e.data_file).as_ref());
    if !entries.iter().any(|e| e.is_alive() && removes(e)) {
        return Ok(Rewrite {
            manifest: None,
            entries: Vec::new(),
        });
    }
    let snapshot_id = producer.snapshot_id();
    let mut only_removed = true;
    let rewritten: Vec<ManifestEntry> = entries
        .into_iter()
        .filter(ManifestEntry::is_alive)
        .map(|mut e| {
            if removes(&e) {
                e.status = ManifestStatus::Deleted;
                e.snapshot_id = Some(snapshot_id);
            } else {
                e.status = ManifestStatus::Existing;
                only_removed = false;
            }
            e
        })
        .collect();
    if only_removed {
        return Ok(Rewrite {
            manifest: None,
            entries: rewritten,
        });
    }
    let written = producer
        .write_manifest(
            context.io,
            current,
            manifest.partition_spec_id,
            manifest.content,
            &rewritten,
        )
        .await?;
    Ok(Rewrite {
        manifest: Some(written),
        entries: rewritten,
    })
}

#[async_trait]
impl Action for RowDelta {
    fn validate(&self, _base: &TableMetadata, current: &TableMetadata) -> Result<()> {
        let branch = self.producer.branch();
        if current.refs.get(branch).is_some_and(|r| !r.is_branch()) {
            return Err(Error::invalid(
                format!("ref '{branch}'"),
                "it is a tag; commits go to branches",
            ));
        }
        for (spec_id, _) in self.added_data.iter().chain(&self.added_deletes) {
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
        if self.staged.is_none() {
            let mut written = match self.data_sequence_number {
                Some(sequence) => {
                    let files = &self.added_data;
                    let producer = &mut self.producer;
                    producer
                        .write_added_at(context.io, base, files, sequence)
                        .await?
                }
                None => {
                    let producer = &mut self.producer;
                    producer
                        .write_added(context.io, base, &self.added_data)
                        .await?
                }
            };
            written.extend(
                self.producer
                    .write_added_deletes(context.io, base, &self.added_deletes)
                    .await?,
            );
            self.staged = Some(written);
        }
        Ok(())
    }

    async fn changes(
        &mut self,
        context: &CommitContext<'_>,
        current: &TableMetadata,
    ) -> Result<Changes> {
        self.stage(context, current).await?;
        let head = current.branch_head(self.producer.branch());
        self.validate_since(context, current, head).await?;
        let parent = head.and_then(|id| current.snapshot_by_id(id));
        let listed = match parent {
            Some(parent) => read_manifest_list(context.io, current, parent).await?,
            None => Arc::default(),
        };
        let (kept, rewritten) = self.kept_manifests(context, current, &listed).await?;
        let removed = self.removed_files(&listed);
        let found: HashSet<Cow<'_, str>> = removed
            .iter()
            .map(|(_, f)| match f.content {
                DataContentType::Data => removal_key(ManifestContent::Data, f),
                _ => removal_key(ManifestContent::Deletes, f),
            })
            .collect();
        let missing = self
            .removed_data
            .iter()
            .chain(&self.removed_deletes)
            .find(|key| !found.contains(key.as_str()));
        if let Some(missing) = missing {
            return Err(self.conflict(
                context,
                format!(
                    "file {missing} is no longer live in branch '{}' (a concurrent commit \
                     removed it)",
                    self.producer.branch()
                ),
            ));
        }
        let mut summary = SummaryBuilder::default();
        for (spec_id, file) in self.added_data.iter().chain(&self.added_deletes) {
            summary.added(*spec_id, file);
        }
        for (spec_id, file) in removed {
            summary.removed(spec_id, file);
        }
        let operation = self
            .operation
            .clone()
            .unwrap_or_else(|| self.derived_operation());
        let mut summary = summary.build(operation, parent.and_then(|p| p.summary.as_ref()));
        summary
            .properties_mut()
            .extend(self.summary_properties.clone());
        let mut added = self.staged.clone().unwrap_or_default();
        added.extend(rewritten);
        self.producer
            .produce(context, current, &added, kept, summary)
            .await
    }

    fn written(&self) -> Vec<String> {
        self.producer.written()
    }

    fn superseded(&self) -> Vec<String> {
        let mut superseded = self.producer.superseded();
        superseded.extend(
            self.rewrites
                .iter()
                .filter(|(source, _)| !self.last_rewritten.contains(*source))
                .filter_map(|(_, r)| r.manifest.as_ref().map(|m| m.manifest_path.clone())),
        );
        superseded.extend(
            self.combined
                .iter()
                .filter(|path| !self.last_combined.contains(*path))
                .cloned(),
        );
        superseded
    }
}

#[cfg(test)]
#[path = "row_delta_tests.rs"]
mod tests;
