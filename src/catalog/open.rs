//! [`connect`]: a catalog named the way a user names it on a command line.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::config::{PYICEBERG_YAML, pyiceberg_catalog};
use super::{Catalog, SqliteCatalog};
use crate::error::{Error, Result};
use crate::io::{FileIO, StorageProperties};

/// Opens the catalog `spec` names, one of:
///
/// - a SQLite catalog database: a path to an existing file, or `sqlite:///path`;
/// - a REST catalog: `rest+http(s)://host/path` or plain `http(s)://host/path` (the base URI,
///   without `/v1`);
/// - a catalog of PyIceberg's configuration ([`pyiceberg_catalog`]: `.pyiceberg.yaml` and
///   `PYICEBERG_CATALOG__<NAME>__<KEY>` variables) by its name, of type `rest` or `sql` (with a
///   `sqlite:///` uri; the name is the database's catalog name, as in PyIceberg). As PyIceberg
///   does, a missing `type` is inferred from the uri, and `properties` with a `uri` or a
///   `type` define a catalog of that name also without any configuration
///   (`load_catalog("prod", uri=..., ...)`).
///
/// A SQLite catalog takes PyIceberg's `SqlCatalog` properties: `warehouse` (where new tables
/// go) and the storage properties of its tables' stores (`s3.endpoint`, ...).
///
/// `properties` (for a REST catalog: `token`, `credential`, `warehouse`, `s3.*`, ...) are added
/// to those of the configuration, and win. Tables are read and written through `io`.
///
/// Errors: [`Error::NotFound`] when `spec` is neither an existing file nor a configured
/// catalog (the message says where it looked); [`Error::Unsupported`] for catalog types icefloe
/// does not speak (Glue, Hive, ...), or REST without the `rest` feature; the errors of
/// opening the catalog.
pub async fn connect(
    spec: &str,
    properties: BTreeMap<String, String>,
    io: FileIO,
) -> Result<Arc<dyn Catalog>> {
    if let Some(uri) = rest_uri(spec) {
        let mut all = BTreeMap::from([("uri".to_string(), uri.to_string())]);
        all.extend(properties);
        return rest(&host_of(uri), all, io).await;
    }
    if let Some(path) = spec.strip_prefix("sqlite://") {
        return sqlite(path, None, properties, io);
    }
    if Path::new(spec).is_file() {
        return sqlite(spec, None, properties, io);
    }
    let mut configured = match pyiceberg_catalog(spec)? {
        Some(configured) => configured,
        // PyIceberg's `load_catalog(name, **properties)`: properties alone may define it.
        None if properties.contains_key("uri") || properties.contains_key("type") => {
            BTreeMap::new()
        }
        None => {
            return Err(Error::not_found(format!(
                "catalog '{spec}': no such catalog database, and no catalog of that name in \
             {PYICEBERG_YAML} (in $PYICEBERG_HOME, the home directory or the working directory) \
             or in PYICEBERG_CATALOG__{}__* variables",
                spec.to_uppercase()
            )));
        }
    };
    configured.extend(properties);
    let uri = configured.get("uri").cloned().unwrap_or_default();
    let kind = match configured.get("type") {
        Some(kind) => kind.to_lowercase(),
        None if uri.starts_with("http") => "rest".into(),
        None if uri.starts_with("sqlite") || uri.starts_with("postgresql") => "sql".into(),
        None => {
            return Err(Error::invalid(
                format!("catalog '{spec}' of {PYICEBERG_YAML}"),
                "has no `type` and no `uri` to tell it by",
            ));
        }
    };
    match kind.as_str() {
        "rest" => rest(spec, configured, io).await,
        "sql" => match uri.strip_prefix("sqlite:///") {
            Some(path) => sqlite(&format!("/{path}"), Some(spec), configured, io),
            None => Err(Error::Unsupported(format!(
                "catalog '{spec}': SQL catalogs other than SQLite (uri {}); icefloe's SQL \
                 catalog is SQLite",
                uri.split(':').next().unwrap_or_default()
            ))),
        },
        other => Err(Error::Unsupported(format!(
            "catalog '{spec}' of type '{other}': icefloe speaks REST and SQLite catalogs \
             (many Glue, Hive and Nessie deployments also serve the Iceberg REST protocol)"
        ))),
    }
}

/// The SQLite catalog database at `path` (its catalog `name`, else its only one), as
/// PyIceberg's `SqlCatalog` takes its properties: `warehouse` is where new tables go, and the
/// storage properties (`s3.*`, `gcs.*`, ...) reach the tables' stores (a REST catalog passes
/// its own on to the tables it loads).
fn sqlite(
    path: &str,
    name: Option<&str>,
    properties: BTreeMap<String, String>,
    io: FileIO,
) -> Result<Arc<dyn Catalog>> {
    let warehouse = properties.get("warehouse").cloned();
    let storage = io
        .storage()
        .merged(&StorageProperties::from_pairs(properties));
    let io = io.with_storage(storage);
    let mut catalog = SqliteCatalog::open(path, name, io)?;
    if let Some(warehouse) = warehouse {
        catalog = catalog.with_warehouse(warehouse);
    }
    Ok(Arc::new(catalog))
}

/// The REST base URI of a `rest+http(s)://` or `http(s)://` spec.
fn rest_uri(spec: &str) -> Option<&str> {
    let uri = spec.strip_prefix("rest+").unwrap_or(spec);
    (uri.starts_with("http://") || uri.starts_with("https://")).then_some(uri)
}

/// A catalog name for a REST URI: its host (and port).
fn host_of(uri: &str) -> String {
    let rest = uri.split_once("://").map_or(uri, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest).to_string()
}

#[cfg(feature = "rest")]
async fn rest(
    name: &str,
    properties: BTreeMap<String, String>,
    io: FileIO,
) -> Result<Arc<dyn Catalog>> {
    Ok(Arc::new(
        super::RestCatalog::connect(name, properties, io).await?,
    ))
}

#[cfg(not(feature = "rest"))]
async fn rest(
    name: &str,
    _properties: BTreeMap<String, String>,
    _io: FileIO,
) -> Result<Arc<dyn Catalog>> {
    Err(Error::Unsupported(format!(
        "the REST catalog {name}: this build of icefloe has no `rest` feature"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{NestedField, PrimitiveType, Schema};

    #[test]
    fn specs_are_told_apart() {
        assert_eq!(
            rest_uri("rest+http://127.0.0.1:8181"),
            Some("http://127.0.0.1:8181")
        );
        assert_eq!(
            rest_uri("https://cat.example/api"),
            Some("https://cat.example/api")
        );
        assert_eq!(rest_uri("catalog.db"), None);
        assert_eq!(rest_uri("rest+ftp://x"), None);
        assert_eq!(
            host_of("http://127.0.0.1:8181/api/catalog"),
            "127.0.0.1:8181"
        );
    }

    #[tokio::test]
    async fn an_unknown_name_says_where_it_looked() {
        let err = connect(
            "surely-no-such-catalog-xyz",
            BTreeMap::new(),
            FileIO::default(),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains(".pyiceberg.yaml"), "{text}");
        assert!(
            text.contains("PYICEBERG_CATALOG__SURELY-NO-SUCH-CATALOG-XYZ__"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_sqlite_file_and_uri_open() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("c.db");
        let made = SqliteCatalog::create(&db, "local", FileIO::default()).unwrap();
        made.create_namespace("ns", &BTreeMap::new()).unwrap();
        let ns = crate::catalog::Namespace::new(["ns"]).unwrap();
        for spec in [
            db.display().to_string(),
            format!("sqlite://{}", db.display()),
        ] {
            let catalog = connect(&spec, BTreeMap::new(), FileIO::default())
                .await
                .unwrap();
            assert_eq!(catalog.name(), "local", "{spec}");
            assert!(catalog.namespace_exists(&ns).await.unwrap(), "{spec}");
        }
    }
    #[tokio::test]
    async fn properties_alone_define_a_named_sql_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("c.db");
        let made = SqliteCatalog::create(&db, "lake", FileIO::default()).unwrap();
        made.create_namespace("ns", &BTreeMap::new()).unwrap();
        // The name is not configured anywhere: the properties say what it is (PyIceberg's
        // `load_catalog("lake", uri=...)`), and its storage properties reach the tables' IO.
        let properties = BTreeMap::from([
            ("uri".to_string(), format!("sqlite:///{}", db.display())),
            ("s3.endpoint".to_string(), "http://127.0.0.1:9".to_string()),
            (
                "warehouse".to_string(),
                format!("file://{}/wh", dir.path().display()),
            ),
        ]);
        let catalog = connect("lake", properties, FileIO::default())
            .await
            .unwrap();
        assert_eq!(catalog.name(), "lake");
        let t = crate::catalog::TableIdent::parse_dotted("ns.t").unwrap();
        let schema = Schema::new(0, vec![NestedField::required(1, "id", PrimitiveType::Long)]);
        let made = catalog
            .create_table(&t, &crate::TableCreation::new(schema))
            .await
            .unwrap();
        let expected = format!("file://{}/wh/ns/t", dir.path().display());
        assert_eq!(made.metadata().location, expected);
        let ns = crate::catalog::Namespace::new(["ns"]).unwrap();
        assert!(catalog.namespace_exists(&ns).await.unwrap());
        assert_eq!(
            catalog.io().storage().get("s3.endpoint"),
            Some("http://127.0.0.1:9")
        );
        // Another name of the same database is another (empty) catalog, as in PyIceberg.
        let other = BTreeMap::from([("uri".to_string(), format!("sqlite:///{}", db.display()))]);
        let catalog = connect("other", other, FileIO::default()).await.unwrap();
        assert!(!catalog.namespace_exists(&ns).await.unwrap());
    }
}
