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
    assert_eq!(catalog.schema_names(), ["db", "nested.inner"]);
    assert!(catalog.schema("nested").is_none());
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
    assert_eq!(catalog.schema_names(), ["db", "nested.inner", "public"]);
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
        ("db.refs.branch_v2", "'v2' is a tag, not a branch"),
        ("db.refs.tag_audit", "'audit' is a branch, not a tag"),
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
