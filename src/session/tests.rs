//! Tests of the DataFusion catalog adapters over a catalog database built here.

use std::path::{Path, PathBuf};

use ::datafusion::arrow::datatypes::{DataType, Field, Schema};
use ::datafusion::catalog::MemTable;
use rusqlite::Connection;

use super::*;
use crate::catalog::test_support::{metadata_json, write};

const DDL: &str = "
CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL,
  table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL,
  metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000),
  iceberg_type VARCHAR(5), PRIMARY KEY (catalog_name, table_namespace, table_name));
CREATE TABLE iceberg_namespace_properties (catalog_name VARCHAR(255) NOT NULL,
  namespace VARCHAR(255) NOT NULL, property_key VARCHAR(255) NOT NULL,
  property_value VARCHAR(1000) NOT NULL, PRIMARY KEY (catalog_name, namespace, property_key));";

/// A warehouse with `db.orders` (two metadata versions, pointer at the first) and
/// `nested.inner.deep`, and its catalog database.
struct Warehouse {
    _dir: tempfile::TempDir,
    db: PathBuf,
    orders_v1: String,
    orders_v2: String,
}

fn metadata_file(root: &Path, table: &str, name: &str) -> String {
    let table_dir = root.join(table);
    let path = table_dir.join("metadata").join(name);
    write(&path, metadata_json(table_dir.to_str().unwrap()).as_bytes());
    path.to_str().unwrap().to_string()
}

fn warehouse() -> Warehouse {
    let dir = tempfile::tempdir().unwrap();
    let orders_v1 = metadata_file(dir.path(), "db/orders", "00001-a.metadata.json");
    let orders_v2 = metadata_file(dir.path(), "db/orders", "00002-b.metadata.json");
    let deep = metadata_file(dir.path(), "nested/inner/deep", "00001-c.metadata.json");
    let db = dir.path().join("catalog.db");
    let rows = format!(
        "INSERT INTO iceberg_tables VALUES
           ('default', 'db', 'orders', '{orders_v1}', NULL, 'TABLE'),
           ('default', 'nested.inner', 'deep', '{deep}', NULL, 'TABLE');"
    );
    Connection::open(&db)
        .unwrap()
        .execute_batch(&format!("{DDL}{rows}"))
        .unwrap();
    Warehouse {
        _dir: dir,
        db,
        orders_v1,
        orders_v2,
    }
}

#[tokio::test]
async fn namespaces_are_schemas() {
    let wh = warehouse();
    let ctx = SessionContext::new();
    register_catalog(&ctx, "ice", &wh.db, Relocation::default())
        .await
        .unwrap();
    let catalog = ctx.catalog("ice").unwrap();
    // `nested` is a namespace too (the parent of `nested.inner`, as PyIceberg lists it), and
    // holds no tables.
    assert_eq!(catalog.schema_names(), ["db", "nested", "nested.inner"]);
    assert!(catalog.schema("nested").unwrap().table_names().is_empty());
    assert!(catalog.schema("nested.ghost").is_none());
    let db = catalog.schema("db").unwrap();
    assert_eq!(db.table_names(), ["orders"]);
    assert!(db.table_exist("orders"));
    assert!(!db.table_exist("ghost"));
    assert!(db.table("ghost").await.unwrap().is_none());
    assert_eq!(
        db.table_type("orders").await.unwrap(),
        Some(TableType::Base)
    );
    let deep = catalog.schema("nested.inner").unwrap();
    assert_eq!(deep.table_names(), ["deep"]);
    assert!(catalog.register_schema("x", Arc::clone(&db)).is_err());
}

#[tokio::test]
async fn default_catalog_keeps_the_public_schema() {
    let wh = warehouse();
    let ctx = SessionContext::new();
    register_catalog_as_default(&ctx, &wh.db, Relocation::default())
        .await
        .unwrap();
    let catalog = ctx.catalog("datafusion").unwrap();
    assert_eq!(
        catalog.schema_names(),
        ["db", "nested", "nested.inner", "public"]
    );
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
    let mem = MemTable::try_new(schema, vec![vec![]]).unwrap();
    ctx.register_table("scratch", Arc::new(mem)).unwrap();
    let batches = ctx
        .sql("SELECT count(*) FROM scratch")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_eq!(batches[0].num_rows(), 1);
}

#[tokio::test]
async fn missing_database_is_not_found() {
    let ctx = SessionContext::new();
    let err = register_catalog(&ctx, "ice", "/no/such/catalog.db", Relocation::default())
        .await
        .unwrap_err();
    assert!(matches!(err, crate::Error::NotFound { .. }), "{err:?}");
    assert!(ctx.catalog("ice").is_none());
}

// --- Needs TableMetadata::parse and IcebergTableProvider::try_new ---

/// The metadata file behind the provider DataFusion gets for `ice.db.orders`.
async fn planned_location(ctx: &SessionContext) -> String {
    let schema = ctx.catalog("ice").unwrap().schema("db").unwrap();
    let provider = schema.table("orders").await.unwrap().unwrap();
    let iceberg = provider.downcast_ref::<IcebergTableProvider>().unwrap();
    iceberg.table().metadata_location().to_string()
}

#[tokio::test]
async fn tables_are_loaded_fresh_on_every_lookup() {
    let wh = warehouse();
    let ctx = SessionContext::new();
    let catalog = register_catalog(&ctx, "ice", &wh.db, Relocation::default())
        .await
        .unwrap();
    assert_eq!(planned_location(&ctx).await, wh.orders_v1);
    catalog
        .commit_metadata_location("db", "orders", &wh.orders_v1, &wh.orders_v2)
        .unwrap();
    assert_eq!(planned_location(&ctx).await, wh.orders_v2);
}

#[tokio::test]
async fn sql_resolves_catalog_and_nested_namespace_names() {
    let wh = warehouse();
    let ctx = SessionContext::new();
    register_catalog(&ctx, "ice", &wh.db, Relocation::default())
        .await
        .unwrap();
    let df = ctx.table("ice.db.orders").await.unwrap();
    assert_eq!(df.schema().field(0).name(), "id");
    let df = ctx
        .sql(r#"SELECT id FROM ice."nested.inner".deep"#)
        .await
        .unwrap();
    assert_eq!(df.schema().fields().len(), 1);

    let ctx = SessionContext::new();
    register_catalog_as_default(&ctx, &wh.db, Relocation::default())
        .await
        .unwrap();
    let df = ctx.sql("SELECT id FROM db.orders").await.unwrap();
    assert_eq!(df.schema().fields().len(), 1);
}

// --- Refs by name ---

/// The schema `orders` of the catalog `db` (registered by `register_catalog_as_default`).
async fn ref_location(ctx: &SessionContext, name: &str) -> String {
    let schema = ctx.catalog("db").unwrap().schema("orders").unwrap();
    let provider = schema.table(name).await.unwrap().unwrap();
    let iceberg = provider.downcast_ref::<IcebergTableProvider>().unwrap();
    iceberg.table().metadata_location().to_string()
}

#[tokio::test]
async fn namespaces_become_catalogs_of_table_states() {
    let wh = warehouse();
    let ctx = SessionContext::new();
    let catalog = register_catalog_as_default(&ctx, &wh.db, Relocation::default())
        .await
        .unwrap();
    let db = ctx.catalog("db").unwrap();
    assert_eq!(db.schema_names(), ["orders"]);
    assert!(db.schema("ghost").is_none());
    assert!(
        ctx.catalog("nested.inner")
            .unwrap()
            .schema("deep")
            .is_some()
    );
    let orders = db.schema("orders").unwrap();
    assert!(orders.table_exist("branch_main"));
    assert!(!orders.table_exist("main"));
    assert!(orders.table("nonsense").await.unwrap().is_none());
    // Metadata tables are states of the table too.
    assert!(orders.table_exist("history"));
    // Fresh on every lookup, like the tables themselves.
    assert_eq!(ref_location(&ctx, "branch_main").await, wh.orders_v1);
    catalog
        .commit_metadata_location("db", "orders", &wh.orders_v1, &wh.orders_v2)
        .unwrap();
    assert_eq!(ref_location(&ctx, "branch_main").await, wh.orders_v2);
    let df = ctx
        .sql("SELECT id FROM db.orders.branch_main")
        .await
        .unwrap();
    assert_eq!(df.collect().await.unwrap().len(), 0);
    let err = ctx
        .sql("SELECT id FROM db.orders.tag_v1")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("ref 'v1'"), "{err}");
}

#[tokio::test]
async fn at_names_in_a_named_catalog() {
    let wh = warehouse();
    let ctx = SessionContext::new();
    register_catalog(&ctx, "ice", &wh.db, Relocation::default())
        .await
        .unwrap();
    assert!(ctx.catalog("db").is_none());
    let schema = ctx.catalog("ice").unwrap().schema("db").unwrap();
    assert!(schema.table("orders@main").await.unwrap().is_some());
    assert!(schema.table("ghost@main").await.unwrap().is_none());
    let err = schema.table("orders@nope").await.unwrap_err();
    assert!(err.to_string().contains("orders@nope"), "{err}");
    let df = ctx
        .sql(r#"SELECT id FROM ice.db."orders@main""#)
        .await
        .unwrap();
    assert_eq!(df.schema().fields().len(), 1);
}

/// The in-repo PyIceberg catalog (copied: the test must not touch the fixture), read through
/// relocation.
async fn pyiceberg_session() -> (tempfile::TempDir, SessionContext) {
    use crate::sql::test_support::{relocation, warehouse};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("catalog.db");
    std::fs::copy(format!("{}/catalog.db", warehouse()), &db).unwrap();
    let ctx = SessionContext::new();
    crate::sql::register(&ctx);
    register_catalog_as_default(&ctx, &db, relocation())
        .await
        .unwrap();
    (dir, ctx)
}

#[tokio::test]
async fn spark_ref_names_read_the_oracle_answers() {
    use crate::sql::test_support::{ORDERS_FIRST, row};
    let (_dir, ctx) = pyiceberg_session().await;
    let cases = [
        ("SELECT count(*), sum(id) FROM db.refs", [30, 435]),
        (
            "SELECT count(*), sum(id) FROM db.refs.branch_dev",
            [20, 690],
        ),
        (
            "SELECT count(*), sum(id) FROM db.refs.branch_audit",
            [10, 45],
        ),
        ("SELECT count(*), sum(id) FROM db.refs.tag_v1", [10, 45]),
        ("SELECT count(*), sum(id) FROM db.refs.tag_v2", [20, 190]),
        (r#"SELECT count(*), sum(id) FROM db."refs@v2""#, [20, 190]),
        (
            "SELECT count(*), sum(id) FROM db.refs VERSION AS OF 'dev'",
            [20, 690],
        ),
        (
            "SELECT count(*), sum(r.id) FROM datafusion.db.refs VERSION AS OF 'v1' AS r",
            [10, 45],
        ),
    ];
    for (query, expected) in cases {
        assert_eq!(row(&ctx, query).await.unwrap(), expected, "{query}");
    }
    let query = format!("SELECT count(*), sum(order_id) FROM db.orders.snapshot_id_{ORDERS_FIRST}");
    assert_eq!(row(&ctx, &query).await.unwrap(), [10, 55]);
    let query = "SELECT count(*) FROM db.orders FOR SYSTEM_TIME AS OF '2026-11-30 14:42:38.900'";
    assert_eq!(row(&ctx, query).await.unwrap(), [10]);
}

#[tokio::test]
async fn spark_ref_name_errors() {
    let (_dir, ctx) = pyiceberg_session().await;
    let cases = [
        ("db.refs.branch_v2", "'v2': is a tag, not a branch"),
        ("db.refs.tag_audit", "'audit': is a branch, not a tag"),
        ("db.refs.tag_nope", "ref 'nope'"),
        ("db.ghost.branch_main", "ghost"),
    ];
    for (name, expected) in cases {
        let err = crate::sql::sql(&ctx, &format!("SELECT * FROM {name}"))
            .await
            .unwrap_err();
        assert!(err.to_string().contains(expected), "{name}: {err}");
        assert!(
            err.to_string().contains(name.trim_start_matches("db.")),
            "{name}: {err}"
        );
    }
}

/// A session over a new, empty catalog in a temporary warehouse, with icefloe's SQL registered.
async fn scratch_session() -> (tempfile::TempDir, SessionContext, Arc<SqliteCatalog>) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("catalog.db");
    SqliteCatalog::create(&db, "default", FileIO::default()).unwrap();
    let ctx = SessionContext::new();
    let catalog = register_catalog_as_default(&ctx, &db, Relocation::default())
        .await
        .unwrap();
    crate::sql::register(&ctx);
    (dir, ctx, catalog)
}

async fn run(ctx: &SessionContext, sql: &str) -> std::result::Result<Vec<String>, String> {
    let batches = crate::sql::sql(ctx, sql)
        .await
        .map_err(|e| e.to_string())?
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    let text = ::datafusion::arrow::util::pretty::pretty_format_batches(&batches)
        .map_err(|e| e.to_string())?
        .to_string();
    Ok(text.lines().map(str::to_string).collect())
}

#[tokio::test]
async fn sql_creates_fills_and_purges_catalog_tables() {
    let (dir, ctx, catalog) = scratch_session().await;
    assert!(IcebergCatalogs::lookup(&ctx.state(), "datafusion").is_some());
    run(&ctx, "CREATE SCHEMA db").await.unwrap();
    assert_eq!(catalog.list_namespaces().unwrap(), ["db"]);
    run(
        &ctx,
        "CREATE TABLE db.t TBLPROPERTIES ('commit.retry.num-retries' = '7') PARTITION BY (k) \
         AS SELECT * FROM (VALUES (1, 'x'), (2, 'y'), (3, 'x')) AS v(id, k)",
    )
    .await
    .unwrap();
    let table = catalog.load_table("db", "t").await.unwrap();
    let m = table.metadata();
    assert_eq!(m.property("commit.retry.num-retries"), Some("7"));
    assert_eq!(m.default_partition_spec().unwrap().fields[0].name, "k");
    assert_eq!(m.snapshots.len(), 1);
    let got = run(
        &ctx,
        "SELECT k, count(*) AS n, sum(id) AS s FROM db.t GROUP BY k ORDER BY k",
    )
    .await
    .unwrap();
    assert_eq!(
        got,
        [
            "+---+---+---+",
            "| k | n | s |",
            "+---+---+---+",
            "| x | 2 | 4 |",
            "| y | 1 | 2 |",
            "+---+---+---+",
        ]
    );
    let table_dir = dir.path().join("db/t");
    assert!(table_dir.join("data").is_dir());
    run(&ctx, "DROP TABLE db.t PURGE").await.unwrap();
    assert!(catalog.list_tables("db").unwrap().is_empty());
    let left: Vec<_> = walk(&table_dir);
    assert!(left.is_empty(), "purge leaves no file: {left:?}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[tokio::test]
async fn plain_datafusion_sql_drops_entries_and_refuses_create() {
    let (dir, ctx, catalog) = scratch_session().await;
    catalog
        .create_namespace("db", &std::collections::BTreeMap::new())
        .unwrap();
    let creation =
        crate::write::TableCreation::from_arrow(Arc::new(Schema::new(vec![Field::new(
            "id",
            DataType::Int64,
            false,
        )])));
    catalog.create_table("db", "t", &creation).await.unwrap();
    let err = ctx
        .sql("CREATE TABLE db.u (id BIGINT)")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("run CREATE TABLE through icefloe::sql::sql"),
        "{err}"
    );
    ctx.sql("DROP TABLE db.t")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert!(catalog.list_tables("db").unwrap().is_empty());
    assert_eq!(
        walk(&dir.path().join("db/t")).len(),
        1,
        "the metadata file stays"
    );
    let err = ctx.sql("DROP TABLE db.t").await.unwrap_err().to_string();
    assert!(
        err.contains("doesn't exist") || err.contains("not exist"),
        "{err}"
    );
}

#[tokio::test]
async fn a_named_catalog_takes_three_part_names() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("catalog.db");
    SqliteCatalog::create(&db, "default", FileIO::default()).unwrap();
    let ctx = SessionContext::new();
    let catalog = register_catalog(&ctx, "ice", &db, Relocation::default())
        .await
        .unwrap();
    crate::sql::register(&ctx);
    run(&ctx, "CREATE SCHEMA ice.sales").await.unwrap();
    run(
        &ctx,
        "CREATE TABLE ice.sales.t (id INT NOT NULL) PARTITION BY bucket(8, id)",
    )
    .await
    .unwrap();
    let table = catalog.load_table("sales", "t").await.unwrap();
    let spec = table.metadata().default_partition_spec().unwrap().clone();
    assert_eq!(spec.fields[0].name, "id_bucket");
    assert_eq!(spec.fields[0].field_id, 1000);
    // The session's own default catalog is not an Iceberg catalog: DataFusion's CREATE TABLE.
    run(&ctx, "CREATE TABLE mem (id INT)").await.unwrap();
    assert!(catalog.list_tables("sales").unwrap() == ["t"]);
    run(&ctx, "DROP TABLE ice.sales.t").await.unwrap();
    assert!(catalog.list_tables("sales").unwrap().is_empty());
}

/// A private copy of the whole PyIceberg warehouse (INSERT writes files), read through
/// relocation.
async fn writable_pyiceberg_session() -> (tempfile::TempDir, SessionContext) {
    use crate::sql::test_support::{WRITTEN_AT, warehouse};
    let dir = tempfile::tempdir().unwrap();
    crate::catalog::test_support::copy_dir(Path::new(&warehouse()), dir.path());
    let relocation = Relocation::new().with_rule(WRITTEN_AT, dir.path().display().to_string());
    let ctx = SessionContext::new();
    crate::sql::register(&ctx);
    register_catalog_as_default(&ctx, dir.path().join("catalog.db"), relocation)
        .await
        .unwrap();
    (dir, ctx)
}

#[tokio::test]
async fn insert_through_ref_names_commits_to_the_branch_and_refuses_tags() {
    use crate::sql::test_support::row;
    let (_dir, ctx) = writable_pyiceberg_session().await;
    // The oracle's answers before: main 30 rows (sum of ids 435), dev 20 (690), tag v1 10 (45).
    let insert = "INSERT INTO db.refs.branch_dev VALUES (1001, 'new', 7), (1002, NULL, NULL)";
    assert_eq!(row(&ctx, insert).await.unwrap(), [2]);
    let dev = "SELECT count(*), sum(id) FROM db.refs.branch_dev";
    assert_eq!(row(&ctx, dev).await.unwrap(), [22, 690 + 1001 + 1002]);
    let main = "SELECT count(*), sum(id) FROM db.refs";
    assert_eq!(row(&ctx, main).await.unwrap(), [30, 435]);
    // The same through "t@ref".
    let insert = r#"INSERT INTO db."refs@dev" VALUES (1003, 'x', 1)"#;
    assert_eq!(row(&ctx, insert).await.unwrap(), [1]);
    assert_eq!(
        row(&ctx, dev).await.unwrap(),
        [23, 690 + 1001 + 1002 + 1003]
    );
    // A tag is read-only, and nothing moved.
    let err = row(&ctx, "INSERT INTO db.refs.tag_v1 VALUES (1, 'x', 1)")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("tag 'v1'"), "{err}");
    let v1 = "SELECT count(*), sum(id) FROM db.refs.tag_v1";
    assert_eq!(row(&ctx, v1).await.unwrap(), [10, 45]);
    assert_eq!(row(&ctx, main).await.unwrap(), [30, 435]);
    // And main itself.
    assert_eq!(
        row(&ctx, "INSERT INTO db.refs VALUES (2000, 'm', 2)")
            .await
            .unwrap(),
        [1]
    );
    assert_eq!(row(&ctx, main).await.unwrap(), [31, 435 + 2000]);
}

#[tokio::test]
async fn a_catalog_under_another_name_serves_metadata_tables_of_refs() {
    use crate::sql::test_support::{WRITTEN_AT, row, warehouse};
    // No `sql::register`: the catalog's own schemas answer `"t@ref$relation"` (as they do in a
    // foreign host, where nothing wraps them). The oracle: tag v1 has 10 rows, branch dev 20.
    let relocation = Relocation::new().with_rule(WRITTEN_AT, warehouse());
    let ctx = SessionContext::new();
    register_catalog(
        &ctx,
        "ice",
        Path::new(&warehouse()).join("catalog.db"),
        relocation,
    )
    .await
    .unwrap();
    for (name, rows) in [("refs@v1", 10), ("refs@dev", 20), ("refs", 30)] {
        let files = format!(r#"SELECT sum(record_count) FROM ice.db."{name}$files""#);
        assert_eq!(row(&ctx, &files).await.unwrap(), [rows], "{name}");
    }
}
