//! icefloe's [`RestCatalog`] against a REST catalog it did not write: lakana-server (PyPI),
//! started on 127.0.0.1 by these tests through `tests/interop/rest.py` and stopped with them
//! (it ends when its standard input closes). PyIceberg's REST client is the other writer and
//! reader on the same catalog.
//!
//! Runs when `ICEFLOE_REST_PYTHON` names a Python with `.ci/rest-requirements.txt` installed
//! (`.ci/run` sets it up); otherwise each test says loudly that the REST checks were NOT run,
//! and passes. lakana-server keeps tables only under its top-level namespaces `bronze`,
//! `silver` and `gold`, so the tests' namespaces are made under `bronze`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringViewArray};
use datafusion::prelude::SessionContext;
use icefloe::catalog::{Catalog, Namespace, RestCatalog, TableIdent};
use icefloe::io::{FileIO, StorageProperties};
use icefloe::maintenance::SnapshotManager;
use icefloe::spec::{SnapshotSelector, TableRequirement, TableUpdate};
use icefloe::to_arrow::schema_to_arrow;
use icefloe::write::{TableCreation, append_batches};
use icefloe::{Error, IcebergTableProvider, WriteTarget};

use crate::support::{collect, scalar};

struct RestServer {
    uri: String,
    _state: tempfile::TempDir,
    _stdin: ChildStdin,
    _child: Child,
}

const TOKEN: &str = "lakana_pat_0123456789abcdef_icefloe-test-secret-0123456789ab";

fn say(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{message}");
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/rest.py")
}

fn python() -> Option<PathBuf> {
    std::env::var_os("ICEFLOE_REST_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// The server shared by this binary's tests; `None` (said loudly) without lakana-server.
fn server(test: &str) -> Option<&'static RestServer> {
    static SERVER: OnceLock<Result<RestServer, String>> = OnceLock::new();
    crate::servers::shared(&SERVER, start, "rest", test)
}

fn start() -> Result<RestServer, String> {
    let python = python().ok_or("ICEFLOE_REST_PYTHON is not set (.ci/run sets it up)")?;
    let lakana = python.with_file_name("lakana-server");
    if !lakana.exists() {
        return Err(format!("{} is missing", lakana.display()));
    }
    let state = tempfile::tempdir().map_err(|e| e.to_string())?;
    let args = [std::ffi::OsStr::new("server"), state.path().as_os_str()];
    let (port, stdin, child) =
        crate::servers::spawn_server(&python, "rest.py", &args, Duration::from_secs(180))?;
    say(&format!("rest: lakana-server is on 127.0.0.1:{port}"));
    Ok(RestServer {
        uri: format!("http://127.0.0.1:{port}"),
        _state: state,
        _stdin: stdin,
        _child: child,
    })
}

impl RestServer {
    fn properties(&self) -> BTreeMap<String, String> {
        [
            ("uri", self.uri.as_str()),
            ("token", TOKEN),
            ("prefix", "dev"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    async fn catalog(&self) -> Arc<dyn Catalog> {
        Arc::new(
            RestCatalog::connect("lakana", self.properties(), FileIO::default())
                .await
                .expect("connect to lakana-server"),
        )
    }

    /// Runs `rest.py` with PyIceberg's REST client; its standard output.
    fn pyiceberg(&self, args: &[&str]) -> String {
        let mut command = Command::new(python().unwrap());
        command.arg(script()).arg(args[0]).arg(&self.uri).arg(TOKEN);
        command.args(&args[1..]);
        let out = command.output().expect("run rest.py");
        assert!(
            out.status.success(),
            "rest.py {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

fn batch(target_schema: &icefloe::spec::Schema, ids: std::ops::Range<i64>) -> RecordBatch {
    let schema = Arc::new(schema_to_arrow(target_schema).unwrap());
    let names: Vec<String> = ids.clone().map(|i| format!("n{i}")).collect();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(ids)),
            Arc::new(StringViewArray::from(names)),
        ],
    )
    .unwrap()
}

fn creation() -> TableCreation {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    TableCreation::from_arrow(Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
    ])))
}

async fn count(table: &icefloe::Table) -> i64 {
    let ctx = SessionContext::new();
    let provider = IcebergTableProvider::try_new(table.clone(), SnapshotSelector::Current).unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    scalar(
        &ctx,
        "SELECT count(*) FROM t",
        crate::render::Style::PYICEBERG,
    )
    .await
    .unwrap()
    .as_i64()
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_namespaces_and_tables_through_a_server_icefloe_did_not_write() {
    let Some(server) = server("catalog") else {
        return;
    };
    let catalog = server.catalog().await;
    let ns = Namespace::new(["bronze", "icefloe_ns"]).unwrap();
    catalog
        .create_namespace(&ns, [("owner".to_string(), "icefloe".to_string())].into())
        .await
        .unwrap();
    assert!(catalog.namespace_exists(&ns).await.unwrap());
    let err = catalog
        .create_namespace(&ns, BTreeMap::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
    assert_eq!(
        catalog.namespace_properties(&ns).await.unwrap()["owner"],
        "icefloe"
    );
    catalog
        .update_namespace_properties(
            &ns,
            &["owner".to_string()],
            [("k".into(), "v".into())].into(),
        )
        .await
        .unwrap();
    let properties = catalog.namespace_properties(&ns).await.unwrap();
    assert_eq!(properties.get("k").map(String::as_str), Some("v"));
    assert!(!properties.contains_key("owner"));
    let children = catalog
        .list_namespaces(&Namespace::new(["bronze"]).unwrap())
        .await
        .unwrap();
    assert!(children.contains(&ns), "{children:?}");

    let ident = TableIdent::new(ns.clone(), "events").unwrap();
    let table = catalog.create_table(&ident, &creation()).await.unwrap();
    assert!(catalog.table_exists(&ident).await.unwrap());
    let err = catalog.create_table(&ident, &creation()).await.unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
    assert_eq!(catalog.list_tables(&ns).await.unwrap(), vec![ident.clone()]);

    // icefloe appends twice, tags the first snapshot; PyIceberg reads it all through REST.
    let target = WriteTarget::new(Arc::clone(&catalog), ident.clone());
    let schema = table.metadata().current_schema().clone();
    append_batches(&target, &[batch(&schema, 1..4)], "main")
        .await
        .unwrap();
    let first = target.load().await.unwrap();
    let first_id = first.metadata().current_snapshot_id.unwrap();
    append_batches(&target, &[batch(&schema, 4..6)], "main")
        .await
        .unwrap();
    SnapshotManager::new(target.clone())
        .create_tag("first", Some(first_id), None)
        .await
        .unwrap();
    let loaded = catalog.load_table(&ident).await.unwrap();
    assert_eq!(count(&loaded).await, 5);
    let read = server.pyiceberg(&["read", "bronze.icefloe_ns.events"]);
    assert_eq!(
        read.lines().filter(|l| l.contains("\"id\"")).count(),
        5,
        "{read}"
    );
    assert!(read.contains("{\"id\": 5, \"name\": \"n5\"}"), "{read}");
    assert!(
        read.contains(&format!("{{\"snapshot\": {first_id}, \"rows\": 3}}")),
        "{read}"
    );
    assert!(read.contains("\"ref\": \"first\""), "{read}");

    // PyIceberg appends; icefloe sees it on its next load.
    server.pyiceberg(&["append", "bronze.icefloe_ns.events", "100", "2"]);
    let loaded = catalog.load_table(&ident).await.unwrap();
    assert_eq!(count(&loaded).await, 7);

    // A stale requirement is a conflict, and nothing changes.
    let stale = vec![TableRequirement::AssertRefSnapshotId {
        ref_name: "main".into(),
        snapshot_id: Some(first_id),
    }];
    let update = vec![TableUpdate::SetProperties {
        updates: [("stale".to_string(), "yes".to_string())].into(),
    }];
    let err = catalog
        .commit_table(&ident, &stale, &update)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::CommitConflict { .. }), "{err}");
    let loaded = catalog.load_table(&ident).await.unwrap();
    assert!(loaded.metadata().property("stale").is_none());

    // Rename, then drop; unknown tables and namespaces are NotFound naming them.
    let renamed = TableIdent::new(ns.clone(), "events_renamed").unwrap();
    catalog.rename_table(&ident, &renamed).await.unwrap();
    assert!(!catalog.table_exists(&ident).await.unwrap());
    let err = catalog.load_table(&ident).await.unwrap_err();
    assert!(
        matches!(err, Error::NotFound { .. }) && err.to_string().contains("icefloe_ns.events"),
        "{err}"
    );
    catalog.drop_table(&renamed, false).await.unwrap();
    assert!(catalog.list_tables(&ns).await.unwrap().is_empty());
    catalog.drop_namespace(&ns).await.unwrap();
    assert!(!catalog.namespace_exists(&ns).await.unwrap());
    let err = catalog.namespace_properties(&ns).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_tables_pyiceberg_made_read_in_icefloe_and_racing_writers_lose_nothing() {
    let Some(server) = server("race") else {
        return;
    };
    let catalog = server.catalog().await;
    let ns = Namespace::new(["bronze", "icefloe_race"]).unwrap();
    catalog
        .create_namespace(&ns, BTreeMap::new())
        .await
        .unwrap();
    // PyIceberg creates and writes; icefloe reads it, in SQL too.
    server.pyiceberg(&["create", "bronze.icefloe_race.t"]);
    let ident = TableIdent::new(ns, "t").unwrap();
    let table = catalog.load_table(&ident).await.unwrap();
    let ctx = SessionContext::new();
    let target = WriteTarget::new(Arc::clone(&catalog), ident.clone());
    let provider = IcebergTableProvider::try_new(table.clone(), SnapshotSelector::Current)
        .unwrap()
        .with_write_target(target.clone());
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let rows = collect(&ctx, "SELECT id, name FROM t ORDER BY id")
        .await
        .unwrap();
    let ids: Vec<i64> = rows
        .iter()
        .flat_map(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .values()
                .to_vec()
        })
        .collect();
    assert_eq!(ids, vec![1, 2, 3]);

    // icefloe (SQL INSERT, 5 commits) and PyIceberg (5 commits) at once: all 10 land.
    let pyiceberg = {
        let uri = server.uri.clone();
        std::thread::spawn(move || {
            Command::new(python().unwrap())
                .arg(script())
                .args(["append", &uri, TOKEN, "bronze.icefloe_race.t", "1000", "-5"])
                .output()
                .unwrap()
        })
    };
    for n in 0..5 {
        collect(
            &ctx,
            &format!("INSERT INTO t VALUES ({}, 'icefloe')", 500 + n),
        )
        .await
        .unwrap();
    }
    let out = pyiceberg.join().unwrap();
    assert!(
        out.status.success(),
        "PyIceberg's appends: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = catalog.load_table(&ident).await.unwrap();
    assert_eq!(count(&table).await, 13);
    let read = server.pyiceberg(&["read", "bronze.icefloe_race.t"]);
    assert_eq!(
        read.lines().filter(|l| l.contains("\"id\"")).count(),
        13,
        "{read}"
    );
    assert_eq!(
        read.lines().filter(|l| l.contains("\"rows\"")).count(),
        11,
        "{read}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_failures_are_typed_errors_that_never_show_the_token() {
    let Some(server) = server("errors") else {
        return;
    };
    // A wrong token: a catalog error naming the catalog, without the token.
    let mut properties = server.properties();
    properties.insert(
        "token".into(),
        "lakana_pat_0123456789abcdef_WRONG-SECRET".into(),
    );
    let catalog = RestCatalog::connect("lakana", properties, FileIO::default())
        .await
        .unwrap();
    let err = catalog
        .list_namespaces(&Namespace::root())
        .await
        .unwrap_err();
    let shown = crate::support::error_chain(&err);
    assert!(matches!(err, Error::Catalog { .. }), "{err:?}");
    assert!(shown.contains("lakana") && shown.contains("401"), "{shown}");
    assert!(!shown.contains("WRONG-SECRET"), "{shown}");
    assert!(!format!("{catalog:?}").contains("WRONG-SECRET"));

    // Nobody listening: a catalog error naming the address, in bounded time.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let mut properties = server.properties();
    properties.insert("uri".into(), format!("http://127.0.0.1:{port}"));
    let started = std::time::Instant::now();
    let err = RestCatalog::connect("gone", properties, FileIO::default())
        .await
        .unwrap_err();
    let shown = crate::support::error_chain(&err);
    assert!(
        shown.contains(&format!("127.0.0.1:{port}")) && shown.contains("could not connect"),
        "{shown}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// The values of a SQL answer's first column, as text.
async fn column_text(ctx: &SessionContext, sql: &str) -> Vec<String> {
    column_text_at(ctx, sql, 0).await
}

/// The values of a SQL answer's column `index`, as text.
async fn column_text_at(ctx: &SessionContext, sql: &str, index: usize) -> Vec<String> {
    let batches = crate::support::icefloe_sql(ctx, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = Vec::new();
    for batch in &batches {
        let column = datafusion::arrow::compute::cast(
            batch.column(index),
            &datafusion::arrow::datatypes::DataType::Utf8,
        )
        .unwrap();
        let column = column
            .as_any()
            .downcast_ref::<datafusion::arrow::array::StringArray>()
            .unwrap();
        out.extend(column.iter().map(|v| v.unwrap_or("NULL").to_string()));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_sql_ddl_and_dml_on_a_rest_catalog_read_back_by_pyiceberg() {
    let Some(server) = server("sql") else {
        return;
    };
    let catalog = server.catalog().await;
    let ctx = SessionContext::new();
    icefloe::sql::register(&ctx);
    icefloe::session::attach_as_default(&ctx, Arc::clone(&catalog))
        .await
        .unwrap();
    let run = |sql: &'static str| {
        let ctx = ctx.clone();
        async move {
            crate::support::icefloe_sql(&ctx, sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
                .collect()
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
        }
    };
    // One schema per namespace, named by its levels joined with dots.
    run(r#"CREATE SCHEMA "bronze.icefloe_sql""#).await;
    run(r#"CREATE SCHEMA IF NOT EXISTS "bronze.icefloe_sql""#).await;
    let namespaces = column_text(&ctx, "SHOW NAMESPACES").await;
    assert!(
        namespaces.contains(&"bronze.icefloe_sql".to_string()),
        "{namespaces:?}"
    );
    run(
        r#"CREATE TABLE "bronze.icefloe_sql".orders (id BIGINT, region VARCHAR, amount DOUBLE)
           PARTITION BY (region) TBLPROPERTIES ('write.format.default' = 'parquet')"#,
    )
    .await;
    run(r#"INSERT INTO "bronze.icefloe_sql".orders VALUES
           (1, 'eu', 10.5), (2, 'us', 20.0), (3, 'eu', 5.25)"#)
    .await;
    run(r#"INSERT INTO "bronze.icefloe_sql".orders VALUES (4, 'apac', 1.0)"#).await;
    run(r#"CREATE TABLE "bronze.icefloe_sql".eu AS
           SELECT id, amount FROM "bronze.icefloe_sql".orders WHERE region = 'eu'"#)
    .await;
    let tables = column_text_at(&ctx, r#"SHOW TABLES IN "bronze.icefloe_sql""#, 1).await;
    let sum = column_text(
        &ctx,
        r#"SELECT sum(amount) FROM "bronze.icefloe_sql".orders WHERE region = 'eu'"#,
    )
    .await;
    assert_eq!(sum, ["15.75"]);
    let eu = column_text(&ctx, r#"SELECT count(*) FROM "bronze.icefloe_sql".eu"#).await;
    assert_eq!(eu, ["2"]);

    // The states of a table are tables too: the first snapshot, and its metadata tables.
    let orders = TableIdent::new(Namespace::new(["bronze", "icefloe_sql"]).unwrap(), "orders");
    let table = catalog.load_table(&orders.unwrap()).await.unwrap();
    let first = table.metadata().snapshots.first().unwrap().snapshot_id;
    let at_first = format!(r#"SELECT count(*) FROM "bronze.icefloe_sql"."orders@{first}""#);
    assert_eq!(column_text(&ctx, &at_first).await, ["3"]);
    let snapshots = column_text(
        &ctx,
        r#"SELECT count(*) FROM "bronze.icefloe_sql"."orders$snapshots""#,
    )
    .await;
    assert_eq!(snapshots, ["2"]);
    assert_eq!(tables, ["eu", "orders"]);

    // PyIceberg reads what SQL wrote, through the same server.
    let read = server.pyiceberg(&["read", "bronze.icefloe_sql.orders"]);
    assert_eq!(
        read.lines().filter(|l| l.contains("\"id\"")).count(),
        4,
        "{read}"
    );
    assert!(
        read.contains(r#""amount": 5.25, "id": 3, "region": "eu""#),
        "{read}"
    );

    // Row-level changes commit through the server too (copy-on-write and merge-on-read);
    // PyIceberg reads the result.
    run(r#"DELETE FROM "bronze.icefloe_sql".orders WHERE id = 2"#).await;
    run(r#"UPDATE "bronze.icefloe_sql".orders SET amount = amount * 2 WHERE region = 'eu'"#).await;
    run(
        r#"CREATE TABLE "bronze.icefloe_sql".mor (id BIGINT, v VARCHAR)
           TBLPROPERTIES ('write.delete.mode' = 'merge-on-read')"#,
    )
    .await;
    run(r#"INSERT INTO "bronze.icefloe_sql".mor VALUES (1, 'a'), (2, 'b'), (3, 'c')"#).await;
    run(r#"DELETE FROM "bronze.icefloe_sql".mor WHERE id IN (SELECT id FROM "bronze.icefloe_sql".orders)"#)
        .await;
    let read = server.pyiceberg(&["read", "bronze.icefloe_sql.orders"]);
    assert_eq!(
        read.lines().filter(|l| l.contains("\"id\"")).count(),
        3,
        "{read}"
    );
    assert!(
        read.contains(r#""amount": 10.5, "id": 3, "region": "eu""#),
        "{read}"
    );
    let read = server.pyiceberg(&["read", "bronze.icefloe_sql.mor"]);
    assert_eq!(
        read.lines().filter(|l| l.contains("\"id\"")).count(),
        1,
        "only id 2 is not an order left: {read}"
    );
    assert!(read.contains(r#""id": 2"#), "{read}");

    // DROP TABLE removes it from the catalog; a missing one is an error naming it.
    run(r#"DROP TABLE "bronze.icefloe_sql".eu"#).await;
    let eu = TableIdent::new(Namespace::new(["bronze", "icefloe_sql"]).unwrap(), "eu").unwrap();
    assert!(!catalog.table_exists(&eu).await.unwrap());
    let err = crate::support::icefloe_sql(&ctx, r#"DROP TABLE "bronze.icefloe_sql".eu"#)
        .await
        .err()
        .unwrap();
    assert!(err.contains("bronze.icefloe_sql.eu"), "{err}");
    run(r#"DROP TABLE IF EXISTS "bronze.icefloe_sql".eu"#).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_cli_reaches_the_catalog_by_uri_and_by_its_pyiceberg_yaml_name() {
    let Some(server) = server("cli") else {
        return;
    };
    let ns = Namespace::new(["bronze", "icefloe_cli"]).unwrap();
    let catalog = server.catalog().await;
    catalog
        .create_namespace(&ns, BTreeMap::new())
        .await
        .unwrap();
    server.pyiceberg(&["create", "bronze.icefloe_cli.t"]);
    let cli = |args: &[&str], home: Option<&Path>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_icefloe"));
        command.args(args);
        command.env_remove("PYICEBERG_HOME");
        if let Some(home) = home {
            command.env("PYICEBERG_HOME", home);
        }
        let out = command.output().expect("run icefloe");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // By URI, with the token and prefix as properties.
    let uri = format!("rest+{}", server.uri);
    let token = format!("token={TOKEN}");
    let (ok, out, err) = cli(
        &[
            "sql",
            "--catalog",
            &uri,
            "--property",
            &token,
            "--property",
            "prefix=dev",
            "--format",
            "csv",
            r#"SELECT count(*) AS n, max(id) AS top FROM "bronze.icefloe_cli".t"#,
        ],
        None,
    );
    assert!(ok, "{err}");
    assert_eq!(out.lines().nth(1), Some("3,3"), "{out}");

    // By the catalog's name in a .pyiceberg.yaml, as PyIceberg finds it; INSERT commits there.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".pyiceberg.yaml"),
        format!(
            "catalog:\n  lake:\n    type: rest\n    uri: {}\n    token: {TOKEN}\n    prefix: dev\n",
            server.uri
        ),
    )
    .unwrap();
    let (ok, _, err) = cli(
        &[
            "sql",
            "--catalog",
            "lake",
            r#"INSERT INTO "bronze.icefloe_cli".t VALUES (40, 'cli')"#,
        ],
        Some(home.path()),
    );
    assert!(ok, "{err}");
    let read = server.pyiceberg(&["read", "bronze.icefloe_cli.t"]);
    assert!(read.contains(r#"{"id": 40, "name": "cli"}"#), "{read}");

    // The tree of a REST table, and maintenance through the catalog.
    let (ok, out, err) = cli(
        &["tree", "--catalog", "lake", "bronze.icefloe_cli.t"],
        Some(home.path()),
    );
    assert!(ok, "{err}");
    assert!(out.contains("catalog lake bronze.icefloe_cli.t"), "{out}");
    let (ok, out, err) = cli(
        &[
            "tag",
            "--catalog",
            "lake",
            "bronze.icefloe_cli.t",
            "from_cli",
        ],
        Some(home.path()),
    );
    assert!(ok, "{err}\n{out}");
    let (ok, out, err) = cli(
        &["check", "--catalog", "lake", "bronze.icefloe_cli.t"],
        Some(home.path()),
    );
    assert!(ok && out.contains("no problem found"), "{err}\n{out}");
    let read = server.pyiceberg(&["read", "bronze.icefloe_cli.t"]);
    assert!(read.contains(r#""ref": "from_cli""#), "{read}");

    // An unknown name says where it looked; the token never shows.
    let (ok, _, err) = cli(
        &["sql", "--catalog", "nowhere", "SELECT 1"],
        Some(home.path()),
    );
    assert!(!ok && err.contains(".pyiceberg.yaml"), "{err}");
    let (ok, _, err) = cli(
        &[
            "sql",
            "--catalog",
            &uri,
            "--property",
            "prefix=dev",
            "--property",
            "token=lakana_pat_0123456789abcdef_WRONG-SECRET",
            "SHOW NAMESPACES",
        ],
        None,
    );
    assert!(
        !ok && err.contains("401") && !err.contains("WRONG-SECRET"),
        "{err}"
    );
}

/// An adapter (PyIceberg's SqlCatalog behind the REST protocol) of its own; `None` (said
/// loudly) without the REST Python.
fn adapter(test: &str, state: &Path) -> Option<crate::servers::RestAdapter> {
    adapter_on(test, state, None)
}

/// [`adapter`] with its warehouse on the S3 server at `s3` (which it vends credentials of).
fn adapter_on(test: &str, state: &Path, s3: Option<&str>) -> Option<crate::servers::RestAdapter> {
    match crate::servers::RestAdapter::start(state, s3) {
        Ok(server) => Some(server),
        Err(why) => {
            say(&format!("rest {test}: the REST checks were NOT run: {why}"));
            None
        }
    }
}

/// Namespace `db` and an empty table `db.t` of `catalog`, and its write target.
async fn db_t(catalog: &Arc<dyn Catalog>) -> (TableIdent, icefloe::Table, WriteTarget) {
    let ns = Namespace::new(["db"]).unwrap();
    catalog
        .create_namespace(&ns, BTreeMap::new())
        .await
        .unwrap();
    let ident = TableIdent::new(ns, "t").unwrap();
    let table = catalog.create_table(&ident, &creation()).await.unwrap();
    let target = WriteTarget::new(Arc::clone(catalog), ident.clone());
    (ident, table, target)
}

/// PyIceberg's REST client reading `table` from the adapter (`rest_adapter.py read`), with
/// the S3 server at `s3` when the warehouse is there.
fn pyiceberg_reads_on(
    server: &crate::servers::RestAdapter,
    table: &str,
    s3: Option<&str>,
) -> String {
    let out = Command::new(python().unwrap())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/rest_adapter.py"))
        .args(["read", &server.uri, table])
        .args(s3)
        .output()
        .expect("run rest_adapter.py");
    assert!(
        out.status.success(),
        "rest_adapter.py read {table}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn pyiceberg_reads(server: &crate::servers::RestAdapter, table: &str) -> String {
    pyiceberg_reads_on(server, table, None)
}

/// DuckDB's iceberg extension attached to the adapter as `lake`: each query's rows as one JSON
/// line; `None` (said loudly) without the interop Python (`ICEFLOE_PYTHON`).
fn duckdb_reads(server: &crate::servers::RestAdapter, queries: &[&str]) -> Option<Vec<String>> {
    let Some(python) = std::env::var_os("ICEFLOE_PYTHON").filter(|p| !p.is_empty()) else {
        say("rest duckdb: the DuckDB REST checks were NOT run: ICEFLOE_PYTHON is not set");
        return None;
    };
    let out = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/rest_adapter.py"))
        .args(["duckdb", &server.uri])
        .args(queries)
        .output()
        .expect("run rest_adapter.py duckdb");
    assert!(
        out.status.success(),
        "DuckDB over REST: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_oauth2_tokens_are_refreshed_listings_paged_and_head_used() {
    let state = tempfile::tempdir().unwrap();
    let Some(server) = adapter("oauth2", state.path()) else {
        return;
    };
    let catalog = server.catalog("adapter").await;
    // Five namespaces and three tables: the server pages by two.
    for n in 0..5 {
        let ns = Namespace::new([format!("ns{n}")]).unwrap();
        catalog
            .create_namespace(&ns, BTreeMap::new())
            .await
            .unwrap();
    }
    let listed = catalog.list_namespaces(&Namespace::root()).await.unwrap();
    assert_eq!(listed.len(), 5, "{listed:?}");
    let ns0 = Namespace::new(["ns0"]).unwrap();
    for t in ["a", "b", "c"] {
        let ident = TableIdent::new(ns0.clone(), t).unwrap();
        catalog.create_table(&ident, &creation()).await.unwrap();
    }
    let tables = catalog.list_tables(&ns0).await.unwrap();
    assert_eq!(
        tables.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
    let nested = Namespace::new(["ns0", "inner"]).unwrap();
    catalog
        .create_namespace(&nested, BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(
        catalog.list_namespaces(&ns0).await.unwrap(),
        std::slice::from_ref(&nested)
    );
    // HEAD, which the server lists among its endpoints.
    assert!(catalog.namespace_exists(&nested).await.unwrap());
    assert!(
        !catalog
            .namespace_exists(&Namespace::new(["nope"]).unwrap())
            .await
            .unwrap()
    );
    assert!(
        catalog
            .table_exists(&TableIdent::new(ns0.clone(), "b").unwrap())
            .await
            .unwrap()
    );
    assert!(
        !catalog
            .table_exists(&TableIdent::new(ns0.clone(), "z").unwrap())
            .await
            .unwrap()
    );

    // One token so far; the server forgets it: the next request gets a 401, a new token, and
    // succeeds.
    assert_eq!(
        server.test_endpoint("/test/stats", false)["tokens-issued"],
        1
    );
    server.test_endpoint("/test/revoke", true);
    assert_eq!(catalog.list_tables(&ns0).await.unwrap().len(), 3);
    assert_eq!(
        server.test_endpoint("/test/stats", false)["tokens-issued"],
        2
    );

    // A wrong secret: a typed error naming the token server, never the secret.
    let mut properties = server.properties();
    properties.insert("credential".into(), "icefloe:WRONG-SECRET".into());
    let err = RestCatalog::connect("adapter", properties, FileIO::default())
        .await
        .unwrap_err();
    let shown = crate::support::error_chain(&err);
    assert!(shown.contains("OAuth2") && shown.contains("401"), "{shown}");
    assert!(!shown.contains("WRONG-SECRET"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_tags_rollback_and_expiry_commit_through_the_catalog_and_pyiceberg_and_duckdb_agree() {
    let state = tempfile::tempdir().unwrap();
    let Some(server) = adapter("expire", state.path()) else {
        return;
    };
    let catalog: Arc<dyn Catalog> = Arc::new(server.catalog("adapter").await);
    let (_, table, target) = db_t(&catalog).await;
    let schema = table.metadata().current_schema().clone();
    for first in [1, 11, 21, 31] {
        append_batches(&target, &[batch(&schema, first..first + 3)], "main")
            .await
            .unwrap();
    }
    let snapshots: Vec<i64> = target
        .load()
        .await
        .unwrap()
        .metadata()
        .snapshots
        .iter()
        .map(|s| s.snapshot_id)
        .collect();
    assert_eq!(snapshots.len(), 4);
    let manager = SnapshotManager::new(target.clone());
    manager
        .create_tag("second", Some(snapshots[1]), None)
        .await
        .unwrap();
    manager
        .create_branch(
            "audit",
            Some(snapshots[2]),
            icefloe::maintenance::BranchRetention::default(),
        )
        .await
        .unwrap();
    // Roll main back to the third snapshot, then expire the first one by id. The fourth is
    // now on no branch, and the spec's retention expires it too (step 5 of its policy).
    manager.rollback_to_snapshot(snapshots[2]).await.unwrap();
    let options = icefloe::maintenance::ExpireSnapshots::new().with_snapshot_ids([snapshots[0]]);
    let report = manager.expire_snapshots(&options).await.unwrap();
    let mut expired = report.expired.clone();
    expired.sort_by_key(|id| snapshots.iter().position(|s| s == id));
    assert_eq!(expired, [snapshots[0], snapshots[3]]);
    assert!(!report.deleted_files.is_empty(), "their manifest lists go");
    for file in &report.deleted_files {
        assert!(
            !Path::new(file.trim_start_matches("file://")).exists(),
            "{file}"
        );
    }

    // DuckDB, attached to the same catalog, agrees: main, the tag's snapshot, and the sums.
    let at = |id: i64| format!("SELECT count(*), sum(id) FROM lake.db.t AT (VERSION => {id})");
    if let Some(answers) = duckdb_reads(
        &server,
        &["SELECT count(*), sum(id) FROM lake.db.t", &at(snapshots[1])],
    ) {
        assert_eq!(answers, ["[[9, 108]]", "[[6, 42]]"], "{answers:?}");
    }

    let read = pyiceberg_reads(&server, "db.t");
    // Main is the third snapshot: 9 rows; the first and fourth are gone, the others kept.
    assert_eq!(
        read.lines().filter(|l| l.contains("\"id\"")).count(),
        9,
        "{read}"
    );
    for gone in [snapshots[0], snapshots[3]] {
        assert!(!read.contains(&format!("\"snapshot\": {gone}")), "{read}");
    }
    for (id, rows) in [(snapshots[1], 6), (snapshots[2], 9)] {
        assert!(
            read.contains(&format!("{{\"snapshot\": {id}, \"rows\": {rows}}}")),
            "{id}: {read}"
        );
    }
    assert!(
        read.contains(&format!(
            r#"{{"ref": "second", "type": "tag", "snapshot": {}}}"#,
            snapshots[1]
        )),
        "{read}"
    );
    assert!(
        read.contains(&format!(
            r#"{{"ref": "audit", "type": "branch", "snapshot": {}}}"#,
            snapshots[2]
        )),
        "{read}"
    );
    assert!(
        read.contains(&format!(
            r#"{{"ref": "main", "type": "branch", "snapshot": {}}}"#,
            snapshots[2]
        )),
        "{read}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_a_transaction_over_two_tables_commits_both_or_neither() {
    let state = tempfile::tempdir().unwrap();
    let Some(server) = adapter("transactions", state.path()) else {
        return;
    };
    let catalog = server.catalog("adapter").await;
    let ns = Namespace::new(["db"]).unwrap();
    catalog
        .create_namespace(&ns, BTreeMap::new())
        .await
        .unwrap();
    let (a, b) = (
        TableIdent::new(ns.clone(), "a").unwrap(),
        TableIdent::new(ns, "b").unwrap(),
    );
    let ta = catalog.create_table(&a, &creation()).await.unwrap();
    let tb = catalog.create_table(&b, &creation()).await.unwrap();
    let change = |ident: &TableIdent, table: &icefloe::Table, value: &str| {
        icefloe::catalog::rest::TableChange {
            ident: ident.clone(),
            requirements: vec![TableRequirement::AssertTableUuid {
                uuid: table.metadata().table_uuid.clone().unwrap(),
            }],
            updates: vec![TableUpdate::SetProperties {
                updates: [("batch".to_string(), value.to_string())].into(),
            }],
        }
    };
    catalog
        .commit_transaction(&[change(&a, &ta, "one"), change(&b, &tb, "one")])
        .await
        .unwrap();
    for ident in [&a, &b] {
        let loaded = catalog.load_table(ident).await.unwrap();
        assert_eq!(loaded.metadata().property("batch"), Some("one"), "{ident}");
    }
    // One stale requirement: a conflict, and neither table changes.
    let mut stale = change(&b, &tb, "two");
    stale.requirements = vec![TableRequirement::AssertRefSnapshotId {
        ref_name: "main".into(),
        snapshot_id: Some(42),
    }];
    let err = catalog
        .commit_transaction(&[change(&a, &ta, "two"), stale])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::CommitConflict { .. }), "{err}");
    for ident in [&a, &b] {
        let loaded = catalog.load_table(ident).await.unwrap();
        assert_eq!(loaded.metadata().property("batch"), Some("one"), "{ident}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_vended_credentials_reach_the_store_of_the_table() {
    let s3 = match crate::servers::S3::start() {
        Ok(s3) => s3,
        Err(why) => {
            say(&format!("rest vended: the REST checks were NOT run: {why}"));
            return;
        }
    };
    s3.create_bucket("icefloe-vended");
    let state = tempfile::tempdir().unwrap();
    let Some(server) = adapter_on("vended", state.path(), Some(&s3.endpoint)) else {
        return;
    };
    // The client knows the catalog only: no endpoint, no keys. Everything it reads and writes
    // on S3 goes with what the catalog vends for the table.
    let catalog: Arc<dyn Catalog> = Arc::new(server.catalog("adapter").await);
    let (ident, table, target) = db_t(&catalog).await;
    assert!(
        table
            .metadata()
            .location
            .starts_with("s3://icefloe-vended/")
    );
    let schema = table.metadata().current_schema().clone();
    append_batches(&target, &[batch(&schema, 1..5)], "main")
        .await
        .unwrap();

    // SQL through a session that has no storage properties either.
    let ctx = SessionContext::new();
    icefloe::sql::register(&ctx);
    icefloe::session::attach(&ctx, "lake", Arc::clone(&catalog));
    let n = column_text(&ctx, "SELECT count(*) FROM lake.db.t").await;
    assert_eq!(n, ["4"]);
    crate::support::icefloe_sql(&ctx, "INSERT INTO lake.db.t VALUES (9, 'nine')")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();

    let read = pyiceberg_reads_on(&server, "db.t", Some(&s3.endpoint));
    assert_eq!(
        read.lines().filter(|l| l.contains("\"id\"")).count(),
        5,
        "{read}"
    );
    assert!(read.contains(r#"{"id": 9, "name": "nine"}"#), "{read}");
    // No secret in EXPLAIN, in Debug, or in an error.
    const VENDED_SECRET: &str = "vended-secret-never-printed";
    let explained = column_text_at(&ctx, "EXPLAIN SELECT * FROM lake.db.t WHERE id > 2", 1).await;
    assert!(!explained.concat().contains(VENDED_SECRET), "{explained:?}");
    assert!(!format!("{catalog:?}").contains(VENDED_SECRET));
    let ghost = TableIdent::parse_dotted("db.ghost").unwrap();
    let err = catalog.load_table(&ghost).await.unwrap_err();
    assert!(!crate::support::error_chain(&err).contains(VENDED_SECRET));

    // Each load brings the catalog's newest credentials (a new session token each time here),
    // so each statement reads with credentials that have not expired.
    let loaded = catalog.load_table(&ident).await.unwrap();
    let token = |t: &icefloe::Table| t.io().storage().get("s3.session-token").map(String::from);
    let again = catalog.load_table(&ident).await.unwrap();
    assert!(token(&loaded).is_some());
    assert_ne!(token(&loaded), token(&again));
    assert!(!format!("{:?}", again.io()).contains(VENDED_SECRET));
    assert_eq!(count(&again).await, 5);
    let files = loaded.metadata().current_snapshot().unwrap();
    assert!(
        files
            .manifest_list
            .as_deref()
            .is_some_and(|l| l.starts_with("s3://icefloe-vended/")),
        "{:?}",
        files.manifest_list
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_expired_vended_credentials_are_renewed_while_a_table_is_in_use() {
    let s3 = match crate::servers::S3::start() {
        Ok(s3) => s3,
        Err(why) => {
            say(&format!(
                "rest renewal: the REST checks were NOT run: {why}"
            ));
            return;
        }
    };
    s3.create_bucket("icefloe-vended");
    let state = tempfile::tempdir().unwrap();
    let Some(server) = adapter_on("renewal", state.path(), Some(&s3.endpoint)) else {
        return;
    };
    // Credentials that live three seconds; the S3 server refuses them after that.
    server.test_endpoint("/test/credential-lifetime?ms=3000", true);
    let catalog: Arc<dyn Catalog> = Arc::new(server.catalog("adapter").await);
    let (ident, table, target) = db_t(&catalog).await;
    let schema = table.metadata().current_schema().clone();
    append_batches(&target, &[batch(&schema, 1..5)], "main")
        .await
        .unwrap();
    let held = catalog.load_table(&ident).await.unwrap();
    let vended = held.io().storage().clone();
    tokio::time::sleep(Duration::from_millis(3_500)).await;

    // The credentials the table was loaded with have expired: a store that has only them (a
    // scope of its own, so a store of its own, with no way to renew) is refused.
    let alone = StorageProperties::from_pairs(
        vended
            .iter()
            .filter(|(k, _)| *k != icefloe::io::storage::CREDENTIAL_SCOPE)
            .chain([(
                icefloe::io::storage::CREDENTIAL_SCOPE,
                "s3://icefloe-vended/alone",
            )]),
    );
    let err = held
        .io()
        .clone()
        .with_storage(alone)
        .read(held.metadata_location())
        .await
        .unwrap_err();
    let chain = crate::support::error_chain(&err);
    assert!(chain.contains("ExpiredToken"), "{chain}");
    assert!(!chain.contains("vended-secret-never-printed"), "{chain}");

    // The table loaded then reads on: its store renewed them at the credentials endpoint.
    let before = server.test_endpoint("/test/stats", false);
    assert_eq!(before["credential-loads"], 0, "{before}");
    assert_eq!(count(&held).await, 4);
    let after = server.test_endpoint("/test/stats", false);
    assert!(after["credential-loads"].as_i64() >= Some(1), "{after}");
    assert_eq!(
        after["vended-loads"], before["vended-loads"],
        "no new load of the table"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_create_table_as_select_is_one_commit_through_stage_create() {
    let state = tempfile::tempdir().unwrap();
    let Some(server) = adapter("ctas", state.path()) else {
        return;
    };
    let catalog: Arc<dyn Catalog> = Arc::new(server.catalog("adapter").await);
    let ctx = SessionContext::new();
    icefloe::sql::register(&ctx);
    icefloe::session::attach_as_default(&ctx, Arc::clone(&catalog))
        .await
        .unwrap();
    for sql in [
        "CREATE SCHEMA db",
        "CREATE TABLE db.picked PARTITION BY (kind) AS \
         SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, 'a')) AS v(id, kind)",
    ] {
        crate::support::icefloe_sql(&ctx, sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .collect()
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    // The table was created with its rows: one metadata file, one snapshot, nothing logged
    // before it.
    let ident = TableIdent::parse_dotted("db.picked").unwrap();
    let table = catalog.load_table(&ident).await.unwrap();
    assert_eq!(table.metadata().snapshots.len(), 1);
    assert!(
        table.metadata().metadata_log.is_empty(),
        "{:?}",
        table.metadata().metadata_log
    );
    assert_eq!(
        table
            .metadata()
            .default_partition_spec()
            .unwrap()
            .fields
            .len(),
        1
    );
    let read = pyiceberg_reads(&server, "db.picked");
    assert_eq!(
        read.lines().filter(|l| l.contains("\"id\"")).count(),
        3,
        "{read}"
    );
    assert!(read.contains(r#"{"id": 2, "kind": "b"}"#), "{read}");

    // The maintenance functions work on a REST table too: expire all but the newest
    // snapshot, then tag it; PyIceberg sees both.
    for sql in [
        "INSERT INTO db.picked VALUES (4, 'b')",
        "SELECT * FROM iceberg_expire_snapshots('db.picked', 99999999999999, 1)",
        "SELECT * FROM iceberg_create_tag('db.picked', 'kept')",
    ] {
        crate::support::icefloe_sql(&ctx, sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .collect()
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let read = pyiceberg_reads(&server, "db.picked");
    assert_eq!(
        read.lines().filter(|l| l.contains("\"rows\"")).count(),
        1,
        "{read}"
    );
    assert!(read.contains(r#""ref": "kept", "type": "tag""#), "{read}");
    assert_eq!(
        read.lines().filter(|l| l.contains("\"id\"")).count(),
        4,
        "{read}"
    );

    // A query that fails leaves no table.
    let failed = crate::support::icefloe_sql(
        &ctx,
        "CREATE TABLE db.never AS SELECT CAST(x AS INT) AS id FROM (VALUES ('1'), ('no')) AS v(x)",
    )
    .await;
    let failed = match failed {
        Ok(frame) => frame.collect().await.map(drop).map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    assert!(failed.is_err(), "{failed:?}");
    let never = TableIdent::parse_dotted("db.never").unwrap();
    assert!(!catalog.table_exists(&never).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_a_lost_commit_answer_is_an_unknown_outcome_that_keeps_the_files() {
    let state = tempfile::tempdir().unwrap();
    let Some(server) = adapter("lost answer", state.path()) else {
        return;
    };
    let catalog: Arc<dyn Catalog> = Arc::new(server.catalog("adapter").await);
    let (ident, table, target) = db_t(&catalog).await;
    let schema = table.metadata().current_schema().clone();
    // The server commits, then answers 503: the client cannot know, says so, and deletes
    // nothing (the files are the table's now).
    server.test_endpoint("/test/fail-next-commit", true);
    let err = append_batches(&target, &[batch(&schema, 1..4)], "main")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::CommitStateUnknown { .. }), "{err}");
    let loaded = catalog.load_table(&ident).await.unwrap();
    assert_eq!(
        count(&loaded).await,
        3,
        "the commit happened and its files are there"
    );
    append_batches(&target, &[batch(&schema, 4..5)], "main")
        .await
        .unwrap();
    let read = pyiceberg_reads(&server, "db.t");
    assert_eq!(
        read.lines().filter(|l| l.contains("\"id\"")).count(),
        4,
        "{read}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_refs_loading_mode_reads_the_refs_and_writes_with_every_snapshot() {
    let state = tempfile::tempdir().unwrap();
    let Some(server) = adapter("refs mode", state.path()) else {
        return;
    };
    let mut properties = server.properties();
    properties.insert("snapshot-loading-mode".into(), "refs".into());
    let catalog: Arc<dyn Catalog> = Arc::new(
        RestCatalog::connect("adapter", properties, FileIO::default())
            .await
            .unwrap(),
    );
    let (ident, table, target) = db_t(&catalog).await;
    let schema = table.metadata().current_schema().clone();
    for first in [1, 11, 21] {
        append_batches(&target, &[batch(&schema, first..first + 2)], "main")
            .await
            .unwrap();
    }
    let all = catalog.load_table_for_write(&ident).await.unwrap();
    let ids: Vec<i64> = all
        .metadata()
        .snapshots
        .iter()
        .map(|s| s.snapshot_id)
        .collect();
    assert_eq!(ids.len(), 3);
    SnapshotManager::new(target.clone())
        .create_tag("first", Some(ids[0]), None)
        .await
        .unwrap();
    // Reads get the snapshots of main and the tag only, and answer as before.
    let refs = catalog.load_table(&ident).await.unwrap();
    let mut got: Vec<i64> = refs
        .metadata()
        .snapshots
        .iter()
        .map(|s| s.snapshot_id)
        .collect();
    got.sort();
    let mut wanted = vec![ids[0], ids[2]];
    wanted.sort();
    assert_eq!(got, wanted);
    assert_eq!(count(&refs).await, 6);
    // Writes build on every snapshot: the next append's parent is main's head, and the table
    // keeps its whole history.
    append_batches(&target, &[batch(&schema, 31..32)], "main")
        .await
        .unwrap();
    let all = catalog.load_table_for_write(&ident).await.unwrap();
    assert_eq!(all.metadata().snapshots.len(), 4);
    let read = pyiceberg_reads(&server, "db.t");
    assert_eq!(
        read.lines().filter(|l| l.contains("\"rows\"")).count(),
        4,
        "{read}"
    );
}
