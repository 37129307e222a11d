//! [`SnapshotProducer`]: the one place snapshots are made. Every snapshot-making action (fast
//! append, cherry-pick, rewrite manifests, and later overwrite, row delta, replace) hands it the
//! manifests it wrote and the ones it keeps, and gets back the updates that add the snapshot.

use std::borrow::Borrow;
use std::collections::BTreeMap;

use bytes::Bytes;

use super::{Changes, CommitContext, ref_unchanged, set_ref};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::spec::manifest_writer::{write_manifest, write_manifest_list};
use crate::spec::metadata::update::new_snapshot_id;
use crate::spec::partition_summary::summarize;
use crate::spec::{
    DataFile, FormatVersion, ManifestContent, ManifestEntry, ManifestFile, ManifestStatus,
    Snapshot, SnapshotReference, SnapshotRetention, Summary, TableMetadata, TableUpdate,
};

/// Makes one snapshot of a transaction: its id, the manifests written once for it, and one
/// manifest list per commit attempt.
///
/// - [`SnapshotProducer::write_manifest`] writes a manifest of the new snapshot (entries that
///   leave their sequence numbers to inheritance stay valid whatever sequence number an
///   attempt gets).
/// - [`SnapshotProducer::produce`] builds the snapshot on the metadata of an attempt: sequence
///   number, parent (the branch head), the manifest list (v3: `first_row_id` assigned to data
///   manifests without one, from the table's `next-row-id`), the summary with the engine, and
///   returns `add-snapshot` + `set-snapshot-ref` with the requirement that the branch head is
///   still the parent.
#[derive(Debug)]
pub struct SnapshotProducer {
    snapshot_id: i64,
    branch: String,
    manifests: Vec<String>,
    lists: Vec<String>,
}

impl SnapshotProducer {
    /// A producer of one new snapshot on `branch`.
    pub fn new(branch: impl Into<String>) -> Self {
        Self {
            snapshot_id: new_snapshot_id(),
            branch: branch.into(),
            manifests: Vec::new(),
            lists: Vec::new(),
        }
    }

    /// The new snapshot's id.
    pub fn snapshot_id(&self) -> i64 {
        self.snapshot_id
    }

    /// The branch the snapshot goes to.
    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// Writes a manifest of `entries` (all of partition spec `spec_id`) for this snapshot and
    /// returns its manifest-list entry, with file and row counts by status and the partition
    /// summaries. ADDED entries should leave their sequence numbers to inheritance.
    pub async fn write_manifest<E: Borrow<ManifestEntry> + Sync>(
        &mut self,
        io: &FileIO,
        metadata: &TableMetadata,
        spec_id: i32,
        content: ManifestContent,
        entries: &[E],
    ) -> Result<ManifestFile> {
        let spec = metadata.partition_spec_by_id(spec_id).ok_or_else(|| {
            Error::invalid(
                format!("partition spec {spec_id}"),
                "it is not in the table",
            )
        })?;
        let partition_type = crate::scan::partition_type(metadata, spec)?;
        let bytes = write_manifest(metadata, metadata.current_schema(), spec, content, entries)?;
        let path = format!(
            "{}/metadata/{}-m{}.avro",
            metadata.location.trim_end_matches('/'),
            uuid::Uuid::new_v4(),
            self.manifests.len()
        );
        let length = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
        io.write(&path, Bytes::from(bytes)).await?;
        self.manifests.push(path.clone());
        let mut manifest = ManifestFile::new(path, length, spec_id, content, self.snapshot_id);
        let count = |status: ManifestStatus| {
            let matching = entries
                .iter()
                .map(Borrow::borrow)
                .filter(|e: &&ManifestEntry| e.status == status);
            let files = i32::try_from(matching.clone().count()).unwrap_or(i32::MAX);
            (
                files,
                matching.map(|e| e.data_file.record_count).sum::<i64>(),
            )
        };
        let (added, added_rows) = count(ManifestStatus::Added);
        let (existing, existing_rows) = count(ManifestStatus::Existing);
        let (deleted, deleted_rows) = count(ManifestStatus::Deleted);
        manifest.added_files_count = Some(added);
        manifest.existing_files_count = Some(existing);
        manifest.deleted_files_count = Some(deleted);
        manifest.added_rows_count = Some(added_rows);
        manifest.existing_rows_count = Some(existing_rows);
        manifest.deleted_rows_count = Some(deleted_rows);
        manifest.min_sequence_number = entries
            .iter()
            .filter_map(|e| e.borrow().sequence_number)
            .min()
            .unwrap_or(0);
        manifest.partitions = Some(summarize(
            &partition_type,
            entries
                .iter()
                .map(|e| e.borrow().data_file.partition.as_slice()),
        ));
        Ok(manifest)
    }

    /// Writes the manifests of a fast append of `files` (each with its partition spec id): one
    /// per spec, every entry ADDED by this snapshot.
    pub async fn write_added(
        &mut self,
        io: &FileIO,
        metadata: &TableMetadata,
        files: &[(i32, DataFile)],
    ) -> Result<Vec<ManifestFile>> {
        self.write_added_as(io, metadata, ManifestContent::Data, files, None)
            .await
    }

    /// [`Self::write_added`] with every entry's data sequence number `data_sequence_number`
    /// written explicitly (not inherited from the snapshot): a rewrite's files keep the
    /// sequence number of the rows they copy (Java's `RewriteFiles.dataSequenceNumber`), so
    /// that equality deletes committed since still apply to them.
    pub async fn write_added_at(
        &mut self,
        io: &FileIO,
        metadata: &TableMetadata,
        files: &[(i32, DataFile)],
        data_sequence_number: i64,
    ) -> Result<Vec<ManifestFile>> {
        let sequence = Some(data_sequence_number);
        self.write_added_as(io, metadata, ManifestContent::Data, files, sequence)
            .await
    }

    /// Writes the delete manifests of new delete `files` (each with its partition spec id):
    /// one per spec, every entry ADDED by this snapshot.
    pub async fn write_added_deletes(
        &mut self,
        io: &FileIO,
        metadata: &TableMetadata,
        files: &[(i32, DataFile)],
    ) -> Result<Vec<ManifestFile>> {
        self.write_added_as(io, metadata, ManifestContent::Deletes, files, None)
            .await
    }

    async fn write_added_as(
        &mut self,
        io: &FileIO,
        metadata: &TableMetadata,
        content: ManifestContent,
        files: &[(i32, DataFile)],
        data_sequence_number: Option<i64>,
    ) -> Result<Vec<ManifestFile>> {
        let mut by_spec: BTreeMap<i32, Vec<ManifestEntry>> = BTreeMap::new();
        for (spec_id, file) in files {
            by_spec.entry(*spec_id).or_default().push(ManifestEntry {
                status: ManifestStatus::Added,
                snapshot_id: Some(self.snapshot_id),
                sequence_number: data_sequence_number,
                file_sequence_number: None,
                data_file: file.clone(),
            });
        }
        let mut written = Vec::with_capacity(by_spec.len());
        for (spec_id, entries) in by_spec {
            written.push(
                self.write_manifest(io, metadata, spec_id, content, &entries)
                    .await?,
            );
        }
        Ok(written)
    }

    /// The snapshot on `current` (one commit attempt): `added` are the manifests this snapshot
    /// wrote, `kept` the manifests of the parent it keeps (listed after the new ones);
    /// `summary` its summary (the engine is added). Writes the attempt's manifest list.
    pub async fn produce(
        &mut self,
        context: &CommitContext<'_>,
        current: &TableMetadata,
        added: &[ManifestFile],
        kept: Vec<ManifestFile>,
        summary: Summary,
    ) -> Result<Changes> {
        let sequence_number = current.next_sequence_number();
        let parent = current.branch_head(&self.branch);
        let mut listed: Vec<ManifestFile> = added
            .iter()
            .cloned()
            .map(|mut m| {
                m.sequence_number = sequence_number;
                if m.added_files_count.unwrap_or(0) > 0 {
                    // Entries with explicit sequence numbers (kept EXISTING ones, a rewrite's
                    // ADDED ones) gave the manifest its minimum; inherited ones are this one.
                    let explicit =
                        m.existing_files_count.unwrap_or(0) > 0 || m.min_sequence_number > 0;
                    m.min_sequence_number = match explicit {
                        true => m.min_sequence_number.min(sequence_number),
                        false => sequence_number,
                    };
                }
                m
            })
            .collect();
        listed.extend(kept);
        let (first_row_id, added_rows) = match current.format_version {
            FormatVersion::V3 => {
                let first = current.next_row_id.unwrap_or(0);
                let next = assign_first_row_ids(&mut listed, first);
                (Some(first), Some(next - first))
            }
            _ => (None, None),
        };
        let list = write_manifest_list(
            current.format_version,
            self.snapshot_id,
            parent,
            sequence_number,
            &listed,
        )?;
        let list_path = format!(
            "{}/metadata/snap-{}-{}-{}.avro",
            current.location.trim_end_matches('/'),
            self.snapshot_id,
            sequence_number,
            uuid::Uuid::new_v4()
        );
        context.io.write(&list_path, Bytes::from(list)).await?;
        self.lists.push(list_path.clone());
        let snapshot = Snapshot {
            snapshot_id: self.snapshot_id,
            parent_snapshot_id: parent,
            sequence_number,
            timestamp_ms: context.now_ms.max(current.last_updated_ms),
            manifest_list: Some(list_path),
            manifests: None,
            summary: Some(with_engine(summary)),
            schema_id: Some(current.current_schema_id),
            first_row_id,
            added_rows,
            key_id: None,
        };
        let retention = match current.refs.get(&self.branch) {
            Some(existing) => existing.retention.clone(),
            None => SnapshotRetention::Branch {
                min_snapshots_to_keep: None,
                max_snapshot_age_ms: None,
                max_ref_age_ms: None,
            },
        };
        let reference = SnapshotReference {
            snapshot_id: self.snapshot_id,
            retention,
        };
        Ok(Changes {
            requirements: vec![ref_unchanged(current, &self.branch)],
            updates: vec![
                TableUpdate::AddSnapshot { snapshot },
                set_ref(&self.branch, &reference),
            ],
        })
    }

    /// Every file written: the manifests and each attempt's manifest list.
    pub fn written(&self) -> Vec<String> {
        self.manifests.iter().chain(&self.lists).cloned().collect()
    }

    /// The manifest lists of attempts before the last (unreferenced once the last commits).
    pub fn superseded(&self) -> Vec<String> {
        let n = self.lists.len().saturating_sub(1);
        self.lists[..n].to_vec()
    }
}

/// v3 row lineage: gives each data manifest without a `first_row_id` the next ids (as many
/// as its added and existing rows), from `first`; returns the next unassigned id.
fn assign_first_row_ids(manifests: &mut [ManifestFile], first: i64) -> i64 {
    let mut next = first;
    for m in manifests
        .iter_mut()
        .filter(|m| m.content == ManifestContent::Data && m.first_row_id.is_none())
    {
        m.first_row_id = Some(next);
        next += m.added_rows_count.unwrap_or(0) + m.existing_rows_count.unwrap_or(0);
    }
    next
}

/// The summary with `engine-name` and `engine-version`.
fn with_engine(mut summary: Summary) -> Summary {
    let properties = summary.properties_mut();
    properties.insert("engine-name".into(), "icefloe".into());
    properties.insert(
        "engine-version".into(),
        env!("CARGO_PKG_VERSION").to_string(),
    );
    summary
}
