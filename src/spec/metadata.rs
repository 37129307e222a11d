//! Table metadata (spec: "Table Metadata", "Table Metadata Fields"): the `*.metadata.json`
//! file, for format versions 1, 2 and 3, parsed and written back.
//!
//! [`TableMetadata::parse`] reads every field of the spec's table, upgrades v1's single
//! `schema` and `partition-spec` into the lists, and keeps fields it does not know in
//! [`TableMetadata::unknown_fields`]; [`TableMetadata::to_json`] writes the layout of the
//! file's format version back, so `parse(to_json(m)) == m`.

mod fast;
pub(crate) mod json;
mod read;
#[cfg(test)]
mod tests;
pub mod update;
mod validate;
#[cfg(test)]
pub(crate) mod validate_tests;
mod write;

use std::collections::BTreeMap;
use std::sync::LazyLock;

use super::partition::PartitionSpec;
use super::schema::Schema;
use super::snapshot::{MetadataLogEntry, Snapshot, SnapshotLogEntry, SnapshotReference};
use super::sort::SortOrder;
use crate::error::{Error, Result};

/// The table format version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FormatVersion {
    /// v1: analytic tables.
    V1 = 1,
    /// v2: row-level deletes.
    V2 = 2,
    /// v3: deletion vectors, row lineage, default values, new types.
    V3 = 3,
}

impl FormatVersion {
    /// The version number as written in `format-version`.
    pub fn number(self) -> i32 {
        self as i32
    }
}

impl TryFrom<i64> for FormatVersion {
    type Error = Error;

    /// 1, 2 or 3; any other number is [`Error::Unsupported`] naming it.
    fn try_from(n: i64) -> Result<Self> {
        match n {
            1 => Ok(Self::V1),
            2 => Ok(Self::V2),
            3 => Ok(Self::V3),
            other => Err(Error::Unsupported(format!(
                "table format version {other} (icefloe reads versions 1 to 3)"
            ))),
        }
    }
}

/// A table statistics file (`statistics`), usually Puffin.
#[derive(Debug, Clone, PartialEq)]
pub struct StatisticsFile {
    /// `snapshot-id`.
    pub snapshot_id: i64,
    /// `statistics-path`.
    pub statistics_path: String,
    /// `file-size-in-bytes`.
    pub file_size_in_bytes: i64,
    /// `file-footer-size-in-bytes`.
    pub file_footer_size_in_bytes: i64,
    /// `key-metadata`.
    pub key_metadata: Option<String>,
    /// `blob-metadata`, kept as JSON.
    pub blob_metadata: Vec<serde_json::Value>,
}

/// A partition statistics file (`partition-statistics`).
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionStatisticsFile {
    /// `snapshot-id`.
    pub snapshot_id: i64,
    /// `statistics-path`.
    pub statistics_path: String,
    /// `file-size-in-bytes`.
    pub file_size_in_bytes: i64,
}

impl StatisticsFile {
    /// Parses the JSON form (an entry of `statistics`); errors are [`Error::Corrupt`] with an
    /// empty path.
    pub fn from_json(v: &serde_json::Value) -> Result<Self> {
        read::statistics_file(v)
    }

    /// The JSON form.
    pub fn to_json(&self) -> serde_json::Value {
        write::statistics_file(self)
    }
}

impl PartitionStatisticsFile {
    /// Parses the JSON form (an entry of `partition-statistics`); errors are
    /// [`Error::Corrupt`] with an empty path.
    pub fn from_json(v: &serde_json::Value) -> Result<Self> {
        read::partition_statistics_file(v)
    }

    /// The JSON form.
    pub fn to_json(&self) -> serde_json::Value {
        write::partition_statistics_file(self)
    }
}

/// The parsed contents of a table metadata file.
#[derive(Debug, Clone, PartialEq)]
pub struct TableMetadata {
    /// `format-version`.
    pub format_version: FormatVersion,
    /// `table-uuid` (optional in v1).
    pub table_uuid: Option<String>,
    /// `location`: the table's base location.
    pub location: String,
    /// `last-sequence-number` (0 in v1).
    pub last_sequence_number: i64,
    /// `last-updated-ms`.
    pub last_updated_ms: i64,
    /// `last-column-id`.
    pub last_column_id: i32,
    /// `schemas`; v1's single `schema` is upgraded into this list.
    pub schemas: Vec<Schema>,
    /// `current-schema-id`.
    pub current_schema_id: i32,
    /// `partition-specs`; v1's `partition-spec` is upgraded into this list.
    pub partition_specs: Vec<PartitionSpec>,
    /// `default-spec-id`.
    pub default_spec_id: i32,
    /// `last-partition-id`.
    pub last_partition_id: i32,
    /// `properties`.
    pub properties: BTreeMap<String, String>,
    /// `current-snapshot-id` (`-1` and absent both read as `None`).
    pub current_snapshot_id: Option<i64>,
    /// `snapshots`.
    pub snapshots: Vec<Snapshot>,
    /// `snapshot-log`.
    pub snapshot_log: Vec<SnapshotLogEntry>,
    /// `metadata-log`.
    pub metadata_log: Vec<MetadataLogEntry>,
    /// `sort-orders`.
    pub sort_orders: Vec<SortOrder>,
    /// `default-sort-order-id`.
    pub default_sort_order_id: i32,
    /// `refs`; includes the implicit `main` branch when the file has a current snapshot but no
    /// `main` ref.
    pub refs: BTreeMap<String, SnapshotReference>,
    /// `statistics`.
    pub statistics: Vec<StatisticsFile>,
    /// `partition-statistics`.
    pub partition_statistics: Vec<PartitionStatisticsFile>,
    /// `next-row-id` (v3).
    pub next_row_id: Option<i64>,
    /// Fields this version of icefloe does not know, kept so a rewrite preserves them.
    pub unknown_fields: serde_json::Map<String, serde_json::Value>,
}

/// What [`TableMetadata::current_schema`] returns for hand-built metadata without schemas
/// (parsed metadata always has its current schema).
static EMPTY_SCHEMA: LazyLock<Schema> = LazyLock::new(|| Schema::new(0, Vec::new()));

impl TableMetadata {
    /// Parses a metadata file's bytes (plain JSON; gzip is undone by the IO layer).
    /// A `format-version` above 3 is [`crate::Error::Unsupported`]; malformed JSON or missing
    /// required fields are [`crate::Error::Corrupt`] with an empty path (the caller adds it
    /// with [`crate::Error::in_file`]).
    ///
    /// Parsing adds the implicit `main` branch when the table has a current snapshot but no
    /// `main` ref, and refuses inconsistent metadata (see [`TableMetadata::validate`]).
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        read::parse(bytes)
    }

    /// Checks the rules that tie the fields together, as Java's `TableMetadata` does when it
    /// reads a file: snapshot, schema, partition spec and sort order ids are unique; the
    /// current schema, default spec, default sort order (unless unsorted, 0), current snapshot
    /// and every ref's snapshot exist; the `main` branch is the current snapshot (both set,
    /// and equal, or both unset); no schema or partition spec uses an id above
    /// `last-column-id` / `last-partition-id`; no snapshot's sequence number is above
    /// `last-sequence-number`.
    ///
    /// Errors: [`crate::Error::Corrupt`] with an empty path, saying which rule is broken.
    pub fn validate(&self) -> Result<()> {
        validate::validate(self)
    }

    /// Parses a metadata file's bytes as stored: plain JSON, or gzip (by its magic bytes,
    /// whatever the file's name), inflated to at most `max_json_bytes` (`ReadLimits::
    /// metadata_bytes`). Errors as [`TableMetadata::parse`]'s, and [`crate::Error::Corrupt`]
    /// for a broken gzip stream or JSON past the bound.
    pub fn parse_file(bytes: &[u8], max_json_bytes: u64) -> Result<Self> {
        use std::io::Read;
        if !bytes.starts_with(&[0x1f, 0x8b]) {
            return Self::parse(bytes);
        }
        let mut json = Vec::new();
        flate2::read::MultiGzDecoder::new(bytes)
            .take(max_json_bytes.saturating_add(1))
            .read_to_end(&mut json)
            .map_err(|e| Error::corrupt_with("", "invalid gzip stream", e))?;
        if json.len() as u64 > max_json_bytes {
            return Err(Error::corrupt(
                "",
                format!(
                    "the gzip stream inflates past {max_json_bytes} bytes \
                     (ReadLimits::metadata_bytes)"
                ),
            ));
        }
        Self::parse(&json)
    }

    /// The JSON form, as the spec lays it out for this format version.
    ///
    /// v1 also gets the deprecated `schema` and `partition-spec` (for old readers, as Java
    /// writes them); fields in [`TableMetadata::unknown_fields`] come last.
    pub fn to_json(&self) -> serde_json::Value {
        write::to_json(self)
    }

    /// The current schema.
    ///
    /// Parsed metadata always contains it. For hand-built metadata whose `current_schema_id`
    /// is not in `schemas` this falls back to the last schema (or an empty one) instead of
    /// panicking.
    pub fn current_schema(&self) -> &Schema {
        self.schema_by_id(self.current_schema_id)
            .or_else(|| self.schemas.last())
            .unwrap_or(&EMPTY_SCHEMA)
    }

    /// A schema by id.
    pub fn schema_by_id(&self, schema_id: i32) -> Option<&Schema> {
        self.schemas.iter().find(|s| s.schema_id == schema_id)
    }

    /// The default partition spec (`default-spec-id`), if it exists.
    pub fn default_partition_spec(&self) -> Option<&PartitionSpec> {
        self.partition_spec_by_id(self.default_spec_id)
    }

    /// A partition spec by id.
    pub fn partition_spec_by_id(&self, spec_id: i32) -> Option<&PartitionSpec> {
        self.partition_specs.iter().find(|s| s.spec_id == spec_id)
    }

    /// The default sort order (`default-sort-order-id`), if it exists.
    pub fn default_sort_order(&self) -> Option<&SortOrder> {
        self.sort_orders
            .iter()
            .find(|o| o.order_id == self.default_sort_order_id)
    }

    /// A snapshot by id.
    pub fn snapshot_by_id(&self, snapshot_id: i64) -> Option<&Snapshot> {
        self.snapshots.iter().find(|s| s.snapshot_id == snapshot_id)
    }

    /// The current snapshot, if the table has one.
    pub fn current_snapshot(&self) -> Option<&Snapshot> {
        self.current_snapshot_id
            .and_then(|id| self.snapshot_by_id(id))
    }

    /// The snapshot a ref (branch or tag) points at, if both exist.
    pub fn snapshot_for_ref(&self, name: &str) -> Option<&Snapshot> {
        self.refs
            .get(name)
            .and_then(|r| self.snapshot_by_id(r.snapshot_id))
    }

    /// The schema a snapshot was written with (its `schema-id`, else the current schema).
    pub fn schema_for_snapshot(&self, snapshot: &Snapshot) -> &Schema {
        snapshot
            .schema_id
            .and_then(|id| self.schema_by_id(id))
            .unwrap_or_else(|| self.current_schema())
    }

    /// A table property's text as stored; the keys icefloe uses are read typed, with their
    /// defaults, through [`crate::spec::properties`].
    pub fn property(&self, key: &str) -> Option<&str> {
        self.properties.get(key).map(String::as_str)
    }
}
