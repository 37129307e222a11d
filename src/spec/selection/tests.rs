use serde_json::{Value as JsonValue, json};

use super::*;

const T1: i64 = 1_700_000_000_000;
const T2: i64 = T1 + 60_000;
const T3: i64 = T2 + 60_000;

fn snapshot(id: i64, parent: Option<i64>, ts: i64, schema_id: i32) -> JsonValue {
    let mut s = json!({
        "snapshot-id": id, "timestamp-ms": ts, "sequence-number": id,
        "summary": {"operation": "append"}, "manifest-list": format!("s3://b/t/snap-{id}.avro"),
        "schema-id": schema_id
    });
    if let Some(p) = parent {
        s["parent-snapshot-id"] = json!(p);
    }
    s
}

fn log(entries: &[(i64, i64)]) -> JsonValue {
    entries
        .iter()
        .map(|(id, ts)| json!({"snapshot-id": id, "timestamp-ms": ts}))
        .collect()
}

/// Three appends 1 <- 2 <- 3 (schema 0, 0, 1), current 3, full log; a tag and a branch.
fn table() -> JsonValue {
    json!({
        "format-version": 2,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "s3://b/t",
        "last-sequence-number": 3,
        "last-updated-ms": T3,
        "last-column-id": 2,
        "current-schema-id": 1,
        "schemas": [
            {"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "x", "required": true, "type": "long"}]},
            {"type": "struct", "schema-id": 1, "fields": [
                {"id": 1, "name": "x", "required": true, "type": "long"},
                {"id": 2, "name": "y", "required": false, "type": "string"}]}
        ],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {},
        "current-snapshot-id": 3,
        "snapshots": [snapshot(1, None, T1, 0), snapshot(2, Some(1), T2, 0), snapshot(3, Some(2), T3, 1)],
        "snapshot-log": log(&[(1, T1), (2, T2), (3, T3)]),
        "refs": {
            "main": {"snapshot-id": 3, "type": "branch"},
            "v1": {"snapshot-id": 1, "type": "tag"},
            "audit": {"snapshot-id": 2, "type": "branch"}
        }
    })
}

fn parse(v: &JsonValue) -> TableMetadata {
    TableMetadata::parse(v.to_string().as_bytes()).unwrap()
}

fn as_of(m: &TableMetadata, ts: i64) -> i64 {
    m.snapshot_as_of(ts).unwrap().snapshot_id
}

#[test]
fn log_gives_the_snapshot_current_at_each_instant() {
    let m = parse(&table());
    assert_eq!(as_of(&m, T1), 1);
    assert_eq!(as_of(&m, T2 - 1), 1);
    assert_eq!(as_of(&m, T2), 2);
    assert_eq!(as_of(&m, T3 + 1_000_000), 3);
}

#[test]
fn log_is_the_truth_after_a_rollback() {
    // 3 was committed, then main rolled back to 2 at T3 + 10: 3 is not an ancestor of main,
    // yet it was current between T3 and the rollback.
    let mut v = table();
    v["current-snapshot-id"] = json!(2);
    v["refs"]["main"]["snapshot-id"] = json!(2);
    v["snapshot-log"] = log(&[(1, T1), (2, T2), (3, T3), (2, T3 + 10)]);
    let m = parse(&v);
    assert_eq!(as_of(&m, T3 + 5), 3);
    assert_eq!(as_of(&m, T3 + 10), 2);
}

#[test]
fn empty_log_falls_back_to_the_parent_chain() {
    let mut v = table();
    v["snapshot-log"] = json!([]);
    let m = parse(&v);
    assert_eq!(as_of(&m, T1 + 1), 1);
    assert_eq!(as_of(&m, T2), 2);
    assert_eq!(as_of(&m, T3 + 1), 3);
}

#[test]
fn trimmed_log_falls_back_to_the_parent_chain() {
    let mut v = table();
    v["snapshot-log"] = log(&[(3, T3)]);
    let m = parse(&v);
    assert_eq!(as_of(&m, T2 + 1), 2);
    assert_eq!(as_of(&m, T3), 3);
}

#[test]
fn parent_chain_ignores_snapshots_off_main() {
    // Snapshot 4 (newer than 2, on a side branch) must not be picked for a time after it.
    let mut v = table();
    v["snapshots"]
        .as_array_mut()
        .unwrap()
        .push(snapshot(4, Some(1), T2 + 10, 0));
    v["last-sequence-number"] = json!(4);
    v["snapshot-log"] = json!([]);
    let m = parse(&v);
    assert_eq!(as_of(&m, T2 + 20), 2);
}

#[test]
fn expired_log_entry_falls_back_to_the_parent_chain() {
    // Snapshot 1 expired: the log still names it, its child 2 lost its parent.
    let mut v = table();
    v["snapshots"].as_array_mut().unwrap().remove(0);
    v["refs"].as_object_mut().unwrap().remove("v1");
    let m = parse(&v);
    let err = m.snapshot_as_of(T1 + 1).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert_eq!(as_of(&m, T2), 2);

    // With 2 and 3 alive and the log naming an expired 2, the chain answers 2 itself.
    let mut v = table();
    v["snapshot-log"] = log(&[(1, T1), (9, T2), (3, T3)]);
    let m = parse(&v);
    assert_eq!(as_of(&m, T2 + 1), 2);
}

#[test]
fn before_the_first_snapshot_is_not_found_with_both_times() {
    let m = parse(&table());
    let err = m.snapshot_as_of(T1 - 1).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("no snapshot as of 2023-11-14T22:13:19.999Z"),
        "{text}"
    );
    assert!(
        text.contains("first snapshot committed at 2023-11-14T22:13:20.000Z"),
        "{text}"
    );
}

#[test]
fn before_an_expired_history_says_it_was_expired() {
    // Snapshot 1 expired: 2 is the oldest left and names it as its parent.
    let mut v = table();
    v["snapshots"].as_array_mut().unwrap().remove(0);
    v["snapshot-log"] = log(&[(2, T2), (3, T3)]);
    v["refs"].as_object_mut().unwrap().remove("v1");
    let m = parse(&v);
    let text = m.snapshot_as_of(T2 - 5).unwrap_err().to_string();
    assert!(
        text.contains("history before 2023-11-14T22:14:20.000Z was expired")
            && text.contains("oldest snapshot left is 2"),
        "{text}"
    );
    // The whole history intact: the first commit is named as such.
    let text = parse(&table())
        .snapshot_as_of(T1 - 5)
        .unwrap_err()
        .to_string();
    assert!(text.contains("first snapshot committed at"), "{text}");
}

#[test]
fn table_without_snapshots_has_nothing_as_of_any_time() {
    let mut v = table();
    v["current-snapshot-id"] = json!(-1);
    v["snapshots"] = json!([]);
    v["snapshot-log"] = json!([]);
    v["refs"] = json!({});
    let err = parse(&v).snapshot_as_of(T3).unwrap_err();
    assert!(
        err.to_string().contains("the table has no snapshots"),
        "{err}"
    );
}

#[test]
fn resolve_uses_the_schema_rule() {
    let m = parse(&table());
    let schema_of = |sel: SnapshotSelector| {
        let r = m.resolve(&sel).unwrap();
        (r.snapshot.map(|s| s.snapshot_id), r.schema.schema_id)
    };
    assert_eq!(schema_of(SnapshotSelector::Current), (Some(3), 1));
    assert_eq!(schema_of(SnapshotSelector::SnapshotId(1)), (Some(1), 0));
    assert_eq!(schema_of(SnapshotSelector::Ref("v1".into())), (Some(1), 0));
    assert_eq!(
        schema_of(SnapshotSelector::Ref("audit".into())),
        (Some(2), 1)
    );
    assert_eq!(
        schema_of(SnapshotSelector::Ref("main".into())),
        (Some(3), 1)
    );
    assert_eq!(schema_of(SnapshotSelector::AsOfTimestamp(T2)), (Some(2), 0));
}

#[test]
fn resolve_names_what_is_missing() {
    let m = parse(&table());
    let err = m.resolve(&SnapshotSelector::SnapshotId(42)).unwrap_err();
    assert!(err.to_string().contains("snapshot 42"), "{err}");
    let err = m
        .resolve(&SnapshotSelector::Ref("nope".into()))
        .unwrap_err();
    assert!(err.to_string().contains("ref 'nope'"), "{err}");
}

#[test]
fn ancestors_stop_at_a_cycle() {
    let mut v = table();
    v["snapshots"][0]["parent-snapshot-id"] = json!(3);
    let m = parse(&v);
    assert_eq!(m.ancestors_of_current().count(), 3);
}

#[test]
fn parses_timestamps() {
    let cases = [
        ("1700000000000", T1),
        ("-1", -1),
        ("2023-11-14T22:13:20", T1),
        ("2023-11-14 22:13:20", T1),
        ("2023-11-14 22:13:20.123", T1 + 123),
        ("2023-11-14T22:13:20.123456", T1 + 123),
        ("2023-11-14T22:13:20Z", T1),
        ("2023-11-14T22:13:20.5z", T1 + 500),
        ("2023-11-15T00:13:20+02:00", T1),
        ("2023-11-14T20:13:20.000-02:00", T1),
        ("2023-11-14T22:13", T1 - 20_000),
        ("2023-11-14", T1 - 80_000_000),
        ("  2023-11-14T22:13:20Z ", T1),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_timestamp_ms(text).unwrap(), expected, "{text}");
    }
}

#[test]
fn rejects_what_is_not_a_timestamp() {
    for text in ["", "yesterday", "2023-13-01", "2023-11-14T25:00:00", "12.5"] {
        let err = parse_timestamp_ms(text).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { what, .. } if *what == format!("'{text}'")),
            "{text}: {err}"
        );
        assert!(err.to_string().contains(&format!("'{text}'")), "{err}");
    }
}

#[test]
fn formats_timestamps_as_iso_utc() {
    assert_eq!(format_timestamp_ms(T1), "2023-11-14T22:13:20.000Z");
}
