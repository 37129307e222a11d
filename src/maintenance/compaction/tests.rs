//! Compaction end to end on tables of a scratch SQLite catalog: rows, files, deletes,
//! sequence numbers, sort order, v3 row lineage, partial progress, cancellation. Expected
//! values come from the rows written and Java's rules, not from a compaction's output.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::prelude::SessionContext;

use super::*;
use crate::catalog::{SqliteCatalog, TableIdent};
use crate::scan::plan_files;
use crate::{FileIO, Relocation};

struct Scratch {
    _dir: tempfile::TempDir,
    ctx: SessionContext,
    catalog: Arc<SqliteCatalog>,
}

async fn scratch() -> Scratch {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("catalog.db");
    SqliteCatalog::create(&db, "default", FileIO::default()).unwrap();
    let ctx = SessionContext::new();
    let catalog = crate::session::register_catalog_as_default(&ctx, &db, Relocation::default())
        .await
        .unwrap();
    crate::sql::register(&ctx);
    let scratch = Scratch {
        _dir: dir,
        ctx,
        catalog,
    };
    scratch.run("CREATE SCHEMA db").await;
    scratch
}

impl Scratch {
    async fn run(&self, statement: &str) -> Vec<RecordBatch> {
        crate::sql::sql(&self.ctx, statement)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"))
            .collect()
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"))
    }

    fn target(&self, table: &str) -> WriteTarget {
        WriteTarget::new(
            Arc::clone(&self.catalog) as Arc<dyn crate::catalog::Catalog>,
            TableIdent::parse_dotted(table).unwrap(),
        )
    }

    /// `(id, v)` of every row, by id.
    async fn rows(&self, query: &str) -> Vec<(i64, String)> {
        let mut rows = Vec::new();
        for batch in self.run(query).await {
            let ids = batch.column(0).as_primitive::<Int64Type>();
            let values = datafusion::arrow::compute::cast(
                batch.column(1),
                &datafusion::arrow::datatypes::DataType::Utf8,
            )
            .unwrap();
            let values = values.as_string::<i32>();
            for i in 0..batch.num_rows() {
                rows.push((ids.value(i), values.value(i).to_string()));
            }
        }
        rows.sort();
        rows
    }

    /// `(content, count)` of the live files of `table`'s current snapshot.
    async fn files(&self, table: &str) -> BTreeMap<i32, i64> {
        let query = format!("SELECT content, count(*) FROM db.\"{table}$files\" GROUP BY content");
        let mut out = BTreeMap::new();
        for batch in self.run(&query).await {
            let content = datafusion::arrow::compute::cast(
                batch.column(0),
                &datafusion::arrow::datatypes::DataType::Int32,
            )
            .unwrap();
            let content = content.as_primitive::<datafusion::arrow::datatypes::Int32Type>();
            let count = batch.column(1).as_primitive::<Int64Type>();
            for i in 0..batch.num_rows() {
                out.insert(content.value(i), count.value(i));
            }
        }
        out
    }
}

/// Six two-row inserts into each of two partitions: 12 files of two rows (ids 1..=12 and
/// 101..=112).
async fn small_files(scratch: &Scratch, table: &str, properties: &str) -> Vec<(i64, String)> {
    scratch
        .run(&format!(
            "CREATE TABLE db.{table} (id BIGINT, part INT, v VARCHAR) PARTITION BY (part) \
             TBLPROPERTIES ({properties})"
        ))
        .await;
    let mut rows = Vec::new();
    for id in 1..=12i64 {
        let (v, w) = (format!("v{}", 13 - id), format!("w{id}"));
        let part = id % 2;
        scratch
            .run(&format!(
                "INSERT INTO db.{table} VALUES ({id}, {part}, '{v}'), ({}, {part}, '{w}')",
                id + 100
            ))
            .await;
        rows.push((id, v));
        rows.push((id + 100, w));
    }
    rows.sort();
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_files_of_each_partition_become_one_with_the_same_rows() {
    let scratch = scratch().await;
    let written = small_files(&scratch, "t", "'format-version' = '2'").await;
    let before = scratch.target("db.t").load().await.unwrap();
    let start = before.metadata().current_snapshot().unwrap().clone();
    let result = rewrite_data_files(&scratch.target("db.t"), &RewriteDataFiles::new())
        .await
        .unwrap();
    assert_eq!(result.rewritten_data_files, 12);
    assert_eq!(result.added_data_files, 2, "one file per partition");
    assert_eq!(result.snapshots.len(), 1);
    assert_eq!(result.failed_data_files, 0);
    assert_eq!(scratch.files("t").await, BTreeMap::from([(0, 2)]));
    assert_eq!(scratch.rows("SELECT id, v FROM db.t").await, written);

    let table = result.table.unwrap();
    let snapshot = table.metadata().current_snapshot().unwrap();
    let summary = snapshot.summary.as_ref().unwrap();
    assert_eq!(summary.operation, Operation::Replace);
    assert_eq!(summary.get("deleted-data-files"), Some("12"));
    assert_eq!(summary.get("added-data-files"), Some("2"));
    assert_eq!(summary.get("total-records"), Some("24"));
    // The new files keep the starting snapshot's data sequence number.
    let tasks = plan_files(table.io(), table.metadata(), snapshot)
        .await
        .unwrap();
    assert!(
        tasks
            .iter()
            .all(|t| t.data_sequence_number == start.sequence_number),
        "{:?}",
        tasks
            .iter()
            .map(|t| t.data_sequence_number)
            .collect::<Vec<_>>()
    );
    // The snapshot before still reads the same rows.
    let old = format!("SELECT id, v FROM db.t VERSION AS OF {}", start.snapshot_id);
    assert_eq!(scratch.rows(&old).await, written);

    // Nothing left to do: the files are one per partition now.
    let again = rewrite_data_files(&scratch.target("db.t"), &RewriteDataFiles::new())
        .await
        .unwrap();
    assert_eq!((again.rewritten_data_files, again.snapshots.len()), (0, 0));
}

/// Merge-on-read deletes (v2 position delete files, one per partition; v3 deletion vectors,
/// one per data file) are applied by the rewrite, and the delete files go with the files
/// they applied to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_are_applied_and_their_files_removed_with_the_rewritten_files() {
    let scratch = scratch().await;
    for version in [2, 3] {
        let table = format!("mor_v{version}");
        let properties =
            format!("'format-version' = '{version}', 'write.delete.mode' = 'merge-on-read'");
        let written = small_files(&scratch, &table, &properties).await;
        scratch
            .run(&format!("DELETE FROM db.{table} WHERE id IN (3, 4, 5)"))
            .await;
        let expected: Vec<(i64, String)> = written
            .into_iter()
            .filter(|(id, _)| ![3, 4, 5].contains(id))
            .collect();
        // 3 and 5 in partition 1, 4 in partition 0.
        let deletes = if version == 2 { 2 } else { 3 };
        assert_eq!(
            scratch.files(&table).await.get(&1),
            Some(&deletes),
            "v{version}"
        );
        let target = scratch.target(&format!("db.{table}"));
        let result = rewrite_data_files(&target, &RewriteDataFiles::new())
            .await
            .unwrap();
        assert_eq!(result.rewritten_data_files, 12, "v{version}");
        assert_eq!(result.removed_delete_files as i64, deletes, "v{version}");
        assert_eq!(
            scratch.files(&table).await,
            BTreeMap::from([(0, 2)]),
            "v{version}: no delete file left"
        );
        let query = format!("SELECT id, v FROM db.{table}");
        assert_eq!(scratch.rows(&query).await, expected, "v{version}");
    }
}

/// Delete files that apply to no live data file (one in a partition without data, a deletion
/// vector of a file that is gone, an equality delete older than every data file) go with
/// `remove-dangling-deletes`, even when no data file needs rewriting; the others stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dangling_delete_files_are_removed_on_request() {
    use crate::spec::{DataContentType, FileFormat, Literal};
    let scratch = scratch().await;
    small_files(&scratch, "d", "'format-version' = '2'").await;
    let table = scratch.target("db.d").load().await.unwrap();
    let spec = table.metadata().default_spec_id;
    let live = {
        let snapshot = table.metadata().current_snapshot().unwrap();
        let tasks = plan_files(table.io(), table.metadata(), snapshot)
            .await
            .unwrap();
        tasks[0].data_file.clone()
    };
    let delete = |name: &str, content, part: i32| {
        let mut file = DataFile::new(
            content,
            format!("/nowhere/{name}.parquet"),
            FileFormat::Parquet,
            1,
            10,
        );
        file.partition = vec![Some(Literal::Int(part))];
        file
    };
    let empty_partition = delete("empty", DataContentType::PositionDeletes, 7);
    let mut gone = delete("gone", DataContentType::PositionDeletes, 0);
    gone.referenced_data_file = Some("/nowhere/gone-data.parquet".into());
    let mut needed = delete("needed", DataContentType::PositionDeletes, 0);
    needed.referenced_data_file = Some(live.file_path.clone());
    let base = table.metadata().current_snapshot_id;
    let delta = RowDelta::new(base).add_delete_files([
        (spec, empty_partition),
        (spec, gone),
        (spec, needed.clone()),
    ]);
    let target = scratch.target("db.d");
    target
        .transaction(table)
        .with_action(delta)
        .commit()
        .await
        .unwrap();
    assert_eq!(scratch.files("d").await.get(&1), Some(&3));

    let options = RewriteDataFiles::new()
        .with_option("min-input-files", "100")
        .unwrap()
        .with_option("delete-ratio-threshold", "1.0")
        .unwrap()
        .with_option("remove-dangling-deletes", "true")
        .unwrap();
    let result = rewrite_data_files(&target, &options).await.unwrap();
    assert_eq!(result.rewritten_data_files, 0);
    assert_eq!(result.removed_delete_files, 2);
    let table = result.table.unwrap();
    let snapshot = table.metadata().current_snapshot().unwrap();
    let tasks = plan_files(table.io(), table.metadata(), snapshot)
        .await
        .unwrap();
    let kept: Vec<&str> = tasks
        .iter()
        .flat_map(|t| t.deletes.iter().map(|d| d.file.file_path.as_str()))
        .collect();
    assert_eq!(kept, vec![needed.file_path.as_str()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sort_strategy_writes_each_file_in_the_order_and_records_it() {
    let scratch = scratch().await;
    small_files(&scratch, "s", "'format-version' = '2'").await;
    scratch
        .run("ALTER TABLE db.s WRITE ORDERED BY v DESC")
        .await;
    let options = RewriteDataFiles::new().with_strategy(Strategy::Sort(None));
    let result = rewrite_data_files(&scratch.target("db.s"), &options)
        .await
        .unwrap();
    assert_eq!(result.added_data_files, 2);
    let table = result.table.unwrap();
    let order_id = table.metadata().default_sort_order_id;
    let snapshot = table.metadata().current_snapshot().unwrap();
    for task in plan_files(table.io(), table.metadata(), snapshot)
        .await
        .unwrap()
    {
        assert_eq!(task.data_file.sort_order_id, Some(order_id));
        let values = column_strings(&task.data_file.file_path, "v");
        let mut sorted = values.clone();
        sorted.sort_by(|a, b| b.cmp(a));
        assert_eq!(values, sorted, "{}", task.data_file.file_path);
        assert_eq!(values.len(), 12);
    }
}

/// v3: the rewritten rows keep their `_row_id` (each row's id as its first file gave it: the
/// file's `first_row_id` plus its position) and their `_last_updated_sequence_number`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v3_rows_keep_their_lineage() {
    let scratch = scratch().await;
    small_files(&scratch, "lineage", "'format-version' = '3'").await;
    let before = scratch.target("db.lineage").load().await.unwrap();
    let snapshot = before.metadata().current_snapshot().unwrap();
    let mut expected = BTreeMap::new();
    for task in plan_files(before.io(), before.metadata(), snapshot)
        .await
        .unwrap()
    {
        let first = task
            .data_file
            .first_row_id
            .expect("v3 files have a first_row_id");
        for (position, id) in column_longs(&task.data_file.file_path, "id")
            .into_iter()
            .enumerate()
        {
            let row_id = first + i64::try_from(position).unwrap();
            expected.insert(id, (row_id, task.data_sequence_number));
        }
    }
    let result = rewrite_data_files(&scratch.target("db.lineage"), &RewriteDataFiles::new())
        .await
        .unwrap();
    let table = result.table.unwrap();
    let snapshot = table.metadata().current_snapshot().unwrap();
    let mut found = BTreeMap::new();
    for task in plan_files(table.io(), table.metadata(), snapshot)
        .await
        .unwrap()
    {
        let path = &task.data_file.file_path;
        let ids = column_longs(path, "id");
        let row_ids = column_longs(path, "_row_id");
        let sequences = column_longs(path, "_last_updated_sequence_number");
        for ((id, row_id), sequence) in ids.into_iter().zip(row_ids).zip(sequences) {
            found.insert(id, (row_id, sequence));
        }
    }
    assert_eq!(found, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_progress_commits_groups_in_several_snapshots() {
    let scratch = scratch().await;
    let written = small_files(&scratch, "p", "'format-version' = '2'").await;
    let options = RewriteDataFiles::new()
        .with_option("partial-progress.enabled", "true")
        .unwrap()
        .with_option("partial-progress.max-commits", "2")
        .unwrap()
        .with_option("max-concurrent-file-group-rewrites", "1")
        .unwrap();
    let result = rewrite_data_files(&scratch.target("db.p"), &options)
        .await
        .unwrap();
    assert_eq!(result.snapshots.len(), 2, "two groups, two commits");
    assert_eq!(result.rewritten_data_files, 12);
    assert_eq!(scratch.rows("SELECT id, v FROM db.p").await, written);
}

/// A cancelled compaction commits nothing and leaves no file behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_compaction_changes_nothing() {
    let scratch = scratch().await;
    small_files(&scratch, "c", "'format-version' = '2'").await;
    let before = scratch.target("db.c").load().await.unwrap();
    let data = std::path::Path::new(&before.metadata().location).join("data");
    let files_before = count_files(&data);
    let cancel = Cancel::new();
    cancel.cancel();
    let options = RewriteDataFiles::new().with_cancel(cancel);
    let err = rewrite_data_files(&scratch.target("db.c"), &options)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Cancelled(_)), "{err}");
    let after = scratch.target("db.c").load().await.unwrap();
    assert_eq!(
        after.metadata().current_snapshot_id,
        before.metadata().current_snapshot_id
    );
    assert_eq!(count_files(&data), files_before);
}

fn count_files(dir: &std::path::Path) -> usize {
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        count += match path.is_dir() {
            true => count_files(&path),
            false => 1,
        };
    }
    count
}

fn read_column(path: &str, name: &str) -> Vec<Arc<dyn Array>> {
    let file = std::fs::File::open(path.trim_start_matches("file://")).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    reader
        .map(|b| {
            let b = b.unwrap();
            Arc::clone(
                b.column_by_name(name)
                    .unwrap_or_else(|| panic!("{name} in {path}")),
            )
        })
        .collect()
}

fn column_longs(path: &str, name: &str) -> Vec<i64> {
    let arrays = read_column(path, name);
    arrays
        .iter()
        .flat_map(|a| a.as_primitive::<Int64Type>().values().to_vec())
        .collect()
}

fn column_strings(path: &str, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for array in read_column(path, name) {
        let array =
            datafusion::arrow::compute::cast(&array, &datafusion::arrow::datatypes::DataType::Utf8)
                .unwrap();
        let array = array.as_string::<i32>();
        out.extend((0..array.len()).map(|i| array.value(i).to_string()));
    }
    out
}

#[test]
fn options_are_checked_by_name_and_value() {
    let err = RewriteDataFiles::new()
        .with_option("min-input-file", "2")
        .unwrap_err();
    assert!(err.to_string().contains("'min-input-file'"), "{err}");
    let err = RewriteDataFiles::new()
        .with_option("rewrite-all", "yes")
        .unwrap_err();
    assert!(err.to_string().contains("true or false"), "{err}");
    let err = RewriteDataFiles::new()
        .with_option("delete-ratio-threshold", "1.5")
        .unwrap_err();
    assert!(err.to_string().contains("ratio"), "{err}");
}

/// `(content, file_format)` of the live delete files of `table`.
async fn delete_formats(scratch: &Scratch, table: &str) -> Vec<String> {
    let query = format!(
        "SELECT file_format FROM db.\"{table}$files\" WHERE content = 1 ORDER BY file_format"
    );
    let mut formats = Vec::new();
    for batch in scratch.run(&query).await {
        let column = datafusion::arrow::compute::cast(
            batch.column(0),
            &datafusion::arrow::datatypes::DataType::Utf8,
        )
        .unwrap();
        let column = column.as_string::<i32>();
        formats.extend((0..column.len()).map(|i| column.value(i).to_string()));
    }
    formats
}

/// v2: five DELETEs leave five position delete files in a partition; they become one, with
/// the same rows deleted. v3 (upgraded from v2): the position delete files and the deletion
/// vectors written since become one vector per data file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn position_deletes_are_merged_and_become_deletion_vectors_on_v3() {
    let scratch = scratch().await;
    let properties = "'format-version' = '2', 'write.delete.mode' = 'merge-on-read'";
    let written = small_files(&scratch, "pd", properties).await;
    let deleted = [1, 3, 5, 7, 9];
    for id in deleted {
        scratch
            .run(&format!("DELETE FROM db.pd WHERE id = {id}"))
            .await;
    }
    let expected: Vec<(i64, String)> = written
        .into_iter()
        .filter(|(id, _)| !deleted.contains(id))
        .collect();
    assert_eq!(delete_formats(&scratch, "pd").await, vec!["PARQUET"; 5]);

    let target = scratch.target("db.pd");
    let result = rewrite_position_delete_files(&target, &RewritePositionDeletes::new())
        .await
        .unwrap();
    assert_eq!(
        (result.rewritten_delete_files, result.added_delete_files),
        (5, 1)
    );
    assert_eq!(delete_formats(&scratch, "pd").await, vec!["PARQUET"]);
    assert_eq!(scratch.rows("SELECT id, v FROM db.pd").await, expected);
    let table = result.table.unwrap();
    let summary = table
        .metadata()
        .current_snapshot()
        .unwrap()
        .summary
        .clone()
        .unwrap();
    assert_eq!(summary.operation, Operation::Replace);
    assert_eq!(summary.get("added-position-deletes"), Some("5"));
    assert_eq!(summary.get("removed-position-deletes"), Some("5"));

    // Fewer than min-input-files: nothing to do on v2.
    let again = rewrite_position_delete_files(&target, &RewritePositionDeletes::new())
        .await
        .unwrap();
    assert_eq!(again.snapshot, None);

    // Upgraded to v3, a delete writes a vector for file of id 11 (merged with its position
    // deletes); the rewrite turns every position delete into vectors.
    scratch
        .run("ALTER TABLE db.pd SET TBLPROPERTIES ('format-version' = '3')")
        .await;
    scratch.run("DELETE FROM db.pd WHERE id = 111").await;
    let expected: Vec<(i64, String)> = expected.into_iter().filter(|(id, _)| *id != 111).collect();
    let result = rewrite_position_delete_files(&target, &RewritePositionDeletes::new())
        .await
        .unwrap();
    assert!(result.snapshot.is_some());
    let formats = delete_formats(&scratch, "pd").await;
    assert!(formats.iter().all(|f| f == "PUFFIN"), "{formats:?}");
    // One vector per data file with deletes: ids 1, 3, 5, 7, 9 and 111 (11's file) are in six
    // files.
    assert_eq!(formats.len(), 6);
    assert_eq!(scratch.rows("SELECT id, v FROM db.pd").await, expected);
}

/// A data file that cannot be read fails the compaction with an error naming it; nothing is
/// committed and no file written for it is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_file_fails_the_compaction_and_leaves_nothing() {
    let scratch = scratch().await;
    small_files(&scratch, "broken", "'format-version' = '2'").await;
    let before = scratch.target("db.broken").load().await.unwrap();
    let snapshot = before.metadata().current_snapshot().unwrap();
    let tasks = plan_files(before.io(), before.metadata(), snapshot)
        .await
        .unwrap();
    let victim = tasks[3].data_file.file_path.clone();
    let path = victim.trim_start_matches("file://");
    let bytes = std::fs::read(path).unwrap();
    std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
    let data = std::path::Path::new(&before.metadata().location).join("data");
    let files_before = count_files(&data);

    let err = rewrite_data_files(&scratch.target("db.broken"), &RewriteDataFiles::new())
        .await
        .unwrap_err();
    let file_name = victim.rsplit('/').next().unwrap();
    assert!(err.to_string().contains(file_name), "{err}");
    let after = scratch.target("db.broken").load().await.unwrap();
    assert_eq!(
        after.metadata().current_snapshot_id,
        before.metadata().current_snapshot_id
    );
    assert_eq!(count_files(&data), files_before);
}
