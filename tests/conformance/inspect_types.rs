//! The Arrow types of the metadata tables' top-level columns, where PyIceberg 0.12's
//! `table.inspect` documents them (its docstrings and schemas: timestamps in milliseconds without
//! a zone, `int8` content and status, `int32` ids of specs, schemas and sort orders, `refs.type`
//! a dictionary). The oracle's JSON cannot show a unit or a width, so they are checked here.
//! Strings match any Arrow string type.

use datafusion::arrow::datatypes::{DataType, TimeUnit};

use crate::inspect::{InspectTable, catalog_session, is_checked};
use crate::support;

/// (relation, column, type) as PyIceberg declares them.
const TYPES: &[(&str, &str, &str)] = &[
    ("snapshots", "committed_at", "timestamp[ms]"),
    ("snapshots", "snapshot_id", "int64"),
    ("snapshots", "parent_id", "int64"),
    ("snapshots", "operation", "string"),
    ("snapshots", "manifest_list", "string"),
    ("history", "made_current_at", "timestamp[ms]"),
    ("history", "snapshot_id", "int64"),
    ("history", "parent_id", "int64"),
    ("history", "is_current_ancestor", "bool"),
    ("metadata_log_entries", "timestamp", "timestamp[ms]"),
    ("metadata_log_entries", "file", "string"),
    ("metadata_log_entries", "latest_snapshot_id", "int64"),
    ("metadata_log_entries", "latest_schema_id", "int32"),
    ("metadata_log_entries", "latest_sequence_number", "int64"),
    ("refs", "name", "string"),
    ("refs", "type", "dictionary<int32, string>"),
    ("refs", "snapshot_id", "int64"),
    ("refs", "max_reference_age_in_ms", "int64"),
    ("refs", "min_snapshots_to_keep", "int32"),
    ("refs", "max_snapshot_age_in_ms", "int64"),
    ("entries", "status", "int8"),
    ("entries", "snapshot_id", "int64"),
    ("entries", "sequence_number", "int64"),
    ("entries", "file_sequence_number", "int64"),
    ("files", "content", "int8"),
    ("files", "file_path", "string"),
    ("files", "record_count", "int64"),
    ("files", "file_size_in_bytes", "int64"),
    ("files", "sort_order_id", "int32"),
    ("partitions", "last_updated_at", "timestamp[ms]"),
    ("partitions", "last_updated_snapshot_id", "int64"),
];

/// The family name of an Arrow type, in the spelling of `TYPES`.
fn family(data_type: &DataType) -> String {
    match data_type {
        DataType::Timestamp(unit, zone) => {
            let unit = match unit {
                TimeUnit::Second => "s",
                TimeUnit::Millisecond => "ms",
                TimeUnit::Microsecond => "us",
                TimeUnit::Nanosecond => "ns",
            };
            match zone {
                Some(zone) => format!("timestamp[{unit}, tz={zone}]"),
                None => format!("timestamp[{unit}]"),
            }
        }
        DataType::Int8 => "int8".into(),
        DataType::Int32 => "int32".into(),
        DataType::Int64 => "int64".into(),
        DataType::Boolean => "bool".into(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "string".into(),
        DataType::Dictionary(key, value) => {
            format!("dictionary<{}, {}>", family(key), family(value))
        }
        other => other.to_string(),
    }
}

/// (checks, problems) for one table: each documented column of each relation the oracle has.
pub async fn problems(table: InspectTable) -> (usize, Vec<String>) {
    let ctx = match catalog_session(&table.warehouse).await {
        Ok(ctx) => ctx,
        Err(e) => return (0, vec![format!("session: {e}")]),
    };
    let mut checked = 0;
    let mut problems = Vec::new();
    let mut relations: Vec<&str> = TYPES.iter().map(|(r, _, _)| *r).collect();
    relations.dedup();
    for relation in relations {
        if !is_checked(relation) || !matches!(table.expected(relation), Some(Ok(_))) {
            continue;
        }
        let sql = format!("SELECT * FROM {} LIMIT 0", table.relation_name(relation));
        let frame = match support::icefloe_sql(&ctx, &sql).await {
            Ok(frame) => frame,
            Err(e) => {
                problems.push(format!("{sql} failed: {e}"));
                continue;
            }
        };
        let schema = frame.schema().clone();
        for (_, column, expected) in TYPES.iter().filter(|(r, _, _)| *r == relation) {
            checked += 1;
            let got = match schema.field_with_unqualified_name(column) {
                Ok(field) => family(field.data_type()),
                Err(_) => "no such column".to_string(),
            };
            if got != *expected {
                problems.push(format!(
                    "{relation}.{column}: PyIceberg's type is {expected}, icefloe's {got}"
                ));
            }
        }
    }
    (checked, problems)
}
