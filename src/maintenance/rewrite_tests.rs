//! Rewriting the manifests of a table of many one-file commits.

use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch};
use datafusion::prelude::SessionContext;

use super::*;
use crate::io::FileIO;
use crate::provider::IcebergTableProvider;
use crate::scan::plan_metric;
use crate::spec::{NestedField, PrimitiveType, Schema, SnapshotSelector};
use crate::to_arrow::schema_to_arrow;
use crate::transaction::WriteTarget;
use crate::write::{TableCreation, append_batches};

/// A table `(id long, k long)` partitioned by `bucket(2, k)`, one commit per id (k = id).
async fn table(dir: &std::path::Path, ids: &[i64]) -> String {
    let io = FileIO::default();
    let location = dir.display().to_string();
    let schema = Schema::new(
        0,
        vec![
            NestedField::required(1, "id", PrimitiveType::Long),
            NestedField::required(2, "k", PrimitiveType::Long),
        ],
    );
    let table = TableCreation::new(schema)
        .with_partitioning("bucket(2, k)")
        .unwrap()
        .create_at(&io, &location)
        .await
        .unwrap();
    let arrow = Arc::new(schema_to_arrow(table.metadata().current_schema()).unwrap());
    for id in ids {
        let column = Arc::new(Int64Array::from(vec![*id]));
        let batch = RecordBatch::try_new(Arc::clone(&arrow), vec![column.clone(), column]).unwrap();
        let target = WriteTarget::directory(&io, &location).unwrap();
        append_batches(&target, &[batch], "main").await.unwrap();
    }
    location
}

/// `(count, sum(id), manifests_total)` of a scan of the table at `selector`.
async fn scan(location: &str, selector: SnapshotSelector) -> (i64, i64, usize) {
    let ctx = SessionContext::new();
    let table = Table::load(FileIO::default(), location).await.unwrap();
    let provider = IcebergTableProvider::try_new(table, selector).unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let df = ctx.sql("SELECT id FROM t WHERE id >= 0").await.unwrap();
    let plan = df.create_physical_plan().await.unwrap();
    let batches = datafusion::physical_plan::collect(Arc::clone(&plan), ctx.task_ctx())
        .await
        .unwrap();
    let mut ids = Vec::new();
    for b in &batches {
        let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        ids.extend(a.values().iter().copied());
    }
    (
        ids.len() as i64,
        ids.iter().sum(),
        plan_metric(&plan, "manifests_total").unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_small_manifests_become_one_with_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    let location = table(dir.path(), &[1, 2, 3, 4, 5, 6]).await;
    let before = Table::load(FileIO::default(), &location).await.unwrap();
    let last_append = before.metadata().current_snapshot_id.unwrap();
    assert_eq!(scan(&location, SnapshotSelector::Current).await, (6, 21, 6));
    let target = WriteTarget::directory(&FileIO::default(), location.as_str()).unwrap();
    let report = rewrite_manifests(&target, None).await.unwrap();
    assert_eq!((report.rewritten, report.added), (6, 1));
    let after = report.table.unwrap();
    let snapshot = after.metadata().current_snapshot().unwrap();
    let summary = snapshot.summary.as_ref().unwrap();
    assert_eq!(summary.operation, Operation::Replace);
    assert_eq!(summary.get("total-records"), Some("6"));
    assert_eq!(snapshot.parent_snapshot_id, Some(last_append));
    // Same rows from one manifest; the entries kept their snapshots and sequence numbers.
    assert_eq!(scan(&location, SnapshotSelector::Current).await, (6, 21, 1));
    let io = FileIO::default();
    let list = read_manifest_list(&io, after.metadata(), snapshot)
        .await
        .unwrap();
    let entries = &read_manifests(&io, after.metadata(), &list).await.unwrap()[0].entries;
    let mut seqs: Vec<i64> = entries.iter().map(|e| e.sequence_number.unwrap()).collect();
    seqs.sort();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    assert!(entries.iter().all(|e| e.status == ManifestStatus::Existing));
    // The old state still reads as it was.
    let old = SnapshotSelector::SnapshotId(last_append);
    assert_eq!(scan(&location, old).await, (6, 21, 6));
    // A second rewrite finds one small manifest per spec: nothing to merge or split.
    let report = rewrite_manifests(&target, None).await.unwrap();
    assert_eq!(report.rewritten, 0, "one manifest left: nothing to merge");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_target_size_gives_several_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let location = table(dir.path(), &[1, 2, 3, 4]).await;
    let target = WriteTarget::directory(&FileIO::default(), location.as_str()).unwrap();
    let report = rewrite_manifests(&target, Some(1)).await.unwrap();
    // One entry per manifest at most: 4 manifests rewritten into 4.
    assert_eq!((report.rewritten, report.added), (4, 4));
    assert_eq!(scan(&location, SnapshotSelector::Current).await, (4, 10, 4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_bigger_than_the_target_is_split_by_partition() {
    let dir = tempfile::tempdir().unwrap();
    let location = table(dir.path(), &[]).await;
    // One commit of eight rows: one manifest with a file per bucket of k.
    let io = FileIO::default();
    let current = Table::load(io.clone(), &location).await.unwrap();
    let arrow = Arc::new(schema_to_arrow(current.metadata().current_schema()).unwrap());
    let column = Arc::new(Int64Array::from((1..=8).collect::<Vec<i64>>()));
    let batch = RecordBatch::try_new(arrow, vec![column.clone(), column]).unwrap();
    let target = WriteTarget::directory(&io, &location).unwrap();
    append_batches(&target, &[batch], "main").await.unwrap();
    assert_eq!(scan(&location, SnapshotSelector::Current).await, (8, 36, 1));
    let write = WriteTarget::directory(&io, location.as_str()).unwrap();
    let report = rewrite_manifests(&write, Some(1)).await.unwrap();
    assert_eq!((report.rewritten, report.added), (1, 2));
    // Each new manifest holds one bucket: its partition summary is a single value.
    let after = report.table.unwrap();
    let snapshot = after.metadata().current_snapshot().unwrap();
    for m in read_manifest_list(&io, after.metadata(), snapshot)
        .await
        .unwrap()
        .iter()
    {
        let summary = &m.partitions.as_ref().unwrap()[0];
        assert_eq!(summary.lower_bound, summary.upper_bound);
    }
    assert_eq!(scan(&location, SnapshotSelector::Current).await, (8, 36, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_work_reports_its_progress() {
    use std::sync::Mutex;
    let dir = tempfile::tempdir().unwrap();
    let location = table(dir.path(), &[1, 2, 3]).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let progress = Progress::new(move |done, total| record.lock().unwrap().push((done, total)));
    let target = WriteTarget::directory(&FileIO::default(), location.as_str()).unwrap();
    rewrite_manifests_with_progress(&target, Some(1), &progress)
        .await
        .unwrap();
    // Three one-entry manifests rewritten one entry per manifest: told before each write.
    assert_eq!(*seen.lock().unwrap(), [(0, 3), (1, 3), (2, 3)]);
    // Orphan removal tells each deletion.
    seen.lock().unwrap().clear();
    for name in ["a", "b"] {
        std::fs::write(
            dir.path().join(format!("data/stray-{name}.parquet")),
            b"PAR1",
        )
        .unwrap();
    }
    let table = Table::load_for_write(FileIO::default(), &location)
        .await
        .unwrap();
    let mut options = crate::maintenance::OrphanFiles::new()
        .with_older_than_ms(crate::catalog::now_ms() + 60_000);
    options.progress = progress;
    let done = crate::maintenance::remove_orphan_files(&table, &options)
        .await
        .unwrap();
    assert_eq!(done.deleted, 2);
    assert_eq!(*seen.lock().unwrap(), [(1, 2), (2, 2)]);
}
