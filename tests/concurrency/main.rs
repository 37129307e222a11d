//! Concurrent writers lose nothing: 8 writers x 50 one-row appends into one table, as threads
//! of one process and as 8 separate processes, for a directory table (the swap is the
//! create-if-absent of the next `vN.metadata.json`) and for a SQLite catalog table (the swap
//! is the conditional update of the pointer row), with the table's default retry properties
//! (`commit.retry.num-retries` = 4): every one of the 400 commits must succeed. Afterwards the
//! table has 400 snapshots in one linear parent chain with sequence numbers 1..=400, every row
//! once, and one manifest per commit in the last manifest list.
//!
//! A harness-less test: run without arguments it runs every scenario; with `ICEFLOE_WRITER`
//! set it is one writer process of a scenario (the parent starts itself four times). The
//! crash suite ([`crash`]) runs here too: its writers are this executable with
//! `ICEFLOE_CRASH` set, killed at each step of a commit.

mod crash;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{AsArray, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::prelude::SessionContext;
use icefloe::WriteTarget;
use icefloe::catalog::SqliteCatalog;
use icefloe::scan::read_manifest_list;
use icefloe::spec::{NestedField, PrimitiveType, Schema, SnapshotSelector};
use icefloe::to_arrow::schema_to_arrow;
use icefloe::write::{TableCreation, append_batches};
use icefloe::{FileIO, IcebergTableProvider, Table};

const WRITERS: i64 = 8;
const APPENDS: i64 = 50;

/// An empty v2 table `(writer long, n long)` partitioned by `identity(writer)`, with the
/// default retry properties.
fn creation() -> TableCreation {
    let schema = Schema::new(
        0,
        vec![
            NestedField::required(1, "writer", PrimitiveType::Long),
            NestedField::required(2, "n", PrimitiveType::Long),
        ],
    );
    TableCreation::new(schema)
        .with_partitioning("writer")
        .expect("partitioning")
}

/// Where a scenario's table is.
#[derive(Clone, Debug)]
enum Place {
    Directory(String),
    /// A catalog database holding `db.t`.
    Catalog(PathBuf),
}

impl Place {
    /// A new empty table of this kind under `dir`, made through icefloe's create API.
    async fn create(catalog: bool, dir: &Path) -> Self {
        let io = FileIO::default();
        let location = dir.join("t").display().to_string();
        if !catalog {
            creation().create_at(&io, &location).await.expect("create");
            return Place::Directory(location);
        }
        let db = dir.join("catalog.db");
        let catalog = SqliteCatalog::create(&db, "default", io).expect("catalog");
        catalog
            .create_namespace("db", &Default::default())
            .expect("namespace");
        catalog
            .create_table_at("db", "t", &creation(), &location)
            .await
            .expect("create");
        Place::Catalog(db)
    }

    /// The form a writer process gets it in (`ICEFLOE_WRITER`).
    fn to_env(&self, writer: i64) -> String {
        match self {
            Place::Directory(location) => format!("dir|{location}|{writer}"),
            Place::Catalog(db) => format!("catalog|{}|{writer}", db.display()),
        }
    }

    fn from_env(text: &str) -> (Self, i64) {
        let parts: Vec<&str> = text.split('|').collect();
        let [kind, at, writer] = parts.as_slice() else {
            panic!("ICEFLOE_WRITER: {text}");
        };
        let place = match *kind {
            "dir" => Place::Directory(at.to_string()),
            _ => Place::Catalog(PathBuf::from(at)),
        };
        (place, writer.parse().expect("writer number"))
    }

    async fn load(&self, io: &FileIO) -> Table {
        match self {
            Place::Directory(location) => Table::load(io.clone(), location).await.expect("load"),
            Place::Catalog(db) => SqliteCatalog::open(db, None, io.clone())
                .expect("catalog")
                .load_table("db", "t")
                .await
                .expect("load"),
        }
    }
}

/// Writer `writer`'s appends, one row `(writer, n)` each; returns the failed ones.
async fn write(place: &Place, writer: i64) -> Vec<String> {
    let mut failed = Vec::new();
    let io = FileIO::default();
    let table = place.load(&io).await;
    let schema = Arc::new(schema_to_arrow(table.metadata().current_schema()).expect("schema"));
    let catalog = match place {
        Place::Catalog(db) => Some(Arc::new(
            SqliteCatalog::open(db, None, io.clone()).expect("catalog"),
        )),
        Place::Directory(_) => None,
    };
    for n in 0..APPENDS {
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from(vec![writer])),
                Arc::new(Int64Array::from(vec![n])),
            ],
        )
        .expect("batch");
        let target = match (place, &catalog) {
            (Place::Directory(location), _) => WriteTarget::directory(&io, location).unwrap(),
            (Place::Catalog(_), Some(catalog)) => {
                WriteTarget::sqlite(Arc::clone(catalog), "db", "t").expect("target")
            }
            (Place::Catalog(_), None) => unreachable!("opened above"),
        };
        if let Err(e) = append_batches(&target, &[batch], "main").await {
            failed.push(format!("writer {writer}, append {n}: {e}"));
        }
    }
    failed
}

/// Checks the table after every writer finished; panics with what is wrong.
async fn check(place: &Place) {
    let io = FileIO::default();
    let table = place.load(&io).await;
    let m = table.metadata();
    let total = (WRITERS * APPENDS) as usize;
    assert_eq!(m.snapshots.len(), total, "snapshots");
    assert_eq!(m.last_sequence_number, total as i64, "last-sequence-number");
    // One linear chain from the current snapshot back to the first, sequence numbers
    // descending by one.
    let mut chain = Vec::new();
    let mut at = m.current_snapshot();
    while let Some(snapshot) = at {
        chain.push(snapshot.sequence_number);
        at = snapshot
            .parent_snapshot_id
            .and_then(|p| m.snapshot_by_id(p));
    }
    let expected: Vec<i64> = (1..=total as i64).rev().collect();
    assert_eq!(chain, expected, "parent chain sequence numbers");
    // Fast appends: the last list holds every commit's manifest.
    let list = read_manifest_list(&io, m, m.current_snapshot().expect("current"))
        .await
        .expect("list");
    assert_eq!(list.len(), total, "manifests in the last list");
    // Every row once.
    let ctx = SessionContext::new();
    let provider =
        IcebergTableProvider::try_new(table.clone(), SnapshotSelector::Current).expect("provider");
    ctx.register_table("t", Arc::new(provider))
        .expect("register");
    let batches = ctx
        .sql("SELECT writer, n FROM t")
        .await
        .expect("plan")
        .collect()
        .await
        .expect("read");
    let mut rows = BTreeSet::new();
    let mut count = 0;
    for batch in &batches {
        let (w, n) = (
            batch.column(0).as_primitive::<Int64Type>(),
            batch.column(1).as_primitive::<Int64Type>(),
        );
        for i in 0..batch.num_rows() {
            rows.insert((w.value(i), n.value(i)));
            count += 1;
        }
    }
    let expected: BTreeSet<(i64, i64)> = (0..WRITERS)
        .flat_map(|w| (0..APPENDS).map(move |n| (w, n)))
        .collect();
    assert_eq!(count, total, "rows");
    assert_eq!(rows, expected, "distinct rows");
}

/// One scenario: a new table, four writers as threads or processes, then the checks.
fn scenario(catalog: bool, processes: bool) {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("runtime");
    let place = runtime.block_on(Place::create(catalog, dir.path()));
    let mut failed: Vec<String> = Vec::new();
    if processes {
        let exe = std::env::current_exe().expect("test executable");
        let children: Vec<_> = (0..WRITERS)
            .map(|w| {
                Command::new(&exe)
                    .env("ICEFLOE_WRITER", place.to_env(w))
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .expect("start a writer process")
            })
            .collect();
        for (w, child) in children.into_iter().enumerate() {
            let out = child.wait_with_output().expect("writer process");
            assert!(out.status.success(), "writer process {w}: {}", out.status);
            failed.extend(
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .map(str::to_string),
            );
        }
    } else {
        runtime.block_on(async {
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    let place = place.clone();
                    tokio::spawn(async move { write(&place, w).await })
                })
                .collect();
            for writer in writers {
                failed.extend(writer.await.expect("writer thread"));
            }
        });
    }
    let kind = if catalog {
        "SQLite catalog"
    } else {
        "directory"
    };
    let by = if processes { "processes" } else { "threads" };
    assert!(
        failed.is_empty(),
        "{} of {} commits failed ({kind} table, {by}):\n{}",
        failed.len(),
        WRITERS * APPENDS,
        failed.join("\n")
    );
    runtime.block_on(check(&place));
    println!(
        "ok: {WRITERS} x {APPENDS} appends into a {kind} table by {by}, default retries, none \
         failed: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

fn main() -> ExitCode {
    if let Ok(spec) = std::env::var("ICEFLOE_CRASH") {
        crash::writer_main(&spec);
        return ExitCode::SUCCESS;
    }
    if let Ok(writer) = std::env::var("ICEFLOE_WRITER") {
        let (place, writer) = Place::from_env(&writer);
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        for failure in runtime.block_on(write(&place, writer)) {
            println!("{failure}");
        }
        return ExitCode::SUCCESS;
    }
    // `cargo test` passes libtest flags; a filter word picks scenarios by name.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let scenarios = [
        ("directory_threads", false, false),
        ("directory_processes", false, true),
        ("catalog_threads", true, false),
        ("catalog_processes", true, true),
    ];
    for (name, catalog, processes) in scenarios {
        if filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())) {
            scenario(catalog, processes);
        }
    }
    let crashed = crash::run_all(&filter);
    pyiceberg_reads_crashed_tables(&crashed);
    ExitCode::SUCCESS
}

/// PyIceberg reads every table the crash suite left: the same rows as icefloe. Without
/// `ICEFLOE_PYTHON` (set by `.ci/run`) it says loudly that this was NOT checked.
fn pyiceberg_reads_crashed_tables(crashed: &[(PathBuf, Option<PathBuf>, Vec<i64>)]) {
    if crashed.is_empty() {
        return;
    }
    let Some(python) = std::env::var_os("ICEFLOE_PYTHON").filter(|p| !p.is_empty()) else {
        println!(
            "crash suite: ICEFLOE_PYTHON is not set: PyIceberg's reads of the {} crashed tables \
             were NOT checked (.ci/run sets it up)",
            crashed.len()
        );
        remove_crashed(crashed);
        return;
    };
    let cases: Vec<serde_json::Value> = crashed
        .iter()
        .map(|(dir, catalog, rows)| {
            serde_json::json!({"dir": dir, "catalog": catalog, "rows": rows})
        })
        .collect();
    let input = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(input.path(), serde_json::to_vec(&cases).expect("json")).expect("write");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/crashed.py");
    let out = Command::new(python)
        .arg(script)
        .arg(input.path())
        .output()
        .expect("run python");
    print!("{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success(),
        "PyIceberg disagrees: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    remove_crashed(crashed);
}

/// Removes the crash suite's tables (kept for PyIceberg until now).
fn remove_crashed(crashed: &[(PathBuf, Option<PathBuf>, Vec<i64>)]) {
    for (dir, ..) in crashed {
        let _ = std::fs::remove_dir_all(dir);
    }
}
