//! Round trips: batches appended through the write path and read back through the provider.

use std::sync::Arc;

use datafusion::arrow::array::{
    Decimal128Array, Float64Array, Int64Array, RecordBatch, StringViewArray,
    TimestampMicrosecondArray,
};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;

use super::*;
use crate::provider::IcebergTableProvider;
use crate::spec::SnapshotSelector;
use crate::to_arrow::schema_to_arrow;

const DAY_US: i64 = 86_400_000_000;

fn new_table(dir: &std::path::Path, properties: &str) -> String {
    let location = dir.display().to_string();
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    let json = format!(
        r#"{{
  "format-version": 2,
  "table-uuid": "5d6a1a4e-8c2b-4a6b-9a47-6f0a4d3b2c11",
  "location": "{location}",
  "last-sequence-number": 0,
  "last-updated-ms": 1700000000000,
  "last-column-id": 5,
  "current-schema-id": 0,
  "schemas": [{{"type": "struct", "schema-id": 0, "fields": [
    {{"id": 1, "name": "id", "required": true, "type": "long"}},
    {{"id": 2, "name": "category", "required": false, "type": "string"}},
    {{"id": 3, "name": "ts", "required": false, "type": "timestamptz"}},
    {{"id": 4, "name": "amount", "required": false, "type": "decimal(10, 2)"}},
    {{"id": 5, "name": "f", "required": false, "type": "double"}}]}}],
  "default-spec-id": 0,
  "partition-specs": [{{"spec-id": 0, "fields": [
    {{"source-id": 3, "field-id": 1000, "name": "ts_day", "transform": "day"}}]}}],
  "last-partition-id": 1000,
  "default-sort-order-id": 0,
  "sort-orders": [{{"order-id": 0, "fields": []}}],
  "properties": {{{properties}}},
  "current-snapshot-id": -1,
  "snapshots": [],
  "snapshot-log": [],
  "metadata-log": []
}}"#
    );
    std::fs::write(dir.join("metadata/v1.metadata.json"), json).unwrap();
    location
}

/// Rows `ids`, each on day `id % 3` (NULL ts for id 4), with NULL and NaN values mixed in.
fn batch(location: &str, ids: &[i64]) -> RecordBatch {
    let metadata_json = std::fs::read(format!("{location}/metadata/v1.metadata.json")).unwrap();
    let metadata = TableMetadata::parse(&metadata_json).unwrap();
    let schema = Arc::new(schema_to_arrow(metadata.current_schema()).unwrap());
    let category = ids.iter().map(|i| (i % 2 == 0).then(|| format!("c{i}")));
    let ts = ids
        .iter()
        .map(|i| (*i != 4).then_some((i % 3) * DAY_US + i));
    let amount = ids.iter().map(|i| Some(i128::from(*i) * 125 - 300));
    let f = ids.iter().map(|i| match i % 4 {
        0 => None,
        1 => Some(f64::NAN),
        _ => Some(*i as f64 / 8.0),
    });
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ids.to_vec())),
            Arc::new(category.collect::<StringViewArray>()),
            Arc::new(
                ts.collect::<TimestampMicrosecondArray>()
                    .with_timezone("+00:00"),
            ),
            Arc::new(
                amount
                    .collect::<Decimal128Array>()
                    .with_precision_and_scale(10, 2)
                    .unwrap(),
            ),
            Arc::new(f.collect::<Float64Array>()),
        ],
    )
    .unwrap()
}

async fn query(location: &str, sql: &str) -> String {
    let ctx = SessionContext::new();
    let table = Table::load(FileIO::default(), location).await.unwrap();
    let provider = IcebergTableProvider::try_new(table, SnapshotSelector::Current).unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

#[tokio::test]
async fn appended_batches_read_back_exactly_partitioned_by_day() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path(), "");
    let io = FileIO::default();
    let target = WriteTarget::directory(&io, &location).unwrap();
    let first = batch(&location, &[0, 1, 2, 3, 4, 5]);
    let second = batch(&location, &[6, 7, 8]);
    append_batches(&target, std::slice::from_ref(&first), "main")
        .await
        .unwrap();
    let table = append_batches(&target, std::slice::from_ref(&second), "main")
        .await
        .unwrap();

    // The rows, as written (the source batches printed the same way).
    let expected = pretty_format_batches(&[first, second]).unwrap().to_string();
    let got = query(&location, "SELECT * FROM t ORDER BY id").await;
    assert_eq!(got, expected);

    let m = table.metadata();
    assert_eq!(m.snapshots.len(), 2);
    let list = crate::scan::read_manifest_list(&io, m, &m.snapshots[1])
        .await
        .unwrap();
    // One new manifest for the second commit, the first commit's manifest reused.
    assert_eq!(list.len(), 2);
    let manifests = crate::scan::read_manifest(&io, m, &list[0]).await.unwrap();
    let days: std::collections::BTreeSet<String> = manifests
        .entries
        .iter()
        .map(|e| format!("{:?}", e.data_file.partition))
        .collect();
    assert_eq!(days.len(), 3, "{days:?}"); // ids 6, 7, 8 are on days 0, 1, 2

    // Partition pruning works on what was written: day 1 is in one file per commit.
    let one_day = query(
        &location,
        "SELECT count(*) AS n FROM t WHERE ts >= TIMESTAMP '1970-01-02T00:00:00Z' \
         AND ts < TIMESTAMP '1970-01-03T00:00:00Z'",
    )
    .await;
    // Day 1 holds ids 1 and 7 (id 4's timestamp is NULL).
    assert!(one_day.contains("| 2 |"), "{one_day}");
}

#[tokio::test]
async fn small_target_file_sizes_roll_files() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path(), r#""write.target-file-size-bytes": "1""#);
    let target = WriteTarget::directory(&FileIO::default(), &location).unwrap();
    let batches: Vec<RecordBatch> = (0..4).map(|i| batch(&location, &[i * 3])).collect();
    let table = append_batches(&target, &batches, "main").await.unwrap();
    let summary = table.metadata().snapshots[0].summary.as_ref().unwrap();
    // Every batch (day 0) fills a file past one byte, so each becomes its own file.
    assert_eq!(summary.get("added-data-files"), Some("4"));
    assert_eq!(summary.get("added-records"), Some("4"));
    let got = query(&location, "SELECT count(*) AS n, sum(id) AS s FROM t").await;
    assert!(got.contains("| 4 | 18 |"), "{got}");
}

/// The `.parquet` files under `dir`, recursively.
fn parquet_files(dir: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .map(|e| e.unwrap().path())
        .map(|p| match p.is_dir() {
            true => parquet_files(&p),
            false => usize::from(p.extension().is_some_and(|e| e == "parquet")),
        })
        .sum()
}

#[tokio::test]
async fn beyond_the_open_file_limit_the_least_recently_written_file_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path(), "");
    let io = FileIO::default();
    let table = Table::load(io.clone(), &location).await.unwrap();
    let m = table.metadata();
    // Days 0, 1, 0, 2, 1: ids 0, 1, 3, 2, 7 (day = id % 3).
    let batches: Vec<RecordBatch> = [0, 1, 3, 2, 7]
        .iter()
        .map(|i| batch(&location, &[*i]))
        .collect();

    let mut writer = AppendWriter::new(&io, m, m.current_schema()).unwrap();
    for b in &batches {
        writer.write(b).await.unwrap();
    }
    assert_eq!(writer.rows_written(), 5);
    // Unbounded enough: one file per day.
    assert_eq!(writer.finish().await.unwrap().len(), 3);

    let mut writer = AppendWriter::new(&io, m, m.current_schema())
        .unwrap()
        .with_max_open_files(2);
    for b in &batches {
        writer.write(b).await.unwrap();
    }
    let files = writer.finish().await.unwrap();
    // Day 2 arrives with days 0 and 1 open: day 1 (written least recently) is closed with
    // its one row; day 1's second row then closes day 0 (now least recent, two rows) and
    // opens a second day-1 file.
    let mut counts: Vec<(String, i64)> = files
        .iter()
        .map(|(_, f)| (format!("{:?}", f.partition), f.record_count))
        .collect();
    counts.sort();
    let day = |d: i32| format!("{:?}", vec![Some(Literal::Date(d))]);
    let mut expected = vec![(day(0), 2), (day(1), 1), (day(1), 1), (day(2), 1)];
    expected.sort();
    assert_eq!(counts, expected);

    let mut writer = AppendWriter::new(&io, m, m.current_schema())
        .unwrap()
        .with_max_open_files(1);
    for b in &batches {
        writer.write(b).await.unwrap();
    }
    // One open file: every change of day closes the previous file.
    let files = writer.finish().await.unwrap();
    assert_eq!(files.len(), 5);
    assert!(
        files
            .iter()
            .all(|(spec, f)| *spec == 0 && f.record_count == 1)
    );
    // Nothing was committed: the writer only wrote files (3 + 4 + 5).
    assert_eq!(parquet_files(&dir.path().join("data")), 12);
    assert!(
        Table::load(io.clone(), &location)
            .await
            .unwrap()
            .metadata()
            .snapshots
            .is_empty()
    );
}

#[tokio::test]
async fn abort_and_a_failed_commit_delete_the_files_written() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path(), r#""write.target-file-size-bytes": "1""#);
    let io = FileIO::default();
    let table = Table::load(io.clone(), &location).await.unwrap();
    let m = table.metadata();

    let mut writer = AppendWriter::new(&io, m, m.current_schema()).unwrap();
    writer.write(&batch(&location, &[0, 1, 2])).await.unwrap();
    writer.write(&batch(&location, &[3])).await.unwrap();
    assert_eq!(parquet_files(&dir.path().join("data")), 4);
    writer.abort().await;
    assert_eq!(parquet_files(&dir.path().join("data")), 0);

    // A commit that fails (a partition spec the table does not have) deletes its files.
    let mut writer = AppendWriter::new(&io, m, m.current_schema()).unwrap();
    writer.write(&batch(&location, &[0, 1])).await.unwrap();
    let files: Vec<(i32, DataFile)> = writer
        .finish()
        .await
        .unwrap()
        .into_iter()
        .map(|(_, f)| (99, f))
        .collect();
    assert_eq!(parquet_files(&dir.path().join("data")), 2);
    let target = WriteTarget::directory(&io, &location).unwrap();
    let err = commit_files(&target, table.clone(), files, "main")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("partition spec 99"), "{err}");
    assert_eq!(parquet_files(&dir.path().join("data")), 0);
    let reloaded = Table::load(io, &location).await.unwrap();
    assert!(reloaded.metadata().snapshots.is_empty());
}

#[tokio::test]
async fn a_bad_target_file_size_is_an_error_naming_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path(), r#""write.target-file-size-bytes": "big""#);
    let table = Table::load(FileIO::default(), &location).await.unwrap();
    let m = table.metadata();
    let err = AppendWriter::new(&FileIO::default(), m, m.current_schema()).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("write.target-file-size-bytes")
            && message.contains("'big'")
            && message.contains(&location),
        "{message}"
    );
}

/// A bad commit property fails the commit before anything is committed, with the key and
/// the value named; the files written are deleted, and reads do not use the property.
#[tokio::test]
async fn a_bad_commit_property_fails_the_append_and_not_the_reads() {
    for key in [
        "commit.retry.num-retries",
        "write.metadata.previous-versions-max",
        "write.metadata.delete-after-commit.enabled",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let location = new_table(dir.path(), "");
        let io = FileIO::default();
        let target = WriteTarget::directory(&io, &location).unwrap();
        let first = batch(&location, &[0, 1, 2]);
        append_batches(&target, std::slice::from_ref(&first), "main")
            .await
            .unwrap();
        // Set the property in the current metadata file, as another engine might have.
        let current = dir.path().join("metadata/v2.metadata.json");
        let mut json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&current).unwrap()).unwrap();
        json["properties"][key] = "banana".into();
        std::fs::write(&current, serde_json::to_vec(&json).unwrap()).unwrap();
        let metadata_files = || {
            std::fs::read_dir(dir.path().join("metadata"))
                .unwrap()
                .count()
        };
        let files_before = (parquet_files(&dir.path().join("data")), metadata_files());

        let err = append_batches(&target, &[batch(&location, &[3, 4])], "main")
            .await
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{key}: {err}");
        let message = err.to_string();
        assert!(
            message.contains(key) && message.contains("'banana'"),
            "{message}"
        );
        assert_eq!(
            (parquet_files(&dir.path().join("data")), metadata_files()),
            files_before,
            "{key}: the failed append left no file behind"
        );
        let expected = pretty_format_batches(std::slice::from_ref(&first))
            .unwrap()
            .to_string();
        assert_eq!(
            query(&location, "SELECT * FROM t ORDER BY id").await,
            expected
        );
    }
}

/// A writer that dies after writing its files and before the swap (nothing cleans up) leaves
/// files no metadata reaches: readers still see the last commit, and the next commit neither
/// sees nor loses anything.
#[tokio::test]
async fn a_crash_between_the_files_and_the_swap_leaves_only_unreferenced_files() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path(), "");
    let io = FileIO::default();
    let target = || WriteTarget::directory(&io, &location).unwrap();
    let committed = append_batches(&target(), &[batch(&location, &[1, 2])], "main")
        .await
        .unwrap();
    // The crash: the data files are written, the metadata pointer never moves.
    let m = committed.metadata();
    let mut writer = AppendWriter::new(&io, m, m.current_schema()).unwrap();
    writer.write(&batch(&location, &[100, 101])).await.unwrap();
    let orphans: Vec<String> = writer
        .finish()
        .await
        .unwrap()
        .into_iter()
        .map(|(_, f)| f.file_path)
        .collect();
    assert!(!orphans.is_empty());
    assert!(orphans.iter().all(|p| std::path::Path::new(p).exists()));
    // Readers see the last commit only; no metadata reaches the orphans.
    let reloaded = Table::load(io.clone(), &location).await.unwrap();
    assert_eq!(reloaded.metadata_location(), committed.metadata_location());
    let reachable = crate::write::reachable_files(&reloaded).await.unwrap();
    assert!(
        orphans.iter().all(|p| !reachable.contains(p)),
        "{reachable:?}"
    );
    assert_eq!(
        query(&location, "SELECT count(*) AS n FROM t").await,
        count_table(2)
    );
    // The next writer commits on top of the last commit, not of the orphans.
    append_batches(&target(), &[batch(&location, &[3])], "main")
        .await
        .unwrap();
    assert_eq!(
        query(&location, "SELECT count(*) AS n FROM t").await,
        count_table(3)
    );
    let reloaded = Table::load(io, &location).await.unwrap();
    let reachable = crate::write::reachable_files(&reloaded).await.unwrap();
    assert!(orphans.iter().all(|p| !reachable.contains(p)));
}

/// `query`'s rendering of a one-row `n` column.
fn count_table(n: i64) -> String {
    format!("+---+\n| n |\n+---+\n| {n} |\n+---+")
}
