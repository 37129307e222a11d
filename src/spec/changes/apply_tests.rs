//! The rules every list of updates follows (timestamps, the metadata log, changes that change
//! nothing, errors naming the update) and the table-level updates: uuid, format version,
//! location, properties.

use std::collections::BTreeMap;

use super::*;
use crate::spec::changes::test_support::{NOW, apply, refused, table};

fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn updates_that_change_nothing_leave_the_metadata_as_it_was() {
    let base = table();
    let ctx = ApplyContext::new(NOW).with_previous_file("/t/metadata/v3.metadata.json");
    let same = [
        TableUpdate::SetLocation {
            location: "/t".into(),
        },
        TableUpdate::SetProperties {
            updates: BTreeMap::new(),
        },
        TableUpdate::RemoveProperties { removals: vec![] },
        TableUpdate::SetCurrentSchema { schema_id: 1 },
        TableUpdate::UpgradeFormatVersion {
            format_version: FormatVersion::V2,
        },
        TableUpdate::RemoveSnapshotRef {
            ref_name: "nope".into(),
        },
        TableUpdate::RemoveSnapshots {
            snapshot_ids: vec![99],
        },
        TableUpdate::RemoveStatistics { snapshot_id: 2 },
    ];
    assert_eq!(base.apply(&same, &ctx).unwrap(), base);
    assert_eq!(base.apply(&[], &ctx).unwrap(), base);
}

#[test]
fn a_change_advances_last_updated_and_logs_the_previous_file() {
    let base = table();
    let ctx = ApplyContext::new(NOW).with_previous_file("/t/metadata/v3.metadata.json");
    let set = TableUpdate::SetProperties {
        updates: props(&[("k", "v")]),
    };
    let next = base.apply(std::slice::from_ref(&set), &ctx).unwrap();
    assert_eq!(next.property("k"), Some("v"));
    assert_eq!(next.last_updated_ms, NOW);
    let log: Vec<(&str, i64)> = next
        .metadata_log
        .iter()
        .map(|e| (e.metadata_file.as_str(), e.timestamp_ms))
        .collect();
    // The replaced file is logged at the time it was written: the base's last-updated-ms.
    assert_eq!(
        log,
        [("/t/metadata/v3.metadata.json", base.last_updated_ms)]
    );
    // A clock behind the table's never moves last-updated-ms back.
    let early = base.apply(&[set], &ApplyContext::new(5)).unwrap();
    assert_eq!(early.last_updated_ms, base.last_updated_ms);
    // Without a previous file, nothing is logged.
    assert!(
        apply(
            &base,
            &[TableUpdate::RemoveSchemas {
                schema_ids: vec![0]
            }]
        )
        .unwrap()
        .metadata_log
        .is_empty()
    );
}

#[test]
fn the_metadata_log_is_trimmed_with_the_properties_after_the_updates() {
    let mut base = table();
    for i in 0..3 {
        base.log_previous_file(&format!("v{i}.json"), i).unwrap();
    }
    let ctx = ApplyContext::new(NOW).with_previous_file("v3.json");
    let limit = TableUpdate::SetProperties {
        updates: props(&[("write.metadata.previous-versions-max", "2")]),
    };
    let next = base.apply(&[limit], &ctx).unwrap();
    let files: Vec<&str> = next
        .metadata_log
        .iter()
        .map(|e| e.metadata_file.as_str())
        .collect();
    assert_eq!(files, ["v2.json", "v3.json"]);
}

#[test]
fn a_refused_update_is_named_by_its_position_and_action() {
    let base = table();
    let updates = [
        TableUpdate::SetLocation {
            location: "/elsewhere".into(),
        },
        TableUpdate::SetCurrentSchema { schema_id: 7 },
    ];
    let err = refused(&base, &updates);
    assert_eq!(
        err,
        "invalid argument: updates[1] (set-current-schema): schema 7 is not in the table"
    );
}

#[test]
fn properties_are_set_and_removed_as_given() {
    let base = table(); // owner = me
    let next = apply(
        &base,
        &[
            TableUpdate::SetProperties {
                updates: props(&[("a", "1"), ("owner", "you")]),
            },
            TableUpdate::RemoveProperties {
                removals: vec!["a".into(), "absent".into()],
            },
        ],
    )
    .unwrap();
    assert_eq!(next.properties, props(&[("owner", "you")]));
}

#[test]
fn the_location_and_uuid_are_set() {
    let base = table();
    let uuid = "2cc52516-5e73-41f2-b139-545d41a4e151";
    let next = apply(
        &base,
        &[
            TableUpdate::SetLocation {
                location: "s3://b/t2".into(),
            },
            TableUpdate::AssignUuid { uuid: uuid.into() },
        ],
    )
    .unwrap();
    assert_eq!(next.location, "s3://b/t2");
    assert_eq!(next.table_uuid.as_deref(), Some(uuid));
    let err = refused(
        &base,
        &[TableUpdate::AssignUuid {
            uuid: "not-a-uuid".into(),
        }],
    );
    assert!(err.contains("'not-a-uuid' is not a UUID"), "{err}");
    let err = refused(
        &base,
        &[TableUpdate::SetLocation {
            location: String::new(),
        }],
    );
    assert!(err.contains("no location"), "{err}");
}

#[test]
fn format_versions_go_up_never_down() {
    let mut v1 = table();
    v1.format_version = FormatVersion::V1;
    let v2 = apply(
        &v1,
        &[TableUpdate::UpgradeFormatVersion {
            format_version: FormatVersion::V2,
        }],
    )
    .unwrap();
    assert_eq!(
        (v2.format_version, v2.next_row_id),
        (FormatVersion::V2, None)
    );
    // Spec: "When a table is upgraded to v3, its next-row-id is initialized to 0".
    let v3 = apply(
        &v2,
        &[TableUpdate::UpgradeFormatVersion {
            format_version: FormatVersion::V3,
        }],
    )
    .unwrap();
    assert_eq!(
        (v3.format_version, v3.next_row_id),
        (FormatVersion::V3, Some(0))
    );
    // v1 straight to v3, as Java allows.
    let direct = apply(
        &v1,
        &[TableUpdate::UpgradeFormatVersion {
            format_version: FormatVersion::V3,
        }],
    )
    .unwrap();
    assert_eq!(direct.format_version, FormatVersion::V3);
    let err = refused(
        &v3,
        &[TableUpdate::UpgradeFormatVersion {
            format_version: FormatVersion::V2,
        }],
    );
    assert!(
        err.contains("a v3 table cannot be downgraded to v2"),
        "{err}"
    );
    // A v2 table needs a uuid: upgrading one without is refused unless the list assigns one.
    v1.table_uuid = None;
    let upgrade = TableUpdate::UpgradeFormatVersion {
        format_version: FormatVersion::V2,
    };
    let err = refused(&v1, std::slice::from_ref(&upgrade));
    assert!(err.contains("needs a table-uuid"), "{err}");
    let uuid = TableUpdate::AssignUuid {
        uuid: "2cc52516-5e73-41f2-b139-545d41a4e151".into(),
    };
    assert!(apply(&v1, &[upgrade, uuid]).is_ok());
}
