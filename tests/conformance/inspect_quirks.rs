//! Two places where PyIceberg 0.12's `inspect` misreports what the table stores; the expected
//! rows are corrected from independent evidence before comparing, and only there:
//!
//! 1. **Empty partition bounds.** `inspect.manifests` / `all_manifests` turn a stored empty
//!    bound (`b""`, the empty string) into null (Python truthiness). The manifest list stores
//!    `""` (`db.part_truncate_string`, `db.v1_table`). Each snapshot's manifest list is read
//!    here with apache-avro; where the stored bound is present and empty, both PyIceberg's null
//!    and the stored `""` are accepted (mirroring PyIceberg and reporting what is stored are
//!    both defensible; nowhere else is either accepted in place of the other).
//! 2. **A v1 day field that became void.** In a v1 table whose `day` partition field was later
//!    replaced by `void` (`db.part_evo_v1`), `inspect.entries` / `all_files` type the unified
//!    partition field from the current (void) spec and print the day ordinal as microseconds
//!    after the epoch (`"1970-01-01T00:00:00.019844+00:00"` for day 19844 = 2024-05-01). Such
//!    values of a field that is `day` in one spec and `void` in the current one are read back
//!    as the day they encode.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use apache_avro::types::Value as Avro;
use serde_json::Value;

use crate::pyiceberg::WRITTEN_AT;
use crate::render::ANY_OF;

/// The corrections one table's expected rows need.
pub struct OracleQuirks {
    /// Manifest path (as written) -> per partition field, whether lower / upper are stored empty.
    empty_bounds: HashMap<String, Vec<[bool; 2]>>,
    /// Partition fields that are `day` in some spec and `void` in the current one.
    void_day_fields: HashSet<String>,
}

impl OracleQuirks {
    pub fn new(oracle: &Value, warehouse: &Path) -> Self {
        Self {
            empty_bounds: stored_empty_bounds(oracle, warehouse),
            void_day_fields: void_day_fields(oracle),
        }
    }

    /// `row` (an oracle row, paths still with `{warehouse}`) with both corrections applied.
    pub fn correct(&self, mut row: Value) -> Value {
        self.restore_empty_bounds(&mut row);
        if !self.void_day_fields.is_empty() {
            if let Some(partition) = row.get_mut("partition") {
                self.restore_days(partition);
            }
            if let Some(partition) = row
                .get_mut("data_file")
                .and_then(|d| d.get_mut("partition"))
            {
                self.restore_days(partition);
            }
        }
        row
    }

    fn restore_empty_bounds(&self, row: &mut Value) {
        let path = row["path"]
            .as_str()
            .map(|p| p.replace("{warehouse}", WRITTEN_AT));
        let Some(stored) = path.and_then(|p| self.empty_bounds.get(&p)) else {
            return;
        };
        let summaries = row
            .get_mut("partition_summaries")
            .and_then(Value::as_array_mut);
        for (summary, empty) in summaries.into_iter().flatten().zip(stored) {
            for (key, empty) in ["lower_bound", "upper_bound"].iter().zip(empty) {
                if *empty && summary[*key].is_null() {
                    summary[*key] = serde_json::json!({ ANY_OF: [null, ""] });
                }
            }
        }
    }

    fn restore_days(&self, partition: &mut Value) {
        let Some(fields) = partition.as_object_mut() else {
            return;
        };
        for (name, value) in fields.iter_mut() {
            if !self.void_day_fields.contains(name) {
                continue;
            }
            if let Some(day) = value.as_str().and_then(micros_as_day) {
                *value = Value::from(day);
            }
        }
    }
}

/// `"1970-01-01T00:00:00.019844+00:00"` -> `"2024-05-01"` (the microseconds are a day ordinal).
fn micros_as_day(text: &str) -> Option<String> {
    let micros = chrono::DateTime::parse_from_rfc3339(text)
        .ok()?
        .timestamp_micros();
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
    let day = epoch.checked_add_signed(chrono::TimeDelta::days(micros))?;
    Some(day.format("%Y-%m-%d").to_string())
}

fn void_day_fields(oracle: &Value) -> HashSet<String> {
    let specs = oracle["specs"].as_array().cloned().unwrap_or_default();
    let Some(current) = specs.last() else {
        return HashSet::new();
    };
    let transform_of = |spec: &Value, name: &str| {
        spec["fields"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|f| f["name"].as_str() == Some(name))
            .and_then(|f| f["transform"].as_str().map(str::to_string))
    };
    specs
        .iter()
        .flat_map(|s| s["fields"].as_array().cloned().unwrap_or_default())
        .filter(|f| f["transform"].as_str() == Some("day"))
        .filter_map(|f| f["name"].as_str().map(str::to_string))
        .filter(|name| transform_of(current, name).as_deref() == Some("void"))
        .collect()
}

/// Every snapshot's manifest list (`inspect.snapshots[].manifest_list`), read directly.
fn stored_empty_bounds(oracle: &Value, warehouse: &Path) -> HashMap<String, Vec<[bool; 2]>> {
    let mut out = HashMap::new();
    let snapshots = oracle["inspect"]["snapshots"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for snapshot in snapshots {
        let Some(list) = snapshot["manifest_list"].as_str() else {
            continue;
        };
        let local = list.replace("{warehouse}", &warehouse.to_string_lossy());
        let Ok(file) = std::fs::File::open(&local) else {
            continue;
        };
        let Ok(reader) = apache_avro::Reader::new(file) else {
            continue;
        };
        for record in reader.flatten() {
            if let Some((path, empties)) = manifest_empties(record) {
                out.insert(path, empties);
            }
        }
    }
    out
}

fn unwrap_union(value: Avro) -> Avro {
    match value {
        Avro::Union(_, inner) => unwrap_union(*inner),
        other => other,
    }
}

fn field(record: &[(String, Avro)], name: &str) -> Option<Avro> {
    let (_, value) = record.iter().find(|(n, _)| n == name)?;
    Some(unwrap_union(value.clone()))
}

/// A manifest list record's path and, per field summary, whether each bound is stored empty.
fn manifest_empties(record: Avro) -> Option<(String, Vec<[bool; 2]>)> {
    let Avro::Record(fields) = record else {
        return None;
    };
    let Some(Avro::String(path)) = field(&fields, "manifest_path") else {
        return None;
    };
    let Some(Avro::Array(summaries)) = field(&fields, "partitions") else {
        return Some((path, Vec::new()));
    };
    let is_empty = |summary: &[(String, Avro)], name: &str| matches!(field(summary, name), Some(Avro::Bytes(b)) if b.is_empty());
    let empties = summaries
        .into_iter()
        .map(|s| match unwrap_union(s) {
            Avro::Record(s) => [is_empty(&s, "lower_bound"), is_empty(&s, "upper_bound")],
            _ => [false, false],
        })
        .collect();
    Some((path, empties))
}
