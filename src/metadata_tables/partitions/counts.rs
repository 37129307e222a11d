//! The per-partition counts behind both `"t$partitions"` and partition statistics files
//! (spec: "Partition Statistics"): one aggregation of manifest entries, grouped two ways.
//!
//! - [`Grouping::ByFields`] (the relation, as PyIceberg 0.12's `inspect.partitions`): live
//!   entries only, keyed by the spec's partition field ids and the tuple, so two specs with the
//!   same fields share a row.
//! - [`Grouping::BySpec`] (the file, as Java's `PartitionStatsHandler`): one row per spec id
//!   and tuple; DELETED entries of the snapshot's manifests are passed too and only move
//!   `last_updated` (a partition whose files were all deleted keeps a row of zero counts).
//!
//! A live entry adds its counts: a deletion vector (a Puffin position delete) counts in
//! `dv_count` and `position_delete_record_count`, not in `position_delete_file_count`.
//! `last_updated` is the newest snapshot (by timestamp, the first seen on ties) of the entries
//! passed.

use std::collections::HashMap;

use super::super::files::file_rows::EntryRow;
use crate::spec::{DataContentType, FileFormat, Literal, TableMetadata};

/// How entries are grouped into rows (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grouping {
    /// By partition field ids and values (`"t$partitions"`).
    ByFields,
    /// By spec id and values (partition statistics files).
    BySpec,
}

/// The counts of one partition (spec: "Partition Statistics File", fields 2-13).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PartitionCounts {
    /// `spec_id`: the spec the tuple was written under.
    pub(crate) spec_id: i32,
    /// The partition tuple, in the spec's field order.
    pub(crate) tuple: Vec<Option<Literal>>,
    /// `data_record_count`.
    pub(crate) data_record_count: i64,
    /// `data_file_count`.
    pub(crate) data_file_count: i32,
    /// `total_data_file_size_in_bytes`.
    pub(crate) total_data_file_size_in_bytes: i64,
    /// `position_delete_record_count` (deletion vectors included).
    pub(crate) position_delete_record_count: i64,
    /// `position_delete_file_count` (deletion vectors not included).
    pub(crate) position_delete_file_count: i32,
    /// `dv_count`.
    pub(crate) dv_count: i32,
    /// `equality_delete_record_count`.
    pub(crate) equality_delete_record_count: i64,
    /// `equality_delete_file_count`.
    pub(crate) equality_delete_file_count: i32,
    /// `(last_updated_at ms, last_updated_snapshot_id)`.
    pub(crate) last_updated: Option<(i64, i64)>,
}

impl PartitionCounts {
    /// A row of zero counts.
    pub(crate) fn new(spec_id: i32, tuple: Vec<Option<Literal>>) -> Self {
        Self {
            spec_id,
            tuple,
            data_record_count: 0,
            data_file_count: 0,
            total_data_file_size_in_bytes: 0,
            position_delete_record_count: 0,
            position_delete_file_count: 0,
            dv_count: 0,
            equality_delete_record_count: 0,
            equality_delete_file_count: 0,
            last_updated: None,
        }
    }

    /// Adds one entry: a live one's counts, and for any entry its snapshot to `last_updated`.
    fn add(&mut self, row: &EntryRow, metadata: &TableMetadata) {
        let file = &row.entry.data_file;
        if row.entry.is_alive() {
            match file.content {
                DataContentType::Data => {
                    self.data_record_count += file.record_count;
                    self.data_file_count += 1;
                    self.total_data_file_size_in_bytes += file.file_size_in_bytes;
                }
                DataContentType::PositionDeletes => {
                    self.position_delete_record_count += file.record_count;
                    match file.file_format {
                        FileFormat::Puffin => self.dv_count += 1,
                        _ => self.position_delete_file_count += 1,
                    }
                }
                DataContentType::EqualityDeletes => {
                    self.equality_delete_record_count += file.record_count;
                    self.equality_delete_file_count += 1;
                }
            }
        }
        let snapshot = row
            .entry
            .snapshot_id
            .and_then(|id| metadata.snapshot_by_id(id));
        if let Some(s) = snapshot {
            self.updated_by((s.timestamp_ms, s.snapshot_id));
        }
    }

    /// Takes `at` as `last_updated` when it is newer (ties keep the first seen).
    fn updated_by(&mut self, at: (i64, i64)) {
        if self.last_updated.is_none_or(|(ms, _)| at.0 > ms) {
            self.last_updated = Some(at);
        }
    }

    /// Adds another row's counts (of the same partition) to this one.
    fn merge(&mut self, other: &Self) {
        self.data_record_count += other.data_record_count;
        self.data_file_count += other.data_file_count;
        self.total_data_file_size_in_bytes += other.total_data_file_size_in_bytes;
        self.position_delete_record_count += other.position_delete_record_count;
        self.position_delete_file_count += other.position_delete_file_count;
        self.dv_count += other.dv_count;
        self.equality_delete_record_count += other.equality_delete_record_count;
        self.equality_delete_file_count += other.equality_delete_file_count;
        if let Some(at) = other.last_updated {
            self.updated_by(at);
        }
    }

    /// Whether any live file (data or delete) is counted: rows without one come only from
    /// DELETED entries and are not partitions of the snapshot.
    pub(crate) fn has_live_files(&self) -> bool {
        self.data_file_count > 0
            || self.position_delete_file_count > 0
            || self.dv_count > 0
            || self.equality_delete_file_count > 0
    }

    /// `total_record_count`, known from metadata when the partition has no equality deletes
    /// and no position delete files (only deletion vectors, whose positions are exact): the
    /// data records less the deleted positions. Otherwise `None` (spec: "implementations may
    /// omit this field and must write NULL"), as Java's `populateTotalRecordCount`.
    pub(crate) fn total_record_count(&self) -> Option<i64> {
        let known = self.equality_delete_record_count == 0 && self.position_delete_file_count == 0;
        known.then(|| (self.data_record_count - self.position_delete_record_count).max(0))
    }
}

/// Rows being grouped, keyed by [`Grouping`], in order of first appearance.
struct Groups<'a> {
    metadata: &'a TableMetadata,
    grouping: Grouping,
    index: HashMap<String, usize>,
    rows: Vec<PartitionCounts>,
}

impl<'a> Groups<'a> {
    fn new(metadata: &'a TableMetadata, grouping: Grouping) -> Self {
        Self {
            metadata,
            grouping,
            index: HashMap::new(),
            rows: Vec::new(),
        }
    }

    /// The row of `(spec_id, tuple)`, made on first sight.
    fn row(&mut self, spec_id: i32, tuple: &[Option<Literal>]) -> &mut PartitionCounts {
        let key = match self.grouping {
            Grouping::BySpec => format!("{spec_id}{tuple:?}"),
            Grouping::ByFields => {
                let field_ids: Vec<i32> = self
                    .metadata
                    .partition_spec_by_id(spec_id)
                    .map(|s| s.fields.iter().map(|f| f.field_id).collect())
                    .unwrap_or_default();
                format!("{field_ids:?}{tuple:?}")
            }
        };
        let rows = &mut self.rows;
        let at = *self.index.entry(key).or_insert_with(|| {
            rows.push(PartitionCounts::new(spec_id, tuple.to_vec()));
            rows.len() - 1
        });
        &mut self.rows[at]
    }
}

/// The entries' counts per partition, in order of first appearance.
pub(crate) fn group(
    entries: &[EntryRow],
    metadata: &TableMetadata,
    grouping: Grouping,
) -> Vec<PartitionCounts> {
    let mut groups = Groups::new(metadata, grouping);
    for entry in entries {
        groups
            .row(entry.spec_id, &entry.entry.data_file.partition)
            .add(entry, metadata);
    }
    groups.rows
}

/// Rows of one grouping grouped again (rows of [`Grouping::BySpec`] into
/// [`Grouping::ByFields`]), in order of first appearance.
pub(crate) fn regroup(
    rows: &[PartitionCounts],
    metadata: &TableMetadata,
    grouping: Grouping,
) -> Vec<PartitionCounts> {
    let mut groups = Groups::new(metadata, grouping);
    for row in rows {
        groups.row(row.spec_id, &row.tuple).merge(row);
    }
    groups.rows
}
