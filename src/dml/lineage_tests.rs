//! Tests of `lineage`: resolving copied rows' lineage, and the lineage a v3 table's rows keep
//! through copy-on-write DELETE, read back from the Parquet files by field id.

use std::collections::BTreeMap;

use datafusion::arrow::array::{Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::prelude::SessionContext;

use super::*;
use crate::catalog::SqliteCatalog;
use crate::scan::plan_files;
use crate::spec::{DataContentType, DataFile, FileFormat};
use crate::to_arrow::FIELD_ID_KEY;
use crate::{FileIO, Relocation};

fn task(path: &str, first_row_id: Option<i64>, sequence: i64) -> FileScanTask {
    let mut data_file = DataFile::new(DataContentType::Data, path, FileFormat::Parquet, 10, 1);
    data_file.first_row_id = first_row_id;
    FileScanTask {
        data_file,
        partition_spec_id: 0,
        data_sequence_number: sequence,
        deletes: Vec::new(),
    }
}

fn copied_rows(
    row_ids: Vec<Option<i64>>,
    sequences: Vec<Option<i64>>,
    files: Vec<&str>,
) -> RecordBatch {
    let long = |name: &str| Field::new(name, DataType::Int64, true);
    let schema = ArrowSchema::new(vec![
        long(ROW_ID),
        long(LAST_UPDATED_SEQUENCE_NUMBER),
        Field::new("_file", DataType::Utf8, false),
        Field::new("_pos", DataType::Int64, false),
    ]);
    let positions: Vec<i64> = vec![0, 3, 1, 2];
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int64Array::from(row_ids)),
            Arc::new(Int64Array::from(sequences)),
            Arc::new(StringArray::from(files)),
            Arc::new(Int64Array::from(positions)),
        ],
    )
    .unwrap()
}

/// Stored values are kept; NULLs inherit `first_row_id + _pos` and the data sequence number;
/// a file without a `first_row_id` (from before an upgrade) leaves `_row_id` NULL.
#[test]
fn stored_lineage_is_kept_and_nulls_inherit_from_the_file() {
    let inherited = Inherited::new(&[task("a", Some(100), 4), task("b", None, 2)]);
    let batch = copied_rows(
        vec![None, Some(7), None, None],
        vec![None, Some(1), None, Some(3)],
        vec!["a", "a", "b", "b"],
    );
    let resolved = inherited.resolve(batch).unwrap();
    let ids = resolved.column(0).as_primitive::<Int64Type>();
    let sequences = resolved.column(1).as_primitive::<Int64Type>();
    let ids: Vec<Option<i64>> = ids.iter().collect();
    let sequences: Vec<Option<i64>> = sequences.iter().collect();
    assert_eq!(ids, [Some(100), Some(7), None, None]);
    assert_eq!(sequences, [Some(4), Some(1), Some(2), Some(3)]);
}

/// A row of a file the rewrite did not plan is an error, not a row without lineage.
#[test]
fn a_row_of_an_unplanned_file_is_an_error() {
    let inherited = Inherited::new(&[task("a", Some(0), 1)]);
    let batch = copied_rows(vec![None; 4], vec![None; 4], vec!["a", "a", "z", "z"]);
    let err = inherited.resolve(batch).unwrap_err();
    assert!(err.to_string().contains("data file z"), "{err}");
}

/// The lineage columns carry their reserved ids, after the table's.
#[test]
fn lineage_columns_follow_the_table_columns_with_reserved_ids() {
    let schema = Schema::new(1, vec![NestedField::required(1, "id", PrimitiveType::Long)]);
    let with = with_lineage_columns(&schema);
    let ids: Vec<i32> = with.columns().iter().map(|c| c.id).collect();
    assert_eq!(ids, [1, 2_147_483_540, 2_147_483_539]);
    assert!(with.columns()[1..].iter().all(|c| !c.required));
}

async fn run(ctx: &SessionContext, statements: &[&str]) {
    for statement in statements {
        crate::sql::sql(ctx, statement)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"))
            .collect()
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
}

/// Each live row's `id` column with its `_row_id` and `_last_updated_sequence_number` as a
/// reader derives them: the Parquet columns of the reserved field ids when stored and not
/// NULL, else the file's `first_row_id + _pos` and data sequence number. Rows a deletion
/// vector or position delete removes are skipped.
async fn lineage(catalog: &SqliteCatalog, table: &str) -> BTreeMap<i64, (Option<i64>, i64)> {
    let table = catalog.load_table("db", table).await.unwrap();
    let metadata = table.metadata();
    let snapshot = metadata.current_snapshot().unwrap();
    let tasks = plan_files(table.io(), metadata, snapshot).await.unwrap();
    let deleted = crate::scan::deletes::positions::load(table.io(), &tasks)
        .await
        .unwrap();
    let mut rows = BTreeMap::new();
    for task in tasks {
        let key = crate::io::location_key(table.io(), &task.data_file.file_path);
        let dropped = deleted.get(&key).cloned().unwrap_or_default();
        let path = task.data_file.file_path.trim_start_matches("file://");
        let file = std::fs::File::open(path).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        let mut position = 0;
        for batch in reader {
            let batch = batch.unwrap();
            let by_id = |id: i32| {
                batch.schema().fields().iter().position(|f| {
                    f.metadata().get(FIELD_ID_KEY).map(String::as_str) == Some(&id.to_string())
                })
            };
            let ids = batch
                .column(by_id(1).unwrap())
                .as_primitive::<Int64Type>()
                .clone();
            let column =
                |id| by_id(id).map(|c| batch.column(c).as_primitive::<Int64Type>().clone());
            let (stored_ids, stored_sequences) = (
                column(ROW_ID_FIELD_ID),
                column(LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID),
            );
            for row in 0..batch.num_rows() {
                if dropped.contains(position as u64) {
                    position += 1;
                    continue;
                }
                let value = |c: &Option<Int64Array>| c.as_ref().and_then(|c| stored(c, row));
                let row_id = value(&stored_ids)
                    .or(task.data_file.first_row_id.map(|first| first + position));
                let sequence = value(&stored_sequences).unwrap_or(task.data_sequence_number);
                rows.insert(ids.value(row), (row_id, sequence));
                position += 1;
            }
        }
    }
    rows
}

/// A copy-on-write DELETE of a v3 table rewrites the files it touches; every row left keeps
/// the `_row_id` and `_last_updated_sequence_number` it had, stored explicitly in the new
/// file, including rows a second rewrite copies again. UPDATE and MERGE keep the ids of the
/// rows they change and give them the commit's sequence number; MERGE's inserts get new ids.
/// A v2 table's rewrite stores none.
#[tokio::test]
async fn copy_on_write_changes_keep_every_rows_lineage() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("catalog.db");
    let catalog = SqliteCatalog::create(&db, "default", FileIO::default()).unwrap();
    let ctx = SessionContext::new();
    crate::session::register_catalog_as_default(&ctx, &db, Relocation::default())
        .await
        .unwrap();
    crate::sql::register(&ctx);
    run(
        &ctx,
        &[
            "CREATE SCHEMA db",
            "CREATE TABLE db.t (id BIGINT NOT NULL, n BIGINT) TBLPROPERTIES ('format-version' = '3')",
            "INSERT INTO db.t VALUES (1, 10), (2, 20), (3, 30), (4, 40)",
            "INSERT INTO db.t VALUES (5, 50), (6, 60), (7, 70)",
        ],
    )
    .await;
    let before = lineage(&catalog, "t").await;
    let expected: Vec<Option<i64>> = (0..7).map(Some).collect();
    assert_eq!(before.values().map(|v| v.0).collect::<Vec<_>>(), expected);

    run(&ctx, &["DELETE FROM db.t WHERE id = 2"]).await;
    let after = lineage(&catalog, "t").await;
    let mut kept = before.clone();
    kept.remove(&2);
    assert_eq!(after, kept);

    // Copied again: the stored values are copied, not derived from the newer file.
    run(&ctx, &["DELETE FROM db.t WHERE id IN (3, 6)"]).await;
    let again = lineage(&catalog, "t").await;
    kept.remove(&3);
    kept.remove(&6);
    assert_eq!(again, kept);

    // UPDATE: the new version keeps the row's id and takes the commit's sequence number
    // (5: two inserts, two deletes, then this); the row copied beside it keeps its own.
    run(&ctx, &["UPDATE db.t SET n = 41 WHERE id = 4"]).await;
    let updated = lineage(&catalog, "t").await;
    kept.insert(4, (Some(3), 5));
    assert_eq!(updated, kept);

    // MERGE: the updated row keeps its id, the inserted one gets a new id.
    run(
        &ctx,
        &[
            "CREATE TABLE db.s (id BIGINT NOT NULL, n BIGINT)",
            "INSERT INTO db.s VALUES (5, 0), (8, 80)",
            "MERGE INTO db.t t USING db.s s ON t.id = s.id \
             WHEN MATCHED THEN UPDATE SET n = s.n \
             WHEN NOT MATCHED THEN INSERT (id, n) VALUES (s.id, s.n)",
        ],
    )
    .await;
    let merged = lineage(&catalog, "t").await;
    let (inserted_id, inserted_sequence) = merged[&8];
    kept.insert(5, (Some(4), 6));
    kept.insert(8, (inserted_id, 6));
    assert_eq!(merged, kept);
    assert!(inserted_id.is_some_and(|id| id >= 7), "{inserted_id:?}");
    assert_eq!(inserted_sequence, 6);

    // v2: no lineage columns are written.
    run(
        &ctx,
        &[
            "CREATE TABLE db.v (id BIGINT NOT NULL, n BIGINT) TBLPROPERTIES ('format-version' = '2')",
            "INSERT INTO db.v VALUES (1, 10), (2, 20)",
            "DELETE FROM db.v WHERE id = 1",
        ],
    )
    .await;
    let table = catalog.load_table("db", "v").await.unwrap();
    let snapshot = table.metadata().current_snapshot().unwrap();
    let tasks = plan_files(table.io(), table.metadata(), snapshot)
        .await
        .unwrap();
    let path = tasks[0].data_file.file_path.trim_start_matches("file://");
    let reader =
        ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap()).unwrap();
    assert_eq!(reader.schema().fields().len(), 2);
}

/// The number of live deletion vectors and of data files of the table's current snapshot.
async fn vectors_and_files(catalog: &SqliteCatalog, table: &str) -> (usize, usize) {
    let table = catalog.load_table("db", table).await.unwrap();
    let snapshot = table.metadata().current_snapshot().unwrap();
    let tasks = plan_files(table.io(), table.metadata(), snapshot)
        .await
        .unwrap();
    let vectors = tasks
        .iter()
        .flat_map(|t| &t.deletes)
        .filter(|d| d.is_deletion_vector())
        .count();
    (vectors, tasks.len())
}

/// Merge-on-read on a v3 table: DELETE leaves the other rows of a file where they are (their
/// lineage is what the file gives them); UPDATE and MERGE mask the old versions with deletion
/// vectors and write the new ones, which keep the ids of the rows they replace and take the
/// commit's sequence number; MERGE's inserts get new ids.
#[tokio::test]
async fn merge_on_read_changes_keep_every_rows_lineage() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("catalog.db");
    let catalog = SqliteCatalog::create(&db, "default", FileIO::default()).unwrap();
    let ctx = SessionContext::new();
    crate::session::register_catalog_as_default(&ctx, &db, Relocation::default())
        .await
        .unwrap();
    crate::sql::register(&ctx);
    run(
        &ctx,
        &[
            "CREATE SCHEMA db",
            "CREATE TABLE db.t (id BIGINT NOT NULL, n BIGINT) TBLPROPERTIES (\
             'format-version' = '3', 'write.delete.mode' = 'merge-on-read', \
             'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')",
            "INSERT INTO db.t VALUES (1, 10), (2, 20), (3, 30), (4, 40)",
            "INSERT INTO db.t VALUES (5, 50), (6, 60), (7, 70)",
        ],
    )
    .await;
    let mut kept = lineage(&catalog, "t").await;
    let expected: Vec<Option<i64>> = (0..7).map(Some).collect();
    assert_eq!(kept.values().map(|v| v.0).collect::<Vec<_>>(), expected);

    run(&ctx, &["DELETE FROM db.t WHERE id IN (2, 6)"]).await;
    assert_eq!(vectors_and_files(&catalog, "t").await, (2, 2));
    kept.remove(&2);
    kept.remove(&6);
    assert_eq!(lineage(&catalog, "t").await, kept);

    // Sequence numbers: two inserts, the delete, then this update (4).
    run(&ctx, &["UPDATE db.t SET n = n + 1 WHERE id IN (3, 7)"]).await;
    assert_eq!(vectors_and_files(&catalog, "t").await, (2, 3));
    kept.insert(3, (Some(2), 4));
    kept.insert(7, (Some(6), 4));
    assert_eq!(lineage(&catalog, "t").await, kept);

    // The updated row 3 is updated again from the new file: it still keeps its first id.
    run(
        &ctx,
        &[
            "CREATE TABLE db.s (id BIGINT NOT NULL, n BIGINT)",
            "INSERT INTO db.s VALUES (3, 0), (5, 0), (8, 80)",
            "MERGE INTO db.t t USING db.s s ON t.id = s.id \
             WHEN MATCHED THEN UPDATE SET n = s.n \
             WHEN NOT MATCHED THEN INSERT (id, n) VALUES (s.id, s.n)",
        ],
    )
    .await;
    let merged = lineage(&catalog, "t").await;
    let (inserted_id, inserted_sequence) = merged[&8];
    kept.insert(3, (Some(2), 5));
    kept.insert(5, (Some(4), 5));
    kept.insert(8, (inserted_id, 5));
    assert_eq!(merged, kept);
    assert!(inserted_id.is_some_and(|id| id >= 7), "{inserted_id:?}");
    assert_eq!(inserted_sequence, 5);
}
