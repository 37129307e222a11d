//! A typed fast path for the bulk of a metadata file: its `snapshots` and `snapshot-log`
//! arrays, which make up nearly all of the bytes of a table with a long history (2,000
//! snapshots: about 900 KB). Building a `serde_json::Value` tree for them and converting it
//! costs several times more than deserializing them straight into their types. Each array is
//! converted element by element as it is read, and a snapshot's summary is read straight into
//! its packed form (one buffer for all its keys and values), with no map and no string per
//! entry: most summaries are never looked at.
//!
//! The fast path accepts exactly what the `Value` path ([`super::read`]) accepts, and nothing
//! more: any input it does not take as it is (a value of another JSON type, a missing required
//! field, a duplicate field, an id out of range) makes it give up, and the `Value` path parses
//! the file again and reports the problem with its usual message.

use std::cell::RefCell;
use std::fmt::{self, Write as _};

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value as JsonValue};

use crate::spec::snapshot::{Operation, PackedProperties, Snapshot, SnapshotLogEntry, Summary};

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
        snapshots: raw.snapshots.map(|s| s.0).unwrap_or_default(),
        snapshot_log: raw.snapshot_log.map(|s| s.0).unwrap_or_default(),
    })
}

struct RawSplit {
    rest: Map<String, JsonValue>,
    snapshots: Option<Converted<Snapshot>>,
    snapshot_log: Option<Converted<SnapshotLogEntry>>,
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

/// A JSON array whose elements are read into their raw form and converted one at a time, so
/// that no vector of raw elements is built. An element that does not convert is an error.
struct Converted<T>(Vec<T>);

impl<T> Default for Converted<T> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

/// A raw element of an array the fast path reads, and its conversion.
trait Convert<'de>: Sized {
    /// The raw form read from the file.
    type Raw: Deserialize<'de>;

    /// The element, or `None` where the `Value` path would not take it.
    fn convert(raw: Self::Raw) -> Option<Self>;
}

impl<'de> Convert<'de> for Snapshot {
    type Raw = RawSnapshot;

    fn convert(raw: RawSnapshot) -> Option<Self> {
        raw.into_snapshot()
    }
}

impl<'de> Convert<'de> for SnapshotLogEntry {
    type Raw = RawLogEntry;

    fn convert(raw: RawLogEntry) -> Option<Self> {
        Some(Self {
            snapshot_id: raw.snapshot_id?.0,
            timestamp_ms: raw.timestamp_ms?.0,
        })
    }
}

impl<'de, T: Convert<'de>> Deserialize<'de> for Converted<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Elements<T>(std::marker::PhantomData<T>);
        impl<'de, T: Convert<'de>> Visitor<'de> for Elements<T> {
            type Value = Converted<T>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Converted<T>, A::Error> {
                let mut elements = Vec::new();
                while let Some(raw) = seq.next_element::<T::Raw>()? {
                    elements.push(T::convert(raw).ok_or_else(|| de::Error::custom("not taken"))?);
                }
                Ok(Converted(elements))
            }
        }
        deserializer.deserialize_seq(Elements(std::marker::PhantomData))
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
    summary: Option<RawSummary>,
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
            Some(raw) => Some(Summary::packed(
                raw.operation?,
                PackedProperties::new(raw.text, raw.ends)?,
            )),
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

thread_local! {
    /// The buffers a summary is read into before it is copied out at its size: one allocation
    /// each for its text and its offsets, however many entries it has.
    static SCRATCH: RefCell<(String, Vec<u32>)> = const { RefCell::new((String::new(), Vec::new())) };
}

/// A summary as [`super::json::string_map`] reads it, without a map: every key and value is
/// appended to one buffer (a string as written, a number or a boolean as its JSON text), except
/// `operation`, which is taken out. A repeated key is kept as it is; the last one wins when the
/// summary is read, as it does in the `Value` path's map.
struct RawSummary {
    /// The last `operation`; `None` (no operation) makes the fast path give up.
    operation: Option<Operation>,
    text: Box<str>,
    /// The end offset in `text` of each key and each value.
    ends: Box<[u32]>,
}

impl<'de> Deserialize<'de> for RawSummary {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = RawSummary;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a snapshot summary object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawSummary, A::Error> {
                let offset = |n: usize| {
                    u32::try_from(n).map_err(|_| <A::Error as de::Error>::custom("too long"))
                };
                SCRATCH.with_borrow_mut(|(text, ends)| {
                    text.clear();
                    ends.clear();
                    let mut operation = None;
                    let mut start = 0;
                    while map.next_key_seed(Append(text))?.is_some() {
                        let key_end = text.len();
                        map.next_value_seed(Append(text))?;
                        if &text[start..key_end] == "operation" {
                            operation = Some(Operation::parse(&text[key_end..]));
                            text.truncate(start);
                        } else {
                            ends.push(offset(key_end)?);
                            ends.push(offset(text.len())?);
                            start = text.len();
                        }
                    }
                    Ok(RawSummary {
                        operation,
                        text: Box::from(text.as_str()),
                        ends: Box::from(ends.as_slice()),
                    })
                })
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

/// Appends a summary key or value to the buffer as [`super::json::string_map`] keeps it: a
/// string as written, a number or a boolean as its JSON text. Anything else is an error.
struct Append<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for Append<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Append<'_> {
    fn json_text<E: de::Error>(self, v: JsonValue) -> Result<(), E> {
        write!(self.0, "{v}").map_err(E::custom)
    }
}

impl Visitor<'_> for Append<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string, number or boolean")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.push_str(v);
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.json_text(JsonValue::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.json_text(JsonValue::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.json_text(JsonValue::from(v))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.json_text(JsonValue::from(v))
    }
}
