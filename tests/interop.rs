//! Interop of icefloe's writes with other engines: PyIceberg 0.12 (through the same SQLite
//! catalog) and DuckDB's iceberg extension (on the metadata file) read what icefloe appended,
//! and icefloe appends to tables PyIceberg created and wrote.
//!
//! Runs only when `ICEFLOE_PYTHON` names a Python with the packages of
//! `.ci/interop-requirements.txt` (`.ci/run` sets it up); otherwise each test says that the
//! checks were NOT run and passes. The Python side is `tests/interop/interop.py`: it creates the
//! tables and the rows of every commit (Parquet files listed in the warehouse's `plan.json`),
//! and in the end compares what PyIceberg, DuckDB and icefloe read with those rows, and
//! PyIceberg's `inspect` relations with icefloe's metadata tables. Each scenario runs in a
//! fresh temporary warehouse (kept, and its path printed, when `ICEFLOE_INTEROP_KEEP` is set).
//!
//! [`changes`]: table changes as data (requirements and updates) against PyIceberg's models.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::ipc::writer::FileWriter;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use icefloe::Relocation;
use icefloe::WriteTarget;
use icefloe::catalog::SqliteCatalog;
use icefloe::maintenance::{BranchRetention, ExpireSnapshots, SnapshotManager};
use icefloe::session::register_catalog_as_default;
use icefloe::spec::{Schema, Transform};
use icefloe::to_arrow::schema_to_arrow;
use icefloe::write::{TableCreation, append_batches};
use serde_json::Value;

#[path = "interop/alter.rs"]
mod alter;
#[path = "interop/changes.rs"]
mod changes;
#[path = "interop/compacted_dml.rs"]
mod compacted_dml;
#[path = "interop/compaction.rs"]
mod compaction;
#[path = "interop/dml.rs"]
mod dml;
#[path = "interop/statistics.rs"]
mod statistics;
#[path = "interop/v3_types.rs"]
mod v3_types;

/// Says something on the test's real stderr: seen in CI logs even when the test passes.
fn say(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{message}");
}

/// The Python to run the other engines with, or `None` (said loudly) when it is not set up.
fn python(test: &str) -> Option<PathBuf> {
    match std::env::var_os("ICEFLOE_PYTHON") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            say(&format!(
                "interop {test}: ICEFLOE_PYTHON is not set: the PyIceberg/DuckDB interop checks \
                 were NOT run (.ci/run sets it up)"
            ));
            None
        }
    }
}

/// Runs `tests/interop/interop.py` with `args` and says its output; a failure panics.
fn interop_py(python: &Path, args: &[&str]) {
    assert!(
        try_interop_py(python, args),
        "interop.py {args:?} failed (output above)"
    );
}

/// Runs `tests/interop/interop.py` with `args`, says its output; whether it succeeded.
fn try_interop_py(python: &Path, args: &[&str]) -> bool {
    interop_py_script(python, Path::new("interop.py"), args)
}

/// Runs the script `tests/interop/<script>` with `args`, says its output; whether it succeeded.
fn interop_py_script(python: &Path, script: &Path, args: &[&str]) -> bool {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(script);
    let out = Command::new(python)
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {} {script:?}: {e}", python.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    say(&format!(
        "{} {} ({}):\n{text}",
        script.file_name().unwrap_or_default().to_string_lossy(),
        args.join(" "),
        out.status
    ));
    out.status.success()
}

/// One scenario of interop.py: setup, every commit by its writer, icefloe's reads, the check.
async fn run_scenario(python: &Path, scenario: &str) {
    let mut dir = tempfile::tempdir().unwrap();
    let warehouse = &dir.path().to_str().unwrap().to_string();
    interop_py(python, &["setup", scenario, warehouse]);
    let plan: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("plan.json")).unwrap()).unwrap();

    let ctx = SessionContext::new();
    icefloe::sql::register(&ctx);
    let db = dir.path().join("catalog.db");
    let catalog = register_catalog_as_default(&ctx, &db, Relocation::default())
        .await
        .unwrap();
    for table in plan["tables"].as_array().unwrap() {
        let name = table["name"].as_str().unwrap();
        let (namespace, short) = name.split_once('.').unwrap();
        match table["created_by"].as_str() {
            Some("pyiceberg") => {}
            Some("icefloe") => create(&catalog, namespace, short, table).await,
            other => panic!("{name}: unknown creator {other:?}"),
        }
        for commit in table["commits"].as_array().unwrap() {
            let input = commit["input"].as_str().unwrap();
            match commit["by"].as_str().unwrap() {
                "icefloe" => append_parquet(&ctx, &catalog, namespace, short, input).await,
                "pyiceberg" => interop_py(python, &["append", warehouse, name, input]),
                other => panic!("{name}: unknown writer {other}"),
            }
        }
        let out = dir.path().join("icefloe").join(name);
        std::fs::create_dir_all(&out).unwrap();
        dump(
            &ctx,
            &format!("SELECT * FROM {name}"),
            &out.join("rows.arrow"),
        )
        .await;
        for relation in plan["relations"].as_array().unwrap() {
            let relation = relation.as_str().unwrap();
            let query = format!("SELECT * FROM {namespace}.\"{short}${relation}\"");
            dump(&ctx, &query, &out.join(format!("{relation}.arrow"))).await;
        }
    }
    if std::env::var_os("ICEFLOE_INTEROP_KEEP").is_some() {
        say(&format!(
            "interop {scenario}: warehouse kept at {warehouse}"
        ));
        dir.disable_cleanup(true);
    }
    let pyiceberg = try_interop_py(python, &["check", warehouse]);
    let duckdb = try_interop_py(python, &["duckdb", warehouse]);
    assert!(
        pyiceberg && duckdb,
        "{scenario}: PyIceberg or DuckDB disagrees (output above)"
    );
}

/// icefloe creates `namespace.table` with the schema and partition spec of the plan entry
/// (Iceberg JSON as PyIceberg dumps it; icefloe assigns its own field ids).
async fn create(catalog: &SqliteCatalog, namespace: &str, table: &str, entry: &Value) {
    let schema = Schema::from_json(&entry["schema"]).unwrap();
    let mut creation = TableCreation::new(schema.clone());
    for field in entry["partition_spec"]["fields"].as_array().unwrap() {
        let source = field["source-id"].as_i64().unwrap() as i32;
        let column = schema
            .columns()
            .iter()
            .find(|c| c.id == source)
            .unwrap_or_else(|| panic!("{table}: no column {source}"))
            .name
            .clone();
        let transform = Transform::parse(field["transform"].as_str().unwrap()).unwrap();
        creation = creation.with_partition_field(column, transform);
    }
    catalog
        .create_table(namespace, table, &creation)
        .await
        .unwrap_or_else(|e| panic!("creating {namespace}.{table}: {e}"));
}

/// icefloe appends the rows of a Parquet file (written by pyarrow) as one commit.
async fn append_parquet(
    ctx: &SessionContext,
    catalog: &SqliteCatalog,
    namespace: &str,
    table: &str,
    input: &str,
) {
    let current = catalog.load_table(namespace, table).await.unwrap();
    let schema = Arc::new(schema_to_arrow(current.metadata().current_schema()).unwrap());
    let read = ctx
        .read_parquet(input, ParquetReadOptions::default())
        .await
        .unwrap();
    let mut batches = Vec::new();
    for batch in read.collect().await.unwrap() {
        // The table's Arrow types, column by column (pyarrow writes large strings, for one).
        let columns: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| cast(batch.column_by_name(f.name()).unwrap(), f.data_type()).unwrap())
            .collect();
        batches.push(RecordBatch::try_new(Arc::clone(&schema), columns).unwrap());
    }
    let target = WriteTarget::sqlite(
        Arc::new(catalog.reopen().expect("catalog")),
        namespace,
        table,
    )
    .expect("target");
    append_batches(&target, &batches, "main")
        .await
        .unwrap_or_else(|e| panic!("icefloe appending {input} to {namespace}.{table}: {e}"));
}

/// A warehouse for one test: a temporary directory (kept, and its path printed, when
/// `ICEFLOE_INTEROP_KEEP` is set) with a new SQLite catalog `default` registered as the
/// session's default catalog, icefloe's SQL (`icefloe::sql::register`) and a namespace `db`.
struct Warehouse {
    dir: tempfile::TempDir,
    path: String,
    ctx: SessionContext,
    catalog: Arc<SqliteCatalog>,
}

async fn warehouse(label: &str) -> Warehouse {
    let mut dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap().to_string();
    if std::env::var_os("ICEFLOE_INTEROP_KEEP").is_some() {
        eprintln!("interop {label}: warehouse kept at {path}");
        dir.disable_cleanup(true);
    }
    let ctx = SessionContext::new();
    let db = dir.path().join("catalog.db");
    SqliteCatalog::create(&db, "default", icefloe::FileIO::default()).unwrap();
    let catalog = register_catalog_as_default(&ctx, &db, Relocation::default())
        .await
        .unwrap();
    icefloe::sql::register(&ctx);
    run(&ctx, "CREATE SCHEMA db").await;
    Warehouse {
        dir,
        path,
        ctx,
        catalog,
    }
}

/// Runs one statement through icefloe's SQL to the end; an error fails the test, naming it.
async fn run(ctx: &SessionContext, statement: &str) {
    icefloe::sql::sql(ctx, statement)
        .await
        .unwrap_or_else(|e| panic!("{statement}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{statement}: {e}"));
}

/// The result of an icefloe query, as one Arrow IPC file for interop.py (Parquet cannot hold
/// the empty `partition` struct of an unpartitioned table).
async fn dump(ctx: &SessionContext, query: &str, path: &Path) {
    let frame = icefloe::sql::sql(ctx, query)
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    let schema = Arc::new(frame.schema().as_arrow().clone());
    let batches = frame
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    let file = std::fs::File::create(path).unwrap();
    let mut writer = FileWriter::try_new(file, &schema).unwrap();

    for batch in &batches {
        writer.write(batch).unwrap();
    }
    writer.finish().unwrap();
}

/// PyIceberg creates tables of every primitive type under several partition specs; icefloe
/// makes three commits each; PyIceberg and DuckDB read them back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn icefloe_appends_to_pyiceberg_tables_of_every_type() {
    let Some(python) = python("icefloe_appends_to_pyiceberg_tables_of_every_type") else {
        return;
    };
    run_scenario(&python, "types").await;
}

/// PyIceberg creates and appends, icefloe appends, PyIceberg appends again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyiceberg_and_icefloe_append_in_turn() {
    let Some(python) = python("pyiceberg_and_icefloe_append_in_turn") else {
        return;
    };
    run_scenario(&python, "mixed").await;
}

/// icefloe creates the tables of every primitive type and partition spec itself and makes
/// three commits each; PyIceberg and DuckDB read them back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn icefloe_creates_tables_of_every_type_that_pyiceberg_and_duckdb_read() {
    let Some(python) =
        python("icefloe_creates_tables_of_every_type_that_pyiceberg_and_duckdb_read")
    else {
        return;
    };
    run_scenario(&python, "created").await;
}

/// PyIceberg's view of a table's history (interop.py state).
fn pyiceberg_state(python: &Path, warehouse: &str, name: &str) -> Value {
    let out = format!("{warehouse}/state.json");
    interop_py(python, &["state", warehouse, name, &out]);
    serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap()
}

/// icefloe's view, in the same form.
async fn icefloe_state(catalog: &SqliteCatalog, ctx: &SessionContext) -> Value {
    let table = catalog.load_table("db", "mixed").await.unwrap();
    let m = table.metadata();
    let mut snapshots: Vec<i64> = m.snapshots.iter().map(|s| s.snapshot_id).collect();
    snapshots.sort();
    let refs: serde_json::Map<String, Value> = m
        .refs
        .iter()
        .map(|(name, r)| {
            let kind = match r.retention {
                icefloe::spec::SnapshotRetention::Branch { .. } => "branch",
                icefloe::spec::SnapshotRetention::Tag { .. } => "tag",
            };
            (
                name.clone(),
                serde_json::json!({"snapshot_id": r.snapshot_id, "type": kind}),
            )
        })
        .collect();
    let batches = icefloe::sql::sql(ctx, "SELECT count(*) FROM db.mixed")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let count = batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<datafusion::arrow::array::Int64Array>()
        .unwrap()
        .value(0);
    serde_json::json!({"current": m.current_snapshot_id, "snapshots": snapshots,
        "refs": refs, "count": count})
}

/// icefloe tags, branches, rolls back and expires a table PyIceberg and icefloe wrote;
/// PyIceberg then sees the same snapshots, refs, current snapshot and rows; a tag PyIceberg
/// adds is seen by icefloe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_management_agrees_with_pyiceberg() {
    let Some(python) = python("snapshot_management_agrees_with_pyiceberg") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let warehouse = &dir.path().to_str().unwrap().to_string();
    interop_py(&python, &["setup", "mixed", warehouse]);
    let plan: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("plan.json")).unwrap()).unwrap();
    let ctx = SessionContext::new();
    icefloe::sql::register(&ctx);
    let db = dir.path().join("catalog.db");
    let catalog = register_catalog_as_default(&ctx, &db, Relocation::default())
        .await
        .unwrap();
    for commit in plan["tables"][0]["commits"].as_array().unwrap() {
        let input = commit["input"].as_str().unwrap();
        match commit["by"].as_str().unwrap() {
            "icefloe" => append_parquet(&ctx, &catalog, "db", "mixed", input).await,
            _ => interop_py(&python, &["append", warehouse, "db.mixed", input]),
        }
    }
    let table = catalog.load_table("db", "mixed").await.unwrap();
    let ids: Vec<i64> = table
        .metadata()
        .snapshots
        .iter()
        .map(|s| s.snapshot_id)
        .collect();
    assert_eq!(ids.len(), 3);
    let manager = SnapshotManager::new(
        icefloe::WriteTarget::sqlite(Arc::clone(&catalog), "db", "mixed").expect("target"),
    );
    manager.create_tag("v1", Some(ids[0]), None).await.unwrap();
    manager
        .create_branch("dev", Some(ids[1]), BranchRetention::default())
        .await
        .unwrap();
    manager.rollback_to_snapshot(ids[1]).await.unwrap();
    // The third commit is now on no branch: it expires.
    let report = manager
        .expire_snapshots(&ExpireSnapshots::default())
        .await
        .unwrap();
    assert_eq!(report.expired, [ids[2]]);
    let theirs = pyiceberg_state(&python, warehouse, "db.mixed");
    let ours = icefloe_state(&catalog, &ctx).await;
    assert_eq!(
        theirs, ours,
        "PyIceberg (left) and icefloe (right) disagree"
    );
    assert_eq!(ours["current"], ids[1]);
    // And the other way: a tag PyIceberg makes is icefloe's too.
    interop_py(&python, &["tag", warehouse, "db.mixed", "from_pyiceberg"]);
    let ours = icefloe_state(&catalog, &ctx).await;
    assert_eq!(ours["refs"]["from_pyiceberg"]["snapshot_id"], ids[1]);
    assert_eq!(pyiceberg_state(&python, warehouse, "db.mixed"), ours);
    // PyIceberg rolls back to the first snapshot, drops the tag on it and expires the second
    // (its ref moved away first: dev and from_pyiceberg point at it, so drop them in icefloe).
    manager.drop_ref("dev").await.unwrap();
    manager.drop_ref("from_pyiceberg").await.unwrap();
    let (first, second) = (ids[0].to_string(), ids[1].to_string());
    interop_py(&python, &["pyops", warehouse, "db.mixed", &first, &second]);
    let ours = icefloe_state(&catalog, &ctx).await;
    assert_eq!(ours["current"], ids[0]);
    assert_eq!(ours["snapshots"], serde_json::json!([ids[0]]));
    assert!(ours["refs"].get("v1").is_none(), "{ours}");
    assert_eq!(pyiceberg_state(&python, warehouse, "db.mixed"), ours);
}
