//! Snapshots, their summaries, refs and the snapshot and metadata logs (spec: "Snapshots",
//! "Snapshot References", table metadata fields `snapshot-log` and `metadata-log`).
//!
//! Snapshot ids are 64-bit and read exactly: JSON integers never pass through `f64`.

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use serde_json::{Map, Value as JsonValue, json};

use super::metadata::json as j;
use crate::error::{Error, Result};

/// `summary.operation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// Only data files were added.
    Append,
    /// Files were replaced without changing data (compaction, manifest rewrite).
    Replace,
    /// Data files were added and removed.
    Overwrite,
    /// Data files were removed or delete files added.
    Delete,
    /// An operation name the spec does not define (kept verbatim).
    Other(String),
}

impl Operation {
    /// Parses the spec's name; an unknown name is [`Operation::Other`].
    pub fn parse(s: &str) -> Self {
        match s {
            "append" => Self::Append,
            "replace" => Self::Replace,
            "overwrite" => Self::Overwrite,
            "delete" => Self::Delete,
            other => Self::Other(other.to_string()),
        }
    }

    /// The spec's name.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Append => "append",
            Self::Replace => "replace",
            Self::Overwrite => "overwrite",
            Self::Delete => "delete",
            Self::Other(s) => s,
        }
    }
}

/// A snapshot summary: the operation plus free-form string properties.
///
/// A summary read from a metadata file keeps its properties packed (all keys and values in one
/// buffer, in file order) until they are asked for as a map: a table with a long history has
/// thousands of summaries, and most are never looked at. [`Summary::get`] reads the packed form
/// directly; [`Summary::properties`] builds the map on first use and keeps it.
#[derive(Clone)]
pub struct Summary {
    /// `operation`.
    pub operation: Operation,
    /// The properties when they are not packed (empty while they are).
    map: BTreeMap<String, String>,
    /// The properties as read, until they are changed.
    packed: Option<PackedProperties>,
}

/// Summary properties in one buffer: the text of every key and value back to back, and the end
/// offset of each (key, value, key, value, ...), in the order they were read. A repeated key
/// keeps its last value, as in a JSON object read into a map.
#[derive(Clone)]
pub(crate) struct PackedProperties {
    text: Box<str>,
    ends: Box<[u32]>,
    /// The properties as a map, built on first use.
    map: OnceLock<BTreeMap<String, String>>,
}

impl PackedProperties {
    /// The packed form of `text` split at `ends`; `None` unless `ends` has an even number of
    /// offsets, each a character boundary of `text` and none before the one preceding it.
    pub(crate) fn new(text: Box<str>, ends: Box<[u32]>) -> Option<Self> {
        let mut start = 0;
        for &end in &ends {
            let end = end as usize;
            if end < start || !text.is_char_boundary(end) {
                return None;
            }
            start = end;
        }
        ends.len().is_multiple_of(2).then_some(Self {
            text,
            ends,
            map: OnceLock::new(),
        })
    }

    /// The (key, value) pairs in the order they were read, repeats included.
    fn pairs(&self) -> impl DoubleEndedIterator<Item = (&str, &str)> {
        self.ends.chunks_exact(2).enumerate().map(|(i, ends)| {
            let start = if i == 0 {
                0
            } else {
                self.ends[2 * i - 1] as usize
            };
            let (key_end, value_end) = (ends[0] as usize, ends[1] as usize);
            (&self.text[start..key_end], &self.text[key_end..value_end])
        })
    }

    /// The value of `key` (its last one when it is repeated).
    fn get(&self, key: &str) -> Option<&str> {
        match self.map.get() {
            Some(map) => map.get(key).map(String::as_str),
            None => self.pairs().rev().find(|(k, _)| *k == key).map(|(_, v)| v),
        }
    }

    /// The properties as a map, built on first use.
    fn map(&self) -> &BTreeMap<String, String> {
        self.map.get_or_init(|| self.to_map())
    }

    /// The properties as a map, the packed form given up.
    fn into_map(mut self) -> BTreeMap<String, String> {
        self.map.take().unwrap_or_else(|| self.to_map())
    }

    fn to_map(&self) -> BTreeMap<String, String> {
        self.pairs()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

impl Summary {
    /// A summary of `operation` with `properties` (not including `operation`).
    pub fn new(operation: Operation, properties: BTreeMap<String, String>) -> Self {
        Self {
            operation,
            map: properties,
            packed: None,
        }
    }

    /// A summary whose properties stay packed until they are asked for as a map or changed.
    pub(crate) fn packed(operation: Operation, properties: PackedProperties) -> Self {
        Self {
            operation,
            map: BTreeMap::new(),
            packed: Some(properties),
        }
    }

    /// Parses the JSON object; `operation` is required.
    pub fn from_json(v: &JsonValue) -> Result<Self> {
        let mut properties = j::string_map(v, "snapshot summary")?;
        let operation = properties
            .remove("operation")
            .ok_or_else(|| j::missing("snapshot summary", "operation"))?;
        Ok(Self::new(Operation::parse(&operation), properties))
    }

    /// Every property but `operation` (`added-records`, `total-records`, ...), by key.
    pub fn properties(&self) -> &BTreeMap<String, String> {
        match &self.packed {
            Some(packed) => packed.map(),
            None => &self.map,
        }
    }

    /// The value of property `key`, without building the map of all of them.
    pub fn get(&self, key: &str) -> Option<&str> {
        match &self.packed {
            Some(packed) => packed.get(key),
            None => self.map.get(key).map(String::as_str),
        }
    }

    /// The properties, to change them.
    pub fn properties_mut(&mut self) -> &mut BTreeMap<String, String> {
        if let Some(packed) = self.packed.take() {
            self.map = packed.into_map();
        }
        &mut self.map
    }

    /// The properties, taken out of the summary.
    pub fn into_properties(self) -> BTreeMap<String, String> {
        match self.packed {
            Some(packed) => packed.into_map(),
            None => self.map,
        }
    }

    /// The JSON object (`operation` first, then the properties by key).
    pub fn to_json(&self) -> JsonValue {
        let mut m = Map::new();
        m.insert("operation".into(), json!(self.operation.as_str()));
        match self.packed.as_ref().filter(|p| p.map.get().is_none()) {
            // By key without building the map: a repeated key keeps its last value.
            Some(packed) => {
                let sorted: BTreeMap<&str, &str> = packed.pairs().collect();
                for (k, v) in sorted {
                    m.insert(k.to_string(), json!(v));
                }
            }
            None => {
                for (k, v) in self.properties() {
                    m.insert(k.clone(), json!(v));
                }
            }
        }
        JsonValue::Object(m)
    }
}

impl PartialEq for Summary {
    fn eq(&self, other: &Self) -> bool {
        self.operation == other.operation && self.properties() == other.properties()
    }
}

impl fmt::Debug for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Summary")
            .field("operation", &self.operation)
            .field("properties", self.properties())
            .finish()
    }
}

/// A snapshot of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// `snapshot-id`.
    pub snapshot_id: i64,
    /// `parent-snapshot-id`.
    pub parent_snapshot_id: Option<i64>,
    /// `sequence-number` (0 in v1).
    pub sequence_number: i64,
    /// `timestamp-ms`.
    pub timestamp_ms: i64,
    /// `manifest-list`: the manifest list file (absent only in old v1 snapshots).
    pub manifest_list: Option<String>,
    /// `manifests`: v1 snapshots may embed the manifest paths instead of a manifest list.
    pub manifests: Option<Vec<String>>,
    /// `summary` (required in v2+, optional in v1).
    pub summary: Option<Summary>,
    /// `schema-id`: the current schema when the snapshot was written.
    pub schema_id: Option<i32>,
    /// `first-row-id` (v3).
    pub first_row_id: Option<i64>,
    /// `added-rows` (v3).
    pub added_rows: Option<i64>,
    /// `key-id` (v3): encryption key id of the manifest list.
    pub key_id: Option<String>,
}

impl Snapshot {
    /// Parses the JSON form; snapshot ids are read as exact i64 (never through f64).
    ///
    /// An id written as a float (`4.685659321801244e18`) is accepted when it is integral and in
    /// range. A missing `sequence-number` (v1) reads as 0.
    pub fn from_json(v: &JsonValue) -> Result<Self> {
        let o = j::object(v, "snapshot")?;
        let snapshot_id = j::req_i64(o, "snapshot-id", "snapshot")?;
        let what = format!("snapshot {snapshot_id}");
        let what = what.as_str();
        Ok(Self {
            snapshot_id,
            parent_snapshot_id: j::opt_i64(o, "parent-snapshot-id", what)?,
            sequence_number: j::opt_i64(o, "sequence-number", what)?.unwrap_or(0),
            timestamp_ms: j::req_i64(o, "timestamp-ms", what)?,
            manifest_list: j::opt_str(o, "manifest-list", what)?.map(str::to_string),
            manifests: manifests(o, what)?,
            summary: match o.get("summary") {
                None | Some(JsonValue::Null) => None,
                Some(s) => Some(Summary::from_json(s).map_err(|e| e.within(what))?),
            },
            schema_id: j::opt_i32(o, "schema-id", what)?,
            first_row_id: j::opt_i64(o, "first-row-id", what)?,
            added_rows: j::opt_i64(o, "added-rows", what)?,
            key_id: j::opt_str(o, "key-id", what)?.map(str::to_string),
        })
    }

    /// The JSON form, in the field order Java writes. `sequence-number` is left out when it is
    /// 0 (v1).
    pub fn to_json(&self) -> JsonValue {
        let mut m = Map::new();
        m.insert("snapshot-id".into(), json!(self.snapshot_id));
        if let Some(parent) = self.parent_snapshot_id {
            m.insert("parent-snapshot-id".into(), json!(parent));
        }
        if self.sequence_number != 0 {
            m.insert("sequence-number".into(), json!(self.sequence_number));
        }
        m.insert("timestamp-ms".into(), json!(self.timestamp_ms));
        if let Some(summary) = &self.summary {
            m.insert("summary".into(), summary.to_json());
        }
        if let Some(list) = &self.manifest_list {
            m.insert("manifest-list".into(), json!(list));
        }
        if let Some(manifests) = &self.manifests {
            m.insert("manifests".into(), json!(manifests));
        }
        let optional = [
            ("schema-id", self.schema_id.map(|v| json!(v))),
            ("first-row-id", self.first_row_id.map(|v| json!(v))),
            ("added-rows", self.added_rows.map(|v| json!(v))),
            ("key-id", self.key_id.as_ref().map(|v| json!(v))),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                m.insert(key.into(), value);
            }
        }
        JsonValue::Object(m)
    }
}

fn manifests(o: &j::Object, what: &str) -> Result<Option<Vec<String>>> {
    if o.get("manifests").is_none_or(JsonValue::is_null) {
        return Ok(None);
    }
    j::opt_array(o, "manifests", what)?
        .iter()
        .map(|m| {
            m.as_str().map(str::to_string).ok_or_else(|| {
                Error::corrupt(
                    "",
                    format!("{what}: manifest path must be a string, found {m}"),
                )
            })
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// How long a ref and its snapshots are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotRetention {
    /// A branch: a moving pointer whose ancestors may be kept.
    Branch {
        /// `min-snapshots-to-keep`.
        min_snapshots_to_keep: Option<i32>,
        /// `max-snapshot-age-ms`.
        max_snapshot_age_ms: Option<i64>,
        /// `max-ref-age-ms`.
        max_ref_age_ms: Option<i64>,
    },
    /// A tag: a fixed pointer to one snapshot.
    Tag {
        /// `max-ref-age-ms`.
        max_ref_age_ms: Option<i64>,
    },
}

/// A named reference (branch or tag) to a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotReference {
    /// `snapshot-id`.
    pub snapshot_id: i64,
    /// `type` plus its retention fields.
    pub retention: SnapshotRetention,
}

impl SnapshotReference {
    /// The name of the branch a table's current snapshot is on.
    pub const MAIN_BRANCH: &'static str = "main";

    /// `type` (`branch` / `tag`) and the retention fields `min-snapshots-to-keep`,
    /// `max-snapshot-age-ms` and `max-ref-age-ms` (those a tag cannot have are `None`).
    pub fn retention_fields(&self) -> (&'static str, Option<i32>, Option<i64>, Option<i64>) {
        match &self.retention {
            SnapshotRetention::Branch {
                min_snapshots_to_keep,
                max_snapshot_age_ms,
                max_ref_age_ms,
            } => (
                "branch",
                *min_snapshots_to_keep,
                *max_snapshot_age_ms,
                *max_ref_age_ms,
            ),
            SnapshotRetention::Tag { max_ref_age_ms } => ("tag", None, None, *max_ref_age_ms),
        }
    }

    /// A branch at `snapshot_id` with the table's default retention.
    pub fn branch(snapshot_id: i64) -> Self {
        Self {
            snapshot_id,
            retention: SnapshotRetention::Branch {
                min_snapshots_to_keep: None,
                max_snapshot_age_ms: None,
                max_ref_age_ms: None,
            },
        }
    }

    /// Whether this is a branch (not a tag).
    pub fn is_branch(&self) -> bool {
        matches!(self.retention, SnapshotRetention::Branch { .. })
    }

    /// Parses the JSON form (`{"snapshot-id": .., "type": "branch", ...}`).
    pub fn from_json(v: &JsonValue) -> Result<Self> {
        const WHAT: &str = "snapshot ref";
        let o = j::object(v, WHAT)?;
        let snapshot_id = j::req_i64(o, "snapshot-id", WHAT)?;
        let max_ref_age_ms = j::opt_i64(o, "max-ref-age-ms", WHAT)?;
        let kind = j::req_str(o, "type", WHAT)?;
        let retention = match kind.to_ascii_lowercase().as_str() {
            "branch" => SnapshotRetention::Branch {
                min_snapshots_to_keep: j::opt_i32(o, "min-snapshots-to-keep", WHAT)?,
                max_snapshot_age_ms: j::opt_i64(o, "max-snapshot-age-ms", WHAT)?,
                max_ref_age_ms,
            },
            "tag" => SnapshotRetention::Tag { max_ref_age_ms },
            _ => {
                return Err(Error::corrupt(
                    "",
                    format!("{WHAT}: unknown type '{kind}' (expected branch or tag)"),
                ));
            }
        };
        Ok(Self {
            snapshot_id,
            retention,
        })
    }

    /// The JSON form; unset retention fields are left out.
    pub fn to_json(&self) -> JsonValue {
        let mut m = Map::new();
        m.insert("snapshot-id".into(), json!(self.snapshot_id));
        let (kind, min_keep, max_snapshot_age, max_ref_age) = self.retention_fields();
        m.insert("type".into(), json!(kind));
        if let Some(v) = min_keep {
            m.insert("min-snapshots-to-keep".into(), json!(v));
        }
        if let Some(v) = max_snapshot_age {
            m.insert("max-snapshot-age-ms".into(), json!(v));
        }
        if let Some(v) = max_ref_age {
            m.insert("max-ref-age-ms".into(), json!(v));
        }
        JsonValue::Object(m)
    }
}

/// One `snapshot-log` entry: `snapshot_id` became current at `timestamp_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotLogEntry {
    /// `snapshot-id`.
    pub snapshot_id: i64,
    /// `timestamp-ms`.
    pub timestamp_ms: i64,
}

impl SnapshotLogEntry {
    /// Parses the JSON form (`{"timestamp-ms": .., "snapshot-id": ..}`).
    pub fn from_json(v: &JsonValue) -> Result<Self> {
        const WHAT: &str = "snapshot-log entry";
        let o = j::object(v, WHAT)?;
        Ok(Self {
            snapshot_id: j::req_i64(o, "snapshot-id", WHAT)?,
            timestamp_ms: j::req_i64(o, "timestamp-ms", WHAT)?,
        })
    }

    /// The JSON form.
    pub fn to_json(&self) -> JsonValue {
        json!({"timestamp-ms": self.timestamp_ms, "snapshot-id": self.snapshot_id})
    }
}

/// One `metadata-log` entry: a previous metadata file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataLogEntry {
    /// `metadata-file`.
    pub metadata_file: String,
    /// `timestamp-ms`.
    pub timestamp_ms: i64,
}

impl MetadataLogEntry {
    /// Parses the JSON form (`{"timestamp-ms": .., "metadata-file": ..}`).
    pub fn from_json(v: &JsonValue) -> Result<Self> {
        const WHAT: &str = "metadata-log entry";
        let o = j::object(v, WHAT)?;
        Ok(Self {
            metadata_file: j::req_str(o, "metadata-file", WHAT)?.to_string(),
            timestamp_ms: j::req_i64(o, "timestamp-ms", WHAT)?,
        })
    }

    /// The JSON form.
    pub fn to_json(&self) -> JsonValue {
        json!({"timestamp-ms": self.timestamp_ms, "metadata-file": self.metadata_file})
    }
}
