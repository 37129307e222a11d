use serde_json::{Value as JsonValue, json};

use super::*;

const TABLE: &str = "s3://b/t/metadata/v9.metadata.json";

fn snapshot(id: i64, parent: Option<i64>, operation: &str) -> JsonValue {
    let mut s = json!({
        "snapshot-id": id, "timestamp-ms": 1_700_000_000_000_i64 + id * 1000,
        "sequence-number": id, "summary": {"operation": operation},
        "manifest-list": format!("s3://b/t/metadata/snap-{id}.avro")
    });
    if let Some(p) = parent {
        s["parent-snapshot-id"] = json!(p);
    }
    s
}

/// main: 1 <- 2 <- 3 <- 4 (appends) <- 5 (overwrite) <- 6 (append); branch `side`: 2 <- 7;
/// tag `v1` at 1.
fn metadata() -> TableMetadata {
    let v = json!({
        "format-version": 2,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "s3://b/t",
        "last-sequence-number": 7,
        "last-updated-ms": 1_700_000_010_000_i64,
        "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "x", "required": true, "type": "long"}]}],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {},
        "current-snapshot-id": 6,
        "snapshots": [
            snapshot(1, None, "append"), snapshot(2, Some(1), "append"),
            snapshot(3, Some(2), "append"), snapshot(4, Some(3), "append"),
            snapshot(5, Some(4), "overwrite"), snapshot(6, Some(5), "append"),
            snapshot(7, Some(2), "append")
        ],
        "refs": {
            "main": {"snapshot-id": 6, "type": "branch"},
            "side": {"snapshot-id": 7, "type": "branch"},
            "v1": {"snapshot-id": 1, "type": "tag"}
        }
    });
    TableMetadata::parse(v.to_string().as_bytes()).unwrap()
}

fn range(from: i64, to: SnapshotSelector) -> Result<IncrementalRange> {
    IncrementalRange::resolve(&metadata(), TABLE, from, &to)
}

fn ids(from: i64, to: SnapshotSelector) -> Vec<i64> {
    range(from, to).unwrap().snapshot_ids
}

/// The text of the [`Error::InvalidArgument`] of the range, which is about the read of TABLE.
fn invalid(from: i64, to: SnapshotSelector) -> String {
    match range(from, to) {
        Err(e @ Error::InvalidArgument { .. }) => {
            let Error::InvalidArgument { what, .. } = &e else {
                unreachable!()
            };
            assert_eq!(what, &format!("incremental read of table {TABLE}"));
            e.to_string()
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

fn not_found(from: i64, to: SnapshotSelector) -> String {
    match range(from, to) {
        Err(e @ Error::NotFound { .. }) => e.to_string(),
        other => panic!("expected NotFound, got {other:?}"),
    }
}

#[test]
fn covers_the_snapshots_after_from_up_to_to_oldest_first() {
    assert_eq!(ids(1, SnapshotSelector::SnapshotId(4)), vec![2, 3, 4]);
    assert_eq!(ids(3, SnapshotSelector::SnapshotId(4)), vec![4]);
    let r = range(1, SnapshotSelector::SnapshotId(3)).unwrap();
    assert_eq!((r.from_exclusive, r.to), (1, 3));
}

#[test]
fn from_equal_to_is_empty() {
    assert!(ids(4, SnapshotSelector::SnapshotId(4)).is_empty());
    assert!(ids(6, SnapshotSelector::Current).is_empty());
}

#[test]
fn current_and_branches_name_their_snapshot() {
    assert_eq!(ids(5, SnapshotSelector::Current), vec![6]);
    assert_eq!(ids(5, SnapshotSelector::Ref("main".into())), vec![6]);
    assert_eq!(ids(1, SnapshotSelector::Ref("side".into())), vec![2, 7]);
}

#[test]
fn a_timestamp_names_the_snapshot_current_then() {
    // No snapshot-log: the parent chain of main gives 3 at its commit time.
    let at_3 = 1_700_000_003_000_i64;
    assert_eq!(
        ids(1, SnapshotSelector::AsOfTimestamp(at_3 + 1)),
        vec![2, 3]
    );
}

#[test]
fn a_non_append_snapshot_in_between_is_named() {
    let text = invalid(3, SnapshotSelector::Current);
    assert!(
        text.contains(
            "snapshot 5 is an overwrite; only append snapshots can be read incrementally"
        ),
        "{text}"
    );
    assert!(text.contains(TABLE), "{text}");
    // Starting after the overwrite is fine.
    assert_eq!(ids(5, SnapshotSelector::SnapshotId(6)), vec![6]);
}

#[test]
fn a_snapshot_without_summary_is_refused() {
    let mut m = metadata();
    m.snapshots[2].summary = None;
    let err =
        IncrementalRange::resolve(&m, TABLE, 2, &SnapshotSelector::SnapshotId(3)).unwrap_err();
    assert!(
        err.to_string().contains("snapshot 3 has no operation"),
        "{err}"
    );
}

#[test]
fn a_delete_is_named_with_its_article() {
    let mut m = metadata();
    m.snapshots[4].summary = Some(crate::spec::Summary::new(
        Operation::Delete,
        Default::default(),
    ));
    let err = IncrementalRange::resolve(&m, TABLE, 4, &SnapshotSelector::Current).unwrap_err();
    assert!(err.to_string().contains("snapshot 5 is a delete;"), "{err}");
}

#[test]
fn from_must_be_an_ancestor_of_to() {
    let text = invalid(7, SnapshotSelector::Current);
    assert!(
        text.contains("snapshot 7 is not an ancestor of snapshot 6"),
        "{text}"
    );
    assert!(text.contains(TABLE), "{text}");
    // Backwards: the newer snapshot as `from`.
    let text = invalid(4, SnapshotSelector::SnapshotId(2));
    assert!(
        text.contains("snapshot 4 is not an ancestor of snapshot 2"),
        "{text}"
    );
}

#[test]
fn a_tag_is_refused_where_a_branch_is_needed() {
    let text = invalid(1, SnapshotSelector::Ref("v1".into()));
    assert!(
        text.contains("tag 'v1' cannot be used where a branch is needed"),
        "{text}"
    );
    assert!(text.contains(TABLE), "{text}");
}

#[test]
fn unknown_snapshots_and_refs_are_not_found() {
    let text = not_found(1, SnapshotSelector::SnapshotId(42));
    assert!(
        text.contains("snapshot 42") && text.contains(TABLE),
        "{text}"
    );
    let text = not_found(42, SnapshotSelector::Current);
    assert!(
        text.contains("snapshot 42") && text.contains(TABLE),
        "{text}"
    );
    let text = not_found(1, SnapshotSelector::Ref("nope".into()));
    assert!(
        text.contains("ref 'nope'") && text.contains(TABLE),
        "{text}"
    );
    let text = not_found(1, SnapshotSelector::AsOfTimestamp(0));
    assert!(
        text.contains("no snapshot as of") && text.contains(TABLE),
        "{text}"
    );
}
