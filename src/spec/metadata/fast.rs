//! A typed fast path for the bulk of a metadata file: its `snapshots` and `snapshot-log`
//! arrays, which make up nearly all of the bytes of a table with a long history (2,000
//! snapshots: about 900 KB). Building a `serde_json::Value` tree for them and converting it
//! costs several times more than deserializing them straight into their types.
//!
//! The fast path accepts exactly what the `Value` path ([`super::read`]) accepts, and nothing
//! more: any input it does not take as it is (a value of another JSON type, a missing required
//! field, a duplicate field, an id out of range) makes it give up, and the `Value` path parses
//! the file again and reports the problem with its usual message.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value as JsonValue};

use crate::spec::snapshot::{Operation, Snapshot, SnapshotLogEntry, Summary};

/// A metadata file split into its typed bulk and the rest of its top-level fields.
pub(super) struct Split {
    /// Every top-level field but `snapshots` and `snapshot-log`, in file order.
    pub(super) rest: Map<String, JsonValue>,
    pub(super) snapshots: Vec<Snapshot>,
    pub(super) snapshot_log: Vec<SnapshotLogEntry>,
}

/// The split of `bytes`, or `None` when the fast path does not take the file as it is.
pub(super) fn split(bytes: &[u8]) -> Option<Split> {
    let raw: RawSplit = serde_json::from_slice(bytes).ok()?;
    Some(Split {
        rest: raw.rest,
        snapshots: raw
            .snapshots
            .unwrap_or_default()
            .into_iter()
            .map(RawSnapshot::into_snapshot)
            .collect::<Option<_>>()?,
        snapshot_log: raw
            .snapshot_log
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                Some(SnapshotLogEntry {
                    snapshot_id: e.snapshot_id?.0,
                    timestamp_ms: e.timestamp_ms?.0,
                })
            })
            .collect::<Option<_>>()?,
    })
}

struct RawSplit {
    rest: Map<String, JsonValue>,
    snapshots: Option<Vec<RawSnapshot>>,
    snapshot_log: Option<Vec<RawLogEntry>>,
}

impl<'de> Deserialize<'de> for RawSplit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TopLevel;
        impl<'de> Visitor<'de> for TopLevel {
            type Value = RawSplit;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table metadata object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawSplit, A::Error> {
                let mut split = RawSplit {
                    rest: Map::new(),
                    snapshots: None,
                    snapshot_log: None,
                };
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        // A repeated key is left to the `Value` path's rules.
                        "snapshots" if split.snapshots.is_none() => {
                            split.snapshots =
                                Some(map.next_value::<Option<_>>()?.unwrap_or_default())
                        }
                        "snapshot-log" if split.snapshot_log.is_none() => {
                            split.snapshot_log =
                                Some(map.next_value::<Option<_>>()?.unwrap_or_default())
                        }
                        "snapshots" | "snapshot-log" => {
                            return Err(de::Error::custom("repeated key"));
                        }
                        _ => {
                            let value = map.next_value::<JsonValue>()?;
                            split.rest.insert(key, value);
                        }
                    }
                }
                Ok(split)
            }
        }
        deserializer.deserialize_map(TopLevel)
    }
}

#[derive(Deserialize)]
struct RawSnapshot {
    #[serde(rename = "snapshot-id")]
    snapshot_id: Option<ExactI64>,
    #[serde(rename = "parent-snapshot-id")]
    parent_snapshot_id: Option<ExactI64>,
    #[serde(rename = "sequence-number")]
    sequence_number: Option<ExactI64>,
    #[serde(rename = "timestamp-ms")]
    timestamp_ms: Option<ExactI64>,
    #[serde(rename = "manifest-list")]
    manifest_list: Option<String>,
    manifests: Option<Vec<String>>,
    summary: Option<BTreeMap<String, SummaryValue>>,
    #[serde(rename = "schema-id")]
    schema_id: Option<ExactI64>,
    #[serde(rename = "first-row-id")]
    first_row_id: Option<ExactI64>,
    #[serde(rename = "added-rows")]
    added_rows: Option<ExactI64>,
    #[serde(rename = "key-id")]
    key_id: Option<String>,
}

impl RawSnapshot {
    /// The snapshot, as [`Snapshot::from_json`] reads it; `None` where that would fail.
    fn into_snapshot(self) -> Option<Snapshot> {
        let summary = match self.summary {
            None => None,
            Some(map) => {
                let mut properties: BTreeMap<String, String> =
                    map.into_iter().map(|(k, v)| (k, v.0)).collect();
                let operation = properties.remove("operation")?;
                Some(Summary {
                    operation: Operation::parse(&operation),
                    properties,
                })
            }
        };
        Some(Snapshot {
            snapshot_id: self.snapshot_id?.0,
            parent_snapshot_id: self.parent_snapshot_id.map(|v| v.0),
            sequence_number: self.sequence_number.map_or(0, |v| v.0),
            timestamp_ms: self.timestamp_ms?.0,
            manifest_list: self.manifest_list,
            manifests: self.manifests,
            summary,
            schema_id: match self.schema_id {
                None => None,
                Some(v) => Some(i32::try_from(v.0).ok()?),
            },
            first_row_id: self.first_row_id.map(|v| v.0),
            added_rows: self.added_rows.map(|v| v.0),
            key_id: self.key_id,
        })
    }
}

#[derive(Deserialize)]
struct RawLogEntry {
    #[serde(rename = "snapshot-id")]
    snapshot_id: Option<ExactI64>,
    #[serde(rename = "timestamp-ms")]
    timestamp_ms: Option<ExactI64>,
}

/// A JSON number taken as an exact `i64` by the rule of [`super::json::exact_i64`]:
/// integers as written, floats only when integral and in range.
struct ExactI64(i64);

impl<'de> Deserialize<'de> for ExactI64 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Exact;
        impl Visitor<'_> for Exact {
            type Value = ExactI64;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a 64-bit integer")
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ExactI64, E> {
                Ok(ExactI64(v))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ExactI64, E> {
                i64::try_from(v)
                    .map(ExactI64)
                    .map_err(|_| E::custom("out of range"))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ExactI64, E> {
                super::json::exact_i64(&JsonValue::from(v))
                    .map(ExactI64)
                    .ok_or_else(|| E::custom("not an integer"))
            }
        }
        deserializer.deserialize_any(Exact)
    }
}

/// A summary value as [`super::json::string_map`] keeps it: a string as written, a number or a
/// boolean as its JSON text.
struct SummaryValue(String);

impl<'de> Deserialize<'de> for SummaryValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl Visitor<'_> for Text {
            type Value = SummaryValue;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, number or boolean")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<SummaryValue, E> {
                Ok(SummaryValue(v.to_string()))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<SummaryValue, E> {
                Ok(SummaryValue(v))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SummaryValue, E> {
                Ok(SummaryValue(JsonValue::from(v).to_string()))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SummaryValue, E> {
                Ok(SummaryValue(JsonValue::from(v).to_string()))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<SummaryValue, E> {
                Ok(SummaryValue(JsonValue::from(v).to_string()))
            }

            fn visit_bool<E: de::Error>(self, v: bool) -> Result<SummaryValue, E> {
                Ok(SummaryValue(JsonValue::from(v).to_string()))
            }
        }
        deserializer.deserialize_any(Text)
    }
}
