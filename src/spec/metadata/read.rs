//! Parsing a `*.metadata.json` file into [`TableMetadata`] (spec: "Table Metadata Fields").

use std::collections::BTreeMap;

use serde_json::Value as JsonValue;

use super::json::{self as j, Object};
use super::{FormatVersion, PartitionStatisticsFile, StatisticsFile, TableMetadata};
use crate::error::{Error, Result};
use crate::spec::partition::{PARTITION_DATA_ID_START, PartitionSpec};
use crate::spec::schema::Schema;
use crate::spec::snapshot::{MetadataLogEntry, Snapshot, SnapshotLogEntry, SnapshotReference};
use crate::spec::sort::SortOrder;

const WHAT: &str = "table metadata";

/// The top-level fields this module reads; everything else goes to `unknown_fields`.
const KNOWN_FIELDS: &[&str] = &[
    "format-version",
    "table-uuid",
    "location",
    "last-sequence-number",
    "last-updated-ms",
    "last-column-id",
    "schema",
    "schemas",
    "current-schema-id",
    "partition-spec",
    "partition-specs",
    "default-spec-id",
    "last-partition-id",
    "properties",
    "current-snapshot-id",
    "snapshots",
    "snapshot-log",
    "metadata-log",
    "sort-orders",
    "default-sort-order-id",
    "refs",
    "statistics",
    "partition-statistics",
    "next-row-id",
];

/// See [`TableMetadata::parse`].
pub(super) fn parse(bytes: &[u8]) -> Result<TableMetadata> {
    if let Some(split) = super::fast::split(bytes)
        && let Ok(metadata) = from_object(&split.rest, Some((split.snapshots, split.snapshot_log)))
    {
        return Ok(metadata);
    }
    let v: JsonValue = serde_json::from_slice(bytes)
        .map_err(|e| Error::corrupt_with("", "table metadata is not valid JSON", e))?;
    from_object(j::object(&v, WHAT)?, None)
}

/// [`parse`] without the fast path: what the fast path must agree with.
#[cfg(test)]
pub(super) fn parse_values_only(bytes: &[u8]) -> Result<TableMetadata> {
    let v: JsonValue = serde_json::from_slice(bytes)
        .map_err(|e| Error::corrupt_with("", "table metadata is not valid JSON", e))?;
    from_object(j::object(&v, WHAT)?, None)
}

/// The metadata in a parsed top-level object; with `bulk`, its already parsed `snapshots`
/// and `snapshot-log` (which `o` then lacks).
fn from_object(
    o: &Object,
    bulk: Option<(Vec<Snapshot>, Vec<SnapshotLogEntry>)>,
) -> Result<TableMetadata> {
    let format_version = format_version(o)?;
    let v1 = format_version == FormatVersion::V1;
    let (schemas, current_schema_id) = schemas(o, v1)?;
    let (partition_specs, default_spec_id) = partition_specs(o, v1)?;
    let last_partition_id = last_partition_id(o, v1, &partition_specs)?;
    let (sort_orders, default_sort_order_id) = sort_orders(o, v1)?;
    let current_snapshot_id = j::opt_i64(o, "current-snapshot-id", WHAT)?.filter(|id| *id != -1);
    let (snapshots, snapshot_log) = match bulk {
        Some(bulk) => bulk,
        None => (
            list(o, "snapshots", Snapshot::from_json)?,
            list(o, "snapshot-log", SnapshotLogEntry::from_json)?,
        ),
    };
    let last_sequence_number = match j::opt_i64(o, "last-sequence-number", WHAT)? {
        Some(n) => n,
        None if v1 => 0,
        None => return Err(j::missing(WHAT, "last-sequence-number")),
    };
    let metadata = TableMetadata {
        format_version,
        table_uuid: j::opt_str(o, "table-uuid", WHAT)?.map(str::to_string),
        location: j::req_str(o, "location", WHAT)?.to_string(),
        last_sequence_number,
        last_updated_ms: j::req_i64(o, "last-updated-ms", WHAT)?,
        last_column_id: j::req_i32(o, "last-column-id", WHAT)?,
        schemas,
        current_schema_id,
        partition_specs,
        default_spec_id,
        last_partition_id,
        properties: properties(o)?,
        current_snapshot_id,
        snapshots,
        snapshot_log,
        metadata_log: list(o, "metadata-log", MetadataLogEntry::from_json)?,
        sort_orders,
        default_sort_order_id,
        refs: refs(o, current_snapshot_id)?,
        statistics: list(o, "statistics", statistics_file)?,
        partition_statistics: list(o, "partition-statistics", partition_statistics_file)?,
        next_row_id: j::opt_i64(o, "next-row-id", WHAT)?,
        unknown_fields: o
            .iter()
            .filter(|(k, _)| !KNOWN_FIELDS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    };
    metadata.validate()?;
    Ok(metadata)
}

fn format_version(o: &Object) -> Result<FormatVersion> {
    FormatVersion::try_from(j::req_i64(o, "format-version", WHAT)?)
}

/// Parses each element of an optional array field with `parse`.
fn list<T>(o: &Object, key: &str, parse: impl Fn(&JsonValue) -> Result<T>) -> Result<Vec<T>> {
    j::opt_array(o, key, WHAT)?
        .iter()
        .map(|v| parse(v).map_err(|e| e.within(format_args!("'{key}'"))))
        .collect()
}

/// `schemas` + `current-schema-id`, or v1's lone `schema` (its id, 0 when absent, is current).
fn schemas(o: &Object, v1: bool) -> Result<(Vec<Schema>, i32)> {
    let parse_schema = |v: &JsonValue| Schema::from_json(v).map_err(|e| e.within("invalid schema"));
    if o.get("schemas").is_some_and(|v| !v.is_null()) {
        let schemas = list(o, "schemas", parse_schema)?;
        return Ok((schemas, j::req_i32(o, "current-schema-id", WHAT)?));
    }
    match o.get("schema") {
        Some(schema) if v1 && !schema.is_null() => {
            let schema = parse_schema(schema)?;
            let id = schema.schema_id;
            Ok((vec![schema], id))
        }
        _ => Err(j::missing(WHAT, if v1 { "schema" } else { "schemas" })),
    }
}

/// `partition-specs` + `default-spec-id`, or v1's `partition-spec` fields as spec 0.
fn partition_specs(o: &Object, v1: bool) -> Result<(Vec<PartitionSpec>, i32)> {
    if o.get("partition-specs").is_some_and(|v| !v.is_null()) {
        let specs = list(o, "partition-specs", PartitionSpec::from_json)?;
        return Ok((specs, j::req_i32(o, "default-spec-id", WHAT)?));
    }
    match o.get("partition-spec") {
        Some(fields) if v1 && !fields.is_null() => {
            Ok((vec![PartitionSpec::from_fields_json(0, fields)?], 0))
        }
        _ => Err(j::missing(
            WHAT,
            if v1 {
                "partition-spec"
            } else {
                "partition-specs"
            },
        )),
    }
}

/// `last-partition-id`; v1 files without it get the highest field id in use, or 999.
fn last_partition_id(o: &Object, v1: bool, specs: &[PartitionSpec]) -> Result<i32> {
    match j::opt_i32(o, "last-partition-id", WHAT)? {
        Some(id) => Ok(id),
        None if v1 => Ok(specs
            .iter()
            .filter_map(PartitionSpec::highest_field_id)
            .max()
            .unwrap_or(PARTITION_DATA_ID_START - 1)),
        None => Err(j::missing(WHAT, "last-partition-id")),
    }
}

/// `sort-orders` + `default-sort-order-id`; v1 files without them are unsorted (order 0).
fn sort_orders(o: &Object, v1: bool) -> Result<(Vec<SortOrder>, i32)> {
    if o.get("sort-orders").is_some_and(|v| !v.is_null()) {
        let orders = list(o, "sort-orders", SortOrder::from_json)?;
        return Ok((orders, j::req_i32(o, "default-sort-order-id", WHAT)?));
    }
    if v1 {
        Ok((vec![SortOrder::unsorted()], 0))
    } else {
        Err(j::missing(WHAT, "sort-orders"))
    }
}

fn properties(o: &Object) -> Result<BTreeMap<String, String>> {
    match o.get("properties") {
        None | Some(JsonValue::Null) => Ok(BTreeMap::new()),
        Some(v) => j::string_map(v, "table metadata 'properties'"),
    }
}

/// `refs`, plus the implicit `main` branch at the current snapshot when `refs` has none.
fn refs(
    o: &Object,
    current_snapshot_id: Option<i64>,
) -> Result<BTreeMap<String, SnapshotReference>> {
    let mut refs = BTreeMap::new();
    if let Some(v) = o.get("refs").filter(|v| !v.is_null()) {
        for (name, r) in j::object(v, "table metadata 'refs'")? {
            let r = SnapshotReference::from_json(r)
                .map_err(|e| e.within(format_args!("ref '{name}'")))?;
            refs.insert(name.clone(), r);
        }
    }
    if let Some(id) = current_snapshot_id {
        refs.entry(SnapshotReference::MAIN_BRANCH.to_string())
            .or_insert_with(|| SnapshotReference::branch(id));
    }
    Ok(refs)
}

pub(super) fn statistics_file(v: &JsonValue) -> Result<StatisticsFile> {
    const WHAT: &str = "statistics file";
    let o = j::object(v, WHAT)?;
    Ok(StatisticsFile {
        snapshot_id: j::req_i64(o, "snapshot-id", WHAT)?,
        statistics_path: j::req_str(o, "statistics-path", WHAT)?.to_string(),
        file_size_in_bytes: j::req_i64(o, "file-size-in-bytes", WHAT)?,
        file_footer_size_in_bytes: j::req_i64(o, "file-footer-size-in-bytes", WHAT)?,
        key_metadata: j::opt_str(o, "key-metadata", WHAT)?.map(str::to_string),
        blob_metadata: j::opt_array(o, "blob-metadata", WHAT)?.to_vec(),
    })
}

pub(super) fn partition_statistics_file(v: &JsonValue) -> Result<PartitionStatisticsFile> {
    const WHAT: &str = "partition statistics file";
    let o = j::object(v, WHAT)?;
    Ok(PartitionStatisticsFile {
        snapshot_id: j::req_i64(o, "snapshot-id", WHAT)?,
        statistics_path: j::req_str(o, "statistics-path", WHAT)?.to_string(),
        file_size_in_bytes: j::req_i64(o, "file-size-in-bytes", WHAT)?,
    })
}
