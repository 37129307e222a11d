//! Writing [`TableMetadata`] as a `*.metadata.json` document, in the field order Java's
//! `TableMetadataParser` uses.

use serde_json::{Map, Value as JsonValue, json};

use super::{FormatVersion, PartitionStatisticsFile, StatisticsFile, TableMetadata};

/// See [`TableMetadata::to_json`].
pub(super) fn to_json(m: &TableMetadata) -> JsonValue {
    let v1 = m.format_version == FormatVersion::V1;
    let mut o = Map::new();
    o.insert("format-version".into(), json!(m.format_version.number()));
    if let Some(uuid) = &m.table_uuid {
        o.insert("table-uuid".into(), json!(uuid));
    }
    o.insert("location".into(), json!(m.location));
    if !v1 || m.last_sequence_number != 0 {
        o.insert("last-sequence-number".into(), json!(m.last_sequence_number));
    }
    o.insert("last-updated-ms".into(), json!(m.last_updated_ms));
    o.insert("last-column-id".into(), json!(m.last_column_id));
    if v1 {
        o.insert("schema".into(), m.current_schema().to_json());
    }
    o.insert("current-schema-id".into(), json!(m.current_schema_id));
    let schemas = m.schemas.iter().map(|s| s.to_json()).collect();
    o.insert("schemas".into(), JsonValue::Array(schemas));
    if v1 && let Some(spec) = m.default_partition_spec() {
        o.insert("partition-spec".into(), spec.fields_json());
    }
    o.insert("default-spec-id".into(), json!(m.default_spec_id));
    let specs = m.partition_specs.iter().map(|s| s.to_json()).collect();
    o.insert("partition-specs".into(), JsonValue::Array(specs));
    o.insert("last-partition-id".into(), json!(m.last_partition_id));
    o.insert(
        "default-sort-order-id".into(),
        json!(m.default_sort_order_id),
    );
    let orders = m.sort_orders.iter().map(|s| s.to_json()).collect();
    o.insert("sort-orders".into(), JsonValue::Array(orders));
    o.insert("properties".into(), json!(m.properties));
    o.insert(
        "current-snapshot-id".into(),
        json!(m.current_snapshot_id.unwrap_or(-1)),
    );
    if let Some(next) = m.next_row_id {
        o.insert("next-row-id".into(), json!(next));
    }
    write_history(m, &mut o);
    for (k, v) in &m.unknown_fields {
        o.entry(k.clone()).or_insert_with(|| v.clone());
    }
    JsonValue::Object(o)
}

/// `refs`, `snapshots`, the statistics lists and the two logs.
fn write_history(m: &TableMetadata, o: &mut Map<String, JsonValue>) {
    let refs: Map<String, JsonValue> = m
        .refs
        .iter()
        .map(|(name, r)| (name.clone(), r.to_json()))
        .collect();
    o.insert("refs".into(), JsonValue::Object(refs));
    let snapshots = m.snapshots.iter().map(|s| s.to_json()).collect();
    o.insert("snapshots".into(), JsonValue::Array(snapshots));
    let statistics = m.statistics.iter().map(statistics_file).collect();
    o.insert("statistics".into(), JsonValue::Array(statistics));
    let partition_statistics = m
        .partition_statistics
        .iter()
        .map(partition_statistics_file)
        .collect();
    o.insert(
        "partition-statistics".into(),
        JsonValue::Array(partition_statistics),
    );
    let snapshot_log = m.snapshot_log.iter().map(|e| e.to_json()).collect();
    o.insert("snapshot-log".into(), JsonValue::Array(snapshot_log));
    let metadata_log = m.metadata_log.iter().map(|e| e.to_json()).collect();
    o.insert("metadata-log".into(), JsonValue::Array(metadata_log));
}

pub(super) fn statistics_file(f: &StatisticsFile) -> JsonValue {
    let mut o = Map::new();
    o.insert("snapshot-id".into(), json!(f.snapshot_id));
    o.insert("statistics-path".into(), json!(f.statistics_path));
    o.insert("file-size-in-bytes".into(), json!(f.file_size_in_bytes));
    o.insert(
        "file-footer-size-in-bytes".into(),
        json!(f.file_footer_size_in_bytes),
    );
    if let Some(key) = &f.key_metadata {
        o.insert("key-metadata".into(), json!(key));
    }
    o.insert(
        "blob-metadata".into(),
        JsonValue::Array(f.blob_metadata.clone()),
    );
    JsonValue::Object(o)
}

pub(super) fn partition_statistics_file(f: &PartitionStatisticsFile) -> JsonValue {
    json!({
        "snapshot-id": f.snapshot_id,
        "statistics-path": f.statistics_path,
        "file-size-in-bytes": f.file_size_in_bytes,
    })
}
