//! Broken tables: each defect gives a clear error that names the broken object, never a panic
//! and never wrong rows. Every test copies a small in-repo fixture table into a temporary
//! directory and breaks one file of it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::prelude::SessionContext;
use icefloe::{Error, IcebergTableProvider, TableOptions};

use super::support::copy_dir;

const TABLE: &str = "impala_v2_no_deletes";
const WRITTEN_AT: &str = "/test-warehouse/iceberg_test/hadoop_catalog/ice/iceberg_v2_no_deletes";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/external")
        .join(TABLE)
}

/// A writable copy of the fixture table.
fn copy_table() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&fixture(), dir.path());
    dir
}

/// The only file in `dir` whose name ends with `suffix` (and passes `keep`).
fn find(dir: &Path, keep: impl Fn(&str) -> bool) -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(&keep))
        .collect();
    assert_eq!(found.len(), 1, "expected one match in {}", dir.display());
    found.remove(0)
}

fn truncate(path: &Path) {
    let bytes = std::fs::read(path).expect("read");
    std::fs::write(path, &bytes[..bytes.len() / 2]).expect("write");
}

/// Opens the copy and runs a full scan; the error text, if any.
async fn query(table_dir: &Path) -> Result<usize, String> {
    let ctx = SessionContext::new();
    let options = TableOptions::default().with_relocation(WRITTEN_AT, table_dir.to_string_lossy());
    let location = table_dir.to_string_lossy().to_string();
    let provider = IcebergTableProvider::open(&ctx, &location, options)
        .await
        .map_err(|e| format!("open: {e}"))?;
    ctx.register_table("t", Arc::new(provider))
        .map_err(|e| e.to_string())?;
    let df = ctx
        .sql("SELECT * FROM t")
        .await
        .map_err(|e| e.to_string())?;
    let batches = df.collect().await.map_err(|e| e.to_string())?;
    Ok(batches.iter().map(|b| b.num_rows()).sum())
}

fn assert_names(error: &str, path: &Path) {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .expect("file name");
    assert!(error.contains(name), "error should name {name}: {error}");
}

#[tokio::test]
async fn the_intact_copy_reads() {
    let dir = copy_table();
    assert_eq!(query(dir.path()).await, Ok(3));
}

#[tokio::test]
async fn truncated_metadata_json_is_corrupt_and_named() {
    let dir = copy_table();
    let metadata = dir.path().join("metadata/v2.metadata.json");
    truncate(&metadata);
    let location = metadata.to_string_lossy().to_string();
    let err =
        IcebergTableProvider::open(&SessionContext::new(), &location, TableOptions::default())
            .await
            .expect_err("truncated metadata must not open");
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert_names(&err.to_string(), &metadata);
}

#[tokio::test]
async fn format_version_4_is_unsupported() {
    let dir = copy_table();
    let metadata = dir.path().join("metadata/v2.metadata.json");
    let json = std::fs::read_to_string(&metadata).expect("read");
    let v4 = json.replacen("\"format-version\" : 2", "\"format-version\" : 4", 1);
    assert_ne!(json, v4, "the fixture spells format-version as expected");
    std::fs::write(&metadata, v4).expect("write");
    let location = metadata.to_string_lossy().to_string();
    let err =
        IcebergTableProvider::open(&SessionContext::new(), &location, TableOptions::default())
            .await
            .expect_err("format version 4 must not open");
    assert!(matches!(err, Error::Unsupported(_)), "{err:?}");
    assert!(err.to_string().contains('4'), "{err}");
}

#[tokio::test]
async fn truncated_manifest_list_is_named() {
    let dir = copy_table();
    let list = find(&dir.path().join("metadata"), |n| n.starts_with("snap-"));
    truncate(&list);
    assert_names(&query(dir.path()).await.expect_err("must fail"), &list);
}

#[tokio::test]
async fn truncated_manifest_is_named() {
    let dir = copy_table();
    let manifest = find(&dir.path().join("metadata"), |n| {
        n.ends_with(".avro") && !n.starts_with("snap-")
    });
    truncate(&manifest);
    assert_names(&query(dir.path()).await.expect_err("must fail"), &manifest);
}

#[tokio::test]
async fn missing_manifest_list_is_not_found_and_named() {
    let dir = copy_table();
    let list = find(&dir.path().join("metadata"), |n| n.starts_with("snap-"));
    std::fs::remove_file(&list).expect("remove");
    let err = query(dir.path()).await.expect_err("must fail");
    assert_names(&err, &list);
    assert!(err.contains("not found"), "{err}");
}

#[tokio::test]
async fn truncated_data_file_is_named() {
    let dir = copy_table();
    let data = find(&dir.path().join("data"), |n| {
        n.ends_with(".parq") || n.ends_with(".parquet")
    });
    truncate(&data);
    assert_names(&query(dir.path()).await.expect_err("must fail"), &data);
}

#[tokio::test]
async fn missing_data_file_is_named() {
    let dir = copy_table();
    let data = find(&dir.path().join("data"), |n| {
        n.ends_with(".parq") || n.ends_with(".parquet")
    });
    std::fs::remove_file(&data).expect("remove");
    assert_names(&query(dir.path()).await.expect_err("must fail"), &data);
}

/// The only Parquet data file of the copy.
fn data_file(dir: &Path) -> PathBuf {
    find(&dir.join("data"), |n| {
        n.ends_with(".parq") || n.ends_with(".parquet")
    })
}

/// Overwrites `bytes` at `offset` from the end of `path`.
fn patch_from_end(path: &Path, offset: usize, bytes: &[u8]) {
    let mut data = std::fs::read(path).expect("read");
    let at = data.len() - offset;
    data[at..at + bytes.len()].copy_from_slice(bytes);
    std::fs::write(path, data).expect("write");
}

#[tokio::test]
async fn parquet_footer_length_ffffffff_is_corrupt_and_named() {
    let dir = copy_table();
    let data = data_file(dir.path());
    // The 4-byte metadata length sits just before the trailing `PAR1`.
    patch_from_end(&data, 8, &[0xFF; 4]);
    let err = query(dir.path()).await.expect_err("must fail");
    assert_names(&err, &data);
    assert!(err.contains("metadata length of 4294967295 bytes"), "{err}");
}

/// A file of a fixture table with one byte flipped, and the panic that caused before.
struct Flip {
    /// The table under `tests/fixtures`, and the prefix its metadata was written at.
    table: (&'static str, &'static str),
    /// The file, relative to the table.
    file: &'static str,
    offset: usize,
    xor: u8,
    /// What parquet / arrow 59.3.2 panicked with.
    panicked: &'static str,
}

const ORDERS: (&str, &str) = ("pyiceberg/wh1/db/orders", "file:///data/lake/wh1/db/orders");
const ORDERS_FILE: &str =
    "data/order_ts_day=2024-01-02/00000-0-7c2986ea-17ca-4ac3-8314-199193309a1d.parquet";
const DELETES_MOR: (&str, &str) = (
    "pyiceberg/wh1/db/deletes_mor",
    "file:///data/lake/wh1/db/deletes_mor",
);
const DELETES_EQ: (&str, &str) = (
    "pyiceberg/wh1/db/deletes_eq",
    "file:///data/lake/wh1/db/deletes_eq",
);

/// Flips found by flipping every byte of these files (1, 0x80, 0xFF) and scanning.
const FLIPS: [Flip; 12] = [
    Flip {
        table: ORDERS,
        file: ORDERS_FILE,
        offset: 2031,
        xor: 0x80,
        panicked: "attempt to subtract with overflow (footer length)",
    },
    Flip {
        table: ORDERS,
        file: ORDERS_FILE,
        offset: 779,
        xor: 1,
        panicked: "column start and length should not be negative",
    },
    Flip {
        table: ORDERS,
        file: ORDERS_FILE,
        offset: 783,
        xor: 0x80,
        panicked: "Decoder for dict should have been set",
    },
    Flip {
        table: ORDERS,
        file: ORDERS_FILE,
        offset: 272,
        xor: 1,
        panicked: "offset + len out of bounds",
    },
    Flip {
        table: ORDERS,
        file: ORDERS_FILE,
        offset: 1247,
        xor: 1,
        panicked: "arrow-ipc: called `Option::unwrap()` on a `None` value",
    },
    Flip {
        table: ORDERS,
        file: ORDERS_FILE,
        offset: 1304,
        xor: 1,
        panicked: "arrow-ipc: Type <UNKNOWN 247> not supported",
    },
    Flip {
        table: DELETES_MOR,
        file: "data/pos-del-1.parquet",
        offset: 633,
        xor: 1,
        panicked: "column start and length should not be negative",
    },
    Flip {
        table: DELETES_MOR,
        file: "data/pos-del-1.parquet",
        offset: 916,
        xor: 0x80,
        panicked: "Decoder for dict should have been set",
    },
    Flip {
        table: DELETES_MOR,
        file: "data/pos-del-1.parquet",
        offset: 1237,
        xor: 1,
        panicked: "arrow-ipc: Int type with bit width of 16777216",
    },
    Flip {
        table: DELETES_EQ,
        file: "data/eq-del-id.parquet",
        offset: 201,
        xor: 1,
        panicked: "column start and length should not be negative",
    },
    Flip {
        table: DELETES_EQ,
        file: "data/eq-del-id.parquet",
        offset: 206,
        xor: 0x80,
        panicked: "Decoder for dict should have been set",
    },
    Flip {
        table: DELETES_EQ,
        file: "data/eq-del-id.parquet",
        offset: 350,
        xor: 1,
        panicked: "arrow-ipc: called `Option::unwrap()` on a `None` value",
    },
];

/// A writable copy of the fixture table at `tests/fixtures/<table>`.
fn copy_fixture(table: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(table);
    copy_dir(&from, dir.path());
    dir
}

/// `SELECT *` over the table copy in `dir`: the path of the `Corrupt` error it fails with.
async fn corrupt_file(dir: &Path, written_at: &str) -> Result<String, String> {
    let ctx = SessionContext::new();
    let options = TableOptions::default().with_relocation(written_at, dir.to_string_lossy());
    let provider = IcebergTableProvider::open(&ctx, &dir.to_string_lossy(), options)
        .await
        .map_err(|e| format!("open: {e}"))?;
    ctx.register_table("t", Arc::new(provider))
        .map_err(|e| e.to_string())?;
    let df = ctx
        .sql("SELECT * FROM t")
        .await
        .map_err(|e| e.to_string())?;
    let err = match df.collect().await {
        Ok(batches) => return Err(format!("read {} batches", batches.len())),
        Err(e) => e,
    };
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    while let Some(e) = next {
        if let Some(Error::Corrupt { path, .. }) = e.downcast_ref::<Error>() {
            return Ok(path.clone());
        }
        next = e.source();
    }
    Err(format!("not a Corrupt error: {err}"))
}

#[tokio::test]
async fn flipped_bytes_that_panicked_parquet_are_corrupt_and_named() {
    let mut failures = Vec::new();
    for flip in &FLIPS {
        let dir = copy_fixture(flip.table.0);
        let file = dir.path().join(flip.file);
        let mut bytes = std::fs::read(&file).expect("read");
        bytes[flip.offset] ^= flip.xor;
        std::fs::write(&file, bytes).expect("write");
        let name = file.file_name().and_then(|n| n.to_str()).expect("name");
        let case = format!(
            "{} byte {} ^ {:#x} ({})",
            flip.file, flip.offset, flip.xor, flip.panicked
        );
        match corrupt_file(dir.path(), flip.table.1).await {
            Ok(path) if path.ends_with(name) => {}
            Ok(path) => failures.push(format!("{case}: names {path}")),
            Err(e) => failures.push(format!("{case}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A column whose data file stores it as one type while the table metadata says another.
struct Retyped {
    /// The file's Arrow type and values.
    stored: fn() -> datafusion::arrow::array::ArrayRef,
    /// The Iceberg type the metadata is then edited to claim.
    claimed: &'static str,
    /// What a read answered before the type was checked.
    answered: &'static str,
}

const RETYPED: [Retyped; 4] = [
    Retyped {
        stored: || Arc::new(datafusion::arrow::array::Int64Array::from(vec![5, 7, 9])),
        claimed: "boolean",
        answered: "true for every row",
    },
    Retyped {
        stored: || {
            Arc::new(datafusion::arrow::array::TimestampMicrosecondArray::from(
                vec![
                    1_700_000_000_000_000,
                    1_700_000_001_000_000,
                    1_700_000_002_000_000,
                ],
            ))
        },
        claimed: "timestamp_ns",
        answered: "the micros converted to nanos silently",
    },
    Retyped {
        stored: || Arc::new(datafusion::arrow::array::Int64Array::from(vec![1, 2, 3])),
        claimed: "int",
        answered: "1, 2, 3 cast down silently",
    },
    Retyped {
        stored: || Arc::new(datafusion::arrow::array::Int64Array::from(vec![10, 20, 30])),
        claimed: "string",
        answered: "'10', '20', '30' cast silently",
    },
];

/// A v3 table written by icefloe with columns `id` (long) and `c` (stored as `values`' type),
/// whose metadata then says `c` is `claimed`.
async fn retyped_table(
    values: datafusion::arrow::array::ArrayRef,
    claimed: &str,
) -> tempfile::TempDir {
    use datafusion::arrow::array::{Int64Array, RecordBatch};
    use datafusion::arrow::datatypes::{Field, Schema};
    use icefloe::WriteTarget;
    use icefloe::spec::FormatVersion;
    use icefloe::write::{TableCreation, append_batches};

    let dir = tempfile::tempdir().expect("temp dir");
    let location = dir.path().to_string_lossy().to_string();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", datafusion::arrow::datatypes::DataType::Int64, true),
        Field::new("c", values.data_type().clone(), true),
    ]));
    let io = icefloe::FileIO::default();
    TableCreation::from_arrow(Arc::clone(&schema))
        .with_format_version(FormatVersion::V3)
        .create_at(&io, &location)
        .await
        .expect("create");
    let ids = Arc::new(Int64Array::from(vec![1, 2, 3]));
    let batch = RecordBatch::try_new(schema, vec![ids, values]).expect("batch");
    let target = WriteTarget::directory(&io, &location).expect("target");
    append_batches(&target, &[batch], "main")
        .await
        .expect("append");
    let metadata = find(&dir.path().join("metadata"), |n| {
        n.starts_with("v2.metadata")
    });
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&metadata).expect("read")).expect("json");
    for schema in json["schemas"].as_array_mut().expect("schemas") {
        for field in schema["fields"].as_array_mut().expect("fields") {
            if field["name"] == "c" {
                field["type"] = claimed.into();
            }
        }
    }
    std::fs::write(&metadata, serde_json::to_vec(&json).expect("json")).expect("write");
    dir
}

#[tokio::test]
async fn a_column_stored_as_another_type_is_an_error_naming_it_and_the_file() {
    let mut failures = Vec::new();
    for case in &RETYPED {
        let values = (case.stored)();
        let stored = values.data_type().clone();
        let dir = retyped_table(values, case.claimed).await;
        let what = format!(
            "{stored} read as {} (answered {})",
            case.claimed, case.answered
        );
        let ctx = SessionContext::new();
        let location = dir.path().to_string_lossy().to_string();
        let provider = IcebergTableProvider::open(&ctx, &location, TableOptions::default())
            .await
            .expect("open");
        ctx.register_table("t", Arc::new(provider))
            .expect("register");
        // A query that does not read the column still answers.
        let ids = ctx
            .sql("SELECT sum(id) FROM t WHERE id > 0")
            .await
            .expect("plan");
        if let Err(e) = ids.collect().await {
            failures.push(format!("{what}: a query without c failed: {e}"));
        }
        let df = ctx.sql("SELECT * FROM t").await.expect("plan");
        let err = match df.collect().await {
            Ok(batches) => {
                let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
                    .map(|t| t.to_string())
                    .unwrap_or_default();
                failures.push(format!("{what}: read\n{text}"));
                continue;
            }
            Err(e) => e.to_string(),
        };
        let named = err.contains("'c' (field id 2)") && err.contains(".parquet");
        if !named || !err.contains(case.claimed) {
            failures.push(format!("{what}: {err}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A position delete file (and an equality delete file) that is a sparse file of 8 GiB: delete
/// files are read whole, within `ReadLimits::delete_file_bytes`, so a typed error naming it at
/// once, never 8 GiB in memory.
#[tokio::test]
async fn a_huge_delete_file_is_corrupt_at_once() {
    for (table, written_at, file) in [
        (
            "external/impala_v2_delete_positional",
            "/test-warehouse/iceberg_test/hadoop_catalog/ice/iceberg_v2_delete_positional",
            "data/00191-4-6e780302-527b-4911-8c6e-88d416adac57-00001.parquet",
        ),
        (
            "external/impala_v2_delete_equality",
            "/test-warehouse/iceberg_test/hadoop_catalog/ice/iceberg_v2_delete_equality",
            "data/00000-0-931d6d35-d95e-468f-a7d9-d64f7a7b5282-00002.parquet",
        ),
    ] {
        let dir = copy_fixture(table);
        let delete = dir.path().join(file);
        let huge = std::fs::File::options()
            .write(true)
            .open(&delete)
            .expect("open");
        huge.set_len(8 << 30).expect("sparse 8 GiB");
        let started = std::time::Instant::now();
        let path = corrupt_file(dir.path(), written_at).await;
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{table}"
        );
        let path = path.unwrap_or_else(|e| panic!("{table}: {e}"));
        assert!(path.ends_with(file), "{table}: {path}");
    }
}
