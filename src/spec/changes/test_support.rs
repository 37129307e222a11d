//! Tables and updates the tests of this module share.

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::spec::{ApplyContext, Schema, Snapshot, TableMetadata, TableUpdate};

/// A consistent v2 table at `/t`: schemas 0 (`id`, `ts`) and 1 (`id`, `ts`, `name`), current 1;
/// specs 0 (unpartitioned) and 1 (`ts_day`), default 1; sort orders 0 and 1 (`id` asc),
/// default 1; snapshots 1 <- 2 <- 3 with `main` at 3 and tag `t1` at 1; the snapshot log 1,
/// 2, 3; a statistics file for 1; `last-updated-ms` 1_700_000_003_000.
pub(super) fn table_json() -> Value {
    let snapshot = |id: i64, parent: Option<i64>| {
        let mut s = json!({
            "snapshot-id": id, "sequence-number": id,
            "timestamp-ms": 1_700_000_000_000_i64 + id * 1000,
            "summary": {"operation": "append"},
            "manifest-list": format!("/t/metadata/snap-{id}.avro"), "schema-id": 1
        });
        if let Some(p) = parent {
            s["parent-snapshot-id"] = json!(p);
        }
        s
    };
    json!({
        "format-version": 2,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "/t",
        "last-sequence-number": 3,
        "last-updated-ms": 1_700_000_003_000_i64,
        "last-column-id": 3,
        "current-schema-id": 1,
        "schemas": [
            {"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "id", "required": true, "type": "long"},
                {"id": 2, "name": "ts", "required": false, "type": "timestamp"}]},
            {"type": "struct", "schema-id": 1, "fields": [
                {"id": 1, "name": "id", "required": true, "type": "long"},
                {"id": 2, "name": "ts", "required": false, "type": "timestamp"},
                {"id": 3, "name": "name", "required": false, "type": "string"}]}
        ],
        "default-spec-id": 1,
        "partition-specs": [
            {"spec-id": 0, "fields": []},
            {"spec-id": 1, "fields": [
                {"source-id": 2, "field-id": 1000, "name": "ts_day", "transform": "day"}]}
        ],
        "last-partition-id": 1000,
        "default-sort-order-id": 1,
        "sort-orders": [
            {"order-id": 0, "fields": []},
            {"order-id": 1, "fields": [
                {"transform": "identity", "source-id": 1, "direction": "asc",
                 "null-order": "nulls-first"}]}
        ],
        "properties": {"owner": "me"},
        "current-snapshot-id": 3,
        "snapshots": [snapshot(1, None), snapshot(2, Some(1)), snapshot(3, Some(2))],
        "refs": {
            "main": {"snapshot-id": 3, "type": "branch"},
            "t1": {"snapshot-id": 1, "type": "tag"}
        },
        "snapshot-log": [
            {"snapshot-id": 1, "timestamp-ms": 1_700_000_001_000_i64},
            {"snapshot-id": 2, "timestamp-ms": 1_700_000_002_000_i64},
            {"snapshot-id": 3, "timestamp-ms": 1_700_000_003_000_i64}
        ],
        "statistics": [{"snapshot-id": 1, "statistics-path": "/t/s1.puffin",
            "file-size-in-bytes": 10, "file-footer-size-in-bytes": 5, "blob-metadata": []}],
        "metadata-log": []
    })
}

/// [`table_json`] parsed.
pub(super) fn table() -> TableMetadata {
    parse(&table_json())
}

/// Parses metadata JSON (panics on an invalid one: a test fixture).
pub(super) fn parse(v: &Value) -> TableMetadata {
    TableMetadata::parse(v.to_string().as_bytes()).unwrap()
}

/// The time the tests apply their updates at: after everything in [`table`].
pub(super) const NOW: i64 = 1_800_000_000_000;

/// `updates` applied to `base` at [`NOW`], without a previous file.
pub(super) fn apply(base: &TableMetadata, updates: &[TableUpdate]) -> Result<TableMetadata> {
    base.apply(updates, &ApplyContext::new(NOW))
}

/// The message of `updates` refused on `base` (panics when they apply, or fail otherwise).
pub(super) fn refused(base: &TableMetadata, updates: &[TableUpdate]) -> String {
    match apply(base, updates) {
        Err(e @ Error::InvalidArgument { .. }) => e.to_string(),
        Err(other) => panic!("expected an invalid argument, got {other}"),
        Ok(_) => panic!("{updates:?} applied"),
    }
}

/// A schema from its fields' JSON.
pub(super) fn schema(id: i32, fields: Value) -> Schema {
    Schema::from_json(&json!({"type": "struct", "schema-id": id, "fields": fields})).unwrap()
}

/// An append snapshot of `id` with `parent`, sequence number `sequence`, at `at`.
pub(super) fn snapshot(id: i64, parent: Option<i64>, sequence: i64, at: i64) -> Snapshot {
    let mut v = json!({"snapshot-id": id, "sequence-number": sequence, "timestamp-ms": at,
        "summary": {"operation": "append"}, "manifest-list": format!("/t/metadata/snap-{id}.avro")});
    if let Some(p) = parent {
        v["parent-snapshot-id"] = json!(p);
    }
    Snapshot::from_json(&v).unwrap()
}
