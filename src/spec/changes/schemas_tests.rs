//! Schema, partition spec and sort order evolution: ids assigned as Java's
//! `TableMetadata.Builder` assigns them, `-1` naming the last added, and what is refused.

use serde_json::json;

use super::*;
use crate::spec::changes::TableUpdate;
use crate::spec::changes::test_support::{apply, refused, schema, table};
use crate::spec::partition::PartitionField;
use crate::spec::sort::{NullOrder, SortDirection, SortField};

fn add_schema(schema: Schema) -> TableUpdate {
    TableUpdate::AddSchema {
        schema,
        last_column_id: None,
    }
}

/// `id`, `ts`, `name` (schema 1 of the test table) plus `extra` (id 4, int).
fn schema_with_extra(id: i32) -> Schema {
    schema(
        id,
        json!([
            {"id": 1, "name": "id", "required": true, "type": "long"},
            {"id": 2, "name": "ts", "required": false, "type": "timestamp"},
            {"id": 3, "name": "name", "required": false, "type": "string"},
            {"id": 4, "name": "extra", "required": false, "type": "int"}
        ]),
    )
}

fn field(source_id: i32, field_id: i32, name: &str, transform: Transform) -> PartitionField {
    PartitionField {
        source_id,
        field_id,
        name: name.into(),
        transform,
    }
}

fn spec(fields: Vec<PartitionField>) -> PartitionSpec {
    PartitionSpec { spec_id: 0, fields }
}

fn order(source_id: i32, direction: SortDirection) -> SortOrder {
    SortOrder {
        order_id: 0,
        fields: vec![SortField {
            source_id,
            transform: Transform::Identity,
            direction,
            null_order: NullOrder::Last,
        }],
    }
}

#[test]
fn a_new_schema_takes_the_next_id_and_raises_last_column_id() {
    let base = table(); // schemas 0, 1; last-column-id 3
    // The id the client sent is not kept: the next one is assigned.
    let next = apply(
        &base,
        &[
            add_schema(schema_with_extra(42)),
            TableUpdate::SetCurrentSchema { schema_id: -1 },
        ],
    )
    .unwrap();
    assert_eq!(next.schemas.len(), 3);
    assert_eq!(next.current_schema_id, 2);
    assert_eq!(next.current_schema().schema_id, 2);
    assert_eq!(next.last_column_id, 4);
}

#[test]
fn an_identical_schema_is_reused() {
    let base = table();
    let mut again = base.schemas[0].clone();
    again.schema_id = 9;
    let next = apply(
        &base,
        &[
            add_schema(again),
            TableUpdate::SetCurrentSchema { schema_id: -1 },
        ],
    )
    .unwrap();
    assert_eq!(next.schemas, base.schemas);
    assert_eq!(next.current_schema_id, 0);
    // Adding it alone changes nothing at all.
    assert_eq!(
        apply(&base, &[add_schema(base.schemas[1].clone())]).unwrap(),
        base
    );
}

#[test]
fn the_deprecated_last_column_id_is_a_floor() {
    let base = table();
    let add = |last| TableUpdate::AddSchema {
        schema: schema_with_extra(0),
        last_column_id: Some(last),
    };
    assert_eq!(apply(&base, &[add(10)]).unwrap().last_column_id, 10);
    // Below the table's: ignored (as Java now ignores the field).
    assert_eq!(apply(&base, &[add(1)]).unwrap().last_column_id, 4);
}

#[test]
fn set_current_schema_needs_a_known_schema() {
    let base = table();
    let err = refused(&base, &[TableUpdate::SetCurrentSchema { schema_id: -1 }]);
    assert!(
        err.contains("no schema was added before this update"),
        "{err}"
    );
    let err = refused(&base, &[TableUpdate::SetCurrentSchema { schema_id: 5 }]);
    assert!(err.contains("schema 5 is not in the table"), "{err}");
    assert_eq!(
        apply(&base, &[TableUpdate::SetCurrentSchema { schema_id: 0 }])
            .unwrap()
            .current_schema_id,
        0
    );
}

#[test]
fn schemas_are_checked_against_the_format_version() {
    let base = table(); // v2
    let ns = schema(
        0,
        json!([{"id": 1, "name": "id", "required": true, "type": "long"},
               {"id": 4, "name": "at", "required": false, "type": "timestamp_ns"}]),
    );
    let err = refused(&base, &[add_schema(ns.clone())]);
    assert!(
        err.contains("'at' (timestamp_ns) needs format version 3"),
        "{err}"
    );
    let mut v3 = base.clone();
    v3.format_version = FormatVersion::V3;
    v3.next_row_id = Some(0);
    assert!(apply(&v3, &[add_schema(ns)]).is_ok());
    let mut bad_identifier = schema_with_extra(0);
    bad_identifier.identifier_field_ids = vec![2];
    let err = refused(&base, &[add_schema(bad_identifier)]);
    assert!(
        err.contains("identifier field 'ts' must be a required primitive"),
        "{err}"
    );
}

#[test]
fn a_new_spec_takes_the_next_id_and_raises_last_partition_id() {
    let base = table(); // specs 0, 1 (ts_day 1000); last-partition-id 1000
    let bucket = spec(vec![
        field(2, 1000, "ts_day", Transform::Day),
        field(1, 1001, "id_bucket", Transform::Bucket(8)),
    ]);
    let next = apply(
        &base,
        &[
            TableUpdate::AddSpec { spec: bucket },
            TableUpdate::SetDefaultSpec { spec_id: -1 },
        ],
    )
    .unwrap();
    assert_eq!(next.default_spec_id, 2);
    assert_eq!(next.last_partition_id, 1001);
    assert_eq!(next.default_partition_spec().unwrap().fields.len(), 2);
}

#[test]
fn a_compatible_spec_is_reused_whatever_its_field_ids() {
    let base = table();
    // spec 1 is ts_day (field 1000); the same field with another id is the same spec.
    let same = spec(vec![field(2, 1005, "ts_day", Transform::Day)]);
    let next = apply(
        &base,
        &[
            TableUpdate::AddSpec { spec: same },
            TableUpdate::SetDefaultSpec { spec_id: -1 },
        ],
    )
    .unwrap();
    assert_eq!(next, base);
    // Unpartitioned again: spec 0.
    let next = apply(
        &base,
        &[
            TableUpdate::AddSpec {
                spec: PartitionSpec::unpartitioned(),
            },
            TableUpdate::SetDefaultSpec { spec_id: -1 },
        ],
    )
    .unwrap();
    assert_eq!(next.default_spec_id, 0);
    assert_eq!(next.partition_specs.len(), 2);
}

#[test]
fn a_spec_must_bind_to_the_current_schema() {
    let base = table();
    let cases = [
        (
            spec(vec![field(9, 1001, "x", Transform::Identity)]),
            "source column 9 is not in the schema",
        ),
        (
            spec(vec![field(3, 1001, "name_day", Transform::Day)]),
            "transform day cannot apply to column 'name' of type string",
        ),
        (
            spec(vec![
                field(1, 1001, "p", Transform::Identity),
                field(3, 1002, "p", Transform::Identity),
            ]),
            "partition field name 'p' is used twice",
        ),
        (
            spec(vec![
                field(1, 1001, "a", Transform::Identity),
                field(3, 1001, "b", Transform::Identity),
            ]),
            "partition field id 1001 is used twice",
        ),
    ];
    for (spec, needle) in cases {
        let err = refused(&base, &[TableUpdate::AddSpec { spec }]);
        assert!(err.contains(needle), "{err}");
    }
    // A void field needs no source.
    let void = spec(vec![field(9, 1001, "gone", Transform::Void)]);
    assert!(apply(&base, &[TableUpdate::AddSpec { spec: void }]).is_ok());
}

#[test]
fn v1_specs_number_their_fields_from_1000() {
    let mut v1 = table();
    v1.format_version = FormatVersion::V1;
    let gap = spec(vec![field(1, 1001, "id", Transform::Identity)]);
    let err = refused(&v1, &[TableUpdate::AddSpec { spec: gap }]);
    assert!(
        err.contains("v1 specs number their fields 1000, 1001"),
        "{err}"
    );
    let sequential = spec(vec![field(1, 1000, "id", Transform::Identity)]);
    assert!(apply(&v1, &[TableUpdate::AddSpec { spec: sequential }]).is_ok());
}

#[test]
fn set_default_spec_needs_a_known_spec() {
    let base = table();
    let err = refused(&base, &[TableUpdate::SetDefaultSpec { spec_id: -1 }]);
    assert!(err.contains("no partition spec was added"), "{err}");
    let err = refused(&base, &[TableUpdate::SetDefaultSpec { spec_id: 4 }]);
    assert!(
        err.contains("partition spec 4 is not in the table"),
        "{err}"
    );
}

#[test]
fn sort_orders_reuse_ids_and_unsorted_is_zero() {
    let base = table(); // orders 0 (unsorted), 1 (id asc nulls-first)
    let desc = order(1, SortDirection::Descending);
    let next = apply(
        &base,
        &[
            TableUpdate::AddSortOrder {
                sort_order: desc.clone(),
            },
            TableUpdate::SetDefaultSortOrder { sort_order_id: -1 },
        ],
    )
    .unwrap();
    assert_eq!(next.default_sort_order_id, 2);
    assert_eq!(next.default_sort_order().unwrap().fields, desc.fields);
    // The same order again: the same id, nothing added.
    let again = apply(&next, &[TableUpdate::AddSortOrder { sort_order: desc }]).unwrap();
    assert_eq!(again, next);
    let unsorted = apply(
        &base,
        &[
            TableUpdate::AddSortOrder {
                sort_order: SortOrder {
                    order_id: 5,
                    fields: vec![],
                },
            },
            TableUpdate::SetDefaultSortOrder { sort_order_id: -1 },
        ],
    )
    .unwrap();
    assert_eq!(unsorted.default_sort_order_id, 0);
    // A table without orders gets order 1 for its first sorted one.
    let mut bare = base.clone();
    bare.sort_orders.retain(|o| o.order_id == 0);
    bare.default_sort_order_id = 0;
    let first = apply(
        &bare,
        &[TableUpdate::AddSortOrder {
            sort_order: order(3, SortDirection::Ascending),
        }],
    )
    .unwrap();
    assert_eq!(first.sort_orders.last().unwrap().order_id, 1);
}

#[test]
fn a_sort_order_must_bind_to_the_current_schema() {
    let base = table();
    let err = refused(
        &base,
        &[TableUpdate::AddSortOrder {
            sort_order: order(8, SortDirection::Ascending),
        }],
    );
    assert!(
        err.contains("source column 8 is not in the schema"),
        "{err}"
    );
    let err = refused(
        &base,
        &[TableUpdate::SetDefaultSortOrder { sort_order_id: 3 }],
    );
    assert!(err.contains("sort order 3 is not in the table"), "{err}");
    let err = refused(
        &base,
        &[TableUpdate::SetDefaultSortOrder { sort_order_id: -1 }],
    );
    assert!(err.contains("no sort order was added"), "{err}");
}

#[test]
fn the_current_schema_and_default_spec_cannot_be_removed() {
    let base = table();
    let next = apply(
        &base,
        &[
            TableUpdate::RemoveSchemas {
                schema_ids: vec![0, 77],
            },
            TableUpdate::RemovePartitionSpecs { spec_ids: vec![0] },
        ],
    )
    .unwrap();
    assert_eq!(next.schemas.len(), 1);
    assert_eq!(next.partition_specs.len(), 1);
    let err = refused(
        &base,
        &[TableUpdate::RemoveSchemas {
            schema_ids: vec![1],
        }],
    );
    assert!(err.contains("schema 1 is the current schema"), "{err}");
    let err = refused(
        &base,
        &[TableUpdate::RemovePartitionSpecs { spec_ids: vec![1] }],
    );
    assert!(
        err.contains("partition spec 1 is the default spec"),
        "{err}"
    );
}

#[test]
fn a_new_current_schema_must_keep_the_default_spec_bound() {
    let base = table(); // default spec: day(ts)
    let only_id = schema(
        0,
        json!([{"id": 1, "name": "id", "required": true, "type": "long"}]),
    );
    let updates = [
        add_schema(only_id),
        TableUpdate::SetCurrentSchema { schema_id: -1 },
    ];
    let err = refused(&base, &updates);
    assert!(
        err.contains("with the current schema 2: partition field 'ts_day': source column 2"),
        "{err}"
    );
    // With an unpartitioned default spec it applies.
    let mut unpartitioned = updates.to_vec();
    unpartitioned.push(TableUpdate::SetDefaultSpec { spec_id: 0 });
    let next = apply(&base, &unpartitioned).unwrap();
    assert_eq!((next.current_schema_id, next.default_spec_id), (2, 0));
}
