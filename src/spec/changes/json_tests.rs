//! The JSON forms against the REST OpenAPI (`open-api/rest-catalog-open-api.yaml`): each
//! expected object is written by hand from the yaml's schema of that update or requirement
//! (its `action` / `type` constant and its property names).

use serde_json::{Value, json};

use super::*;
use crate::spec::{CommitTableRequest, TableIdentifier, Transform};

/// `value` writes as `expected`, and `expected` reads back as `value`, through both
/// `to_json`/`from_json` and serde.
fn assert_json<T>(value: &T, expected: Value)
where
    T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug,
{
    assert_eq!(serde_json::to_value(value).unwrap(), expected);
    let back: T = serde_json::from_value(expected.clone()).unwrap();
    assert_eq!(&back, value, "{expected}");
}

fn update(v: Value) -> TableUpdate {
    TableUpdate::from_json(&v).unwrap()
}

fn schema_json() -> Value {
    json!({"type": "struct", "schema-id": 1, "identifier-field-ids": [1], "fields": [
        {"id": 1, "name": "id", "required": true, "type": "long"},
        {"id": 2, "name": "ts", "required": false, "type": "timestamp"}]})
}

fn spec_json() -> Value {
    json!({"spec-id": 1, "fields": [
        {"name": "ts_day", "transform": "day", "source-id": 2, "field-id": 1000}]})
}

fn sort_order_json() -> Value {
    json!({"order-id": 1, "fields": [
        {"transform": "identity", "source-id": 1, "direction": "asc", "null-order": "nulls-first"}]})
}

fn snapshot_json() -> Value {
    json!({"snapshot-id": 3051729675574597004_i64, "parent-snapshot-id": 3055729675574597004_i64,
        "sequence-number": 4, "timestamp-ms": 1_555_100_955_770_i64,
        "summary": {"operation": "append", "added-files": "1"},
        "manifest-list": "s3://b/t/metadata/snap-3051729675574597004.avro", "schema-id": 1})
}

fn statistics_json() -> Value {
    json!({"snapshot-id": 3051729675574597004_i64, "statistics-path": "s3://b/t/stats.puffin",
        "file-size-in-bytes": 413, "file-footer-size-in-bytes": 42,
        "blob-metadata": [{"type": "apache-datasketches-theta-v1",
            "snapshot-id": 3051729675574597004_i64, "sequence-number": 4, "fields": [1]}]})
}

#[test]
fn structure_updates_have_the_openapi_fields() {
    let schema = Schema::from_json(&schema_json()).unwrap();
    let cases = [
        (
            TableUpdate::AssignUuid {
                uuid: "2cc52516-5e73-41f2-b139-545d41a4e151".into(),
            },
            json!({"action": "assign-uuid", "uuid": "2cc52516-5e73-41f2-b139-545d41a4e151"}),
        ),
        (
            TableUpdate::UpgradeFormatVersion {
                format_version: FormatVersion::V3,
            },
            json!({"action": "upgrade-format-version", "format-version": 3}),
        ),
        (
            TableUpdate::AddSchema {
                schema: schema.clone(),
                last_column_id: None,
            },
            json!({"action": "add-schema", "schema": schema_json()}),
        ),
        (
            TableUpdate::AddSchema {
                schema,
                last_column_id: Some(7),
            },
            json!({"action": "add-schema", "schema": schema_json(), "last-column-id": 7}),
        ),
        (
            TableUpdate::SetCurrentSchema { schema_id: -1 },
            json!({"action": "set-current-schema", "schema-id": -1}),
        ),
        (
            TableUpdate::AddSpec {
                spec: PartitionSpec::from_json(&spec_json()).unwrap(),
            },
            json!({"action": "add-spec", "spec": spec_json()}),
        ),
        (
            TableUpdate::SetDefaultSpec { spec_id: 1 },
            json!({"action": "set-default-spec", "spec-id": 1}),
        ),
        (
            TableUpdate::AddSortOrder {
                sort_order: SortOrder::from_json(&sort_order_json()).unwrap(),
            },
            json!({"action": "add-sort-order", "sort-order": sort_order_json()}),
        ),
        (
            TableUpdate::SetDefaultSortOrder { sort_order_id: 1 },
            json!({"action": "set-default-sort-order", "sort-order-id": 1}),
        ),
        (
            TableUpdate::RemovePartitionSpecs {
                spec_ids: vec![0, 2],
            },
            json!({"action": "remove-partition-specs", "spec-ids": [0, 2]}),
        ),
        (
            TableUpdate::RemoveSchemas {
                schema_ids: vec![0],
            },
            json!({"action": "remove-schemas", "schema-ids": [0]}),
        ),
    ];
    for (value, expected) in cases {
        assert_json(&value, expected);
    }
}

#[test]
fn history_and_property_updates_have_the_openapi_fields() {
    let statistics = StatisticsFile::from_json(&statistics_json()).unwrap();
    let cases = [
        (
            TableUpdate::AddSnapshot {
                snapshot: Snapshot::from_json(&snapshot_json()).unwrap(),
            },
            json!({"action": "add-snapshot", "snapshot": snapshot_json()}),
        ),
        (
            TableUpdate::set_ref(
                "audit",
                SnapshotReference {
                    snapshot_id: 7,
                    retention: crate::spec::SnapshotRetention::Branch {
                        min_snapshots_to_keep: Some(2),
                        max_snapshot_age_ms: Some(3_600_000),
                        max_ref_age_ms: None,
                    },
                },
            ),
            // SetSnapshotRefUpdate: allOf BaseUpdate + SnapshotReference, plus `ref-name`.
            json!({"action": "set-snapshot-ref", "ref-name": "audit", "snapshot-id": 7,
                "type": "branch", "min-snapshots-to-keep": 2, "max-snapshot-age-ms": 3_600_000}),
        ),
        (
            TableUpdate::set_ref(
                "v1",
                SnapshotReference {
                    snapshot_id: 7,
                    retention: crate::spec::SnapshotRetention::Tag {
                        max_ref_age_ms: Some(10),
                    },
                },
            ),
            json!({"action": "set-snapshot-ref", "ref-name": "v1", "snapshot-id": 7,
                "type": "tag", "max-ref-age-ms": 10}),
        ),
        (
            TableUpdate::RemoveSnapshots {
                snapshot_ids: vec![1, 2],
            },
            json!({"action": "remove-snapshots", "snapshot-ids": [1, 2]}),
        ),
        (
            TableUpdate::RemoveSnapshotRef {
                ref_name: "v1".into(),
            },
            json!({"action": "remove-snapshot-ref", "ref-name": "v1"}),
        ),
        (
            TableUpdate::SetLocation {
                location: "s3://b/t".into(),
            },
            json!({"action": "set-location", "location": "s3://b/t"}),
        ),
        (
            TableUpdate::SetProperties {
                updates: [("a".to_string(), "1".to_string())].into(),
            },
            json!({"action": "set-properties", "updates": {"a": "1"}}),
        ),
        (
            TableUpdate::RemoveProperties {
                removals: vec!["a".into(), "b".into()],
            },
            json!({"action": "remove-properties", "removals": ["a", "b"]}),
        ),
        (
            TableUpdate::SetStatistics {
                statistics: statistics.clone(),
            },
            // `snapshot-id` is the deprecated copy of `statistics.snapshot-id`.
            json!({"action": "set-statistics", "snapshot-id": 3051729675574597004_i64,
                "statistics": statistics_json()}),
        ),
        (
            TableUpdate::RemoveStatistics { snapshot_id: 5 },
            json!({"action": "remove-statistics", "snapshot-id": 5}),
        ),
        (
            TableUpdate::SetPartitionStatistics {
                partition_statistics: PartitionStatisticsFile {
                    snapshot_id: 5,
                    statistics_path: "s3://b/t/p.parquet".into(),
                    file_size_in_bytes: 99,
                },
            },
            json!({"action": "set-partition-statistics", "partition-statistics": {
                "snapshot-id": 5, "statistics-path": "s3://b/t/p.parquet",
                "file-size-in-bytes": 99}}),
        ),
        (
            TableUpdate::RemovePartitionStatistics { snapshot_id: 5 },
            json!({"action": "remove-partition-statistics", "snapshot-id": 5}),
        ),
    ];
    for (value, expected) in cases {
        assert_json(&value, expected);
    }
}

#[test]
fn requirements_have_the_openapi_fields() {
    let cases = [
        (
            TableRequirement::AssertCreate,
            json!({"type": "assert-create"}),
        ),
        (
            TableRequirement::AssertTableUuid {
                uuid: "2cc52516-5e73-41f2-b139-545d41a4e151".into(),
            },
            json!({"type": "assert-table-uuid", "uuid": "2cc52516-5e73-41f2-b139-545d41a4e151"}),
        ),
        (
            TableRequirement::AssertRefSnapshotId {
                ref_name: "main".into(),
                snapshot_id: Some(3),
            },
            json!({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 3}),
        ),
        (
            // "The snapshot-id field is required in this object, but in the case of a null the
            // ref must not already exist."
            TableRequirement::AssertRefSnapshotId {
                ref_name: "dev".into(),
                snapshot_id: None,
            },
            json!({"type": "assert-ref-snapshot-id", "ref": "dev", "snapshot-id": null}),
        ),
        (
            TableRequirement::AssertLastAssignedFieldId {
                last_assigned_field_id: 3,
            },
            json!({"type": "assert-last-assigned-field-id", "last-assigned-field-id": 3}),
        ),
        (
            TableRequirement::AssertCurrentSchemaId {
                current_schema_id: 1,
            },
            json!({"type": "assert-current-schema-id", "current-schema-id": 1}),
        ),
        (
            TableRequirement::AssertLastAssignedPartitionId {
                last_assigned_partition_id: 1000,
            },
            json!({"type": "assert-last-assigned-partition-id",
                "last-assigned-partition-id": 1000}),
        ),
        (
            TableRequirement::AssertDefaultSpecId { default_spec_id: 0 },
            json!({"type": "assert-default-spec-id", "default-spec-id": 0}),
        ),
        (
            TableRequirement::AssertDefaultSortOrderId {
                default_sort_order_id: 0,
            },
            json!({"type": "assert-default-sort-order-id", "default-sort-order-id": 0}),
        ),
    ];
    for (value, expected) in cases {
        assert_json(&value, expected);
    }
}

#[test]
fn a_commit_request_has_requirements_updates_and_an_optional_identifier() {
    let mut request = CommitTableRequest {
        identifier: Some(TableIdentifier {
            namespace: vec!["accounting".into(), "tax".into()],
            name: "paid".into(),
        }),
        requirements: vec![TableRequirement::AssertCreate],
        updates: vec![TableUpdate::SetLocation {
            location: "/t".into(),
        }],
    };
    assert_json(
        &request,
        json!({
            "identifier": {"namespace": ["accounting", "tax"], "name": "paid"},
            "requirements": [{"type": "assert-create"}],
            "updates": [{"action": "set-location", "location": "/t"}]
        }),
    );
    request.identifier = None;
    assert_json(
        &request,
        json!({"requirements": [{"type": "assert-create"}],
            "updates": [{"action": "set-location", "location": "/t"}]}),
    );
    // Both lists are required.
    let err = serde_json::from_value::<CommitTableRequest>(json!({"updates": []})).unwrap_err();
    assert!(err.to_string().contains("requirements"), "{err}");
}

#[test]
fn reading_accepts_what_java_accepts() {
    // A spec without its (read-only) spec-id, and without field ids, as a client may send it.
    let u = update(json!({"action": "add-spec", "spec": {"fields": [
        {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1}]}}));
    let TableUpdate::AddSpec { spec } = u else {
        panic!("{u:?}")
    };
    assert_eq!((spec.spec_id, spec.fields[0].field_id), (0, 1000));
    assert_eq!(spec.fields[0].transform, Transform::Bucket(16));
    // The legacy names of set-properties / remove-properties (Java's parser reads them).
    assert_eq!(
        update(json!({"action": "set-properties", "updated": {"a": "1"}})),
        TableUpdate::SetProperties {
            updates: [("a".to_string(), "1".to_string())].into()
        }
    );
    assert_eq!(
        update(json!({"action": "remove-properties", "removed": ["a"]})),
        TableUpdate::RemoveProperties {
            removals: vec!["a".into()]
        }
    );
    // set-statistics without the deprecated snapshot-id.
    let u = update(json!({"action": "set-statistics", "statistics": statistics_json()}));
    assert!(matches!(u, TableUpdate::SetStatistics { .. }));
    // assert-ref-snapshot-id without snapshot-id: null.
    let r = TableRequirement::from_json(&json!({"type": "assert-ref-snapshot-id", "ref": "b"}));
    assert_eq!(
        r.unwrap(),
        TableRequirement::AssertRefSnapshotId {
            ref_name: "b".into(),
            snapshot_id: None
        }
    );
}

#[test]
fn bad_json_is_corrupt_naming_the_update_and_field() {
    let cases = [
        (json!({"uuid": "x"}), "'action'"),
        (json!({"action": "assign-uuid"}), "'uuid'"),
        (json!({"action": "add-schema"}), "'schema'"),
        (
            json!({"action": "add-schema", "schema": {"type": "list"}}),
            "schema",
        ),
        (
            json!({"action": "set-current-schema", "schema-id": "1"}),
            "'schema-id'",
        ),
        (
            json!({"action": "set-snapshot-ref", "ref-name": "b", "snapshot-id": 1}),
            "'type'",
        ),
        (
            json!({"action": "remove-snapshots", "snapshot-ids": [1, "2"]}),
            "'snapshot-ids'",
        ),
        (
            json!({"action": "remove-schemas", "schema-ids": [4_000_000_000_i64]}),
            "'schema-ids'",
        ),
        (
            json!({"action": "set-properties", "updates": {"a": [1]}}),
            "set-properties",
        ),
        (
            json!({"action": "add-snapshot", "snapshot": {"snapshot-id": 1}}),
            "'timestamp-ms'",
        ),
        (
            json!({"action": "rename-table"}),
            "unknown action 'rename-table'",
        ),
    ];
    for (v, needle) in cases {
        let err = TableUpdate::from_json(&v).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{v}: {err}");
        assert!(err.to_string().contains(needle), "{v}: {err}");
    }
    let err = TableUpdate::from_json(&json!({"action": "upgrade-format-version",
        "format-version": 4}))
    .unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
    let err = TableUpdate::from_json(&json!({"action": "add-encryption-key",
        "encryption-key": {"key-id": "k", "encrypted-key-metadata": "AA=="}}))
    .unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
    let err =
        TableRequirement::from_json(&json!({"type": "assert-current-schema-id"})).unwrap_err();
    assert!(err.to_string().contains("'current-schema-id'"), "{err}");
    let err =
        TableRequirement::from_json(&json!({"type": "assert-view-uuid", "uuid": "u"})).unwrap_err();
    assert!(err.to_string().contains("unknown type"), "{err}");
    // Through serde, the same messages.
    let err = serde_json::from_value::<TableUpdate>(json!({"action": "set-location"})).unwrap_err();
    assert!(err.to_string().contains("'location'"), "{err}");
}
