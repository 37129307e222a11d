//! Ref changes, rollback, fast-forward and expiration as metadata changes.

use serde_json::{Value, json};

use super::*;
use crate::catalog::test_support::metadata_json_with;
use crate::spec::SnapshotLogEntry;
use crate::spec::retention::{RetentionDefaults, retention};

const NOW: i64 = 1_800_000_000_000;
const DAY: i64 = 86_400_000;

/// main: 1 <- 2 <- 3 (current), snapshots 10, 5 and 1 days old; branch `side` at 4 (child of
/// 2); tag `t1` at 1; a statistics file for 1; the snapshot log 1, 2, 3.
fn table() -> TableMetadata {
    let snapshot = |id: i64, parent: Option<i64>, age: i64| {
        let mut s = json!({"snapshot-id": id, "sequence-number": id,
            "timestamp-ms": NOW - age * DAY, "manifest-list": format!("/t/snap-{id}.avro"),
            "summary": {"operation": "append"}});
        if let Some(p) = parent {
            s["parent-snapshot-id"] = json!(p);
        }
        s
    };
    let mut v: Value = serde_json::from_str(&metadata_json_with("/t", 2, "")).unwrap();
    v["snapshots"] = json!([
        snapshot(1, None, 10),
        snapshot(2, Some(1), 5),
        snapshot(3, Some(2), 1),
        snapshot(4, Some(2), 4)
    ]);
    v["current-snapshot-id"] = json!(3);
    v["last-sequence-number"] = json!(4);
    v["refs"] = json!({
        "main": {"snapshot-id": 3, "type": "branch"},
        "side": {"snapshot-id": 4, "type": "branch"},
        "t1": {"snapshot-id": 1, "type": "tag"}
    });
    v["snapshot-log"] = json!([
        {"snapshot-id": 1, "timestamp-ms": NOW - 10 * DAY},
        {"snapshot-id": 2, "timestamp-ms": NOW - 5 * DAY},
        {"snapshot-id": 3, "timestamp-ms": NOW - DAY}
    ]);
    v["statistics"] = json!([{"snapshot-id": 1, "statistics-path": "/t/s1.puffin",
        "file-size-in-bytes": 10, "file-footer-size-in-bytes": 5, "blob-metadata": []}]);
    TableMetadata::parse(v.to_string().as_bytes()).unwrap()
}

fn tag(id: i64) -> SnapshotReference {
    SnapshotReference {
        snapshot_id: id,
        retention: SnapshotRetention::Tag {
            max_ref_age_ms: None,
        },
    }
}

#[test]
fn refs_are_set_and_dropped_but_main_stays_a_branch() {
    let m = table();
    let next = m.with_ref("v2", tag(2), NOW).unwrap();
    assert_eq!(next.refs["v2"].snapshot_id, 2);
    assert_eq!(next.current_snapshot_id, Some(3));
    assert_eq!(next.snapshot_log.len(), 3);
    let err = m.with_ref("v9", tag(9), NOW).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(m.with_ref("main", tag(2), NOW).is_err());
    let next = next.without_ref("v2", NOW).unwrap();
    assert!(!next.refs.contains_key("v2"));
    assert!(
        m.without_ref("main", NOW)
            .unwrap_err()
            .to_string()
            .contains("main")
    );
    assert!(matches!(
        m.without_ref("nope", NOW).unwrap_err(),
        Error::NotFound { .. }
    ));
}

#[test]
fn rollback_goes_to_ancestors_and_fast_forward_to_descendants() {
    let m = table();
    // main 3 -> its ancestor 1: current, with a new log entry.
    let back = m.with_branch_moved("main", 1, true, NOW).unwrap();
    assert_eq!(back.current_snapshot_id, Some(1));
    assert_eq!(back.refs["main"].snapshot_id, 1);
    let last = back.snapshot_log.last().unwrap();
    assert_eq!((last.snapshot_id, last.timestamp_ms), (1, NOW));
    // 4 is on another line of history: neither a rollback target nor a fast-forward one.
    let err = m.with_branch_moved("main", 4, true, NOW).unwrap_err();
    assert!(err.to_string().contains("not an ancestor"), "{err}");
    assert!(m.with_branch_moved("main", 4, false, NOW).is_err());
    // Back at 1, main fast-forwards to 3 (1 is its ancestor) and to 4.
    let forward = back.with_branch_moved("main", 3, false, NOW).unwrap();
    assert_eq!(forward.current_snapshot_id, Some(3));
    assert!(back.with_branch_moved("main", 4, false, NOW).is_ok());
    // Other branches move without touching the current snapshot; tags do not move.
    let side = m.with_branch_moved("side", 2, true, NOW).unwrap();
    assert_eq!(
        (side.refs["side"].snapshot_id, side.current_snapshot_id),
        (2, Some(3))
    );
    assert!(m.with_branch_moved("t1", 1, true, NOW).is_err());
}

#[test]
fn expiration_removes_snapshots_their_statistics_and_the_log_before_them() {
    let mut m = table();
    m.refs.remove("t1");
    // Defaults (5 days, keep 1): main keeps 3 and 2 (exactly 5 days: not older); side keeps
    // 4; 1 (10 days) expires.
    let r = retention(&m, &RetentionDefaults::of(&m, NOW).unwrap()).unwrap();
    assert_eq!(r.expired, [1]);
    let next = m.with_expired(&r, NOW);
    let ids: Vec<i64> = next.snapshots.iter().map(|s| s.snapshot_id).collect();
    assert_eq!(ids, [2, 3, 4]);
    assert!(next.statistics.is_empty());
    // The log entry of 1 goes, and with it everything before it (nothing here).
    let log: Vec<i64> = next.snapshot_log.iter().map(|e| e.snapshot_id).collect();
    assert_eq!(log, [2, 3]);
    // A removed snapshot in the middle of the log cuts everything before it.
    let mut m2 = m.clone();
    m2.snapshot_log.insert(
        1,
        SnapshotLogEntry {
            snapshot_id: 1,
            timestamp_ms: NOW - 6 * DAY,
        },
    );
    let next = m2.with_expired(&r, NOW);
    let log: Vec<i64> = next.snapshot_log.iter().map(|e| e.snapshot_id).collect();
    assert_eq!(log, [2, 3]);
}
