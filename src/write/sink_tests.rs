//! INSERT INTO through SQL: a table created here (day-partitioned, with a required column, a
//! double column and a struct with a required child) and copies of the PyIceberg fixtures
//! (`tests/fixtures/pyiceberg/wh1`: refs, deletes, the SQLite catalog).

use crate::catalog::test_support::copy_dir;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Int64Type, UInt64Type};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::io::{FileIO, Relocation};
use crate::provider::IcebergTableProvider;
use crate::scan::{read_manifest, read_manifest_list};
use crate::spec::{Literal, SnapshotSelector, TableMetadata};
use crate::table::{Table, TableOptions};
use crate::write::WriteTarget;

/// 2024-01-01 in days since 1970-01-01: 54 years with 13 leap days (1972..=2020).
const JAN_1_2024: i32 = 54 * 365 + 13;

/// A new, empty v2 table at `dir`: `id long required, category string, ts timestamptz,
/// f double, s struct<x int required>`, partitioned by `day(ts)`.
fn new_table(dir: &Path, properties: &str) -> String {
    let location = dir.display().to_string();
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    let json = format!(
        r#"{{
  "format-version": 2,
  "table-uuid": "0d6a1a4e-8c2b-4a6b-9a47-6f0a4d3b2c12",
  "location": "{location}",
  "last-sequence-number": 0,
  "last-updated-ms": 1700000000000,
  "last-column-id": 6,
  "current-schema-id": 0,
  "schemas": [{{"type": "struct", "schema-id": 0, "fields": [
    {{"id": 1, "name": "id", "required": true, "type": "long"}},
    {{"id": 2, "name": "category", "required": false, "type": "string"}},
    {{"id": 3, "name": "ts", "required": false, "type": "timestamptz"}},
    {{"id": 4, "name": "f", "required": false, "type": "double"}},
    {{"id": 5, "name": "s", "required": false, "type": {{"type": "struct", "fields": [
      {{"id": 6, "name": "x", "required": true, "type": "int"}}]}}}}]}}],
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

/// A session with `t` = the table at `location`, opened for writing.
async fn session(location: &str, batch_size: usize) -> (SessionContext, IcebergTableProvider) {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_batch_size(batch_size));
    let provider = IcebergTableProvider::open(&ctx, location, TableOptions::default())
        .await
        .unwrap();
    ctx.register_table("t", Arc::new(provider.clone())).unwrap();
    (ctx, provider)
}

async fn run(ctx: &SessionContext, sql: &str) -> datafusion::error::Result<Vec<RecordBatch>> {
    ctx.sql(sql).await?.collect().await
}

/// The row count an INSERT returns.
async fn insert(ctx: &SessionContext, sql: &str) -> u64 {
    let batches = run(ctx, sql).await.unwrap();
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0].num_rows(), 1);
    batches[0].column(0).as_primitive::<UInt64Type>().value(0)
}

async fn show(ctx: &SessionContext, sql: &str) -> String {
    pretty_format_batches(&run(ctx, sql).await.unwrap())
        .unwrap()
        .to_string()
}

async fn count(ctx: &SessionContext, table: &str) -> i64 {
    let batches = run(ctx, &format!("SELECT count(*) FROM {table}"))
        .await
        .unwrap();
    batches[0].column(0).as_primitive::<Int64Type>().value(0)
}

/// Files under `dir`, recursively, with `extension`.
fn files(dir: &Path, extension: &str) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files(&path, extension));
        } else if path.to_string_lossy().ends_with(extension) {
            found.push(path.display().to_string());
        }
    }
    found.sort();
    found
}

fn summary(metadata: &TableMetadata, key: &str) -> String {
    let snapshot = metadata.current_snapshot().unwrap();
    snapshot
        .summary
        .as_ref()
        .unwrap()
        .get(key)
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn insert_values_then_select_reads_back_nulls_nan_and_a_second_commit_reuses_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path(), "");
    let (ctx, provider) = session(&location, 8192).await;

    let n = insert(
        &ctx,
        "INSERT INTO t VALUES \
         (1, 'a', TIMESTAMP '2024-01-01T10:00:00Z', 1.5, NULL), \
         (2, NULL, TIMESTAMP '2024-01-02T11:00:00Z', 'NaN', NULL), \
         (3, 'c', NULL, NULL, NULL)",
    )
    .await;
    assert_eq!(n, 3);
    // The provider registered before the INSERT reads the new snapshot.
    let first = provider.table();
    assert_eq!(first.metadata().snapshots.len(), 1);
    assert_eq!(provider.snapshot_id(), first.metadata().current_snapshot_id);
    assert_eq!(summary(first.metadata(), "added-records"), "3");
    assert_eq!(summary(first.metadata(), "total-records"), "3");
    assert_eq!(summary(first.metadata(), "added-data-files"), "3");

    let n = insert(
        &ctx,
        "INSERT INTO t SELECT id + 10, upper(category), ts, f * 2, s FROM t WHERE id <> 2",
    )
    .await;
    assert_eq!(n, 2);
    let got = show(
        &ctx,
        "SELECT id, category, CAST(ts AS VARCHAR) AS ts, f, isnan(f) AS nan, \
         s IS NULL AS no_s FROM t ORDER BY id",
    )
    .await;
    let expected = "\
+----+----------+----------------------+-----+-------+------+
| id | category | ts                   | f   | nan   | no_s |
+----+----------+----------------------+-----+-------+------+
| 1  | a        | 2024-01-01T10:00:00Z | 1.5 | false | true |
| 2  |          | 2024-01-02T11:00:00Z | NaN | true  | true |
| 3  | c        |                      |     |       | true |
| 11 | A        | 2024-01-01T10:00:00Z | 3.0 | false | true |
| 13 | C        |                      |     |       | true |
+----+----------+----------------------+-----+-------+------+";
    assert_eq!(got, expected);
    assert_eq!(
        show(&ctx, "SELECT count(*) AS n FROM t WHERE category IS NULL").await,
        "+---+\n| n |\n+---+\n| 1 |\n+---+"
    );

    let table = provider.table();
    let m = table.metadata();
    assert_eq!(m.snapshots.len(), 2);
    assert_eq!(m.last_sequence_number, 2);
    assert_eq!(summary(m, "added-records"), "2");
    assert_eq!(summary(m, "total-records"), "5");
    let second = m.current_snapshot().unwrap();
    assert_eq!(
        second.parent_snapshot_id,
        first.metadata().current_snapshot_id
    );
    // One new manifest per commit; the first commit's manifest is reused as it was.
    let io = table.io();
    let old = read_manifest_list(io, m, first.metadata().current_snapshot().unwrap())
        .await
        .unwrap();
    let new = read_manifest_list(io, m, second).await.unwrap();
    assert_eq!(old.len(), 1);
    assert_eq!(new.len(), 2);
    assert!(new.iter().any(|f| f.manifest_path == old[0].manifest_path));
    assert!(
        new.iter()
            .any(|f| f.added_snapshot_id == second.snapshot_id)
    );
    // A directory table: the next vN.metadata.json.
    assert!(table.metadata_location().ends_with("/v3.metadata.json"));
}

#[tokio::test]
async fn rows_of_several_days_land_in_one_file_per_day_with_their_partition_tuples() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path(), "");
    let (ctx, provider) = session(&location, 8192).await;
    let n = insert(
        &ctx,
        "INSERT INTO t (id, ts) VALUES \
         (1, TIMESTAMP '2024-01-01T00:00:00Z'), (2, TIMESTAMP '2024-01-03T23:59:59Z'), \
         (3, TIMESTAMP '2024-01-01T23:00:00Z'), (4, NULL), (5, TIMESTAMP '2024-01-03T01:00:00Z')",
    )
    .await;
    assert_eq!(n, 5);
    let table = provider.table();
    let m = table.metadata();
    let list = read_manifest_list(table.io(), m, m.current_snapshot().unwrap())
        .await
        .unwrap();
    assert_eq!(list.len(), 1);
    let manifest = read_manifest(table.io(), m, &list[0]).await.unwrap();
    let mut by_day: Vec<(Option<Literal>, i64, bool)> = manifest
        .entries
        .iter()
        .map(|e| {
            let file = &e.data_file;
            let dir_named = match file.partition[0] {
                Some(Literal::Date(d)) if d == JAN_1_2024 + 2 => {
                    file.file_path.contains("ts_day=2024-01-03/")
                }
                Some(Literal::Date(d)) if d == JAN_1_2024 => {
                    file.file_path.contains("ts_day=2024-01-01/")
                }
                None => file.file_path.contains("ts_day=null/"),
                _ => false,
            };
            (file.partition[0].clone(), file.record_count, dir_named)
        })
        .collect();
    by_day.sort_by_key(|(day, _, _)| format!("{day:?}"));
    let mut expected = vec![
        (Some(Literal::Date(JAN_1_2024)), 2, true),
        (Some(Literal::Date(JAN_1_2024 + 2)), 2, true),
        (None, 1, true),
    ];
    expected.sort_by_key(|(day, _, _)| format!("{day:?}"));
    assert_eq!(by_day, expected);
    assert_eq!(summary(m, "changed-partition-count"), "3");
    // Partition pruning on what was written: one day, one file.
    let one_day = show(
        &ctx,
        "SELECT id FROM t WHERE ts >= TIMESTAMP '2024-01-03T00:00:00Z' ORDER BY id",
    )
    .await;
    assert_eq!(one_day, "+----+\n| id |\n+----+\n| 2  |\n| 5  |\n+----+");
}

#[tokio::test]
async fn a_tiny_target_file_size_rolls_a_file_after_every_batch() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path(), r#""write.target-file-size-bytes": "1""#);
    // Batches of two rows: every batch fills a file past one byte.
    let (ctx, provider) = session(&location, 2).await;
    let n = insert(
        &ctx,
        "INSERT INTO t (id, ts) SELECT value, TIMESTAMP '2024-01-01T00:00:00Z' FROM range(6)",
    )
    .await;
    assert_eq!(n, 6);
    // EXPLAIN ANALYZE runs the insert and shows the sink's counts.
    let analyzed = show(
        &ctx,
        "EXPLAIN ANALYZE INSERT INTO t (id, ts) \
         SELECT value, TIMESTAMP '2024-01-02T00:00:00Z' FROM range(3)",
    )
    .await;
    assert!(analyzed.contains("IcebergSink"), "{analyzed}");
    assert!(analyzed.contains("rows_inserted=3"), "{analyzed}");
    assert!(analyzed.contains("data_files_written=2"), "{analyzed}");

    let table = provider.table();
    let m = table.metadata();
    assert_eq!(m.snapshots.len(), 2);
    let first = m.snapshots[0].summary.as_ref().unwrap();
    assert_eq!(first.get("added-data-files"), Some("3"));
    assert_eq!(first.get("added-records"), Some("6"));
    assert_eq!(summary(m, "added-data-files"), "2");
    assert_eq!(summary(m, "total-records"), "9");
    assert_eq!(files(&dir.path().join("data"), ".parquet").len(), 5);
    assert_eq!(
        show(&ctx, "SELECT count(*) AS n, sum(id) AS s FROM t").await,
        "+---+----+\n| n | s  |\n+---+----+\n| 9 | 18 |\n+---+----+"
    );
}

#[tokio::test]
async fn a_null_in_a_required_column_is_refused_and_the_table_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    // Files roll after every batch, so the failed INSERT below has complete files on disk.
    let location = new_table(dir.path(), r#""write.target-file-size-bytes": "1""#);
    let (ctx, provider) = session(&location, 2).await;
    // `register` adds the rule that leaves VALUES' NULLs to the sink (see below).
    crate::sql::register(&ctx);
    assert_eq!(insert(&ctx, "INSERT INTO t (id) VALUES (1)").await, 1);
    let before = files(dir.path(), "");

    let err = run(&ctx, "INSERT INTO t (id, category) VALUES (NULL, 'x')")
        .await
        .unwrap_err()
        .to_string();
    // DataFusion would build the VALUES rows with the table's nullability and refuse this one
    // naming `column1`; `ValuesTypes` leaves it to the sink, which names the column.
    assert!(err.contains("column id is required"), "{err}");
    assert!(!err.contains("column1"), "{err}");

    // Mid-stream: batches of two rows, the third batch has the NULL; the files of the first
    // two are deleted.
    let err = run(
        &ctx,
        "INSERT INTO t (id, ts) SELECT CASE WHEN value = 5 THEN NULL ELSE value END, \
         to_timestamp_micros(1704067200000000 + value * 86400000000) FROM range(6)",
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("column id is required"), "{err}");

    // An input error after two batches were written (10 / 0 in the third).
    let err = run(
        &ctx,
        "INSERT INTO t (id, ts) SELECT 10 / (value - 5), \
         to_timestamp_micros(1704067200000000 + value * 86400000000) FROM range(6)",
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("Divide by zero"), "{err}");

    assert_eq!(files(dir.path(), ""), before);
    assert_eq!(provider.table().metadata().snapshots.len(), 1);
    assert_eq!(count(&ctx, "t").await, 1);
    assert_eq!(
        insert(&ctx, "INSERT INTO t (id, s) VALUES (3, NULL)").await,
        1
    );
    assert_eq!(count(&ctx, "t").await, 2);
}

#[tokio::test]
async fn two_inserts_through_one_provider_both_commit() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path(), "");
    let (ctx, provider) = session(&location, 8192).await;
    let (a, b) = tokio::join!(
        insert(&ctx, "INSERT INTO t (id) VALUES (1), (2)"),
        insert(&ctx, "INSERT INTO t (id) VALUES (3), (4), (5)")
    );
    assert_eq!((a, b), (2, 3));
    let table = provider.table();
    let m = table.metadata();
    assert_eq!(m.snapshots.len(), 2);
    assert_eq!(m.last_sequence_number, 2);
    assert_eq!(summary(m, "total-records"), "5");
    assert_eq!(
        show(&ctx, "SELECT count(*) AS n, sum(id) AS s FROM t").await,
        "+---+----+\n| n | s  |\n+---+----+\n| 5 | 15 |\n+---+----+"
    );
}

#[tokio::test]
async fn a_provider_without_a_write_target_refuses_insert() {
    let dir = tempfile::tempdir().unwrap();
    let location = new_table(dir.path(), "");
    let ctx = SessionContext::new();
    let table = Table::load(FileIO::default(), &location).await.unwrap();
    let provider = IcebergTableProvider::try_new(table, SnapshotSelector::Current).unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let err = run(&ctx, "INSERT INTO t (id) VALUES (1)")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("with_write_target"), "{err}");
    assert_eq!(files(&dir.path().join("metadata"), ".json").len(), 1);
}

fn warehouse() -> String {
    format!(
        "{}/tests/fixtures/pyiceberg/wh1",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A writable copy of the fixture table `db/<name>`, registered as `t`.
async fn fixture_copy(name: &str) -> (tempfile::TempDir, SessionContext, IcebergTableProvider) {
    let copy = tempfile::tempdir().unwrap();
    copy_dir(
        Path::new(&format!("{}/db/{name}", warehouse())),
        copy.path(),
    );
    let options = TableOptions::default().with_relocation(
        format!("file:///data/lake/wh1/db/{name}"),
        copy.path().display().to_string(),
    );
    let ctx = SessionContext::new();
    let location = copy.path().display().to_string();
    let provider = IcebergTableProvider::open(&ctx, &location, options)
        .await
        .unwrap();
    ctx.register_table("t", Arc::new(provider.clone())).unwrap();
    (copy, ctx, provider)
}

#[tokio::test]
async fn insert_into_a_branch_advances_it_and_leaves_main_alone() {
    let (copy, ctx, main) = fixture_copy("refs").await;
    let before = main.table();
    let dev_head = before.metadata().refs["dev"].snapshot_id;
    let dev = main.at(SnapshotSelector::Ref("dev".into())).unwrap();
    ctx.register_table("t_dev", Arc::new(dev.clone())).unwrap();
    let main_rows = count(&ctx, "t").await;
    let dev_rows = count(&ctx, "t_dev").await;

    let n = insert(
        &ctx,
        "INSERT INTO t_dev VALUES (1001, 'new', 7), (1002, NULL, NULL)",
    )
    .await;
    assert_eq!(n, 2);
    assert_eq!(count(&ctx, "t_dev").await, dev_rows + 2);
    assert_eq!(
        show(&ctx, "SELECT * FROM t_dev WHERE id > 1000 ORDER BY id").await,
        "\
+------+----------+-------+
| id   | category | value |
+------+----------+-------+
| 1001 | new      | 7     |
| 1002 |          |       |
+------+----------+-------+"
    );
    let after = dev.table();
    let m = after.metadata();
    let new_head = m.refs["dev"].snapshot_id;
    assert_ne!(new_head, dev_head);
    assert_eq!(
        m.snapshot_by_id(new_head).unwrap().parent_snapshot_id,
        Some(dev_head)
    );
    // main: same snapshot, same rows (the `t` provider reads main's head of its own state,
    // and a fresh load agrees).
    assert_eq!(m.current_snapshot_id, before.metadata().current_snapshot_id);
    assert_eq!(
        m.refs["main"].snapshot_id,
        before.metadata().refs["main"].snapshot_id
    );
    assert_eq!(count(&ctx, "t").await, main_rows);
    let reloaded = Table::load(after.io().clone(), &copy.path().display().to_string())
        .await
        .unwrap();
    assert_eq!(reloaded.metadata().refs["dev"].snapshot_id, new_head);
    assert_eq!(
        reloaded.metadata().current_snapshot_id,
        before.metadata().current_snapshot_id
    );
}

#[tokio::test]
async fn insert_into_a_tag_or_a_snapshot_is_refused() {
    let (copy, ctx, main) = fixture_copy("refs").await;
    let metadata_files = files(&copy.path().join("metadata"), ".json");
    let data_files = files(copy.path(), ".parquet");
    let tag = main.at(SnapshotSelector::Ref("v1".into())).unwrap();
    ctx.register_table("t_v1", Arc::new(tag)).unwrap();
    let err = run(&ctx, "INSERT INTO t_v1 VALUES (1, 'x', 1)")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("tag 'v1'"), "{err}");

    let first = main.table().metadata().snapshots[0].snapshot_id;
    let old = main.at(SnapshotSelector::SnapshotId(first)).unwrap();
    ctx.register_table("t_old", Arc::new(old)).unwrap();
    let err = run(&ctx, "INSERT INTO t_old SELECT * FROM t_old")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("snapshot {first}")), "{err}");
    assert_eq!(
        files(&copy.path().join("metadata"), ".json"),
        metadata_files
    );
    assert_eq!(files(copy.path(), ".parquet"), data_files);
}

#[tokio::test]
async fn insert_into_a_table_with_delete_files_is_allowed() {
    let (_copy, ctx, provider) = fixture_copy("deletes_mor").await;
    let before = count(&ctx, "t").await;
    let n = insert(&ctx, "INSERT INTO t VALUES (9001, 'z', 1), (9002, 'z', 2)").await;
    assert_eq!(n, 2);
    assert_eq!(count(&ctx, "t").await, before + 2);
    assert_eq!(
        show(
            &ctx,
            "SELECT id, value FROM t WHERE category = 'z' ORDER BY id"
        )
        .await,
        "+------+-------+\n| id   | value |\n+------+-------+\n| 9001 | 1     |\n| 9002 | 2     |\n+------+-------+"
    );
    assert_eq!(summary(provider.table().metadata(), "added-records"), "2");
}

#[tokio::test]
async fn an_insert_into_a_catalog_table_is_seen_by_the_next_query() {
    let copy = tempfile::tempdir().unwrap();
    copy_dir(Path::new(&warehouse()), copy.path());
    let relocation =
        Relocation::new().with_rule("file:///data/lake/wh1", copy.path().display().to_string());
    let ctx = SessionContext::new();
    let db = copy.path().join("catalog.db");
    let catalog = crate::session::register_catalog_as_default(&ctx, &db, relocation)
        .await
        .unwrap();
    let before = catalog.metadata_location("db", "orders").unwrap().unwrap();
    assert_eq!(
        show(
            &ctx,
            "SELECT count(*) AS n, sum(order_id) AS s FROM db.orders"
        )
        .await,
        "+----+-----+\n| n  | s   |\n+----+-----+\n| 20 | 210 |\n+----+-----+"
    );

    // The provider the catalog would hand out, with the catalog as its commit target.
    let table = catalog.load_table("db", "orders").await.unwrap();
    let provider = IcebergTableProvider::try_new(table, SnapshotSelector::Current)
        .unwrap()
        .with_write_target(WriteTarget::sqlite(Arc::clone(&catalog), "db", "orders").unwrap());
    ctx.register_table("orders_w", Arc::new(provider)).unwrap();
    let n = insert(
        &ctx,
        "INSERT INTO orders_w VALUES \
         (21, 7, TIMESTAMP '2026-12-01T08:00:00Z', 12.50), \
         (22, NULL, TIMESTAMP '2026-12-02T09:30:00Z', NULL)",
    )
    .await;
    assert_eq!(n, 2);

    let after = catalog.metadata_location("db", "orders").unwrap().unwrap();
    assert_ne!(after, before);
    assert!(
        after.starts_with("file:///data/lake/wh1/db/orders/metadata/00003-"),
        "{after}"
    );
    assert_eq!(
        show(
            &ctx,
            "SELECT count(*) AS n, sum(order_id) AS s FROM db.orders"
        )
        .await,
        "+----+-----+\n| n  | s   |\n+----+-----+\n| 22 | 253 |\n+----+-----+"
    );
    assert_eq!(
        show(
            &ctx,
            "SELECT order_id, customer_id, CAST(order_ts AS VARCHAR) AS ts, amount \
             FROM db.orders WHERE order_id > 20 ORDER BY order_id"
        )
        .await,
        "\
+----------+-------------+----------------------+--------+
| order_id | customer_id | ts                   | amount |
+----------+-------------+----------------------+--------+
| 21       | 7           | 2026-12-01T08:00:00Z | 12.50  |
| 22       |             | 2026-12-02T09:30:00Z |        |
+----------+-------------+----------------------+--------+"
    );
}

#[test]
fn a_null_inside_a_present_struct_is_refused_where_the_child_is_required() {
    use datafusion::arrow::array::{ArrayRef, Int32Array, StructArray};
    use datafusion::arrow::buffer::NullBuffer;
    use datafusion::arrow::datatypes::{DataType, Field, Fields};

    // The input's child is nullable; the table's is required.
    let input_child = Arc::new(Field::new("x", DataType::Int32, true));
    let values: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, None]));
    // Row 0: {x: 1}; row 1: NULL struct (its child NULL is fine); row 2: {x: NULL}.
    let nulls = NullBuffer::from(vec![true, false, true]);
    let structs: ArrayRef = Arc::new(StructArray::new(
        Fields::from(vec![input_child]),
        vec![Arc::clone(&values)],
        Some(nulls),
    ));
    let table_field = |required: bool| {
        let child = Field::new("x", DataType::Int32, !required);
        Field::new("s", DataType::Struct(Fields::from(vec![child])), true)
    };
    let err = super::check_required(
        &structs,
        &table_field(true),
        "s",
        None,
        "INSERT INTO t",
        "inserted",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("column s.x is required, but 1 inserted"),
        "{err}"
    );
    assert!(
        super::check_required(
            &structs,
            &table_field(false),
            "s",
            None,
            "INSERT INTO t",
            "inserted"
        )
        .is_ok()
    );
    // Only the NULL struct's child is NULL: fine.
    let only_under_null = StructArray::new(
        Fields::from(vec![Field::new("x", DataType::Int32, true)]),
        vec![Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef],
        Some(NullBuffer::from(vec![true, false])),
    );
    let only_under_null: ArrayRef = Arc::new(only_under_null);
    assert!(
        super::check_required(
            &only_under_null,
            &table_field(true),
            "s",
            None,
            "INSERT INTO t",
            "inserted"
        )
        .is_ok()
    );
}

#[tokio::test]
async fn a_table_opened_by_metadata_file_commits_the_next_version_and_empty_inserts_commit_nothing()
{
    let dir = tempfile::tempdir().unwrap();
    new_table(dir.path(), "");
    let metadata_file = dir.path().join("metadata/v1.metadata.json");
    let (ctx, provider) = session(&metadata_file.display().to_string(), 8192).await;
    assert_eq!(
        insert(&ctx, "INSERT INTO t SELECT * FROM t WHERE id > 0").await,
        0
    );
    assert!(provider.table().metadata().snapshots.is_empty());
    assert_eq!(files(&dir.path().join("metadata"), ".json").len(), 1);

    assert_eq!(insert(&ctx, "INSERT INTO t (id) VALUES (7)").await, 1);
    let table = provider.table();
    assert!(
        table
            .metadata_location()
            .ends_with("/metadata/v2.metadata.json")
    );
    let hint = std::fs::read_to_string(dir.path().join("metadata/version-hint.text")).unwrap();
    assert_eq!(hint.trim(), "2");
    // A fresh load of the directory finds the commit.
    let reloaded = Table::load(FileIO::default(), &dir.path().display().to_string())
        .await
        .unwrap();
    assert_eq!(
        reloaded.metadata().current_snapshot_id,
        table.metadata().current_snapshot_id
    );
}

/// A foreign host (datafusion-python over the FFI) executes the plan `insert_into` returns as
/// it is: no optimizer pass adds the single partition or the sort the sink requires. Every
/// partition of the input must still be written, and a sorted table's file sorted.
#[tokio::test]
async fn an_insert_plan_run_without_the_optimizer_writes_every_partition_in_order() {
    use datafusion::arrow::array::{Int64Array, new_null_array};
    use datafusion::catalog::TableProvider;
    use datafusion::datasource::memory::MemorySourceConfig;
    use datafusion::logical_expr::dml::InsertOp;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    for sorted in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let location = new_table(dir.path(), "");
        if sorted {
            let path = dir.path().join("metadata/v1.metadata.json");
            let json = std::fs::read_to_string(&path).unwrap().replace(
                r#""default-sort-order-id": 0,
  "sort-orders": [{"order-id": 0, "fields": []}],"#,
                r#""default-sort-order-id": 1,
  "sort-orders": [{"order-id": 0, "fields": []}, {"order-id": 1, "fields": [
    {"transform": "identity", "source-id": 1, "direction": "desc", "null-order": "nulls-last"}]}],"#,
            );
            assert!(json.contains(r#""default-sort-order-id": 1"#));
            std::fs::write(&path, json).unwrap();
        }
        let (ctx, provider) = session(&location, 4).await;
        let schema = provider.schema();
        let partition = |ids: Vec<i64>| {
            let mut columns = vec![Arc::new(Int64Array::from(ids.clone())) as _];
            for field in schema.fields().iter().skip(1) {
                columns.push(new_null_array(field.data_type(), ids.len()));
            }
            vec![RecordBatch::try_new(schema.clone(), columns).unwrap()]
        };
        let parts = [
            partition(vec![5, 1, 9]),
            partition(vec![2, 8]),
            partition(vec![7, 3, 6, 4]),
        ];
        let input = MemorySourceConfig::try_new_exec(&parts, schema.clone(), None).unwrap();
        let plan = provider
            .insert_into(&ctx.state(), input, InsertOp::Append)
            .await
            .unwrap();
        let written = datafusion::physical_plan::collect(plan, ctx.task_ctx())
            .await
            .unwrap();
        assert_eq!(
            written[0].column(0).as_primitive::<UInt64Type>().value(0),
            9
        );
        let (ctx, _) = session(&location, 4).await;
        assert_eq!(count(&ctx, "t").await, 9, "sorted: {sorted}");
        let data = files(dir.path(), "parquet");
        assert_eq!(data.len(), 1, "{data:?}");
        let file = std::fs::File::open(&data[0]).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        let ids: Vec<i64> = reader
            .flat_map(|b| {
                b.unwrap()
                    .column(0)
                    .as_primitive::<Int64Type>()
                    .values()
                    .to_vec()
            })
            .collect();
        if sorted {
            assert_eq!(ids, [9, 8, 7, 6, 5, 4, 3, 2, 1]);
        } else {
            let mut all = ids.clone();
            all.sort();
            assert_eq!(all, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
        }
    }
}
