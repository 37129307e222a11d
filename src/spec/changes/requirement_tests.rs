//! Each requirement holding and failing, against the OpenAPI's descriptions of them (and
//! Java's `UpdateRequirement` where the yaml is silent).

use std::collections::BTreeMap;

use super::*;
use crate::spec::changes::test_support::table;
use crate::spec::{PartitionSpec, SnapshotRetention};

const UUID: &str = "9c12d441-03fe-4693-9a96-a0705ddf69c1";

fn fails(r: &TableRequirement, table: Option<&TableMetadata>) -> RequirementFailed {
    r.check(table).unwrap_err()
}

#[test]
fn assert_create_holds_only_without_a_table() {
    let t = table();
    assert_eq!(TableRequirement::AssertCreate.check(None), Ok(()));
    let failed = fails(&TableRequirement::AssertCreate, Some(&t));
    assert_eq!(failed.requirement, TableRequirement::AssertCreate);
    assert_eq!(
        failed.to_string(),
        "requirement assert-create failed: expected no table, found a table"
    );
}

#[test]
fn without_a_table_every_other_requirement_fails() {
    let others = [
        TableRequirement::AssertTableUuid { uuid: UUID.into() },
        TableRequirement::AssertRefSnapshotId {
            ref_name: "main".into(),
            snapshot_id: None,
        },
        TableRequirement::AssertLastAssignedFieldId {
            last_assigned_field_id: 0,
        },
        TableRequirement::AssertCurrentSchemaId {
            current_schema_id: 0,
        },
        TableRequirement::AssertLastAssignedPartitionId {
            last_assigned_partition_id: 999,
        },
        TableRequirement::AssertDefaultSpecId { default_spec_id: 0 },
        TableRequirement::AssertDefaultSortOrderId {
            default_sort_order_id: 0,
        },
    ];
    for r in others {
        let failed = fails(&r, None);
        assert_eq!(failed.found, "no table", "{r}");
    }
}

#[test]
fn the_table_uuid_must_match_ignoring_case() {
    let t = table();
    let r = |uuid: &str| TableRequirement::AssertTableUuid { uuid: uuid.into() };
    assert_eq!(r(UUID).check(Some(&t)), Ok(()));
    assert_eq!(r(&UUID.to_uppercase()).check(Some(&t)), Ok(()));
    let failed = fails(&r("2cc52516-5e73-41f2-b139-545d41a4e151"), Some(&t));
    assert_eq!(failed.found, format!("table uuid {UUID}"));
    let mut no_uuid = t.clone();
    no_uuid.table_uuid = None;
    assert_eq!(
        fails(&r(UUID), Some(&no_uuid)).found,
        "a table without a uuid"
    );
}

#[test]
fn a_ref_must_point_at_the_snapshot_or_not_exist_for_null() {
    let t = table(); // main at 3, tag t1 at 1
    let r = |name: &str, id: Option<i64>| TableRequirement::AssertRefSnapshotId {
        ref_name: name.into(),
        snapshot_id: id,
    };
    assert_eq!(r("main", Some(3)).check(Some(&t)), Ok(()));
    assert_eq!(r("t1", Some(1)).check(Some(&t)), Ok(()));
    assert_eq!(r("dev", None).check(Some(&t)), Ok(()));
    // Moved by another writer.
    let failed = fails(&r("main", Some(2)), Some(&t));
    assert_eq!(
        failed.to_string(),
        "requirement assert-ref-snapshot-id failed: expected branch or tag 'main' at \
         snapshot 2, found branch 'main' at snapshot 3"
    );
    // Created concurrently (null: must not exist).
    let failed = fails(&r("t1", None), Some(&t));
    assert_eq!(failed.expected, "no branch or tag 't1'");
    assert_eq!(failed.found, "tag 't1' at snapshot 1");
    // Missing.
    assert_eq!(
        fails(&r("dev", Some(3)), Some(&t)).found,
        "no branch or tag 'dev'"
    );
}

#[test]
fn the_id_requirements_compare_their_field() {
    let t = table(); // last-column-id 3, schema 1, last-partition-id 1000, spec 1, order 1
    let holds = [
        TableRequirement::AssertLastAssignedFieldId {
            last_assigned_field_id: 3,
        },
        TableRequirement::AssertCurrentSchemaId {
            current_schema_id: 1,
        },
        TableRequirement::AssertLastAssignedPartitionId {
            last_assigned_partition_id: 1000,
        },
        TableRequirement::AssertDefaultSpecId { default_spec_id: 1 },
        TableRequirement::AssertDefaultSortOrderId {
            default_sort_order_id: 1,
        },
    ];
    assert_eq!(TableRequirement::check_all(&holds, Some(&t)), Ok(()));
    let fail = [
        (
            TableRequirement::AssertLastAssignedFieldId {
                last_assigned_field_id: 2,
            },
            "last-column-id 2",
            "last-column-id 3",
        ),
        (
            TableRequirement::AssertCurrentSchemaId {
                current_schema_id: 0,
            },
            "current-schema-id 0",
            "current-schema-id 1",
        ),
        (
            TableRequirement::AssertLastAssignedPartitionId {
                last_assigned_partition_id: 999,
            },
            "last-partition-id 999",
            "last-partition-id 1000",
        ),
        (
            TableRequirement::AssertDefaultSpecId { default_spec_id: 0 },
            "default-spec-id 0",
            "default-spec-id 1",
        ),
        (
            TableRequirement::AssertDefaultSortOrderId {
                default_sort_order_id: 0,
            },
            "default-sort-order-id 0",
            "default-sort-order-id 1",
        ),
    ];
    for (r, expected, found) in fail {
        let failed = fails(&r, Some(&t));
        assert_eq!(
            (failed.expected.as_str(), failed.found.as_str()),
            (expected, found)
        );
        // check_all stops at the first that fails.
        let mut list = holds.to_vec();
        list.push(r.clone());
        assert_eq!(
            TableRequirement::check_all(&list, Some(&t)).unwrap_err(),
            failed
        );
    }
}

#[test]
fn a_failure_becomes_a_commit_conflict_on_the_table() {
    let failed = fails(&TableRequirement::AssertCreate, Some(&table()));
    match failed.into_conflict("db.orders") {
        Error::CommitConflict { table, reason } => {
            assert_eq!(table, "db.orders");
            assert!(reason.contains("assert-create"), "{reason}");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn requirements_for_updates_follow_java() {
    let base = table();
    let updates = [
        TableUpdate::AddSchema {
            schema: base.schemas[0].clone(),
            last_column_id: None,
        },
        TableUpdate::SetCurrentSchema { schema_id: -1 },
        TableUpdate::AddSpec {
            spec: PartitionSpec::unpartitioned(),
        },
        TableUpdate::SetDefaultSpec { spec_id: -1 },
        TableUpdate::SetDefaultSortOrder { sort_order_id: 0 },
        TableUpdate::set_ref("main", SnapshotReference::branch(2)),
        TableUpdate::set_ref("main", SnapshotReference::branch(1)),
        TableUpdate::set_ref("dev", SnapshotReference::branch(2)),
        TableUpdate::SetProperties {
            updates: BTreeMap::new(),
        },
    ];
    let expected = vec![
        TableRequirement::AssertTableUuid { uuid: UUID.into() },
        TableRequirement::AssertLastAssignedFieldId {
            last_assigned_field_id: 3,
        },
        TableRequirement::AssertCurrentSchemaId {
            current_schema_id: 1,
        },
        TableRequirement::AssertLastAssignedPartitionId {
            last_assigned_partition_id: 1000,
        },
        TableRequirement::AssertDefaultSpecId { default_spec_id: 1 },
        TableRequirement::AssertDefaultSortOrderId {
            default_sort_order_id: 1,
        },
        // Once per ref, at the base's snapshot; a new ref must not exist.
        TableRequirement::AssertRefSnapshotId {
            ref_name: "main".into(),
            snapshot_id: Some(3),
        },
        TableRequirement::AssertRefSnapshotId {
            ref_name: "dev".into(),
            snapshot_id: None,
        },
    ];
    assert_eq!(TableRequirement::for_update(&base, &updates), expected);
    // They hold on the base itself.
    assert_eq!(TableRequirement::check_all(&expected, Some(&base)), Ok(()));
    // Removing schemas or specs also pins every branch but main.
    let mut with_branch = base.clone();
    with_branch.refs.insert(
        "side".into(),
        SnapshotReference {
            snapshot_id: 2,
            retention: SnapshotRetention::Branch {
                min_snapshots_to_keep: None,
                max_snapshot_age_ms: None,
                max_ref_age_ms: None,
            },
        },
    );
    let removal = [TableUpdate::RemoveSchemas {
        schema_ids: vec![0],
    }];
    assert_eq!(
        TableRequirement::for_update(&with_branch, &removal),
        vec![
            TableRequirement::AssertTableUuid { uuid: UUID.into() },
            TableRequirement::AssertCurrentSchemaId {
                current_schema_id: 1
            },
            TableRequirement::AssertRefSnapshotId {
                ref_name: "side".into(),
                snapshot_id: Some(2)
            },
        ]
    );
}
