//! Tests of the SQLite catalog over databases created here in the PyIceberg and Java V0
//! layouts.

use std::path::Path;

use std::collections::BTreeMap;

use super::*;
use crate::catalog::test_support::{metadata_json, write};

/// PyIceberg's `SqlCatalog` DDL (also Java `JdbcCatalog` V1).
const PYICEBERG_DDL: &str = "
CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL,
  table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL,
  metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000),
  iceberg_type VARCHAR(5), PRIMARY KEY (catalog_name, table_namespace, table_name));
CREATE TABLE iceberg_namespace_properties (catalog_name VARCHAR(255) NOT NULL,
  namespace VARCHAR(255) NOT NULL, property_key VARCHAR(255) NOT NULL,
  property_value VARCHAR(1000) NOT NULL, PRIMARY KEY (catalog_name, namespace, property_key));";

/// Java `JdbcCatalog` V0: no `iceberg_type` column.
const JAVA_V0_DDL: &str = "
CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL,
  table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL,
  metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000),
  PRIMARY KEY (catalog_name, table_namespace, table_name));
CREATE TABLE iceberg_namespace_properties (catalog_name VARCHAR(255) NOT NULL,
  namespace VARCHAR(255) NOT NULL, property_key VARCHAR(255) NOT NULL,
  property_value VARCHAR(1000) NOT NULL, PRIMARY KEY (catalog_name, namespace, property_key));";

const ROWS: &str = "
INSERT INTO iceberg_tables VALUES
  ('default', 'db', 'orders', '/wh/db/orders/metadata/00002-b.metadata.json',
   '/wh/db/orders/metadata/00001-a.metadata.json', 'TABLE'),
  ('default', 'db', 'legacy', '/wh/db/legacy/metadata/v1.metadata.json', NULL, NULL),
  ('default', 'db', 'a_view', '/wh/db/a_view/metadata/v1.metadata.json', NULL, 'VIEW'),
  ('default', 'nested.inner', 'deep', '/wh/nested/inner/deep/metadata/v1.metadata.json', NULL, 'TABLE');
INSERT INTO iceberg_namespace_properties VALUES
  ('default', 'db', 'exists', 'true'),
  ('default', 'empty_ns', 'exists', 'true');";

const V0_ROWS: &str = "
INSERT INTO iceberg_tables VALUES
  ('java', 'db', 'orders', '/wh/db/orders/metadata/v1.metadata.json', NULL);";

/// A temporary directory holding `catalog.db` built from `sql`.
fn database(sql: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.db");
    Connection::open(&path).unwrap().execute_batch(sql).unwrap();
    (dir, path)
}

fn pyiceberg() -> (tempfile::TempDir, PathBuf) {
    database(&format!("{PYICEBERG_DDL}{ROWS}"))
}

fn open(path: &Path) -> SqliteCatalog {
    SqliteCatalog::open(path, None, FileIO::default()).unwrap()
}

/// Runs a statement on the database from a second connection (another process's commit).
fn execute(path: &Path, sql: &str) {
    Connection::open(path).unwrap().execute_batch(sql).unwrap();
}

#[test]
fn lists_namespaces_and_tables() {
    let (_tmp, path) = pyiceberg();
    let catalog = open(&path);
    assert_eq!(catalog.name(), "default");
    assert_eq!(
        catalog.list_namespaces().unwrap(),
        ["db", "empty_ns", "nested.inner"]
    );
    assert_eq!(catalog.list_tables("db").unwrap(), ["legacy", "orders"]);
    assert_eq!(catalog.list_tables("nested.inner").unwrap(), ["deep"]);
    assert!(catalog.list_tables("empty_ns").unwrap().is_empty());
    let err = catalog.list_tables("nope").unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert!(catalog.namespace_exists("nested.inner").unwrap());
    assert!(!catalog.namespace_exists("nested").unwrap());
}

#[test]
fn looks_up_metadata_locations() {
    let (_tmp, path) = pyiceberg();
    let catalog = open(&path);
    assert_eq!(
        catalog
            .metadata_location("db", "orders")
            .unwrap()
            .as_deref(),
        Some("/wh/db/orders/metadata/00002-b.metadata.json")
    );
    assert!(catalog.metadata_location("db", "legacy").unwrap().is_some());
    assert_eq!(catalog.metadata_location("db", "a_view").unwrap(), None);
    assert_eq!(catalog.metadata_location("db", "missing").unwrap(), None);
    assert_eq!(catalog.metadata_location("other", "orders").unwrap(), None);
}

#[test]
fn sees_commits_of_other_connections() {
    let (_tmp, path) = pyiceberg();
    let catalog = open(&path);
    execute(
        &path,
        "UPDATE iceberg_tables SET metadata_location = '/wh/db/orders/metadata/00003-c.metadata.json'
         WHERE table_name = 'orders'",
    );
    assert_eq!(
        catalog
            .metadata_location("db", "orders")
            .unwrap()
            .as_deref(),
        Some("/wh/db/orders/metadata/00003-c.metadata.json")
    );
    execute(
        &path,
        "INSERT INTO iceberg_tables VALUES ('default', 'db', 'new', '/x', NULL, 'TABLE')",
    );
    assert_eq!(
        catalog.list_tables("db").unwrap(),
        ["legacy", "new", "orders"]
    );
}

#[test]
fn java_v0_layout_without_iceberg_type() {
    let (_tmp, path) = database(&format!("{JAVA_V0_DDL}{V0_ROWS}"));
    let catalog = open(&path);
    assert_eq!(catalog.name(), "java");
    assert_eq!(catalog.list_namespaces().unwrap(), ["db"]);
    assert_eq!(catalog.list_tables("db").unwrap(), ["orders"]);
    assert!(catalog.metadata_location("db", "orders").unwrap().is_some());
    let new = "/wh/db/orders/metadata/v2.metadata.json";
    catalog
        .commit_metadata_location(
            "db",
            "orders",
            "/wh/db/orders/metadata/v1.metadata.json",
            new,
        )
        .unwrap();
    assert_eq!(
        catalog
            .metadata_location("db", "orders")
            .unwrap()
            .as_deref(),
        Some(new)
    );
}

#[test]
fn catalog_names() {
    let (_tmp, path) = database(&format!(
        "{PYICEBERG_DDL}{ROWS}
         INSERT INTO iceberg_tables VALUES ('prod', 'sales', 't', '/p', NULL, 'TABLE');"
    ));
    let err = SqliteCatalog::open(&path, None, FileIO::default()).unwrap_err();
    assert!(matches!(err, Error::Catalog { .. }), "{err:?}");
    assert!(err.to_string().contains("default, prod"), "{err}");
    let prod = SqliteCatalog::open(&path, Some("prod"), FileIO::default()).unwrap();
    assert_eq!(prod.list_namespaces().unwrap(), ["sales"]);
    assert_eq!(prod.list_tables("sales").unwrap(), ["t"]);

    let (_tmp, empty) = database(PYICEBERG_DDL);
    assert_eq!(open(&empty).name(), "default");
    assert!(open(&empty).list_namespaces().unwrap().is_empty());
}

#[test]
fn missing_database_is_not_found_and_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.db");
    let err = SqliteCatalog::open(&path, None, FileIO::default()).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert!(err.to_string().contains("nope.db"), "{err}");
    assert!(!path.exists());
}

#[test]
fn non_catalog_files_are_catalog_errors_naming_them() {
    let (_tmp, path) = database("CREATE TABLE something_else (x INTEGER);");
    let err = SqliteCatalog::open(&path, None, FileIO::default()).unwrap_err();
    assert!(matches!(err, Error::Catalog { .. }), "{err:?}");
    assert!(err.to_string().contains("catalog.db"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, b"this is not a sqlite database, just some bytes....").unwrap();
    let err = SqliteCatalog::open(&junk, None, FileIO::default()).unwrap_err();
    assert!(matches!(err, Error::Catalog { .. }), "{err:?}");
    assert!(err.to_string().contains("junk.db"), "{err}");
}

#[test]
fn commit_swaps_the_pointer_once() {
    let (_tmp, path) = pyiceberg();
    let catalog = open(&path);
    let v2 = "/wh/db/orders/metadata/00002-b.metadata.json";
    let v3 = "/wh/db/orders/metadata/00003-c.metadata.json";
    catalog
        .commit_metadata_location("db", "orders", v2, v3)
        .unwrap();
    assert_eq!(
        catalog
            .metadata_location("db", "orders")
            .unwrap()
            .as_deref(),
        Some(v3)
    );
    let previous: String = Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT previous_metadata_location FROM iceberg_tables WHERE table_name = 'orders'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(previous, v2);

    // A second writer that still expects v2 loses.
    let err = catalog
        .commit_metadata_location("db", "orders", v2, "/wh/other.metadata.json")
        .unwrap_err();
    assert!(matches!(err, Error::CommitConflict { .. }), "{err:?}");
    assert!(err.to_string().contains("db.orders"), "{err}");
    assert_eq!(
        catalog
            .metadata_location("db", "orders")
            .unwrap()
            .as_deref(),
        Some(v3)
    );

    let err = catalog
        .commit_metadata_location("db", "ghost", v2, v3)
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    let err = catalog.commit_metadata_location(
        "db",
        "a_view",
        "/wh/db/a_view/metadata/v1.metadata.json",
        v3,
    );
    assert!(matches!(err, Err(Error::NotFound { .. })), "{err:?}");
}

#[tokio::test]
async fn missing_table_is_not_found_naming_it() {
    let (_tmp, path) = pyiceberg();
    let err = open(&path).load_table("db", "ghost").await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert!(err.to_string().contains("db.ghost"), "{err}");
}

// --- Needs TableMetadata::parse ---

#[tokio::test]
async fn loads_the_current_metadata_file() {
    let dir = tempfile::tempdir().unwrap();
    let table_dir = dir.path().join("db/orders");
    let v1 = table_dir.join("metadata/00001-a.metadata.json");
    let v2 = table_dir.join("metadata/00002-b.metadata.json");
    let location = table_dir.to_str().unwrap();
    write(&v1, metadata_json(location).as_bytes());
    write(&v2, metadata_json(location).as_bytes());
    let (v1, v2) = (v1.to_str().unwrap(), v2.to_str().unwrap());
    let (_tmp, path) = database(&format!(
        "{PYICEBERG_DDL} INSERT INTO iceberg_tables VALUES ('default', 'db', 'orders', '{v1}', NULL, 'TABLE');"
    ));
    let catalog = open(&path);
    let table = catalog.load_table("db", "orders").await.unwrap();
    assert_eq!(table.metadata_location(), v1);
    assert_eq!(table.metadata().location, location);

    catalog
        .commit_metadata_location("db", "orders", v1, v2)
        .unwrap();
    let table = catalog.load_table("db", "orders").await.unwrap();
    assert_eq!(table.metadata_location(), v2);
}

/// The DDL as SQLite stores it, whitespace-normalised, per table.
fn ddl_of(path: &Path) -> Vec<String> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap();
    let rows = stmt.query_map([], |row| row.get::<_, String>(0)).unwrap();
    rows.map(|sql| {
        sql.unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    })
    .collect()
}

/// A new catalog `default` in a temporary warehouse directory.
fn scratch() -> (tempfile::TempDir, SqliteCatalog) {
    let dir = tempfile::tempdir().unwrap();
    let catalog =
        SqliteCatalog::create(dir.path().join("catalog.db"), "default", FileIO::default()).unwrap();
    (dir, catalog)
}

fn one_column() -> TableCreation {
    use crate::spec::{NestedField, PrimitiveType, Schema};
    TableCreation::new(Schema::new(
        0,
        vec![NestedField::required(1, "id", PrimitiveType::Long)],
    ))
}

#[test]
fn create_makes_the_tables_pyiceberg_makes() {
    let (dir, catalog) = scratch();
    // The catalog written by PyIceberg 0.12 for the wh1 fixture is the reference.
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pyiceberg/wh1/catalog.db");
    assert_eq!(ddl_of(&dir.path().join("catalog.db")), ddl_of(&fixture));
    assert_eq!(catalog.name(), "default");
    assert!(catalog.list_namespaces().unwrap().is_empty());
    let err = SqliteCatalog::create(dir.path().join("catalog.db"), "default", FileIO::default())
        .unwrap_err();
    assert!(
        matches!(err, Error::Catalog { .. }) && err.to_string().contains("already exists"),
        "{err}"
    );
}

#[test]
fn namespaces_are_created_once_with_their_properties() {
    let (_dir, catalog) = scratch();
    let props = BTreeMap::from([("location".to_string(), "/elsewhere/db".to_string())]);
    catalog.create_namespace("db", &props).unwrap();
    catalog
        .create_namespace("nested.inner", &BTreeMap::new())
        .unwrap();
    assert_eq!(catalog.list_namespaces().unwrap(), ["db", "nested.inner"]);
    let got = catalog.namespace_properties("db").unwrap();
    assert_eq!(got.get("exists").map(String::as_str), Some("true"));
    assert_eq!(
        catalog.default_table_location("db", "t").unwrap(),
        "/elsewhere/db/t"
    );
    let warehouse = catalog.warehouse();
    assert_eq!(
        catalog.default_table_location("nested.inner", "t").unwrap(),
        format!("{warehouse}/nested/inner/t")
    );
    let err = catalog
        .create_namespace("db", &BTreeMap::new())
        .unwrap_err();
    assert!(
        matches!(&err, Error::AlreadyExists { what } if what == "namespace 'db' in catalog default"),
        "{err}"
    );
    let err = catalog.create_namespace("", &BTreeMap::new()).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { what, .. } if what == "namespace ''"),
        "{err}"
    );
}

#[tokio::test]
async fn create_table_writes_metadata_and_the_row() {
    let (dir, catalog) = scratch();
    catalog.create_namespace("db", &BTreeMap::new()).unwrap();
    let table = catalog
        .create_table("db", "t", &one_column())
        .await
        .unwrap();
    let location = format!("{}/db/t", dir.path().canonicalize().unwrap().display());
    assert_eq!(table.metadata().location, location);
    let name = table.metadata_location().rsplit('/').next().unwrap();
    assert!(
        table
            .metadata_location()
            .starts_with(&format!("{location}/metadata/00000-"))
            && name.ends_with(".metadata.json")
            && uuid::Uuid::parse_str(&name[6..name.len() - 14]).is_ok(),
        "{}",
        table.metadata_location()
    );
    let row: (String, Option<String>, String) = Connection::open(dir.path().join("catalog.db"))
        .unwrap()
        .query_row(
            "SELECT metadata_location, previous_metadata_location, iceberg_type FROM iceberg_tables
             WHERE catalog_name = 'default' AND table_namespace = 'db' AND table_name = 't'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        row,
        (
            table.metadata_location().to_string(),
            None,
            "TABLE".to_string()
        )
    );
    let loaded = catalog.load_table("db", "t").await.unwrap();
    assert_eq!(loaded.metadata(), table.metadata());

    let err = catalog
        .create_table("db", "t", &one_column())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::AlreadyExists { what } if what == "table db.t in catalog default"),
        "{err}"
    );
    assert_eq!(
        catalog.metadata_location("db", "t").unwrap().as_deref(),
        Some(table.metadata_location())
    );
    let err = catalog
        .create_table("nope", "t", &one_column())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");

    // The pointer swap still works on a created table.
    catalog
        .commit_metadata_location(
            "db",
            "t",
            table.metadata_location(),
            "/x/00001-y.metadata.json",
        )
        .unwrap();
    assert_eq!(
        catalog.metadata_location("db", "t").unwrap().as_deref(),
        Some("/x/00001-y.metadata.json")
    );
}

#[tokio::test]
async fn drop_table_keeps_files_unless_purged() {
    use crate::transaction::WriteTarget;
    use datafusion::arrow::array::{Int64Array, RecordBatch};

    let (dir, catalog) = scratch();
    catalog.create_namespace("db", &BTreeMap::new()).unwrap();
    for name in ["kept", "purged"] {
        let table = catalog
            .create_table("db", name, &one_column())
            .await
            .unwrap();
        let schema = crate::to_arrow::schema_to_arrow(table.metadata().current_schema()).unwrap();
        let batch = RecordBatch::try_new(
            std::sync::Arc::new(schema),
            vec![std::sync::Arc::new(Int64Array::from(vec![1, 2, 3]))],
        )
        .unwrap();
        let target =
            WriteTarget::sqlite(std::sync::Arc::new(catalog.reopen().unwrap()), "db", name)
                .unwrap();
        crate::write::append_batches(&target, &[batch], "main")
            .await
            .unwrap();
    }
    let files = |name: &str| -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![dir.path().join("db").join(name)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p)
                } else {
                    out.push(p)
                }
            }
        }
        out.sort();
        out
    };
    // 2 metadata files, a manifest list, a manifest, a data file.
    assert_eq!(files("kept").len(), 5);
    let kept = files("kept");
    catalog.drop_table("db", "kept", false).await.unwrap();
    assert_eq!(catalog.list_tables("db").unwrap(), ["purged"]);
    assert_eq!(files("kept"), kept, "no file deleted without purge");

    // A file the metadata does not reach survives a purge: files are never found by listing.
    let stray = dir.path().join("db/purged/data/stray.parquet");
    std::fs::write(&stray, b"not a table file").unwrap();
    catalog.drop_table("db", "purged", true).await.unwrap();
    assert!(catalog.list_tables("db").unwrap().is_empty());
    assert_eq!(files("purged"), [stray]);

    let err = catalog.drop_table("db", "purged", false).await.unwrap_err();
    assert!(
        matches!(err, Error::NotFound { .. }) && err.to_string().contains("db.purged"),
        "{err}"
    );
}
