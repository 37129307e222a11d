//! Row-level changes on a 10-million-row table in 100 files, side by side in one run with
//! plain DataFusion rewriting the same files (issue 18, item 10):
//!
//! - `delete 1% over 10 files`: `DELETE ... WHERE f < 10 AND id % 10 = 0` (100,000 rows, 10% of
//!   each of 10 files), copy-on-write and merge-on-read, next to DataFusion's `COPY` of those
//!   10 files without the deleted rows (a `ListingTable` over the same data files);
//! - `delete a partition`: `DELETE ... WHERE part = 3`, decided from metadata (no file read);
//! - `merge 100,000 rows`: half of them matching rows of 5 files (updated), half new
//!   (inserted), copy-on-write;
//! - `read after merge-on-read deletes`: `SELECT sum(value)` of the table before and after the
//!   merge-on-read delete above.
//!
//! Table: `id BIGINT` (0 .. 10M), `part INT` (identity partition, 10 values), `f INT` (the
//! file: 100 files of 100,000 rows, 10 per partition), `value DOUBLE`, `tag VARCHAR`, in a
//! SQLite catalog in a temporary directory (two copies: `db.cow`, `db.mor` with
//! `write.delete.mode = merge-on-read`). Each measured change starts from the same snapshot:
//! after it, the catalog pointer is put back on the metadata file it started from (not measured:
//! `iter_custom` times the statement alone).
//!
//! `ICEFLOE_DML_BENCH_ROWS` sets the row count (default 10,000,000; a multiple of 100 files);
//! with `ICEFLOE_DML_BENCH_KEEP` the warehouse is kept (its path printed) for DuckDB's figures on
//! the same rows: `benches/peers/duckdb_dml.py <warehouse>`.
//!
//! Run: `cargo bench --bench dml -- --warm-up-time 1 --measurement-time 10`.

#[path = "support/mod.rs"]
mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::arrow::array::{
    ArrayRef, AsArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::prelude::SessionContext;
use icefloe::catalog::SqliteCatalog;
use icefloe::session::register_catalog_as_default;
use icefloe::to_arrow::schema_to_arrow;
use icefloe::write::append_batches;
use icefloe::{FileIO, Relocation, WriteTarget};
use tokio::runtime::Runtime;

const FILES: i64 = 100;
const PARTITIONS: i64 = 10;

fn rows() -> i64 {
    std::env::var("ICEFLOE_DML_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000)
}

async fn sql(ctx: &SessionContext, statement: &str) -> Vec<RecordBatch> {
    icefloe::sql::sql(ctx, statement)
        .await
        .unwrap_or_else(|e| panic!("{statement}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{statement}: {e}"))
}

async fn one_i64(ctx: &SessionContext, query: &str) -> i64 {
    let batches = sql(ctx, query).await;
    let column = batches[0].column(0);
    datafusion::arrow::compute::cast(column, &datafusion::arrow::datatypes::DataType::Int64)
        .expect("cast")
        .as_primitive::<Int64Type>()
        .value(0)
}

/// File `f`'s rows: ids `f * per_file ..`, its partition `f % PARTITIONS`.
fn file_rows(table: &icefloe::Table, f: i64, per_file: i64) -> RecordBatch {
    let schema = Arc::new(schema_to_arrow(table.metadata().current_schema()).expect("schema"));
    let ids: Vec<i64> = (f * per_file..(f + 1) * per_file).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids.clone())),
        Arc::new(Int32Array::from(vec![(f % PARTITIONS) as i32; ids.len()])),
        Arc::new(Int32Array::from(vec![f as i32; ids.len()])),
        Arc::new(Float64Array::from_iter_values(
            ids.iter().map(|i| *i as f64 * 0.5),
        )),
        Arc::new(StringArray::from_iter_values(
            ids.iter().map(|i| format!("tag{}", i % 97)),
        )),
    ];
    let columns = columns
        .into_iter()
        .zip(schema.fields())
        .map(|(c, field)| datafusion::arrow::compute::cast(&c, field.data_type()).expect("cast"))
        .collect();
    RecordBatch::try_new(schema, columns).expect("batch")
}

/// Creates `db.<name>` with `properties` and fills it with 100 one-file commits.
async fn create(ctx: &SessionContext, db: &Path, name: &str, properties: &str) {
    sql(
        ctx,
        &format!(
            "CREATE TABLE db.{name} (id BIGINT NOT NULL, part INT, f INT, value DOUBLE, tag VARCHAR) \
             PARTITION BY (part) TBLPROPERTIES ('write.target-file-size-bytes' = '1073741824'{properties})"
        ),
    )
    .await;
    let catalog = Arc::new(SqliteCatalog::open(db, None, FileIO::default()).expect("catalog"));
    let target = WriteTarget::sqlite(catalog, "db", name).expect("target");
    let per_file = rows() / FILES;
    for f in 0..FILES {
        let table = target.load().await.expect("load");
        let batch = file_rows(&table, f, per_file);
        append_batches(&target, &[batch], "main")
            .await
            .expect("append");
    }
}

async fn current(ctx: &SessionContext, table: &str) -> i64 {
    one_i64(
        ctx,
        &format!(
            "SELECT snapshot_id FROM db.\"{table}$snapshots\" ORDER BY committed_at DESC LIMIT 1"
        ),
    )
    .await
}

/// Puts `table`'s catalog pointer back on the metadata file `base` (not measured), so that every
/// measured change starts from the same table: the same snapshot, and a history that does not
/// grow with the iterations (a rollback would commit, and each change would write one more
/// snapshot into the next metadata file).
fn restore(catalog: &SqliteCatalog, table: &str, base: &str) {
    let current = catalog
        .metadata_location("db", table)
        .expect("pointer")
        .expect("table");
    catalog
        .commit_metadata_location("db", table, &current, base)
        .expect("restore");
}

fn dml(c: &mut Criterion) {
    let rt = Runtime::new().expect("tokio runtime");
    let mut dir = tempfile::tempdir().expect("tempdir");
    if std::env::var_os("ICEFLOE_DML_BENCH_KEEP").is_some() {
        // For benches/peers/duckdb_dml.py.
        println!("dml bench: warehouse kept at {}", dir.path().display());
        dir.disable_cleanup(true);
    }
    let db = dir.path().join("catalog.db");
    let ctx = rt.block_on(async {
        SqliteCatalog::create(&db, "default", FileIO::default()).expect("catalog");
        let ctx = SessionContext::new();
        register_catalog_as_default(&ctx, &db, Relocation::default())
            .await
            .expect("register");
        icefloe::sql::register(&ctx);
        sql(&ctx, "CREATE SCHEMA db").await;
        create(&ctx, &db, "cow", "").await;
        create(&ctx, &db, "mor", ", 'write.delete.mode' = 'merge-on-read'").await;
        let v3 = ", 'write.delete.mode' = 'merge-on-read', 'format-version' = '3'";
        create(&ctx, &db, "mor_v3", v3).await;
        ctx
    });
    let total = rows();
    let delete = "WHERE f < 10 AND id % 10 = 0";
    let mor_base = rt.block_on(async {
        assert_eq!(one_i64(&ctx, "SELECT count(*) FROM db.cow").await, total);
        let files = one_i64(&ctx, "SELECT count(*) FROM db.\"cow$files\"").await;
        assert_eq!(files, FILES);
        current(&ctx, "mor").await
    });
    let catalog = SqliteCatalog::open(&db, None, FileIO::default()).expect("catalog");
    let base = |table: &str| {
        catalog
            .metadata_location("db", table)
            .expect("pointer")
            .expect("table")
    };
    let (cow_base, mor_location, v3_location) = (base("cow"), base("mor"), base("mor_v3"));
    let deleted = total / 100;

    let data_dir = dir.path().join("db/cow/data");
    let baseline = rt.block_on(support::listing_ctx(&data_dir));
    let out = tempfile::tempdir().expect("tempdir");

    let mut group = c.benchmark_group("delete 1% over 10 files");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("datafusion COPY of the 10 files", |b| {
        b.iter(|| {
            rt.block_on(async {
                let target = out.path().join(uuid());
                let copy = format!(
                    "COPY (SELECT * FROM t WHERE f < 10 AND id % 10 <> 0) TO '{}' STORED AS PARQUET",
                    target.display()
                );
                support::run(&baseline, &copy).await;
            })
        })
    });
    // mor: v2 position delete files; mor_v3: deletion vectors.
    let tables = [
        ("cow", &cow_base),
        ("mor", &mor_location),
        ("mor_v3", &v3_location),
    ];
    for (table, base) in tables {
        group.bench_function(format!("icefloe DELETE, {table}"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iters {
                        let statement = format!("DELETE FROM db.{table} {delete}");
                        let started = Instant::now();
                        let count = one_i64(&ctx, &statement).await;
                        spent += started.elapsed();
                        assert_eq!(count, deleted);
                        restore(&catalog, table, base);
                    }
                    spent
                })
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("delete a partition");
    group.sample_size(20);
    group.bench_function("icefloe DELETE WHERE part = 3 (metadata only)", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    let started = Instant::now();
                    let count = one_i64(&ctx, "DELETE FROM db.cow WHERE part = 3").await;
                    spent += started.elapsed();
                    assert_eq!(count, total / PARTITIONS);
                    restore(&catalog, "cow", &cow_base);
                }
                spent
            })
        })
    });
    group.finish();

    // 100,000 source rows: 50,000 ids of files 0-4 (10,000 each), 50,000 new ids.
    rt.block_on(async {
        sql(&ctx, "CREATE TABLE db.source (id BIGINT, value DOUBLE)").await;
        let per_file = total / FILES;
        let matched = (0..5).flat_map(|f| (0..10_000.min(per_file)).map(move |i| f * per_file + i));
        let fresh = (0..50_000).map(|i| total + i);
        let ids: Vec<i64> = matched.chain(fresh).collect();
        let values = Float64Array::from_iter_values(ids.iter().map(|i| *i as f64));
        let catalog = Arc::new(SqliteCatalog::open(&db, None, FileIO::default()).expect("catalog"));
        let target = WriteTarget::sqlite(catalog, "db", "source").expect("target");
        let table = target.load().await.expect("load");
        let schema = Arc::new(schema_to_arrow(table.metadata().current_schema()).expect("schema"));
        let columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(ids)), Arc::new(values)];
        let batch = RecordBatch::try_new(schema, columns).expect("batch");
        append_batches(&target, &[batch], "main")
            .await
            .expect("append");
    });
    // After the restores, the table's files are the 100 it was made with.
    if std::env::var_os("ICEFLOE_DML_BENCH_KEEP").is_some() {
        rt.block_on(async {
            for table in ["cow", "source"] {
                let query = format!("SELECT file_path FROM db.\"{table}$files\"");
                let batches = sql(&ctx, &query).await;
                let paths: Vec<String> = batches
                    .iter()
                    .flat_map(|b| {
                        let column = datafusion::arrow::compute::cast(
                            b.column(0),
                            &datafusion::arrow::datatypes::DataType::Utf8,
                        )
                        .expect("cast");
                        column
                            .as_string::<i32>()
                            .iter()
                            .flatten()
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    })
                    .collect();
                std::fs::write(
                    dir.path().join(format!("{table}_files.txt")),
                    paths.join("\n"),
                )
                .expect("file list");
            }
        });
    }
    let mut group = c.benchmark_group("merge 100,000 rows");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("icefloe MERGE, cow", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let statement = "MERGE INTO db.cow t USING db.source s ON t.id = s.id \
                    WHEN MATCHED THEN UPDATE SET value = s.value \
                    WHEN NOT MATCHED THEN INSERT (id, part, f, value, tag) \
                    VALUES (s.id, 0, -1, s.value, 'new')";
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    let started = Instant::now();
                    assert_eq!(one_i64(&ctx, statement).await, 100_000);
                    spent += started.elapsed();
                    restore(&catalog, "cow", &cow_base);
                }
                spent
            })
        })
    });
    group.finish();

    // Reads of the merge-on-read table before and after its delete.
    let after = rt.block_on(async {
        one_i64(&ctx, &format!("DELETE FROM db.mor {delete}")).await;
        current(&ctx, "mor").await
    });
    let mut group = c.benchmark_group("read after merge-on-read deletes");
    group.sample_size(10);
    for (label, snapshot) in [("before", mor_base), ("after", after)] {
        group.bench_function(format!("sum(value), {label} the delete"), |b| {
            b.iter(|| {
                rt.block_on(async {
                    let query =
                        format!("SELECT count(*), sum(value) FROM db.mor VERSION AS OF {snapshot}");
                    one_i64(&ctx, &query).await
                })
            })
        });
    }
    group.finish();
}

fn uuid() -> String {
    format!(
        "{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
    )
}

criterion_group!(benches, dml);
criterion_main!(benches);
