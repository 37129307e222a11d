//! Building a table from updates: a create transaction's list, what it must contain, and
//! every fixture table's metadata rebuilt from its [`TableMetadata::creation_updates`].

use serde_json::json;

use super::*;
use crate::spec::changes::test_support::{NOW, schema, table};
use crate::spec::metadata::validate_tests::fixture_metadata_files;
use crate::spec::{ApplyContext, FormatVersion, PartitionSpec, SortOrder};

const UUID: &str = "2cc52516-5e73-41f2-b139-545d41a4e151";

/// What a create transaction sends (Java's `TableMetadata.newTableMetadata` changes).
fn create_updates() -> Vec<TableUpdate> {
    vec![
        TableUpdate::AssignUuid { uuid: UUID.into() },
        TableUpdate::UpgradeFormatVersion {
            format_version: FormatVersion::V2,
        },
        TableUpdate::AddSchema {
            schema: schema(
                0,
                json!([{"id": 1, "name": "id", "required": true, "type": "long"}]),
            ),
            last_column_id: Some(1),
        },
        TableUpdate::SetCurrentSchema { schema_id: -1 },
        TableUpdate::AddSpec {
            spec: PartitionSpec::unpartitioned(),
        },
        TableUpdate::SetDefaultSpec { spec_id: -1 },
        TableUpdate::AddSortOrder {
            sort_order: SortOrder::unsorted(),
        },
        TableUpdate::SetDefaultSortOrder { sort_order_id: -1 },
        TableUpdate::SetLocation {
            location: "s3://b/db/t".into(),
        },
        TableUpdate::SetProperties {
            updates: [("owner".to_string(), "me".to_string())].into(),
        },
    ]
}

#[test]
fn a_create_transaction_builds_a_new_table() {
    let ctx = ApplyContext::new(NOW).with_previous_file("ignored.json");
    let m = TableMetadata::from_updates(&create_updates(), &ctx).unwrap();
    assert_eq!(m.format_version, FormatVersion::V2);
    assert_eq!(m.table_uuid.as_deref(), Some(UUID));
    assert_eq!(m.location, "s3://b/db/t");
    assert_eq!((m.current_schema_id, m.last_column_id), (0, 1));
    // Java: an unpartitioned spec's last assigned field id is 999.
    assert_eq!((m.default_spec_id, m.last_partition_id), (0, 999));
    assert_eq!(m.default_sort_order_id, 0);
    assert_eq!(m.property("owner"), Some("me"));
    assert_eq!((m.last_sequence_number, m.last_updated_ms), (0, NOW));
    assert!(m.metadata_log.is_empty() && m.snapshots.is_empty());
    // It is a valid metadata file.
    let reparsed = TableMetadata::parse(m.to_json().to_string().as_bytes()).unwrap();
    assert_eq!(reparsed, m);
}

#[test]
fn a_new_table_starts_at_the_version_it_asks_for() {
    let mut updates = create_updates();
    updates[1] = TableUpdate::UpgradeFormatVersion {
        format_version: FormatVersion::V1,
    };
    let m = TableMetadata::from_updates(&updates, &ApplyContext::new(NOW)).unwrap();
    assert_eq!(m.format_version, FormatVersion::V1);
    updates.remove(1);
    let m = TableMetadata::from_updates(&updates, &ApplyContext::new(NOW)).unwrap();
    assert_eq!(m.format_version, FormatVersion::V2, "Java's default");
    updates.insert(
        1,
        TableUpdate::UpgradeFormatVersion {
            format_version: FormatVersion::V3,
        },
    );
    let m = TableMetadata::from_updates(&updates, &ApplyContext::new(NOW)).unwrap();
    assert_eq!(
        (m.format_version, m.next_row_id),
        (FormatVersion::V3, Some(0))
    );
}

#[test]
fn a_new_table_needs_every_part() {
    let drop = |action: &str| -> String {
        let updates: Vec<TableUpdate> = create_updates()
            .into_iter()
            .filter(|u| u.action() != action)
            .collect();
        TableMetadata::from_updates(&updates, &ApplyContext::new(NOW))
            .unwrap_err()
            .to_string()
    };
    assert!(drop("assign-uuid").contains("needs a table-uuid"));
    assert!(drop("set-location").contains("no location"));
    assert!(drop("add-schema").contains("updates[2] (set-current-schema)"));
    assert!(drop("set-current-schema").contains("no current schema to bind the spec to"));
    assert!(drop("add-spec").contains("updates[4] (set-default-spec)"));
    assert!(drop("set-default-sort-order").contains("default-sort-order-id -1"));
}

#[test]
fn creation_updates_rebuild_the_test_table() {
    let m = table();
    let updates = m.creation_updates();
    let actions: Vec<&str> = updates.iter().map(TableUpdate::action).collect();
    assert_eq!(
        actions,
        [
            "assign-uuid",
            "upgrade-format-version",
            "add-schema",
            "add-schema",
            "set-current-schema",
            "add-spec",
            "add-spec",
            "set-default-spec",
            "add-sort-order",
            "add-sort-order",
            "set-default-sort-order",
            "set-location",
            "set-properties",
            "add-snapshot",
            "add-snapshot",
            "add-snapshot",
            "set-snapshot-ref",
            "set-snapshot-ref",
            "set-statistics",
        ]
    );
    assert_eq!(updates[4], TableUpdate::SetCurrentSchema { schema_id: -1 });
    let rebuilt = TableMetadata::from_updates(&updates, &ApplyContext::new(NOW)).unwrap();
    assert_eq!(comparable(rebuilt), comparable(m));
}

/// `m` without what updates cannot carry (see [`TableMetadata::creation_updates`]).
fn comparable(mut m: TableMetadata) -> TableMetadata {
    m.last_updated_ms = 0;
    m.metadata_log.clear();
    m.snapshot_log.clear();
    m.unknown_fields.clear();
    m
}

#[test]
fn every_fixture_table_is_rebuilt_from_its_creation_updates() {
    let files = fixture_metadata_files();
    assert!(files.len() > 100, "{} metadata files", files.len());
    let mut problems = Vec::new();
    let mut rebuilt_count = 0;
    for file in &files {
        let Ok(m) = TableMetadata::parse_file(&std::fs::read(file).unwrap(), u64::MAX) else {
            continue; // the corrupt fixtures
        };
        rebuilt_count += 1;
        let name = file.display();
        match TableMetadata::from_updates(&m.creation_updates(), &ApplyContext::new(NOW)) {
            Err(e) => problems.push(format!("{name}: {e}")),
            Ok(rebuilt) if comparable(rebuilt.clone()) != comparable(m.clone()) => {
                problems.push(format!("{name}: rebuilt differently:\n{rebuilt:?}\n{m:?}"));
            }
            Ok(_) => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    eprintln!(
        "{rebuilt_count} of {} fixture metadata files rebuilt",
        files.len()
    );
}
