//! [`WriteTarget`]: a table of a catalog, as a writer holds it.

use std::sync::Arc;

use super::Transaction;
use crate::catalog::{Catalog, DirectoryCatalog, Namespace, SqliteCatalog, TableIdent};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::table::Table;
use crate::table::locate::table_dir_of;

/// Where a table's commits go: a catalog and the table's name in it. Cheap to clone.
///
/// A table opened by its location (a directory, or a metadata file inside its `metadata/`) is
/// the table of the [`DirectoryCatalog`] rooted at its parent ([`WriteTarget::directory`]); a
/// table of a SQLite catalog is [`WriteTarget::sqlite`]; any other [`Catalog`] is
/// [`WriteTarget::new`].
#[derive(Debug, Clone)]
pub struct WriteTarget {
    catalog: Arc<dyn Catalog>,
    ident: TableIdent,
    name: String,
}

impl WriteTarget {
    /// Table `ident` of `catalog`.
    pub fn new(catalog: Arc<dyn Catalog>, ident: TableIdent) -> Self {
        let name = ident.to_string();
        Self {
            catalog,
            ident,
            name,
        }
    }

    /// The table directory at `location` (or the table of a metadata file inside one), read
    /// and written through `io`.
    ///
    /// Errors: [`Error::InvalidArgument`] for a metadata file outside a `metadata/` directory
    /// (it has no table directory to commit to) or a location without a parent.
    pub fn directory(io: &FileIO, location: &str) -> Result<Self> {
        let dir = table_dir_of(location).ok_or_else(|| {
            Error::invalid(
                format!("table {location}"),
                "a metadata file outside a metadata/ directory has no table directory to \
                 commit to; open the table by its directory",
            )
        })?;
        let (catalog, ident) = DirectoryCatalog::for_location(io.clone(), &dir)?;
        let name = catalog.table_location(&ident)?;
        Ok(Self {
            catalog: Arc::new(catalog),
            ident,
            name,
        })
    }

    /// Table `table` of the dot-joined `namespace` in a SQLite catalog.
    ///
    /// Errors: [`Error::InvalidArgument`] for an empty name or namespace level.
    pub fn sqlite(catalog: Arc<SqliteCatalog>, namespace: &str, table: &str) -> Result<Self> {
        let ident = TableIdent::new(Namespace::parse_dotted(namespace)?, table)?;
        Ok(Self::new(catalog, ident))
    }

    /// The catalog.
    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        &self.catalog
    }

    /// The table's name in the catalog.
    pub fn ident(&self) -> &TableIdent {
        &self.ident
    }

    /// The IO that reads and writes the table's files.
    pub fn io(&self) -> &FileIO {
        self.catalog.io()
    }

    /// The table's name in messages: its location for a table directory, else its
    /// identifier.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The table's current version, to begin a change on: refused when the table was moved
    /// ([`Table::ensure_writable`]). The commit refreshes it, so it may be found cheaply.
    pub async fn load(&self) -> Result<Table> {
        let table = self.catalog.load_table(&self.ident).await?;
        table.ensure_writable()?;
        Ok(table)
    }

    /// The table's current version beyond doubt, for a destructive operation
    /// ([`Catalog::load_table_for_write`]).
    pub async fn load_for_write(&self) -> Result<Table> {
        self.catalog.load_table_for_write(&self.ident).await
    }

    /// A transaction on the table's current version.
    pub async fn begin(&self) -> Result<Transaction> {
        Ok(self.transaction(self.load().await?))
    }

    /// A transaction starting from `base`, a version of this table.
    pub fn transaction(&self, base: Table) -> Transaction {
        Transaction::on(Arc::clone(&self.catalog), self.ident.clone(), base)
    }
}
