//! Snapshots, refs, the snapshot log and statistics files: each update's rules, success and
//! failure.

use super::*;
use crate::spec::changes::TableUpdate;
use crate::spec::changes::test_support::{NOW, apply, refused, snapshot, table};
use crate::spec::metadata::TableMetadata;

const T4: i64 = 1_700_000_004_000;

fn add(s: Snapshot) -> TableUpdate {
    TableUpdate::AddSnapshot { snapshot: s }
}

fn main_at(id: i64) -> TableUpdate {
    TableUpdate::set_ref("main", SnapshotReference::branch(id))
}

fn tag(id: i64) -> SnapshotReference {
    SnapshotReference {
        snapshot_id: id,
        retention: SnapshotRetention::Tag {
            max_ref_age_ms: Some(1000),
        },
    }
}

fn log(m: &TableMetadata) -> Vec<(i64, i64)> {
    m.snapshot_log
        .iter()
        .map(|e| (e.snapshot_id, e.timestamp_ms))
        .collect()
}

#[test]
fn an_appended_snapshot_becomes_current_at_its_own_timestamp() {
    let base = table(); // main at 3, last-sequence-number 3
    let next = apply(&base, &[add(snapshot(4, Some(3), 4, T4)), main_at(4)]).unwrap();
    assert_eq!(next.current_snapshot_id, Some(4));
    assert_eq!(next.refs["main"], SnapshotReference::branch(4));
    assert_eq!(next.last_sequence_number, 4);
    assert_eq!(log(&next).last(), Some(&(4, T4)));
    // last-updated-ms: the later of now and the snapshot's timestamp.
    assert_eq!(next.last_updated_ms, NOW);
    let later = NOW + 5;
    let next = apply(&base, &[add(snapshot(4, Some(3), 4, later)), main_at(4)]).unwrap();
    assert_eq!(next.last_updated_ms, later);
}

#[test]
fn a_snapshot_id_is_new_and_its_sequence_number_above_the_last() {
    let base = table();
    let err = refused(&base, &[add(snapshot(2, Some(3), 4, T4))]);
    assert!(
        err.contains("snapshot id 2 is already in the table"),
        "{err}"
    );
    let err = refused(&base, &[add(snapshot(4, Some(3), 3, T4))]);
    assert!(
        err.contains("sequence number 3, not above the table's last-sequence-number 3"),
        "{err}"
    );
    // Java allows a snapshot without a parent to reuse a sequence number.
    let orphan = apply(&base, &[add(snapshot(4, None, 2, T4))]).unwrap();
    assert_eq!(orphan.last_sequence_number, 3);
    // v1 has no sequence numbers to check.
    let mut v1 = base.clone();
    v1.format_version = crate::spec::FormatVersion::V1;
    assert!(apply(&v1, &[add(snapshot(4, Some(3), 0, T4))]).is_ok());
}

#[test]
fn v3_snapshots_carry_row_ids_at_or_after_next_row_id() {
    let mut v3 = table();
    v3.format_version = crate::spec::FormatVersion::V3;
    v3.next_row_id = Some(100);
    let with_rows = |first: Option<i64>, added: Option<i64>| {
        let mut s = snapshot(4, Some(3), 4, T4);
        s.first_row_id = first;
        s.added_rows = added;
        s
    };
    let next = apply(&v3, &[add(with_rows(Some(100), Some(30)))]).unwrap();
    assert_eq!(next.next_row_id, Some(130));
    // A gap is allowed; next-row-id then follows the snapshot's range.
    let next = apply(&v3, &[add(with_rows(Some(150), Some(30)))]).unwrap();
    assert_eq!(next.next_row_id, Some(180));
    let err = refused(&v3, &[add(with_rows(Some(99), Some(1)))]);
    assert!(
        err.contains("first-row-id 99, behind the table's next-row-id 100"),
        "{err}"
    );
    let err = refused(&v3, &[add(with_rows(None, Some(1)))]);
    assert!(err.contains("has no first-row-id"), "{err}");
}

#[test]
fn a_snapshot_needs_a_schema_spec_and_sort_order() {
    let updates = [add(snapshot(1, None, 1, T4))];
    let err = TableMetadata::from_updates(&updates, &crate::spec::ApplyContext::new(NOW))
        .unwrap_err()
        .to_string();
    assert!(err.contains("updates[0] (add-snapshot)"), "{err}");
    assert!(
        err.contains("before a schema, a partition spec and a sort order"),
        "{err}"
    );
}

#[test]
fn setting_main_to_an_older_snapshot_logs_it_at_the_time_of_the_change() {
    let base = table();
    let next = apply(&base, &[main_at(1)]).unwrap();
    assert_eq!(next.current_snapshot_id, Some(1));
    assert_eq!(log(&next).last(), Some(&(1, NOW)));
    // Setting the same ref again changes nothing.
    assert_eq!(apply(&next, &[main_at(1)]).unwrap(), next);
}

#[test]
fn refs_keep_their_retention_and_need_their_snapshot() {
    let base = table();
    let next = apply(&base, &[TableUpdate::set_ref("v2", tag(2))]).unwrap();
    assert_eq!(next.refs["v2"], tag(2));
    assert_eq!(
        (next.current_snapshot_id, next.snapshot_log.len()),
        (Some(3), 3)
    );
    let err = refused(&base, &[TableUpdate::set_ref("v9", tag(9))]);
    assert!(
        err.contains("snapshot 9 (for ref 'v9') is not in the table"),
        "{err}"
    );
    let err = refused(&base, &[TableUpdate::set_ref("main", tag(2))]);
    assert!(err.contains("'main' must be a branch"), "{err}");
}

#[test]
fn intermediate_snapshots_of_one_list_are_left_out_of_the_log() {
    let base = table();
    let next = apply(
        &base,
        &[
            add(snapshot(4, Some(3), 4, T4)),
            main_at(4),
            add(snapshot(5, Some(4), 5, T4 + 1)),
            main_at(5),
        ],
    )
    .unwrap();
    let ids: Vec<i64> = log(&next).iter().map(|(id, _)| *id).collect();
    // 4 was current only inside this commit: no reader ever saw it (Java's rule).
    assert_eq!(ids, [1, 2, 3, 5]);
    assert_eq!(next.snapshots.len(), 5);
}

#[test]
fn removing_snapshots_drops_their_refs_statistics_and_older_log() {
    let base = table(); // log 1, 2, 3; tag t1 at 1; statistics for 1
    let next = apply(
        &base,
        &[TableUpdate::RemoveSnapshots {
            snapshot_ids: vec![1, 42],
        }],
    )
    .unwrap();
    let ids: Vec<i64> = next.snapshots.iter().map(|s| s.snapshot_id).collect();
    assert_eq!(ids, [2, 3]);
    assert!(!next.refs.contains_key("t1"));
    assert!(next.statistics.is_empty());
    assert_eq!(log(&next).iter().map(|e| e.0).collect::<Vec<_>>(), [2, 3]);
    // A snapshot removed from the middle of the log cuts everything before it: the log must
    // not claim 1 was current until 3 replaced it.
    let next = apply(
        &base,
        &[TableUpdate::RemoveSnapshots {
            snapshot_ids: vec![2],
        }],
    )
    .unwrap();
    assert_eq!(log(&next).iter().map(|e| e.0).collect::<Vec<_>>(), [3]);
    // Removing the current snapshot removes main and clears the current snapshot.
    let next = apply(
        &base,
        &[TableUpdate::RemoveSnapshots {
            snapshot_ids: vec![3],
        }],
    )
    .unwrap();
    assert_eq!(next.current_snapshot_id, None);
    assert!(!next.refs.contains_key("main"));
}

#[test]
fn removing_main_clears_the_current_snapshot() {
    let base = table();
    let next = apply(
        &base,
        &[TableUpdate::RemoveSnapshotRef {
            ref_name: "main".into(),
        }],
    )
    .unwrap();
    assert_eq!((next.current_snapshot_id, next.refs.len()), (None, 1));
    let next = apply(
        &base,
        &[TableUpdate::RemoveSnapshotRef {
            ref_name: "t1".into(),
        }],
    )
    .unwrap();
    assert_eq!(next.current_snapshot_id, Some(3));
    assert!(!next.refs.contains_key("t1"));
}

#[test]
fn statistics_are_set_and_removed_by_snapshot() {
    let base = table(); // statistics for 1
    let file = |snapshot_id: i64, path: &str| StatisticsFile {
        snapshot_id,
        statistics_path: path.into(),
        file_size_in_bytes: 1,
        file_footer_size_in_bytes: 1,
        key_metadata: None,
        blob_metadata: vec![],
    };
    let next = apply(
        &base,
        &[
            TableUpdate::SetStatistics {
                statistics: file(1, "/t/new.puffin"),
            },
            TableUpdate::SetStatistics {
                statistics: file(3, "/t/s3.puffin"),
            },
        ],
    )
    .unwrap();
    let paths: Vec<(i64, &str)> = next
        .statistics
        .iter()
        .map(|s| (s.snapshot_id, s.statistics_path.as_str()))
        .collect();
    assert_eq!(paths, [(1, "/t/new.puffin"), (3, "/t/s3.puffin")]);
    let next = apply(&next, &[TableUpdate::RemoveStatistics { snapshot_id: 1 }]).unwrap();
    assert_eq!(next.statistics.len(), 1);
    let partition = PartitionStatisticsFile {
        snapshot_id: 3,
        statistics_path: "/t/p3.parquet".into(),
        file_size_in_bytes: 7,
    };
    let next = apply(
        &base,
        &[TableUpdate::SetPartitionStatistics {
            partition_statistics: partition.clone(),
        }],
    )
    .unwrap();
    assert_eq!(next.partition_statistics, [partition]);
    let next = apply(
        &next,
        &[TableUpdate::RemovePartitionStatistics { snapshot_id: 3 }],
    )
    .unwrap();
    assert!(next.partition_statistics.is_empty());
}
