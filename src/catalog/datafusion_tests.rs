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
