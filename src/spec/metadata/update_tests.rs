//! Tests of committing a snapshot to metadata.

use super::*;
use crate::spec::snapshot::{Operation, Summary};

fn base(version: u8, properties: &str) -> TableMetadata {
    let json = crate::catalog::test_support::metadata_json_with("/wh/t", version, properties);
    TableMetadata::parse(json.as_bytes()).unwrap()
}

fn snapshot(id: i64, parent: Option<i64>, sequence: i64, at: i64) -> Snapshot {
    Snapshot {
        snapshot_id: id,
        parent_snapshot_id: parent,
        sequence_number: sequence,
        timestamp_ms: at,
        manifest_list: Some(format!("/wh/t/metadata/snap-{id}.avro")),
        manifests: None,
        summary: Some(Summary::new(Operation::Append, Default::default())),
        schema_id: Some(0),
        first_row_id: None,
        added_rows: Some(10),
        key_id: None,
    }
}

#[test]
fn appends_to_main_advance_everything_together() {
    let m0 = base(2, "");
    let m1 = m0
        .with_snapshot(
            snapshot(11, None, 1, 1_700_000_001_000),
            "main",
            Some("v1.json"),
        )
        .unwrap();
    let m2 = m1
        .with_snapshot(
            snapshot(22, Some(11), 2, 1_700_000_002_000),
            "main",
            Some("v2.json"),
        )
        .unwrap();
    assert_eq!(m2.current_snapshot_id, Some(22));
    assert_eq!(m2.branch_head("main"), Some(22));
    assert_eq!(m2.last_sequence_number, 2);
    assert_eq!(m2.next_sequence_number(), 3);
    assert_eq!(m2.last_updated_ms, 1_700_000_002_000);
    let log: Vec<i64> = m2.snapshot_log.iter().map(|e| e.snapshot_id).collect();
    assert_eq!(log, [11, 22]);
    let files: Vec<(&str, i64)> = m2
        .metadata_log
        .iter()
        .map(|e| (e.metadata_file.as_str(), e.timestamp_ms))
        .collect();
    // Each previous file is logged with the time it was written (its last-updated-ms).
    assert_eq!(
        files,
        [
            ("v1.json", 1_700_000_000_000),
            ("v2.json", 1_700_000_001_000)
        ]
    );
    // It survives a round trip through the metadata file format.
    let reparsed = TableMetadata::parse(m2.to_json().to_string().as_bytes()).unwrap();
    assert_eq!(reparsed.current_snapshot_id, Some(22));
    assert_eq!(reparsed.snapshots.len(), 2);
}

#[test]
fn a_stale_parent_or_sequence_number_or_reused_id_is_refused() {
    let m1 = base(2, "")
        .with_snapshot(snapshot(11, None, 1, 1), "main", None)
        .unwrap();
    let stale = m1.with_snapshot(snapshot(22, None, 2, 2), "main", None);
    assert!(
        stale
            .unwrap_err()
            .to_string()
            .contains("branch 'main' is at Some(11)")
    );
    let sequence = m1.with_snapshot(snapshot(22, Some(11), 5, 2), "main", None);
    assert!(
        sequence
            .unwrap_err()
            .to_string()
            .contains("the table's next is 2")
    );
    let reused = m1.with_snapshot(snapshot(11, Some(11), 2, 2), "main", None);
    assert!(
        reused
            .unwrap_err()
            .to_string()
            .contains("already in the table")
    );
}

#[test]
fn other_branches_move_alone_and_tags_take_no_commits() {
    let m1 = base(2, "")
        .with_snapshot(snapshot(11, None, 1, 1), "main", None)
        .unwrap();
    let dev = m1
        .with_snapshot(snapshot(22, None, 2, 2), "dev", None)
        .unwrap();
    assert_eq!(dev.current_snapshot_id, Some(11));
    assert_eq!(dev.branch_head("dev"), Some(22));
    assert_eq!(dev.snapshot_log.len(), 1);
    let mut tagged = dev.clone();
    tagged.refs.insert(
        "v1".into(),
        SnapshotReference {
            snapshot_id: 11,
            retention: SnapshotRetention::Tag {
                max_ref_age_ms: None,
            },
        },
    );
    let err = tagged
        .with_snapshot(snapshot(33, Some(11), 3, 3), "v1", None)
        .unwrap_err();
    assert!(err.to_string().contains("ref 'v1': is a tag"), "{err}");
}

#[test]
fn the_metadata_log_keeps_previous_versions_max_entries() {
    let mut m = base(2, r#""write.metadata.previous-versions-max": "2""#);
    let mut parent = None;
    for i in 1..=5 {
        let s = snapshot(i, parent, i, i);
        m = m
            .with_snapshot(s, "main", Some(&format!("v{i}.json")))
            .unwrap();
        parent = Some(i);
    }
    let files: Vec<&str> = m
        .metadata_log
        .iter()
        .map(|e| e.metadata_file.as_str())
        .collect();
    assert_eq!(files, ["v4.json", "v5.json"]);
}

#[test]
fn v1_has_no_sequence_numbers_and_v3_assigns_row_ids() {
    let v1 = base(1, "")
        .with_snapshot(snapshot(11, None, 0, 1), "main", None)
        .unwrap();
    assert_eq!((v1.last_sequence_number, v1.next_sequence_number()), (0, 0));
    let v3 = base(3, "")
        .with_snapshot(snapshot(11, None, 1, 1), "main", None)
        .unwrap()
        .with_snapshot(snapshot(22, Some(11), 2, 2), "main", None)
        .unwrap();
    let first_ids: Vec<Option<i64>> = v3.snapshots.iter().map(|s| s.first_row_id).collect();
    assert_eq!(first_ids, [Some(0), Some(10)]);
    assert_eq!(v3.next_row_id, Some(20));
}

#[test]
fn new_snapshot_ids_are_positive_and_distinct() {
    let ids: std::collections::HashSet<i64> = (0..1000).map(|_| new_snapshot_id()).collect();
    assert_eq!(ids.len(), 1000);
    assert!(ids.iter().all(|id| *id > 0));
}
