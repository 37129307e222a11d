//! A SQLite catalog in the layout of Iceberg Java's `JdbcCatalog` and PyIceberg's `SqlCatalog`.
//!
//! The catalog is two tables, shared by any number of named catalogs:
//!
//! | table | columns |
//! |---|---|
//! | `iceberg_tables` | `catalog_name`, `table_namespace`, `table_name`, `metadata_location`, `previous_metadata_location`, `iceberg_type` |
//! | `iceberg_namespace_properties` | `catalog_name`, `namespace`, `property_key`, `property_value` |
//!
//! A row of `iceberg_tables` is a table when `iceberg_type` is `'TABLE'` or NULL (views are
//! `'VIEW'`); catalogs written by Java's V0 schema have no `iceberg_type` column at all, and
//! every row is a table. Multi-level namespaces are stored dot-joined (`nested.inner`). The
//! namespaces of a catalog are those with a table or with properties.
//!
//! The current metadata pointer (`metadata_location`) is read from the database on every
//! call, so a commit by another process is seen by the next query.
//!
//! ## Concurrency
//!
//! A `rusqlite::Connection` is not `Sync`, so it lives behind a [`std::sync::Mutex`]. The
//! queries are single-row or single-index lookups on tiny tables and run synchronously under
//! the lock, also from async functions: they take microseconds, less than handing them to a
//! blocking thread would. A busy timeout makes a query wait (up to 5 s) while another process
//! holds the write lock, instead of failing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::commit::{
    check_requirements, claim, created_metadata, creates, delete_dropped_metadata_files,
    metadata_bytes, next_metadata,
};
use super::{Catalog, Namespace, TableIdent};
use crate::error::{Error, Result};
use crate::io::{FileIO, TableScope};
use crate::spec::properties::GC_ENABLED;
use crate::spec::{TableMetadata, TableRequirement, TableUpdate};
use crate::table::Table;
use crate::table::TableCreation;

/// The tables PyIceberg's `SqlCatalog` creates (SQLAlchemy's DDL for its two mapped classes,
/// also Java `JdbcCatalog`'s V1 schema).
const CATALOG_DDL: &str = "
CREATE TABLE iceberg_tables (
	catalog_name VARCHAR(255) NOT NULL,
	table_namespace VARCHAR(255) NOT NULL,
	table_name VARCHAR(255) NOT NULL,
	metadata_location VARCHAR(1000),
	previous_metadata_location VARCHAR(1000),
	iceberg_type VARCHAR(5),
	PRIMARY KEY (catalog_name, table_namespace, table_name)
);
CREATE TABLE iceberg_namespace_properties (
	catalog_name VARCHAR(255) NOT NULL,
	namespace VARCHAR(255) NOT NULL,
	property_key VARCHAR(255) NOT NULL,
	property_value VARCHAR(1000) NOT NULL,
	PRIMARY KEY (catalog_name, namespace, property_key)
);";

/// The namespace property naming where a namespace's new tables go (Java and PyIceberg).
pub const NAMESPACE_LOCATION: &str = "location";

/// How long a query waits for another process's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A read (and pointer-swap) view of one named catalog in a JDBC / PyIceberg SQLite database.
///
/// ```no_run
/// # async fn example() -> icefloe::Result<()> {
/// use icefloe::FileIO;
/// use icefloe::catalog::SqliteCatalog;
///
/// let catalog = SqliteCatalog::open("/data/lake/catalog.db", None, FileIO::default())?;
/// for namespace in catalog.list_namespaces()? {
///     println!("{namespace}: {:?}", catalog.list_tables(&namespace)?);
/// }
/// let orders = catalog.load_table("db", "orders").await?;
/// println!("{}", orders.metadata_location());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct SqliteCatalog {
    db_path: PathBuf,
    name: String,
    has_type_column: bool,
    has_namespace_table: bool,
    warehouse: Option<String>,
    io: FileIO,
    conn: Mutex<Connection>,
}

impl SqliteCatalog {
    /// Opens the catalog database at `db_path`, read-write when the file allows it, else
    /// read-only. A missing file is [`Error::NotFound`]; no database is ever created.
    ///
    /// `catalog_name` picks one catalog of the database (the `catalog_name` column). `None`
    /// means the only catalog name in the database: an error lists the names when there are
    /// several, and an empty database is taken as PyIceberg's `"default"`.
    ///
    /// `io` reads the metadata files the catalog points at (with its relocation rules).
    pub fn open(db_path: impl AsRef<Path>, catalog_name: Option<&str>, io: FileIO) -> Result<Self> {
        let db_path = db_path.as_ref().to_path_buf();
        if !db_path.is_file() {
            return Err(Error::not_found(format!(
                "catalog database {}",
                db_path.display()
            )));
        }
        let conn = open_connection(&db_path)?;
        let db = DbRef(&db_path);
        if !has_table(&conn, "iceberg_tables").map_err(|e| db.error("reading the schema", e))? {
            return Err(Error::Catalog {
                catalog: db.label(),
                reason: "not an Iceberg catalog: table iceberg_tables is missing".to_string(),
                source: None,
            });
        }
        let has_namespace_table = has_table(&conn, "iceberg_namespace_properties")
            .map_err(|e| db.error("reading the schema", e))?;
        let has_type_column = has_column(&conn, "iceberg_tables", "iceberg_type")
            .map_err(|e| db.error("reading the schema", e))?;
        let name = match catalog_name {
            Some(name) => name.to_string(),
            None => only_catalog_name(&conn, has_namespace_table, db)?,
        };
        Ok(Self {
            db_path,
            name,
            has_type_column,
            has_namespace_table,
            warehouse: None,
            io,
            conn: Mutex::new(conn),
        })
    }

    /// Creates a new, empty catalog database at `db_path` with the tables PyIceberg's
    /// `SqlCatalog` creates (`iceberg_tables`, `iceberg_namespace_properties`; PyIceberg 0.12
    /// and Java's `JdbcCatalog` open it), and opens it as the catalog `catalog_name`.
    ///
    /// Errors: [`Error::Catalog`] naming the file when it already exists (an existing catalog is
    /// opened with [`Self::open`], never re-created) or cannot be created.
    pub fn create(db_path: impl AsRef<Path>, catalog_name: &str, io: FileIO) -> Result<Self> {
        let db_path = db_path.as_ref();
        let db = DbRef(db_path);
        if db_path.exists() {
            return Err(Error::Catalog {
                catalog: db.label(),
                reason: "the catalog database already exists; open it instead".to_string(),
                source: None,
            });
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(db_path, flags)
            .map_err(|e| db.error("creating the database", e))?;
        conn.execute_batch(&format!("BEGIN;{CATALOG_DDL}COMMIT;"))
            .map_err(|e| db.error("creating the catalog tables", e))?;
        drop(conn);
        Self::open(db_path, Some(catalog_name), io)
    }

    /// Another connection to the same catalog (same database, name, warehouse and IO), as a
    /// second process would have it.
    ///
    /// Errors: those of [`Self::open`].
    pub fn reopen(&self) -> Result<Self> {
        let mut other = Self::open(&self.db_path, Some(&self.name), self.io.clone())?;
        other.warehouse = self.warehouse.clone();
        Ok(other)
    }

    /// Sets the warehouse: new tables of a namespace without a `location` property go to
    /// `<warehouse>/<namespace levels>/<table>`. The default is the database file's directory.
    pub fn with_warehouse(mut self, location: impl Into<String>) -> Self {
        self.warehouse = Some(location.into().trim_end_matches('/').to_string());
        self
    }

    /// The warehouse location (see [`Self::with_warehouse`]).
    pub fn warehouse(&self) -> String {
        if let Some(w) = &self.warehouse {
            return w.clone();
        }
        let dir = self.db_path.parent().unwrap_or(Path::new("."));
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        dir.display().to_string().trim_end_matches('/').to_string()
    }

    /// The catalog's name (its `catalog_name` in the database).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The database file.
    pub fn db_path(&self) -> &Path {
        &self.db_path
    }

    /// The IO that reads the tables' files.
    pub fn io(&self) -> &FileIO {
        &self.io
    }

    /// The catalog's namespaces, dot-joined (`db`, `nested.inner`), sorted.
    pub fn list_namespaces(&self) -> Result<Vec<String>> {
        let sql = if self.has_namespace_table {
            "SELECT table_namespace FROM iceberg_tables WHERE catalog_name = ?1
             UNION SELECT namespace FROM iceberg_namespace_properties WHERE catalog_name = ?1
             ORDER BY 1"
        } else {
            "SELECT DISTINCT table_namespace FROM iceberg_tables WHERE catalog_name = ?1 ORDER BY 1"
        };
        self.query_strings(sql, params![self.name], "listing namespaces")
    }

    /// Whether the namespace (dot-joined) exists: it has tables or properties.
    pub fn namespace_exists(&self, namespace: &str) -> Result<bool> {
        Ok(self.list_namespaces()?.iter().any(|n| n == namespace))
    }

    /// Whether the namespace exists or holds one that does (`nested` when `nested.inner`
    /// has tables): the levels of [`Catalog::list_namespaces`], as PyIceberg's `SqlCatalog`
    /// decides.
    fn namespace_or_parent_exists(&self, namespace: &str) -> Result<bool> {
        let inside = format!("{namespace}.");
        Ok(self
            .list_namespaces()?
            .iter()
            .any(|n| n == namespace || n.starts_with(&inside)))
    }

    /// The names of the tables (not views) in a namespace, sorted.
    ///
    /// Errors: [`Error::NotFound`] when the namespace does not exist.
    pub fn list_tables(&self, namespace: &str) -> Result<Vec<String>> {
        let sql = format!(
            "SELECT table_name FROM iceberg_tables
             WHERE catalog_name = ?1 AND table_namespace = ?2{} ORDER BY table_name",
            self.table_filter()
        );
        let tables = self.query_strings(&sql, params![self.name, namespace], "listing tables")?;
        if tables.is_empty() && !self.namespace_exists(namespace)? {
            return Err(Error::not_found(format!(
                "namespace {namespace} in catalog {}",
                self.name
            )));
        }
        Ok(tables)
    }

    /// The current metadata file of a table, read fresh from the database; `None` when the
    /// table does not exist (or has no pointer yet).
    pub fn metadata_location(&self, namespace: &str, table: &str) -> Result<Option<String>> {
        let sql = format!(
            "SELECT metadata_location FROM iceberg_tables
             WHERE catalog_name = ?1 AND table_namespace = ?2 AND table_name = ?3{}",
            self.table_filter()
        );
        let conn = self.lock();
        let found: Option<Option<String>> = conn
            .query_row(&sql, params![self.name, namespace, table], |row| row.get(0))
            .optional()
            .map_err(|e| self.db().error("reading a metadata location", e))?;
        Ok(found.flatten())
    }

    /// Loads the current version of a table.
    ///
    /// Errors: [`Error::NotFound`] naming `namespace.table` when the catalog has no such
    /// table; the errors of [`Table::load_metadata_file`] otherwise.
    pub async fn load_table(&self, namespace: &str, table: &str) -> Result<Table> {
        let location = self.metadata_location(namespace, table)?.ok_or_else(|| {
            Error::not_found(format!(
                "table {namespace}.{table} in catalog {}",
                self.name
            ))
        })?;
        Table::load_metadata_file(self.io.clone(), location)
            .await
            .map_err(|e| self.pointer_context(e, namespace, table))
    }

    /// A missing metadata file is named as the pointer of `namespace.table` in this catalog's
    /// database: the catalog row is what names it.
    fn pointer_context(&self, err: Error, namespace: &str, table: &str) -> Error {
        match err {
            Error::NotFound { what, source } => Error::NotFound {
                what: format!(
                    "{what} (the pointer of {namespace}.{table} in catalog {})",
                    self.db().label()
                ),
                source,
            },
            other => other,
        }
    }

    /// Swaps a table's metadata pointer from `expected_current` to `new`, atomically: the
    /// update only happens while the pointer is still `expected_current`, and the old pointer
    /// becomes `previous_metadata_location`.
    ///
    /// Errors: [`Error::CommitConflict`] when the pointer has moved (another writer
    /// committed), [`Error::NotFound`] when the table does not exist.
    pub fn commit_metadata_location(
        &self,
        namespace: &str,
        table: &str,
        expected_current: &str,
        new: &str,
    ) -> Result<()> {
        let sql = format!(
            "UPDATE iceberg_tables SET metadata_location = ?5, previous_metadata_location = ?4
             WHERE catalog_name = ?1 AND table_namespace = ?2 AND table_name = ?3
               AND metadata_location = ?4{}",
            self.table_filter()
        );
        let changed = self
            .lock()
            .execute(
                &sql,
                params![self.name, namespace, table, expected_current, new],
            )
            .map_err(|e| self.db().error("committing a metadata location", e))?;
        if changed == 1 {
            return Ok(());
        }
        let qualified = format!("{namespace}.{table}");
        match self.metadata_location(namespace, table)? {
            None => Err(Error::not_found(format!(
                "table {qualified} in catalog {}",
                self.name
            ))),
            Some(current) => Err(Error::CommitConflict {
                table: qualified,
                reason: format!("metadata location is {current}, expected {expected_current}"),
            }),
        }
    }

    /// Creates a namespace (dot-joined for several levels) with `properties`; PyIceberg's
    /// minimal property `exists = true` is always stored.
    ///
    /// Errors: [`Error::AlreadyExists`] when the namespace exists, [`Error::InvalidArgument`]
    /// for an empty name, [`Error::Unsupported`] for a database without
    /// `iceberg_namespace_properties` (Java's oldest layout).
    pub fn create_namespace(
        &self,
        namespace: &str,
        properties: &BTreeMap<String, String>,
    ) -> Result<()> {
        if !self.has_namespace_table {
            return Err(Error::Unsupported(format!(
                "catalog {}: the database has no iceberg_namespace_properties table",
                self.db().label()
            )));
        }
        if namespace.is_empty() {
            return Err(Error::invalid("namespace ''", "a namespace needs a name"));
        }
        if self.namespace_exists(namespace)? {
            return Err(Error::AlreadyExists {
                what: format!("namespace '{namespace}' in catalog {}", self.name),
            });
        }
        let mut all = properties.clone();
        all.insert("exists".to_string(), "true".to_string());
        let mut conn = self.lock();
        let db = self.db();
        let tx = conn
            .transaction()
            .map_err(|e| db.error("creating a namespace", e))?;
        for (key, value) in &all {
            tx.execute(
                "INSERT INTO iceberg_namespace_properties VALUES (?1, ?2, ?3, ?4)",
                params![self.name, namespace, key, value],
            )
            .map_err(|e| db.error("creating a namespace", e))?;
        }
        tx.commit().map_err(|e| db.error("creating a namespace", e))
    }

    /// A namespace's properties.
    pub fn namespace_properties(&self, namespace: &str) -> Result<BTreeMap<String, String>> {
        if !self.has_namespace_table {
            return Ok(BTreeMap::new());
        }
        let conn = self.lock();
        let mut stmt = conn
            .prepare(
                "SELECT property_key, property_value FROM iceberg_namespace_properties
                 WHERE catalog_name = ?1 AND namespace = ?2",
            )
            .map_err(|e| self.db().error("reading namespace properties", e))?;
        let rows = stmt
            .query_map(params![self.name, namespace], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<BTreeMap<_, _>>>())
            .map_err(|e| self.db().error("reading namespace properties", e))?;
        Ok(rows)
    }

    /// Where a new table of `namespace` goes: the namespace's `location` property plus the
    /// table name, else `<warehouse>/<namespace levels>/<table>` (Java `JdbcCatalog`'s layout).
    pub fn default_table_location(&self, namespace: &str, table: &str) -> Result<String> {
        if let Some(location) = self
            .namespace_properties(namespace)?
            .get(NAMESPACE_LOCATION)
        {
            return Ok(format!("{}/{table}", location.trim_end_matches('/')));
        }
        let levels = namespace.replace('.', "/");
        Ok(format!("{}/{levels}/{table}", self.warehouse()))
    }

    /// Creates the table `namespace.table` at its default location
    /// ([`Self::default_table_location`]); see [`Self::create_table_at`].
    pub async fn create_table(
        &self,
        namespace: &str,
        table: &str,
        creation: &TableCreation,
    ) -> Result<Table> {
        let location = self.default_table_location(namespace, table)?;
        self.create_table_at(namespace, table, creation, &location)
            .await
    }

    /// Creates the table `namespace.table` at `location`: writes
    /// `<location>/metadata/00000-<uuid>.metadata.json` (create-if-absent), then adds the
    /// catalog row (`iceberg_type` `TABLE`).
    ///
    /// Errors: [`Error::NotFound`] when the namespace does not exist; [`Error::AlreadyExists`]
    /// naming `namespace.table` when the catalog already has it (the existing table is left
    /// alone, and the metadata file written for the attempt is deleted); the errors of
    /// [`TableCreation::metadata`].
    pub async fn create_table_at(
        &self,
        namespace: &str,
        table: &str,
        creation: &TableCreation,
        location: &str,
    ) -> Result<Table> {
        let metadata = creation.metadata(location)?;
        self.create_entry(namespace, table, metadata)
            .await?
            .ok_or_else(|| self.exists_error(namespace, table))
    }

    /// Writes the first metadata file of `namespace.table`
    /// (`<location>/metadata/00000-<uuid>.metadata.json`, create-if-absent) and adds its row;
    /// `None` when the catalog has the table already or gets it first (the file written for
    /// the attempt is deleted then). Both creating paths, [`Self::create_table_at`] and a
    /// commit with `assert-create`, end here.
    async fn create_entry(
        &self,
        namespace: &str,
        table: &str,
        metadata: TableMetadata,
    ) -> Result<Option<Table>> {
        if !self.namespace_exists(namespace)? {
            return Err(self.namespace_not_found(namespace));
        }
        if self.metadata_location(namespace, table)?.is_some() {
            return Ok(None);
        }
        let qualified = format!("{namespace}.{table}");
        let path = first_metadata_location(&metadata.location);
        let bytes = metadata_bytes(&metadata, &path)?;
        if !claim(&self.io, &qualified, &path, bytes).await? {
            return Ok(None);
        }
        match self.insert_table_row(namespace, table, &path) {
            Ok(()) => Ok(Some(Table::from_parts(
                self.io.clone(),
                path,
                Arc::new(metadata),
            ))),
            Err(e) => {
                let _ = self.io.delete(&path).await;
                match e {
                    Error::AlreadyExists { .. } => Ok(None),
                    other => Err(other),
                }
            }
        }
    }

    fn insert_table_row(
        &self,
        namespace: &str,
        table: &str,
        metadata_location: &str,
    ) -> Result<()> {
        let sql = if self.has_type_column {
            "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name,
               metadata_location, previous_metadata_location, iceberg_type)
             VALUES (?1, ?2, ?3, ?4, NULL, 'TABLE')"
        } else {
            "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name,
               metadata_location, previous_metadata_location)
             VALUES (?1, ?2, ?3, ?4, NULL)"
        };
        let inserted = self
            .lock()
            .execute(sql, params![self.name, namespace, table, metadata_location]);
        match inserted {
            Ok(_) => Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                Err(self.exists_error(namespace, table))
            }
            Err(e) => Err(self.db().error("adding a table", e)),
        }
    }

    fn exists_error(&self, namespace: &str, table: &str) -> Error {
        Error::AlreadyExists {
            what: format!("table {namespace}.{table} in catalog {}", self.name),
        }
    }

    /// Drops `namespace.table` from the catalog and returns the metadata file it pointed at.
    /// With `purge`, also deletes every file the table's metadata reaches (found from the
    /// metadata, never by listing: see [`crate::table::reachable_files`]) that lies under the
    /// table location ([`TableScope`]); files elsewhere are kept, and none is deleted when the
    /// table's `gc.enabled` is `false`. The files are found before the catalog row goes (a
    /// manifest that cannot be read fails the drop, which then changes nothing) and deleted
    /// after, so a failed deletion leaves only unreferenced files.
    ///
    /// Errors: [`Error::NotFound`] naming `namespace.table` when the catalog has no such table;
    /// with `purge`, [`Error::Moved`] for a table whose metadata records another location than
    /// its metadata file's, and the errors of the walk.
    pub async fn drop_table(&self, namespace: &str, table: &str, purge: bool) -> Result<String> {
        let purged = match purge {
            true => self.files_to_purge(namespace, table).await?,
            false => None,
        };
        let location = self.drop_table_entry(namespace, table)?;
        let mut first_error = None;
        for (scope, files) in purged.iter() {
            for file in files {
                if let Err(e) = scope.delete(file).await {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(location),
        }
    }

    /// The files `DROP TABLE ... PURGE` deletes (all reachable ones; the scope keeps those
    /// outside the table), `None` when `gc.enabled` is `false`.
    async fn files_to_purge(
        &self,
        namespace: &str,
        table: &str,
    ) -> Result<Option<(TableScope, Vec<String>)>> {
        let loaded = self.load_table(namespace, table).await?;
        loaded.ensure_writable()?;
        let metadata = loaded.metadata();
        if !GC_ENABLED.get(metadata)? {
            return Ok(None);
        }
        let scope = TableScope::new(loaded.io(), &metadata.location)?;
        let files = crate::table::reachable_files(&loaded).await?;
        Ok(Some((scope, files.into_iter().collect())))
    }

    /// Removes the catalog row of `namespace.table` only (no file is touched) and returns the
    /// metadata file it pointed at. Synchronous: it is one SQLite statement.
    pub fn drop_table_entry(&self, namespace: &str, table: &str) -> Result<String> {
        let location = self.metadata_location(namespace, table)?.ok_or_else(|| {
            Error::not_found(format!(
                "table {namespace}.{table} in catalog {}",
                self.name
            ))
        })?;
        let sql = format!(
            "DELETE FROM iceberg_tables
             WHERE catalog_name = ?1 AND table_namespace = ?2 AND table_name = ?3{}",
            self.table_filter()
        );
        self.lock()
            .execute(&sql, params![self.name, namespace, table])
            .map_err(|e| self.db().error("dropping a table", e))?;
        Ok(location)
    }

    /// The extra `WHERE` condition that keeps tables and drops views.
    fn table_filter(&self) -> &'static str {
        if self.has_type_column {
            " AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)"
        } else {
            ""
        }
    }

    /// The first column of every row of a query, as strings.
    fn query_strings(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        what: &str,
    ) -> Result<Vec<String>> {
        let conn = self.lock();
        collect_strings(&conn, sql, params).map_err(|e| self.db().error(what, e))
    }

    /// The connection. A poisoned lock is taken over: a panic elsewhere cannot leave a
    /// SQLite connection half-changed, since every statement is atomic.
    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn db(&self) -> DbRef<'_> {
        DbRef(&self.db_path)
    }
}

/// The namespace a [`Namespace`] is stored as: its levels dot-joined.
///
/// Errors: [`Error::InvalidArgument`] for the root (tables live in namespaces here) or a level
/// with a dot (it would read back as two levels).
fn dotted(namespace: &Namespace) -> Result<String> {
    if namespace.is_root() {
        return Err(Error::invalid(
            "the root namespace",
            "a SQLite catalog keeps tables and properties in named namespaces only",
        ));
    }
    if let Some(level) = namespace.levels().iter().find(|l| l.contains('.')) {
        return Err(Error::invalid(
            format!("namespace level '{level}'"),
            "a SQLite catalog stores namespaces dot-joined, so a level cannot contain a dot",
        ));
    }
    Ok(namespace.dotted())
}

impl SqliteCatalog {
    /// Renames `from` to `to` (a new row name; no file changes). See [`Catalog::rename_table`].
    pub fn rename_table_entry(&self, from: &TableIdent, to: &TableIdent) -> Result<()> {
        let (from_ns, to_ns) = (dotted(&from.namespace)?, dotted(&to.namespace)?);
        if self.metadata_location(&from_ns, &from.name)?.is_none() {
            return Err(self.table_not_found(&from_ns, &from.name));
        }
        if !self.namespace_exists(&to_ns)? {
            return Err(self.namespace_not_found(&to_ns));
        }
        if self.metadata_location(&to_ns, &to.name)?.is_some() {
            return Err(self.exists_error(&to_ns, &to.name));
        }
        let sql = format!(
            "UPDATE iceberg_tables SET table_namespace = ?4, table_name = ?5
             WHERE catalog_name = ?1 AND table_namespace = ?2 AND table_name = ?3{}",
            self.table_filter()
        );
        let renamed = self
            .lock()
            .execute(&sql, params![self.name, from_ns, from.name, to_ns, to.name]);
        match renamed {
            Ok(1) => Ok(()),
            Ok(_) => Err(self.table_not_found(&from_ns, &from.name)),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                Err(self.exists_error(&to_ns, &to.name))
            }
            Err(e) => Err(self.db().error("renaming a table", e)),
        }
    }

    /// Sets and removes namespace properties in one database transaction. See
    /// [`Catalog::update_namespace_properties`].
    pub fn update_namespace_properties_of(
        &self,
        namespace: &str,
        removals: &[String],
        updates: &BTreeMap<String, String>,
    ) -> Result<()> {
        if let Some(key) = removals.iter().find(|k| updates.contains_key(*k)) {
            return Err(Error::invalid(
                format!("namespace property '{key}'"),
                "it is both removed and set",
            ));
        }
        if !self.namespace_exists(namespace)? {
            return Err(self.namespace_not_found(namespace));
        }
        if !self.has_namespace_table {
            return Err(Error::Unsupported(format!(
                "catalog {}: the database has no iceberg_namespace_properties table",
                self.db().label()
            )));
        }
        let mut conn = self.lock();
        let db = self.db();
        let failed = |e| db.error("updating namespace properties", e);
        let tx = conn.transaction().map_err(failed)?;
        for key in removals {
            tx.execute(
                "DELETE FROM iceberg_namespace_properties
                 WHERE catalog_name = ?1 AND namespace = ?2 AND property_key = ?3",
                params![self.name, namespace, key],
            )
            .map_err(failed)?;
        }
        for (key, value) in updates {
            tx.execute(
                "INSERT INTO iceberg_namespace_properties VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (catalog_name, namespace, property_key)
                 DO UPDATE SET property_value = excluded.property_value",
                params![self.name, namespace, key, value],
            )
            .map_err(failed)?;
        }
        tx.commit().map_err(failed)
    }

    /// Drops an empty namespace (its properties). See [`Catalog::drop_namespace`].
    pub fn drop_namespace_entry(&self, namespace: &str) -> Result<()> {
        if !self.namespace_exists(namespace)? {
            return Err(self.namespace_not_found(namespace));
        }
        let inside = format!("{namespace}.");
        let nested = self
            .list_namespaces()?
            .into_iter()
            .any(|n| n.starts_with(&inside));
        let has_tables = !self
            .query_strings(
                "SELECT table_name FROM iceberg_tables
                 WHERE catalog_name = ?1 AND table_namespace = ?2",
                params![self.name, namespace],
                "listing tables",
            )?
            .is_empty();
        if nested || has_tables {
            return Err(Error::invalid(
                format!("namespace '{namespace}'"),
                "cannot be dropped: it holds tables, views or namespaces",
            ));
        }
        if self.has_namespace_table {
            self.lock()
                .execute(
                    "DELETE FROM iceberg_namespace_properties
                     WHERE catalog_name = ?1 AND namespace = ?2",
                    params![self.name, namespace],
                )
                .map_err(|e| self.db().error("dropping a namespace", e))?;
        }
        Ok(())
    }

    /// Adds the table `namespace.table` pointing at an existing metadata file (read first: it
    /// must be valid). See [`Catalog::register_table`].
    pub async fn register_table_at(
        &self,
        namespace: &str,
        table: &str,
        metadata_location: &str,
    ) -> Result<Table> {
        if !self.namespace_exists(namespace)? {
            return Err(self.namespace_not_found(namespace));
        }
        if self.metadata_location(namespace, table)?.is_some() {
            return Err(self.exists_error(namespace, table));
        }
        let loaded =
            Table::load_metadata_file(self.io.clone(), metadata_location.to_string()).await?;
        self.insert_table_row(namespace, table, metadata_location)?;
        Ok(loaded)
    }

    fn table_not_found(&self, namespace: &str, table: &str) -> Error {
        Error::not_found(format!(
            "table {namespace}.{table} in catalog {}",
            self.name
        ))
    }

    fn namespace_not_found(&self, namespace: &str) -> Error {
        Error::not_found(format!("namespace {namespace} in catalog {}", self.name))
    }

    /// The table's current version for a commit: its pointer row, loaded, refused when moved.
    async fn load_for_commit(&self, namespace: &str, table: &str) -> Result<Table> {
        let loaded = self.load_table(namespace, table).await?;
        loaded.ensure_writable()?;
        Ok(loaded)
    }

    /// An `assert-create` commit: the first metadata file, then the row.
    async fn commit_create(
        &self,
        ident: &TableIdent,
        requirements: &[TableRequirement],
        updates: &[TableUpdate],
    ) -> Result<Table> {
        let namespace = dotted(&ident.namespace)?;
        let qualified = format!("{namespace}.{}", ident.name);
        let conflict = || Error::CommitConflict {
            table: qualified.clone(),
            reason: "assert-create failed: the table exists".to_string(),
        };
        if self.namespace_exists(&namespace)?
            && self.metadata_location(&namespace, &ident.name)?.is_some()
        {
            return Err(conflict());
        }
        check_requirements(&qualified, requirements, None)?;
        let location = self.default_table_location(&namespace, &ident.name)?;
        let metadata = created_metadata(updates, &location)?;
        self.create_entry(&namespace, &ident.name, metadata)
            .await?
            .ok_or_else(conflict)
    }
}

#[async_trait]
impl Catalog for SqliteCatalog {
    fn name(&self) -> &str {
        &self.name
    }

    fn io(&self) -> &FileIO {
        &self.io
    }

    async fn list_namespaces(&self, parent: &Namespace) -> Result<Vec<Namespace>> {
        if !parent.is_root() && !self.namespace_or_parent_exists(&dotted(parent)?)? {
            return Err(self.namespace_not_found(&parent.dotted()));
        }
        let depth = parent.levels().len();
        let mut children = std::collections::BTreeSet::new();
        for name in SqliteCatalog::list_namespaces(self)? {
            let levels: Vec<&str> = name.split('.').collect();
            if levels.len() > depth && levels[..depth] == parent.levels()[..] {
                children.insert(Namespace::new(levels[..=depth].iter().copied())?);
            }
        }
        Ok(children.into_iter().collect())
    }

    async fn namespace_exists(&self, namespace: &Namespace) -> Result<bool> {
        match namespace.is_root() {
            true => Ok(true),
            false => self.namespace_or_parent_exists(&dotted(namespace)?),
        }
    }

    async fn create_namespace(
        &self,
        namespace: &Namespace,
        properties: BTreeMap<String, String>,
    ) -> Result<()> {
        SqliteCatalog::create_namespace(self, &dotted(namespace)?, &properties)
    }

    async fn namespace_properties(
        &self,
        namespace: &Namespace,
    ) -> Result<BTreeMap<String, String>> {
        let dotted = dotted(namespace)?;
        if !self.namespace_or_parent_exists(&dotted)? {
            return Err(self.namespace_not_found(&dotted));
        }
        SqliteCatalog::namespace_properties(self, &dotted)
    }

    async fn update_namespace_properties(
        &self,
        namespace: &Namespace,
        removals: &[String],
        updates: BTreeMap<String, String>,
    ) -> Result<()> {
        self.update_namespace_properties_of(&dotted(namespace)?, removals, &updates)
    }

    async fn drop_namespace(&self, namespace: &Namespace) -> Result<()> {
        self.drop_namespace_entry(&dotted(namespace)?)
    }

    async fn list_tables(&self, namespace: &Namespace) -> Result<Vec<TableIdent>> {
        SqliteCatalog::list_tables(self, &dotted(namespace)?)?
            .into_iter()
            .map(|name| TableIdent::new(namespace.clone(), name))
            .collect()
    }

    async fn table_exists(&self, ident: &TableIdent) -> Result<bool> {
        Ok(self
            .metadata_location(&dotted(&ident.namespace)?, &ident.name)?
            .is_some())
    }

    async fn load_table(&self, ident: &TableIdent) -> Result<Table> {
        SqliteCatalog::load_table(self, &dotted(&ident.namespace)?, &ident.name).await
    }

    async fn refresh(&self, ident: &TableIdent, known: &Table) -> Result<Option<Table>> {
        let namespace = dotted(&ident.namespace)?;
        let pointer = self.metadata_location(&namespace, &ident.name)?;
        match pointer.as_deref() == Some(known.metadata_location()) {
            true => Ok(None),
            false => self
                .load_for_commit(&namespace, &ident.name)
                .await
                .map(Some),
        }
    }

    async fn create_table(&self, ident: &TableIdent, creation: &TableCreation) -> Result<Table> {
        SqliteCatalog::create_table(self, &dotted(&ident.namespace)?, &ident.name, creation).await
    }

    async fn stage_create(&self, ident: &TableIdent, creation: &TableCreation) -> Result<Table> {
        let namespace = dotted(&ident.namespace)?;
        if !self.namespace_exists(&namespace)? {
            return Err(self.namespace_not_found(&namespace));
        }
        if self.metadata_location(&namespace, &ident.name)?.is_some() {
            return Err(self.exists_error(&namespace, &ident.name));
        }
        let location = self.default_table_location(&namespace, &ident.name)?;
        Ok(Table::staged(
            self.io.clone(),
            creation.metadata(&location)?,
        ))
    }

    async fn register_table(&self, ident: &TableIdent, metadata_location: &str) -> Result<Table> {
        self.register_table_at(&dotted(&ident.namespace)?, &ident.name, metadata_location)
            .await
    }

    async fn drop_table(&self, ident: &TableIdent, purge: bool) -> Result<()> {
        SqliteCatalog::drop_table(self, &dotted(&ident.namespace)?, &ident.name, purge)
            .await
            .map(drop)
    }

    async fn rename_table(&self, from: &TableIdent, to: &TableIdent) -> Result<()> {
        self.rename_table_entry(from, to)
    }

    async fn commit_table(
        &self,
        ident: &TableIdent,
        requirements: &[TableRequirement],
        updates: &[TableUpdate],
    ) -> Result<Table> {
        if creates(requirements) {
            return self.commit_create(ident, requirements, updates).await;
        }
        let namespace = dotted(&ident.namespace)?;
        let qualified = format!("{namespace}.{}", ident.name);
        let base = self.load_for_commit(&namespace, &ident.name).await?;
        check_requirements(&qualified, requirements, Some(base.metadata()))?;
        let next = next_metadata(
            &qualified,
            base.metadata(),
            base.metadata_location(),
            updates,
        )?;
        let path = next_metadata_location(base.metadata_location(), &next.location);
        let bytes = metadata_bytes(&next, &path)?;
        if !claim(&self.io, &qualified, &path, bytes).await? {
            return Err(Error::CommitConflict {
                table: qualified,
                reason: format!("{path} exists"),
            });
        }
        let swapped =
            self.commit_metadata_location(&namespace, &ident.name, base.metadata_location(), &path);
        if let Err(e) = swapped {
            // A SQLite statement is atomic: unless the row now names our file, it did not change.
            let landed = self
                .metadata_location(&namespace, &ident.name)
                .ok()
                .flatten();
            if landed.as_deref() != Some(path.as_str()) {
                let _ = self.io.delete(&path).await;
                return Err(e);
            }
        }
        delete_dropped_metadata_files(base.io(), base.metadata(), &next).await;
        Ok(Table::from_parts(base.io().clone(), path, Arc::new(next)))
    }
}

/// A new catalog table's first metadata file: `<location>/metadata/00000-<uuid>.metadata.json`.
fn first_metadata_location(table_location: &str) -> String {
    format!(
        "{}/metadata/00000-{}.metadata.json",
        table_location.trim_end_matches('/'),
        uuid::Uuid::new_v4()
    )
}

/// A catalog table's next metadata file: `NNNNN-uuid.metadata.json`, numbered after the
/// current one (a fresh uuid keeps concurrent writers' files apart; the row decides).
pub(crate) fn next_metadata_location(current: &str, table_location: &str) -> String {
    let dir = format!("{}/metadata", table_location.trim_end_matches('/'));
    let name = current.rsplit('/').next().unwrap_or(current);
    let number = name
        .split(['-', '.'])
        .next()
        .and_then(|n| n.trim_start_matches('v').parse::<u64>().ok())
        .unwrap_or(0);
    format!(
        "{dir}/{:05}-{}.metadata.json",
        number + 1,
        uuid::Uuid::new_v4()
    )
}

/// The database file, for error messages.
#[derive(Clone, Copy)]
struct DbRef<'a>(&'a Path);

impl DbRef<'_> {
    fn label(self) -> String {
        self.0.display().to_string()
    }

    /// A [`Error::Catalog`] naming the database file.
    fn error(self, what: &str, source: rusqlite::Error) -> Error {
        Error::Catalog {
            catalog: self.label(),
            reason: format!("{what} failed"),
            source: Some(Box::new(source)),
        }
    }
}

/// Opens an existing database read-write, falling back to read-only; never creates one.
fn open_connection(db_path: &Path) -> Result<Connection> {
    let base = OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(db_path, base | OpenFlags::SQLITE_OPEN_READ_WRITE)
        .or_else(|_| Connection::open_with_flags(db_path, base | OpenFlags::SQLITE_OPEN_READ_ONLY))
        .map_err(|e| DbRef(db_path).error("opening the database", e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| DbRef(db_path).error("setting the busy timeout", e))?;
    Ok(conn)
}

/// Whether the database has a table of that name.
fn has_table(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        params![table],
        |row| row.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

/// Whether a table has a column of that name (`PRAGMA table_info`).
fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    let columns = collect_strings(
        conn,
        "SELECT name FROM pragma_table_info(?1)",
        params![table],
    )?;
    Ok(columns.iter().any(|c| c.eq_ignore_ascii_case(column)))
}

/// The first column of every row of a query, as strings.
fn collect_strings(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map(params, |row| row.get::<_, String>(0))?;
    rows.collect()
}

/// The one catalog name in the database (`"default"` when there is none).
fn only_catalog_name(
    conn: &Connection,
    has_namespace_table: bool,
    db: DbRef<'_>,
) -> Result<String> {
    let sql = if has_namespace_table {
        "SELECT catalog_name FROM iceberg_tables
         UNION SELECT catalog_name FROM iceberg_namespace_properties ORDER BY 1"
    } else {
        "SELECT DISTINCT catalog_name FROM iceberg_tables ORDER BY 1"
    };
    let mut names =
        collect_strings(conn, sql, []).map_err(|e| db.error("listing catalog names", e))?;
    match names.len() {
        0 => Ok("default".to_string()),
        1 => Ok(names.remove(0)),
        _ => Err(Error::Catalog {
            catalog: db.label(),
            reason: format!(
                "the database holds several catalogs ({}); name one",
                names.join(", ")
            ),
            source: None,
        }),
    }
}

#[cfg(test)]
#[path = "sqlite_tests.rs"]
mod tests;
