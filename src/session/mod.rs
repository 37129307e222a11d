//! DataFusion adapters: a catalog's namespaces as DataFusion schemas, its tables as
//! [`IcebergTableProvider`]s.
//!
//! One namespace is one schema, also when it has several levels: the namespace
//! `nested.inner` is the schema named `nested.inner`, so SQL quotes it:
//! `SELECT * FROM ice."nested.inner".deep_table`.
//!
//! Tables are loaded when a query names them, from the catalog's current metadata pointer, so
//! every query sees the latest commit.
//!
//! Refs and other states of a table are tables too (see [`crate::sql`] for the forms):
//! `db."orders@audit"` in any catalog, and, after [`register_catalog_as_default`], Spark's
//! `db.orders.branch_audit` and `db.orders.tag_v1`. For those three-part names
//! [`register_catalog_as_default`] registers one more DataFusion catalog per namespace, named
//! after it, whose schemas are the namespace's tables and whose tables are each table's states
//! (looked up afresh on every query, like the tables). A namespace made with `CREATE SCHEMA`
//! through [`crate::sql::sql`] gets its catalog at once; one another process creates gets it
//! when the catalog is registered again; a namespace named like a catalog already in the
//! session (`datafusion`, ...) gets none. These catalogs are found by name only: the
//! session's catalog list leaves them out of its `catalog_names`, so `information_schema` (and
//! DataFusion's `SHOW TABLES`) list each table once, under its namespace.
//!
//! ```no_run
//! # async fn example() -> icefloe::Result<()> {
//! use datafusion::prelude::SessionContext;
//! use icefloe::Relocation;
//! use icefloe::session::{register_catalog, register_catalog_as_default};
//!
//! let ctx = SessionContext::new();
//! register_catalog(&ctx, "ice", "/data/lake/catalog.db", Relocation::default()).await?;
//! ctx.sql("SELECT * FROM ice.db.orders").await?.show().await?;
//!
//! // Or make the catalog the default one, so that namespaces need no catalog prefix.
//! let ctx = SessionContext::new();
//! register_catalog_as_default(&ctx, "/data/lake/catalog.db", Relocation::default()).await?;
//! ctx.sql("SELECT * FROM db.orders").await?.show().await?;
//! ctx.sql("SELECT * FROM db.orders.branch_audit").await?.show().await?;
//! ctx.sql(r#"SELECT * FROM db."orders@v1""#).await?.show().await?;
//! # Ok(())
//! # }
//! ```

pub(crate) mod blocking;
pub(crate) mod refs;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, RwLock};

use ::datafusion::arrow::datatypes::Schema as ArrowSchema;
use ::datafusion::catalog::{CatalogProvider, CatalogProviderList, SchemaProvider, TableProvider};
use ::datafusion::common::not_impl_err;
use ::datafusion::datasource::TableType;
use ::datafusion::datasource::empty::EmptyTable;
use ::datafusion::error::Result as DFResult;
use ::datafusion::execution::SessionState;
use ::datafusion::prelude::SessionContext;
use async_trait::async_trait;

use crate::catalog::{Catalog, Namespace, SqliteCatalog, TableIdent};
use crate::error::{Error, Result};
use crate::io::{FileIO, Relocation, StorageProperties};
use crate::provider::IcebergTableProvider;
use crate::spec::SnapshotSelector;
use crate::table::Table;
use crate::transaction::WriteTarget;
pub(crate) use blocking::block_on;
use refs::{TableRefsSchema, split_suffixed, suffixed_table};

/// A DataFusion catalog over an Iceberg [`Catalog`]: one schema per namespace, named by its
/// dot-joined levels.
///
/// Optionally wraps another catalog (the `fallback`) whose schemas stay visible next to the
/// namespaces, so that replacing DataFusion's default catalog keeps its `public` schema and
/// `SessionContext::register_table` keeps working. A namespace hides a fallback schema of the
/// same name.
///
/// `schema_names` and `schema` are synchronous in DataFusion's trait; they ask the catalog and
/// wait for the answer (see [`blocking`](self::blocking)), and an error there reads as "no
/// schemas" (the statement then fails naming the schema it did not find). A namespace level
/// with a dot in it (possible in a REST catalog) has no schema name.
#[derive(Debug)]
pub struct IcebergCatalogProvider {
    catalog: Arc<dyn Catalog>,
    fallback: Option<Arc<dyn CatalogProvider>>,
}

impl IcebergCatalogProvider {
    /// A catalog provider showing only the catalog's namespaces.
    pub fn new(catalog: Arc<dyn Catalog>) -> Self {
        Self {
            catalog,
            fallback: None,
        }
    }

    /// Also shows the schemas of `fallback` (typically the catalog this one replaces), and
    /// sends schema registration there.
    pub fn with_fallback(mut self, fallback: Arc<dyn CatalogProvider>) -> Self {
        self.fallback = Some(fallback);
        self
    }

    /// The Iceberg catalog.
    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        &self.catalog
    }

    fn namespace_schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        let namespace = existing_namespace(&self.catalog, name).ok().flatten()?;
        Some(Arc::new(IcebergSchemaProvider::new(
            Arc::clone(&self.catalog),
            namespace,
        )))
    }

    /// Whether `name` is a namespace of the catalog (errors are the catalog's).
    fn is_namespace(&self, name: &str) -> DFResult<bool> {
        Ok(existing_namespace(&self.catalog, name)?.is_some())
    }
}

impl CatalogProvider for IcebergCatalogProvider {
    fn schema_names(&self) -> Vec<String> {
        let mut names = block_on(namespace_names(self.catalog.as_ref()))
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        if let Some(fallback) = &self.fallback {
            names.extend(fallback.schema_names());
            names.sort();
            names.dedup();
        }
        names
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        self.namespace_schema(name)
            .or_else(|| self.fallback.as_ref().and_then(|f| f.schema(name)))
    }

    fn register_schema(
        &self,
        name: &str,
        schema: Arc<dyn SchemaProvider>,
    ) -> DFResult<Option<Arc<dyn SchemaProvider>>> {
        match &self.fallback {
            Some(fallback) if !self.is_namespace(name)? => fallback.register_schema(name, schema),
            _ => not_impl_err!(
                "creating schemas in the Iceberg catalog {}",
                self.catalog.name()
            ),
        }
    }

    fn deregister_schema(
        &self,
        name: &str,
        cascade: bool,
    ) -> DFResult<Option<Arc<dyn SchemaProvider>>> {
        match &self.fallback {
            Some(fallback) if !self.is_namespace(name)? => {
                fallback.deregister_schema(name, cascade)
            }
            _ => not_impl_err!(
                "dropping schemas of the Iceberg catalog {}",
                self.catalog.name()
            ),
        }
    }
}

/// The namespace a schema name names, if the catalog has it; `None` also for a name that is no
/// namespace name (an empty level).
fn existing_namespace(catalog: &Arc<dyn Catalog>, name: &str) -> Result<Option<Namespace>> {
    let Ok(namespace) = Namespace::parse_dotted(name) else {
        return Ok(None);
    };
    let exists = block_on(catalog.namespace_exists(&namespace))??;
    Ok(exists.then_some(namespace))
}

/// Whether the schema name `name` is a namespace of `catalog` (false when it cannot be asked).
pub(crate) fn has_namespace(catalog: &Arc<dyn Catalog>, name: &str) -> bool {
    existing_namespace(catalog, name).is_ok_and(|n| n.is_some())
}

/// Every namespace of `catalog` at any depth, dot-joined and sorted: the schema names. A level
/// whose listing fails (a server that keeps no nested namespaces may refuse `parent`) is left
/// out below the top one, whose failure is the error.
pub(crate) async fn namespace_names(catalog: &dyn Catalog) -> Result<Vec<String>> {
    let mut pending = catalog.list_namespaces(&Namespace::root()).await?;
    let mut names = Vec::new();
    while let Some(namespace) = pending.pop() {
        if let Ok(children) = catalog.list_namespaces(&namespace).await {
            pending.extend(children.into_iter().filter(|c| c != &namespace));
        }
        names.push(namespace.dotted());
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// The tables of one namespace of an Iceberg [`Catalog`], as a DataFusion schema.
///
/// [`SchemaProvider::table`] loads the table from the catalog on every call, so every query
/// plans against the latest commit.
#[derive(Debug)]
pub struct IcebergSchemaProvider {
    catalog: Arc<dyn Catalog>,
    namespace: Namespace,
}

impl IcebergSchemaProvider {
    /// The schema of `namespace` in `catalog`.
    pub fn new(catalog: Arc<dyn Catalog>, namespace: Namespace) -> Self {
        Self { catalog, namespace }
    }

    /// The namespace.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    fn ident(&self, name: &str) -> Result<TableIdent> {
        TableIdent::new(self.namespace.clone(), name)
    }

    /// A provider of the current state of `table` (named `name` in this namespace) whose
    /// INSERT commits to the catalog.
    fn writable(&self, table: Table, name: &str) -> Result<IcebergTableProvider> {
        let target = WriteTarget::new(Arc::clone(&self.catalog), self.ident(name)?);
        Ok(
            IcebergTableProvider::try_new(table, SnapshotSelector::Current)?
                .with_write_target(target),
        )
    }

    /// Loads the current version of a table of this namespace; `None` when there is none. A
    /// table the catalog has whose metadata cannot be read is the error of reading it.
    pub async fn load_table(&self, name: &str) -> Result<Option<Table>> {
        let ident = self.ident(name)?;
        match self.catalog.load_table(&ident).await {
            Ok(table) => Ok(Some(table)),
            Err(Error::NotFound { .. }) if !self.catalog.table_exists(&ident).await? => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn exists(&self, name: &str) -> Result<bool> {
        let ident = self.ident(name)?;
        block_on(self.catalog.table_exists(&ident))?
    }
}

#[async_trait]
impl SchemaProvider for IcebergSchemaProvider {
    /// The namespace's tables; empty when the catalog cannot be read.
    fn table_names(&self) -> Vec<String> {
        let tables = block_on(self.catalog.list_tables(&self.namespace));
        let tables = tables.ok().and_then(Result::ok).unwrap_or_default();
        tables.into_iter().map(|ident| ident.name).collect()
    }

    /// The table `name` (INSERT INTO commits to its catalog); for `"t@<ref>"`, table `t` at
    /// that ref or snapshot id; for `"t$<relation>"`, a metadata table of `t`.
    async fn table(&self, name: &str) -> DFResult<Option<Arc<dyn TableProvider>>> {
        if let Some(table) = self.load_table(name).await? {
            return Ok(Some(Arc::new(self.writable(table, name)?)));
        }
        let Some((table_name, suffix)) = split_suffixed(name) else {
            return Ok(None);
        };
        // `self.table`: the base of `"t@v1$files"` is `"t@v1"`. Branches of `t` (`t@b`)
        // inherit its write target: INSERT commits to the branch.
        match self.table(table_name).await? {
            Some(base) => suffixed_table(table_name, &base, suffix).map(Some),
            None => Ok(None),
        }
    }

    async fn table_type(&self, name: &str) -> DFResult<Option<TableType>> {
        let exists = self.catalog.table_exists(&self.ident(name)?).await?;
        Ok(exists.then_some(TableType::Base))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.exists(name).unwrap_or(false)
    }

    /// Refused: DataFusion hands over an in-memory table synchronously, which cannot carry a
    /// partition spec or write Iceberg files. `CREATE TABLE` and `CREATE TABLE ... AS SELECT`
    /// in an Iceberg catalog run through `icefloe::sql::sql` (see [`crate::sql`]).
    fn register_table(
        &self,
        name: String,
        _table: Arc<dyn TableProvider>,
    ) -> DFResult<Option<Arc<dyn TableProvider>>> {
        not_impl_err!(
            "creating {}.{name} in the Iceberg catalog {}: run CREATE TABLE through icefloe::sql::sql",
            self.namespace,
            self.catalog.name()
        )
    }

    /// `DROP TABLE`: removes the table from the catalog (its files stay; `DROP TABLE ... PURGE`
    /// through `icefloe::sql::sql` also deletes them). Returns an empty stand-in provider, as
    /// loading the dropped table would need IO in this synchronous call.
    fn deregister_table(&self, name: &str) -> DFResult<Option<Arc<dyn TableProvider>>> {
        let ident = self.ident(name)?;
        match block_on(self.catalog.drop_table(&ident, false))? {
            Ok(()) => Ok(Some(Arc::new(EmptyTable::new(Arc::new(
                ArrowSchema::empty(),
            ))))),
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// The session's Iceberg catalogs by their DataFusion catalog name, kept as a `SessionConfig`
/// extension by [`attach`], [`attach_as_default`] and the SQLite shortcuts
/// [`register_catalog`] and [`register_catalog_as_default`], so that statements DataFusion
/// cannot plan against a catalog (`CREATE TABLE` with partitioning, CTAS, `DROP TABLE ...
/// PURGE`, `CREATE SCHEMA`) find the [`Catalog`] behind a name (see [`crate::sql::sql`]).
#[derive(Debug, Default, Clone)]
pub struct IcebergCatalogs {
    by_name: BTreeMap<String, Arc<dyn Catalog>>,
}

impl IcebergCatalogs {
    /// The Iceberg catalog registered in `state` under the DataFusion catalog name `name`.
    pub fn lookup(state: &SessionState, name: &str) -> Option<Arc<dyn Catalog>> {
        state
            .config()
            .get_extension::<IcebergCatalogs>()
            .and_then(|c| c.by_name.get(name).cloned())
    }

    /// Records `catalog` under `name` in `ctx`'s configuration.
    fn remember(ctx: &SessionContext, name: &str, catalog: &Arc<dyn Catalog>) {
        let state = ctx.state_ref();
        let mut state = state.write();
        let mut catalogs = state
            .config()
            .get_extension::<IcebergCatalogs>()
            .map(|c| c.as_ref().clone())
            .unwrap_or_default();
        catalogs
            .by_name
            .insert(name.to_string(), Arc::clone(catalog));
        state.config_mut().set_extension(Arc::new(catalogs));
    }
}

/// Registers `catalog` (SQLite, REST, directories, or your own [`Catalog`]) in `ctx` as the
/// DataFusion catalog `catalog_name_in_sql`, replacing any catalog of that name. Its tables are
/// then `catalog_name_in_sql.namespace.table` in SQL, and the DDL of [`crate::sql::sql`] works
/// on it.
pub fn attach(ctx: &SessionContext, catalog_name_in_sql: &str, catalog: Arc<dyn Catalog>) {
    let provider = IcebergCatalogProvider::new(Arc::clone(&catalog));
    ctx.register_catalog(catalog_name_in_sql, Arc::new(provider));
    IcebergCatalogs::remember(ctx, catalog_name_in_sql, &catalog);
}

/// Like [`attach`], but registers the catalog under the session's default catalog name
/// (`datafusion.catalog.default_catalog`, normally `datafusion`), so that SQL can name tables
/// as `namespace.table`.
///
/// The catalog it replaces stays reachable as the fallback (see
/// [`IcebergCatalogProvider::with_fallback`]): its `public` schema, and the tables registered
/// there with `ctx.register_table`, keep working.
///
/// It also registers one DataFusion catalog per namespace (unless a catalog of that name
/// exists), so that `namespace.table.branch_<b>` and `namespace.table.tag_<g>` read a table's
/// refs (see the module docs).
///
/// Errors: the catalog's, listing its namespaces.
pub async fn attach_as_default(ctx: &SessionContext, catalog: Arc<dyn Catalog>) -> Result<()> {
    let default_name = ctx
        .copied_config()
        .options()
        .catalog
        .default_catalog
        .clone();
    let mut provider = IcebergCatalogProvider::new(Arc::clone(&catalog));
    if let Some(previous) = ctx.catalog(&default_name) {
        provider = provider.with_fallback(previous);
    }
    ctx.register_catalog(&default_name, Arc::new(provider));
    IcebergCatalogs::remember(ctx, &default_name, &catalog);
    register_namespace_catalogs(ctx, &catalog).await
}

/// Opens the SQLite catalog at `db_path` and [`attach`]es it as `catalog_name_in_sql`.
///
/// The database must hold exactly one catalog name (see [`SqliteCatalog::open`]); for a
/// database with several, open the catalog yourself and [`attach`] it. Table files are read
/// through the stores registered in `ctx`, with `relocation` applied.
pub async fn register_catalog(
    ctx: &SessionContext,
    catalog_name_in_sql: &str,
    db_path: impl AsRef<Path>,
    relocation: Relocation,
) -> Result<Arc<SqliteCatalog>> {
    let catalog = open_for(ctx, db_path, relocation)?;
    attach(
        ctx,
        catalog_name_in_sql,
        Arc::clone(&catalog) as Arc<dyn Catalog>,
    );
    Ok(catalog)
}

/// Opens the SQLite catalog at `db_path` and [`attach_as_default`]s it.
pub async fn register_catalog_as_default(
    ctx: &SessionContext,
    db_path: impl AsRef<Path>,
    relocation: Relocation,
) -> Result<Arc<SqliteCatalog>> {
    let catalog = open_for(ctx, db_path, relocation)?;
    attach_as_default(ctx, Arc::clone(&catalog) as Arc<dyn Catalog>).await?;
    Ok(catalog)
}

/// Registers, for each namespace `ns` that names no catalog of `ctx` yet, the catalog `ns` whose
/// schemas are the tables of `ns`, so that `ns.t.branch_x` resolves.
pub(crate) async fn register_namespace_catalogs(
    ctx: &SessionContext,
    catalog: &Arc<dyn Catalog>,
) -> Result<()> {
    let namespaces = namespace_names(catalog.as_ref()).await?;
    let state = ctx.state();
    let mut list = Arc::clone(state.catalog_list());
    if !list.is::<NamespaceAliases>() {
        list = Arc::new(NamespaceAliases {
            inner: list,
            hidden: RwLock::default(),
        });
        ctx.register_catalog_list(Arc::clone(&list));
    }
    let Some(aliases) = list.downcast_ref::<NamespaceAliases>() else {
        return Ok(());
    };
    for name in namespaces {
        if ctx.catalog(&name).is_none() {
            let tables = NamespaceTablesCatalog {
                catalog: Arc::clone(catalog),
                namespace: Namespace::parse_dotted(&name)?,
            };
            aliases.register_alias(name, Arc::new(tables));
        }
    }
    Ok(())
}

/// A session's catalog list that leaves the namespace catalogs of
/// [`register_catalog_as_default`] out of [`CatalogProviderList::catalog_names`] (they are
/// another name for tables listed already) while resolving them by name.
#[derive(Debug)]
struct NamespaceAliases {
    inner: Arc<dyn CatalogProviderList>,
    hidden: RwLock<BTreeSet<String>>,
}

impl NamespaceAliases {
    fn register_alias(&self, name: String, catalog: Arc<dyn CatalogProvider>) {
        let mut hidden = self.hidden.write().unwrap_or_else(|e| e.into_inner());
        hidden.insert(name.clone());
        self.inner.register_catalog(name, catalog);
    }
}

impl CatalogProviderList for NamespaceAliases {
    /// A catalog registered under an alias's name replaces the alias and is listed.
    fn register_catalog(
        &self,
        name: String,
        catalog: Arc<dyn CatalogProvider>,
    ) -> Option<Arc<dyn CatalogProvider>> {
        let mut hidden = self.hidden.write().unwrap_or_else(|e| e.into_inner());
        hidden.remove(&name);
        self.inner.register_catalog(name, catalog)
    }

    fn catalog_names(&self) -> Vec<String> {
        let hidden = self.hidden.read().unwrap_or_else(|e| e.into_inner());
        let mut names = self.inner.catalog_names();
        names.retain(|name| !hidden.contains(name));
        names
    }

    fn catalog(&self, name: &str) -> Option<Arc<dyn CatalogProvider>> {
        self.inner.catalog(name)
    }
}

/// One namespace as a DataFusion catalog: its schemas are the namespace's tables, and each of
/// those schemas holds the table's states ([`TableRefsSchema`]).
#[derive(Debug)]
struct NamespaceTablesCatalog {
    catalog: Arc<dyn Catalog>,
    namespace: Namespace,
}

impl NamespaceTablesCatalog {
    fn tables(&self) -> IcebergSchemaProvider {
        IcebergSchemaProvider::new(Arc::clone(&self.catalog), self.namespace.clone())
    }
}

impl CatalogProvider for NamespaceTablesCatalog {
    fn schema_names(&self) -> Vec<String> {
        self.tables().table_names()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        let tables = self.tables();
        tables
            .table_exist(name)
            .then(|| Arc::new(TableRefsSchema::new(Arc::new(tables), name)) as _)
    }
}

/// Opens the catalog with a [`FileIO`] over the stores registered in `ctx`.
fn open_for(
    ctx: &SessionContext,
    db_path: impl AsRef<Path>,
    relocation: Relocation,
) -> Result<Arc<SqliteCatalog>> {
    let io = FileIO::new(ctx.runtime_env(), relocation)
        .with_storage(StorageProperties::of_session(ctx.state().config()));
    Ok(Arc::new(SqliteCatalog::open(db_path, None, io)?))
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
