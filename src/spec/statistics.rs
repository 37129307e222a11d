//! Table statistics and partition statistics (spec: "Table Statistics", "Partition
//! Statistics", "Partition Statistics File"): the typed `blob-metadata` of a statistics file,
//! which statistics file serves a snapshot, and the schema of a partition statistics file.
//!
//! Statistics are informational: a reader may ignore them, and nothing here is needed to read
//! a table correctly.

use std::collections::BTreeMap;

use serde_json::{Map, Value as JsonValue, json};

use super::metadata::json as j;
use super::metadata::{FormatVersion, PartitionStatisticsFile, StatisticsFile, TableMetadata};
use super::puffin::{NDV_PROPERTY, THETA_BLOB_TYPE};
use super::{NestedField, PrimitiveType, Schema, StructType, Type};
use crate::error::Result;

/// One entry of a statistics file's `blob-metadata` (spec: "Table Statistics", blob metadata).
#[derive(Debug, Clone, PartialEq)]
pub struct BlobMetadata {
    /// `type`: the Puffin blob type, such as [`THETA_BLOB_TYPE`].
    pub kind: String,
    /// `snapshot-id`: the snapshot the blob was computed from.
    pub snapshot_id: i64,
    /// `sequence-number`: that snapshot's sequence number.
    pub sequence_number: i64,
    /// `fields`: the field ids the statistic was computed on, in order.
    pub fields: Vec<i32>,
    /// `properties`: a subset of the Puffin blob's properties (`ndv`, ...).
    pub properties: BTreeMap<String, String>,
}

impl BlobMetadata {
    /// Parses the JSON form; errors are [`crate::Error::Corrupt`] with an empty path.
    pub fn from_json(v: &JsonValue) -> Result<Self> {
        const WHAT: &str = "blob metadata";
        let o = j::object(v, WHAT)?;
        Ok(Self {
            kind: j::req_str(o, "type", WHAT)?.to_string(),
            snapshot_id: j::req_i64(o, "snapshot-id", WHAT)?,
            sequence_number: j::req_i64(o, "sequence-number", WHAT)?,
            fields: super::puffin::field_ids(o, WHAT)?,
            properties: match o.get("properties") {
                None | Some(JsonValue::Null) => BTreeMap::new(),
                Some(p) => j::string_map(p, WHAT)?,
            },
        })
    }

    /// The JSON form.
    pub fn to_json(&self) -> JsonValue {
        let mut o = Map::new();
        o.insert("type".into(), json!(self.kind));
        o.insert("snapshot-id".into(), json!(self.snapshot_id));
        o.insert("sequence-number".into(), json!(self.sequence_number));
        o.insert("fields".into(), json!(self.fields));
        if !self.properties.is_empty() {
            o.insert("properties".into(), json!(self.properties));
        }
        JsonValue::Object(o)
    }

    /// The number of distinct values of a theta sketch blob of one field, as its `ndv`
    /// property says (`None` for other blobs, several fields, or an unreadable property).
    pub fn ndv(&self) -> Option<(i32, u64)> {
        match (self.kind.as_str(), self.fields.as_slice()) {
            (THETA_BLOB_TYPE, [field]) => {
                let ndv = self.properties.get(NDV_PROPERTY)?.trim().parse().ok()?;
                Some((*field, ndv))
            }
            _ => None,
        }
    }
}

impl StatisticsFile {
    /// The typed `blob-metadata`; entries that do not parse are left out (statistics are
    /// informational, so a malformed one only goes unused).
    pub fn blobs(&self) -> Vec<BlobMetadata> {
        self.blob_metadata
            .iter()
            .filter_map(|b| BlobMetadata::from_json(b).ok())
            .collect()
    }
}

/// How a statistics file relates to the snapshot a reader asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatisticsAge {
    /// The file is the snapshot's own.
    Current,
    /// The file is of an ancestor of the snapshot: its values describe an older state.
    Ancestor,
}

/// The statistics file serving `snapshot_id`: the snapshot's own, else that of its nearest
/// ancestor that has one (its values then describe an older state of the table).
pub fn statistics_for(
    metadata: &TableMetadata,
    snapshot_id: i64,
) -> Option<(&StatisticsFile, StatisticsAge)> {
    let mut next = Some(snapshot_id);
    let mut age = StatisticsAge::Current;
    // Bounded by the number of snapshots: a parent cycle in corrupt metadata cannot loop.
    for _ in 0..=metadata.snapshots.len() {
        let id = next?;
        if let Some(file) = metadata.statistics.iter().find(|s| s.snapshot_id == id) {
            return Some((file, age));
        }
        next = metadata.snapshot_by_id(id)?.parent_snapshot_id;
        age = StatisticsAge::Ancestor;
    }
    None
}

/// The partition statistics file of `snapshot_id` itself (an older one does not describe the
/// snapshot's partitions).
pub fn partition_statistics_for(
    metadata: &TableMetadata,
    snapshot_id: i64,
) -> Option<&PartitionStatisticsFile> {
    metadata
        .partition_statistics
        .iter()
        .find(|s| s.snapshot_id == snapshot_id)
}

/// Field ids of a partition statistics file (spec: "Partition Statistics File").
pub mod partition_stats_fields {
    /// `1 partition`: the unified partition tuple.
    pub const PARTITION: i32 = 1;
    /// `2 spec_id`.
    pub const SPEC_ID: i32 = 2;
    /// `3 data_record_count`.
    pub const DATA_RECORD_COUNT: i32 = 3;
    /// `4 data_file_count`.
    pub const DATA_FILE_COUNT: i32 = 4;
    /// `5 total_data_file_size_in_bytes`.
    pub const TOTAL_DATA_FILE_SIZE_IN_BYTES: i32 = 5;
    /// `6 position_delete_record_count` (deletion vectors included).
    pub const POSITION_DELETE_RECORD_COUNT: i32 = 6;
    /// `7 position_delete_file_count` (deletion vectors not included).
    pub const POSITION_DELETE_FILE_COUNT: i32 = 7;
    /// `8 equality_delete_record_count`.
    pub const EQUALITY_DELETE_RECORD_COUNT: i32 = 8;
    /// `9 equality_delete_file_count`.
    pub const EQUALITY_DELETE_FILE_COUNT: i32 = 9;
    /// `10 total_record_count`: records after deletes (optional: icefloe, as Java, writes it
    /// only where metadata knows it: no equality deletes and no position delete files).
    pub const TOTAL_RECORD_COUNT: i32 = 10;
    /// `11 last_updated_at`: epoch milliseconds.
    pub const LAST_UPDATED_AT: i32 = 11;
    /// `12 last_updated_snapshot_id`.
    pub const LAST_UPDATED_SNAPSHOT_ID: i32 = 12;
    /// `13 dv_count` (v3).
    pub const DV_COUNT: i32 = 13;
}

/// The schema of a partition statistics file for a table of `version` whose unified
/// partition type (every partition field of every spec, by ascending field id) is
/// `partition`. In v3 the delete counts are required and `dv_count` follows
/// `position_delete_file_count`; before v3 they are optional and there is no `dv_count`.
pub fn partition_statistics_schema(partition: StructType, version: FormatVersion) -> Schema {
    use PrimitiveType::{Int, Long};
    use partition_stats_fields as f;
    let v3 = version >= FormatVersion::V3;
    let deletes = |id, name: &str, ty: PrimitiveType| match v3 {
        true => NestedField::required(id, name, ty),
        false => NestedField::optional(id, name, ty),
    };
    let mut fields = vec![
        NestedField::required(f::PARTITION, "partition", Type::Struct(partition)),
        NestedField::required(f::SPEC_ID, "spec_id", Int),
        NestedField::required(f::DATA_RECORD_COUNT, "data_record_count", Long),
        NestedField::required(f::DATA_FILE_COUNT, "data_file_count", Int),
        NestedField::required(
            f::TOTAL_DATA_FILE_SIZE_IN_BYTES,
            "total_data_file_size_in_bytes",
            Long,
        ),
        deletes(
            f::POSITION_DELETE_RECORD_COUNT,
            "position_delete_record_count",
            Long,
        ),
        deletes(
            f::POSITION_DELETE_FILE_COUNT,
            "position_delete_file_count",
            Int,
        ),
    ];
    if v3 {
        fields.push(NestedField::required(f::DV_COUNT, "dv_count", Int));
    }
    fields.extend([
        deletes(
            f::EQUALITY_DELETE_RECORD_COUNT,
            "equality_delete_record_count",
            Long,
        ),
        deletes(
            f::EQUALITY_DELETE_FILE_COUNT,
            "equality_delete_file_count",
            Int,
        ),
        NestedField::optional(f::TOTAL_RECORD_COUNT, "total_record_count", Long),
        NestedField::optional(f::LAST_UPDATED_AT, "last_updated_at", Long),
        NestedField::optional(
            f::LAST_UPDATED_SNAPSHOT_ID,
            "last_updated_snapshot_id",
            Long,
        ),
    ]);
    Schema::new(0, fields)
}

#[cfg(test)]
mod tests;
