//! Snapshot management on real tables: a directory table with one-row appends, managed, then
//! read back; expiration checked against reachability and the queries of kept snapshots.

use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::prelude::SessionContext;

use super::*;
use crate::provider::IcebergTableProvider;
use crate::spec::SnapshotRetention;
use crate::spec::{NestedField, PrimitiveType, Schema, SnapshotSelector};
use crate::to_arrow::schema_to_arrow;
use crate::transaction::WriteTarget;
use crate::write::{TableCreation, append_batches};

const DAY: i64 = 86_400_000;

/// A new table `(id long)` at `dir` with one commit per id in `ids`; returns its location
/// and the snapshot ids, oldest first.
async fn table_with_commits(dir: &std::path::Path, ids: &[i64]) -> (String, Vec<i64>) {
    let io = FileIO::default();
    let location = dir.display().to_string();
    let schema = Schema::new(0, vec![NestedField::required(1, "id", PrimitiveType::Long)]);
    TableCreation::new(schema)
        .create_at(&io, &location)
        .await
        .unwrap();
    for id in ids {
        append(&location, *id, "main").await;
    }
    let table = Table::load(io, &location).await.unwrap();
    let snapshots = table
        .metadata()
        .snapshots
        .iter()
        .map(|s| s.snapshot_id)
        .collect();
    (location, snapshots)
}

async fn append(location: &str, id: i64, branch: &str) -> Table {
    let io = FileIO::default();
    let table = Table::load(io.clone(), location).await.unwrap();
    let schema = Arc::new(schema_to_arrow(table.metadata().current_schema()).unwrap());
    let batch = RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![id]))]).unwrap();
    let target = WriteTarget::directory(&io, location).unwrap();
    append_batches(&target, &[batch], branch).await.unwrap()
}

/// `(count(*), sum(id))` of the table at `selector`.
async fn count_sum(location: &str, selector: SnapshotSelector) -> (i64, i64) {
    let ctx = SessionContext::new();
    let table = Table::load(FileIO::default(), location).await.unwrap();
    let provider = IcebergTableProvider::try_new(table, selector).unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let batches = ctx
        .sql("SELECT count(*), coalesce(sum(id), 0) FROM t")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let value = |i: usize| batches[0].column(i).as_primitive::<Int64Type>().value(0);
    (value(0), value(1))
}

fn manager(location: &str) -> SnapshotManager {
    SnapshotManager::new(WriteTarget::directory(&FileIO::default(), location).unwrap())
}

fn exists(path: &str) -> bool {
    std::path::Path::new(path).exists()
}

#[tokio::test]
async fn expiration_by_count_deletes_only_what_kept_snapshots_do_not_reach() {
    let dir = tempfile::tempdir().unwrap();
    let (location, s) = table_with_commits(dir.path(), &[1, 2, 3, 4]).await;
    let before = Table::load(FileIO::default(), &location).await.unwrap();
    let lists: Vec<String> = before
        .metadata()
        .snapshots
        .iter()
        .map(|s| s.manifest_list.clone().unwrap())
        .collect();
    // Ten days on, with the last two kept: 1 and 2 expire. Fast appends reuse every manifest,
    // so only their manifest lists become unreachable.
    let options = ExpireSnapshots {
        retain_last: Some(2),
        now_ms: Some(crate::catalog::now_ms() + 10 * DAY),
        dry_run: true,
        ..Default::default()
    };
    let dry = manager(&location).expire_snapshots(&options).await.unwrap();
    assert_eq!(dry.expired, [s[0], s[1]]);
    let expected: BTreeSet<String> = lists[..2].iter().cloned().collect();
    let listed: BTreeSet<String> = dry.deleted_files.iter().cloned().collect();
    assert_eq!(listed, expected);
    assert!(dry.table.is_none());
    assert!(lists.iter().all(|l| exists(l)), "a dry run deletes nothing");
    let unchanged = Table::load(FileIO::default(), &location).await.unwrap();
    assert_eq!(unchanged.metadata().snapshots.len(), 4);

    let report = manager(&location)
        .expire_snapshots(&ExpireSnapshots {
            dry_run: false,
            ..options
        })
        .await
        .unwrap();
    assert_eq!(report.expired, [s[0], s[1]]);
    assert_eq!(report.deleted_files, dry.deleted_files);
    assert!(!exists(&lists[0]) && !exists(&lists[1]));
    assert!(exists(&lists[2]) && exists(&lists[3]));
    let after = report.table.unwrap();
    let ids: Vec<i64> = after
        .metadata()
        .snapshots
        .iter()
        .map(|x| x.snapshot_id)
        .collect();
    assert_eq!(ids, [s[2], s[3]]);
    // Nothing a kept snapshot reaches was deleted, and kept snapshots answer as before.
    let reachable = reachable_files(&after).await.unwrap();
    assert!(report.deleted_files.iter().all(|f| !reachable.contains(f)));
    assert_eq!(
        count_sum(&location, SnapshotSelector::Current).await,
        (4, 10)
    );
    let third = SnapshotSelector::SnapshotId(s[2]);
    assert_eq!(count_sum(&location, third).await, (3, 6));
    // The snapshot log lost the expired snapshots' entries.
    let log: Vec<i64> = after
        .metadata()
        .snapshot_log
        .iter()
        .map(|e| e.snapshot_id)
        .collect();
    assert_eq!(log, [s[2], s[3]]);
}

#[tokio::test]
async fn tags_keep_snapshots_and_explicit_ids_expire_unless_a_ref_points_at_them() {
    let dir = tempfile::tempdir().unwrap();
    let (location, s) = table_with_commits(dir.path(), &[1, 2, 3, 4]).await;
    let m = manager(&location);
    m.create_tag("first", Some(s[0]), None).await.unwrap();
    let err = m.create_tag("first", Some(s[1]), None).await.unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    // Everything is young: only the explicit id expires; the tag's snapshot and the head
    // cannot be named.
    let report = m
        .expire_snapshots(&ExpireSnapshots {
            snapshot_ids: vec![s[1]],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(report.expired, [s[1]]);
    for id in [s[0], s[3]] {
        let options = ExpireSnapshots {
            snapshot_ids: vec![id],
            ..Default::default()
        };
        let err = m.expire_snapshots(&options).await.unwrap_err();
        assert!(err.to_string().contains("points at it"), "{err}");
    }
    // Ten days on with the default min-snapshots-to-keep 1: main keeps its head; the tag
    // keeps the first snapshot; the third expires.
    let report = m
        .expire_snapshots(&ExpireSnapshots {
            now_ms: Some(crate::catalog::now_ms() + 10 * DAY),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(report.expired, [s[2]]);
    let tagged = SnapshotSelector::Ref("first".into());
    assert_eq!(count_sum(&location, tagged).await, (1, 1));
    assert_eq!(
        count_sum(&location, SnapshotSelector::Current).await,
        (4, 10)
    );
}

#[tokio::test]
async fn rollback_then_a_new_commit_orphans_the_abandoned_line_which_expiration_removes() {
    let dir = tempfile::tempdir().unwrap();
    let (location, s) = table_with_commits(dir.path(), &[1, 2, 3, 4]).await;
    let m = manager(&location);
    let err = m.rollback_to_snapshot(999).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    let rolled = m.rollback_to_snapshot(s[1]).await.unwrap();
    assert_eq!(rolled.metadata().current_snapshot_id, Some(s[1]));
    assert_eq!(
        count_sum(&location, SnapshotSelector::Current).await,
        (2, 3)
    );
    // By time: the newest ancestor at or before the third commit is... the second, since the
    // third is no longer an ancestor of the current snapshot.
    let third_ms = rolled.metadata().snapshot_by_id(s[2]).unwrap().timestamp_ms;
    let again = m.rollback_to_time(third_ms).await.unwrap();
    assert_eq!(again.metadata().current_snapshot_id, Some(s[1]));
    // A new commit on main: 3 and 4 are on no branch now.
    let fifth = append(&location, 5, "main").await;
    let data_before: BTreeSet<String> = reachable_files(&fifth).await.unwrap();
    let report = m
        .expire_snapshots(&ExpireSnapshots::default())
        .await
        .unwrap();
    assert_eq!(report.expired, [s[2], s[3]]);
    // Their manifest lists, manifests and data files go: 2 of each.
    let data: Vec<&String> = report
        .deleted_files
        .iter()
        .filter(|f| f.ends_with(".parquet"))
        .collect();
    assert_eq!(data.len(), 2, "{:?}", report.deleted_files);
    assert_eq!(report.deleted_files.len(), 6, "{:?}", report.deleted_files);
    assert!(
        report
            .deleted_files
            .iter()
            .all(|f| data_before.contains(f) && !exists(f))
    );
    assert_eq!(
        count_sum(&location, SnapshotSelector::Current).await,
        (3, 8)
    );
}

#[tokio::test]
async fn branches_are_created_fast_forwarded_and_dropped_but_main_stays() {
    let dir = tempfile::tempdir().unwrap();
    let (location, s) = table_with_commits(dir.path(), &[1, 2, 3]).await;
    let m = manager(&location);
    let retention = BranchRetention {
        min_snapshots_to_keep: Some(3),
        ..Default::default()
    };
    m.create_branch("dev", Some(s[0]), retention).await.unwrap();
    // dev (at 1) is an ancestor of main: it fast-forwards to main's head.
    let table = m.fast_forward("dev", "main").await.unwrap();
    let dev = &table.metadata().refs["dev"];
    assert_eq!(dev.snapshot_id, s[2]);
    assert!(matches!(
        dev.retention,
        SnapshotRetention::Branch {
            min_snapshots_to_keep: Some(3),
            ..
        }
    ));
    // A commit to dev: dev cannot move back to an older tag, and main (dev's parent) moves
    // forward to dev's head.
    append(&location, 10, "dev").await;
    m.create_tag("old", Some(s[0]), None).await.unwrap();
    assert!(m.fast_forward("dev", "old").await.is_err());
    let table = m.fast_forward("main", "dev").await.unwrap();
    assert_eq!(
        table.metadata().current_snapshot_id,
        Some(table.metadata().refs["dev"].snapshot_id)
    );
    assert_eq!(
        count_sum(&location, SnapshotSelector::Current).await,
        (4, 16)
    );
    // Replacing moves a branch anywhere, keeping its retention; a tag is not a branch.
    let table = m.replace_branch("dev", s[0]).await.unwrap();
    assert_eq!(table.metadata().refs["dev"].snapshot_id, s[0]);
    assert!(m.replace_branch("old", s[0]).await.is_err());
    assert!(m.replace_tag("dev", s[0]).await.is_err());
    m.drop_ref("dev").await.unwrap();
    let err = m.drop_ref("main").await.unwrap_err();
    assert!(
        err.to_string().contains("'main': it cannot be dropped"),
        "{err}"
    );
    let table = m.replace_tag("old", s[1]).await.unwrap();
    assert_eq!(table.metadata().refs["old"].snapshot_id, s[1]);
}

#[tokio::test]
async fn an_append_staged_on_a_branch_is_cherry_picked_onto_main_once() {
    let dir = tempfile::tempdir().unwrap();
    let (location, s) = table_with_commits(dir.path(), &[1, 2]).await;
    let m = manager(&location);
    m.create_branch("staged", None, BranchRetention::default())
        .await
        .unwrap();
    let staged = append(&location, 10, "staged").await;
    let source = staged.metadata().refs["staged"].snapshot_id;
    assert_eq!(
        count_sum(&location, SnapshotSelector::Current).await,
        (2, 3)
    );
    let picked = m.cherry_pick(source).await.unwrap();
    let head = picked.metadata().current_snapshot().unwrap();
    assert_eq!(head.parent_snapshot_id, Some(s[1]));
    let summary = head.summary.as_ref().unwrap();
    assert_eq!(
        summary.get("source-snapshot-id"),
        Some(source.to_string().as_str())
    );
    assert_eq!(summary.get("added-records"), Some("1"));
    assert_eq!(
        count_sum(&location, SnapshotSelector::Current).await,
        (3, 13)
    );
    // Not twice, not an ancestor of main, not an unknown snapshot.
    let err = m.cherry_pick(source).await.unwrap_err();
    assert!(err.to_string().contains("already on main"), "{err}");
    assert!(m.cherry_pick(s[0]).await.is_err());
    assert!(matches!(
        m.cherry_pick(42).await.unwrap_err(),
        Error::NotFound { .. }
    ));
}

#[tokio::test]
async fn only_appends_are_cherry_picked() {
    let dir = tempfile::tempdir().unwrap();
    let (location, _) = table_with_commits(dir.path(), &[1, 2]).await;
    let target = WriteTarget::directory(&FileIO::default(), location.as_str()).unwrap();
    let rewritten = crate::maintenance::rewrite_manifests(&target, None)
        .await
        .unwrap()
        .table
        .unwrap();
    let replace = rewritten.metadata().current_snapshot_id.unwrap();
    // Roll back so the replace is off main, then try to pick it.
    let m = manager(&location);
    let parent = rewritten
        .metadata()
        .current_snapshot()
        .unwrap()
        .parent_snapshot_id
        .unwrap();
    m.rollback_to_snapshot(parent).await.unwrap();
    let err = m.cherry_pick(replace).await.unwrap_err();
    assert!(err.to_string().contains("not an append (replace)"), "{err}");
}

/// A `gc.enabled` that is neither true nor false fails what deletes files, before anything is
/// committed or deleted, naming the key and the value; reads do not use it.
#[tokio::test]
async fn a_bad_gc_enabled_fails_expiration_and_orphan_removal_before_they_act() {
    let dir = tempfile::tempdir().unwrap();
    let (location, s) = table_with_commits(dir.path(), &[1, 2, 3]).await;
    let current = Table::load(FileIO::default(), &location).await.unwrap();
    let path = current.metadata_location().to_string();
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    json["properties"]["gc.enabled"] = "maybe".into();
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let named = |err: Error| {
        let message = err.to_string();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{message}");
        assert!(
            message.contains("gc.enabled") && message.contains("'maybe'"),
            "{message}"
        );
    };

    let options = ExpireSnapshots {
        retain_last: Some(1),
        now_ms: Some(crate::catalog::now_ms() + 10 * DAY),
        ..Default::default()
    };
    named(
        manager(&location)
            .expire_snapshots(&options)
            .await
            .unwrap_err(),
    );
    let after = Table::load_for_write(FileIO::default(), &location)
        .await
        .unwrap();
    assert_eq!(after.metadata_location(), path, "nothing committed");
    assert_eq!(after.metadata().snapshots.len(), s.len());

    let orphans = crate::maintenance::OrphanFiles {
        older_than_ms: crate::catalog::now_ms() + DAY,
        ..Default::default()
    };
    let stray = dir.path().join("data/stray.parquet");
    std::fs::write(&stray, b"not reachable").unwrap();
    named(
        crate::maintenance::remove_orphan_files(&after, &orphans)
            .await
            .unwrap_err(),
    );
    assert!(stray.exists(), "nothing deleted");
    assert_eq!(
        count_sum(&location, SnapshotSelector::Current).await,
        (3, 6)
    );
}
