//! Tests of [`RowDelta`]: manifests rewritten with DELETED entries, summaries, and each
//! conflict rule against a real concurrent commit on a table directory.

use super::super::tests::{append_dir, count_and_sum, data_file, new_table};
use super::*;
use crate::expr::Predicate;
use crate::expr::predicate::{BinaryOp, Reference};
use crate::io::FileIO;
use crate::spec::{DataContentType, FileFormat, Manifest};
use crate::table::Table;
use crate::transaction::WriteTarget;

async fn delta_commit(io: &FileIO, location: &str, delta: RowDelta) -> Result<Table> {
    let target = WriteTarget::directory(io, location).unwrap();
    let base = target.load().await.unwrap();
    target.transaction(base).with_action(delta).commit().await
}

fn head(table: &Table) -> Option<i64> {
    table.metadata().current_snapshot_id
}

#[tokio::test]
async fn removing_a_file_writes_deleted_entries_and_java_summary_counts() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path());
    let io = FileIO::default();
    let (spec, a) = data_file(&location, &[1, 2, 3]);
    let (_, b) = data_file(&location, &[10, 20]);
    let base = append_dir(&io, &location, vec![(spec, a.clone()), (spec, b.clone())]).await;
    let (_, c) = data_file(&location, &[2, 3]);
    let delta = RowDelta::new(head(&base))
        .remove_data_file(spec, &a)
        .add_data_files([(spec, c)]);
    let table = delta_commit(&io, &location, delta).await.unwrap();
    assert_eq!(count_and_sum(&location).await, (4, 35));
    let snapshot = table.metadata().current_snapshot().unwrap();
    let summary = snapshot.summary.as_ref().unwrap();
    assert_eq!(summary.operation, Operation::Overwrite);
    assert_eq!(summary.get("deleted-data-files"), Some("1"));
    assert_eq!(summary.get("deleted-records"), Some("3"));
    assert_eq!(summary.get("added-data-files"), Some("1"));
    assert_eq!(summary.get("added-records"), Some("2"));
    assert_eq!(summary.get("total-records"), Some("4"));
    assert_eq!(summary.get("total-data-files"), Some("2"));
    // The rewritten manifest keeps b as EXISTING and marks a DELETED by the new snapshot.
    let listed = read_manifest_list(&io, table.metadata(), snapshot)
        .await
        .unwrap();
    // Manifests the snapshot wrote (the rewritten one too) carry its sequence number.
    for manifest in listed
        .iter()
        .filter(|m| m.added_snapshot_id == snapshot.snapshot_id)
    {
        assert_eq!(manifest.sequence_number, snapshot.sequence_number);
    }
    assert_eq!(
        listed
            .iter()
            .filter(|m| m.added_snapshot_id == snapshot.snapshot_id)
            .count(),
        2
    );
    let manifests = read_manifests(&io, table.metadata(), &listed)
        .await
        .unwrap();
    let entries: Vec<_> = manifests.iter().flat_map(|m| m.entries.iter()).collect();
    let status = |path: &str| {
        entries
            .iter()
            .find(|e| e.data_file.file_path == path)
            .map(|e| (e.status, e.snapshot_id))
    };
    assert_eq!(
        status(&a.file_path),
        Some((ManifestStatus::Deleted, Some(snapshot.snapshot_id)))
    );
    assert_eq!(
        status(&b.file_path).map(|s| s.0),
        Some(ManifestStatus::Existing)
    );
}

#[tokio::test]
async fn a_concurrent_append_conflicts_under_serializable_only_where_the_condition_may_match() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path());
    let io = FileIO::default();
    let (spec, a) = data_file(&location, &[1, 2, 3]);
    let base = append_dir(&io, &location, vec![(spec, a.clone())]).await;
    // Another writer appends ids 100..: outside `id < 10`, inside `id > 50`.
    let (_, late) = data_file(&location, &[100, 200]);
    let mut late = late;
    late.lower_bounds = Some([(1, 100i64.to_le_bytes().to_vec())].into());
    late.upper_bounds = Some([(1, 200i64.to_le_bytes().to_vec())].into());
    append_dir(&io, &location, vec![(spec, late)]).await;

    let below_ten = Predicate::Binary {
        op: BinaryOp::Lt,
        term: Reference {
            field_id: 1,
            name: "id".into(),
            ty: crate::spec::PrimitiveType::Long,
        },
        value: crate::spec::Literal::Long(10),
    };
    let allowed = RowDelta::new(head(&base))
        .remove_data_file(spec, &a)
        .conflict_filter(below_ten);
    delta_commit(&io, &location, allowed).await.unwrap();
    assert_eq!(count_and_sum(&location).await, (2, 300));

    let base = Table::load(io.clone(), &location).await.unwrap();
    let (_, d) = data_file(&location, &[7]);
    append_dir(&io, &location, vec![(spec, d.clone())]).await;
    let (_, e) = data_file(&location, &[8]);
    append_dir(&io, &location, vec![(spec, e)]).await;
    let remove_d_unknown_condition = || RowDelta::new(head(&base)).remove_data_file(spec, &d);
    // d was added after `base`: removing it from a change based on `base` is not possible...
    let err = delta_commit(&io, &location, remove_d_unknown_condition())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::CommitConflict { .. }), "{err}");
    // ... and without a condition, any concurrently added data file conflicts (serializable),
    // but not under snapshot isolation.
    let base = Table::load(io.clone(), &location).await.unwrap();
    let (_, f) = data_file(&location, &[9]);
    append_dir(&io, &location, vec![(spec, f)]).await;
    let err = delta_commit(
        &io,
        &location,
        RowDelta::new(head(&base)).remove_data_file(spec, &d),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("added data file") && text.contains("serializable"),
        "{text}"
    );
    delta_commit(
        &io,
        &location,
        RowDelta::new(head(&base))
            .remove_data_file(spec, &d)
            .isolation(Isolation::Snapshot),
    )
    .await
    .unwrap();
    assert_eq!(count_and_sum(&location).await, (4, 317));
}

#[tokio::test]
async fn a_file_removed_concurrently_or_a_delete_added_for_it_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path());
    let io = FileIO::default();
    let (spec, a) = data_file(&location, &[1, 2, 3]);
    let base = append_dir(&io, &location, vec![(spec, a.clone())]).await;
    // Another writer removes a (a DELETE of its own).
    delta_commit(
        &io,
        &location,
        RowDelta::new(head(&base)).remove_data_file(spec, &a),
    )
    .await
    .unwrap();
    let err = delta_commit(
        &io,
        &location,
        RowDelta::new(head(&base))
            .remove_data_file(spec, &a)
            .isolation(Isolation::Snapshot),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("removed data file") && text.contains(&a.file_path),
        "{text}"
    );

    // A position delete file added for b conflicts with a change that also reads b.
    let (_, b) = data_file(&location, &[5]);
    let base = append_dir(&io, &location, vec![(spec, b.clone())]).await;
    let mut deletes = DataFile::new(
        DataContentType::PositionDeletes,
        format!("{location}/data/deletes.parquet"),
        FileFormat::Parquet,
        1,
        10,
    );
    deletes.referenced_data_file = Some(b.file_path.clone());
    delta_commit(
        &io,
        &location,
        RowDelta::new(head(&base)).add_delete_files([(spec, deletes)]),
    )
    .await
    .unwrap();
    let err = delta_commit(
        &io,
        &location,
        RowDelta::new(head(&base))
            .remove_data_file(spec, &b)
            .isolation(Isolation::Snapshot),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("added delete file"), "{text}");
    // Nothing was committed by the refused changes: b is still there.
    let table = Table::load(io.clone(), &location).await.unwrap();
    let summary = table
        .metadata()
        .current_snapshot()
        .unwrap()
        .summary
        .clone()
        .unwrap();
    assert_eq!(summary.get("added-delete-files"), Some("1"));
}

/// A rewrite that keeps the base's data sequence number (compaction): an equality delete
/// committed meanwhile does not conflict, and applies to the rewritten file by sequence
/// number; a position delete for a rewritten file still conflicts. Without the sequence
/// number the equality delete conflicts too (its rows would otherwise come back).
#[tokio::test]
async fn a_rewrite_keeping_the_base_sequence_number_tolerates_equality_deletes_only() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path());
    let io = FileIO::default();
    let (spec, a) = data_file(&location, &[1, 2, 3]);
    let base = append_dir(&io, &location, vec![(spec, a.clone())]).await;
    let base_sequence = base.metadata().current_snapshot().unwrap().sequence_number;
    let mut equality = DataFile::new(
        DataContentType::EqualityDeletes,
        format!("{location}/data/eq.parquet"),
        FileFormat::Parquet,
        1,
        10,
    );
    equality.equality_ids = Some(vec![1]);
    delta_commit(
        &io,
        &location,
        RowDelta::new(head(&base)).add_delete_files([(spec, equality.clone())]),
    )
    .await
    .unwrap();
    let rewrite = |seq: Option<i64>| {
        let (_, rewritten) = data_file(&location, &[1, 2, 3]);
        let mut delta = RowDelta::new(head(&base))
            .operation(Operation::Replace)
            .isolation(Isolation::Snapshot)
            .remove_data_file(spec, &a)
            .add_data_files([(spec, rewritten.clone())]);
        if let Some(seq) = seq {
            delta = delta.with_data_sequence_number(seq);
        }
        (delta, rewritten)
    };
    let (without, _) = rewrite(None);
    let err = delta_commit(&io, &location, without).await.unwrap_err();
    assert!(err.to_string().contains("added delete file"), "{err}");

    let (with, rewritten) = rewrite(Some(base_sequence));
    let table = delta_commit(&io, &location, with).await.unwrap();
    let snapshot = table.metadata().current_snapshot().unwrap();
    let tasks = crate::scan::plan_files(&io, table.metadata(), snapshot)
        .await
        .unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].data_file.file_path, rewritten.file_path);
    assert_eq!(tasks[0].data_sequence_number, base_sequence);
    let applied: Vec<&str> = tasks[0]
        .deletes
        .iter()
        .map(|d| d.file.file_path.as_str())
        .collect();
    assert_eq!(applied, vec![equality.file_path.as_str()]);

    // A position delete for a file being rewritten conflicts even so.
    let (_, b) = data_file(&location, &[7]);
    let base = append_dir(&io, &location, vec![(spec, b.clone())]).await;
    let mut positions = DataFile::new(
        DataContentType::PositionDeletes,
        format!("{location}/data/pos.parquet"),
        FileFormat::Parquet,
        1,
        10,
    );
    positions.referenced_data_file = Some(b.file_path.clone());
    delta_commit(
        &io,
        &location,
        RowDelta::new(head(&base)).add_delete_files([(spec, positions)]),
    )
    .await
    .unwrap();
    let sequence = base.metadata().current_snapshot().unwrap().sequence_number;
    let err = delta_commit(
        &io,
        &location,
        RowDelta::new(head(&base))
            .operation(Operation::Replace)
            .isolation(Isolation::Snapshot)
            .with_data_sequence_number(sequence)
            .remove_data_file(spec, &b),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("added delete file"), "{err}");
}

/// Manifests whose every live file is removed are not rewritten one by one: their DELETED
/// entries go into one manifest (a compaction of many one-file commits); a manifest keeping a
/// file is rewritten as before. A scan skips the DELETED-only manifest unread.
#[tokio::test]
async fn manifests_losing_every_file_become_one_manifest_of_deleted_entries() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path());
    let io = FileIO::default();
    let (spec, a) = data_file(&location, &[1]);
    let (_, b) = data_file(&location, &[2]);
    let (_, c) = data_file(&location, &[3]);
    let (_, d) = data_file(&location, &[4]);
    append_dir(&io, &location, vec![(spec, a.clone())]).await;
    append_dir(&io, &location, vec![(spec, b.clone())]).await;
    let base = append_dir(&io, &location, vec![(spec, c.clone()), (spec, d.clone())]).await;
    let (_, compacted) = data_file(&location, &[1, 2, 3]);
    let delta = RowDelta::new(head(&base))
        .operation(Operation::Replace)
        .remove_data_file(spec, &a)
        .remove_data_file(spec, &b)
        .remove_data_file(spec, &c)
        .add_data_files([(spec, compacted.clone())]);
    let table = delta_commit(&io, &location, delta).await.unwrap();
    assert_eq!(count_and_sum(&location).await, (4, 10));
    let snapshot = table.metadata().current_snapshot().unwrap();
    let listed = read_manifest_list(&io, table.metadata(), snapshot)
        .await
        .unwrap();
    // The added file, c's manifest rewritten keeping d, and one manifest of a's and b's entries.
    assert_eq!(listed.len(), 3, "{listed:?}");
    let manifests = read_manifests(&io, table.metadata(), &listed)
        .await
        .unwrap();
    let statuses = |m: &Manifest| {
        let mut s: Vec<(ManifestStatus, String)> = m
            .entries
            .iter()
            .map(|e| (e.status, e.data_file.file_path.clone()))
            .collect();
        s.sort_by(|x, y| x.1.cmp(&y.1));
        s
    };
    let deleted_only = listed
        .iter()
        .zip(manifests.iter())
        .find(|(m, _)| m.added_files_count == Some(0) && m.existing_files_count == Some(0))
        .expect("a manifest of DELETED entries");
    let mut expected = vec![
        (ManifestStatus::Deleted, a.file_path.clone()),
        (ManifestStatus::Deleted, b.file_path.clone()),
    ];
    expected.sort_by(|x, y| x.1.cmp(&y.1));
    assert_eq!(statuses(deleted_only.1), expected);
    assert_eq!(deleted_only.0.deleted_files_count, Some(2));
    let summary = snapshot.summary.as_ref().unwrap();
    assert_eq!(summary.get("deleted-data-files"), Some("3"));
    let pruner = Pruner::none(table.metadata());
    let plan = crate::scan::plan::plan_scan(&io, table.metadata(), snapshot, &pruner)
        .await
        .unwrap();
    assert_eq!(plan.stats.manifests_total, 3);
    assert_eq!(plan.stats.manifests_pruned, 1, "the DELETED-only manifest");
    let mut live: Vec<String> = plan
        .tasks
        .iter()
        .map(|t| t.data_file.file_path.clone())
        .collect();
    live.sort();
    let mut want = vec![compacted.file_path.clone(), d.file_path.clone()];
    want.sort();
    assert_eq!(live, want);
}
