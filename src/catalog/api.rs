//! The [`Catalog`] trait and its contract.

use std::collections::BTreeMap;
use std::fmt::Debug;

use async_trait::async_trait;

use super::{Namespace, TableIdent};
use crate::error::Result;
use crate::io::FileIO;
use crate::spec::{TableRequirement, TableUpdate};
use crate::table::Table;
use crate::table::TableCreation;

/// A catalog of Iceberg tables: namespaces, the tables in them, and the atomic commit of a
/// table change.
///
/// # Contract
///
/// Every implementation keeps these rules; `tests/catalogs` checks them for each one.
///
/// - **Fresh reads.** [`Catalog::load_table`] returns the table's newest committed version as
///   the catalog knows it at the time of the call: a commit that returned `Ok` (in this process
///   or another) is seen by every later load. Nothing is cached across calls.
/// - **Atomic commits.** [`Catalog::commit_table`] either makes the next version current (and
///   returns it) or changes nothing that a reader can see. It checks every requirement against
///   the *current* metadata, not against what the caller read: a requirement that does not
///   hold is [`Error::CommitConflict`](crate::Error::CommitConflict), and so is losing the
///   pointer swap to a concurrent commit. Files a commit wrote for an attempt that did not
///   become current are deleted by the catalog (its metadata file) or by the caller (data,
///   manifests, manifest lists), except after [`Error::CommitStateUnknown`](crate::Error::CommitStateUnknown):
///   then the outcome is not known (the commit may have happened), and nobody may delete the
///   files or retry without reloading the table first.
/// - **Never overwrite.** No metadata file is ever replaced: each version is a new file, and a
///   table that exists is never created again ([`Error::AlreadyExists`](crate::Error::AlreadyExists)).
/// - **Names.** Identifiers are compared exactly (case and Unicode as given). A name the catalog
///   cannot store (a SQLite namespace level with a dot, a directory name with `/`) is
///   [`Error::InvalidArgument`](crate::Error::InvalidArgument), never silently changed.
/// - **Errors name their object**: [`Error::NotFound`](crate::Error::NotFound) names the
///   namespace or table (`table db.orders in catalog c`), never a bare "not found".
/// - **Destructive operations** ([`Catalog::drop_table`] with `purge`) delete only files under
///   the table's location, and none when its `gc.enabled` is `false` (see
///   [`crate::io::TableScope`]).
///
/// The trait is object safe: catalogs are passed around as `Arc<dyn Catalog>`.
#[async_trait]
pub trait Catalog: Debug + Send + Sync {
    /// The catalog's name (in messages, and as DataFusion's catalog name by default).
    fn name(&self) -> &str;

    /// The IO that reads and writes the tables' files.
    fn io(&self) -> &FileIO;

    /// The namespaces directly inside `parent` (the root for [`Namespace::root`]), sorted.
    ///
    /// Errors: [`Error::NotFound`](crate::Error::NotFound) when `parent` is not the root and
    /// does not exist.
    async fn list_namespaces(&self, parent: &Namespace) -> Result<Vec<Namespace>>;

    /// Whether a namespace exists (the root always does).
    async fn namespace_exists(&self, namespace: &Namespace) -> Result<bool>;

    /// Creates a namespace with `properties`; its parent need not exist (as in Java's
    /// catalogs).
    ///
    /// Errors: [`Error::AlreadyExists`](crate::Error::AlreadyExists) when it exists.
    async fn create_namespace(
        &self,
        namespace: &Namespace,
        properties: BTreeMap<String, String>,
    ) -> Result<()>;

    /// A namespace's properties.
    ///
    /// Errors: [`Error::NotFound`](crate::Error::NotFound) when it does not exist.
    async fn namespace_properties(&self, namespace: &Namespace)
    -> Result<BTreeMap<String, String>>;

    /// Removes the properties `removals` and sets `updates` (a key in both is an error).
    ///
    /// Errors: [`Error::NotFound`](crate::Error::NotFound) when the namespace does not exist;
    /// [`Error::Unsupported`](crate::Error::Unsupported) when the catalog keeps no properties.
    async fn update_namespace_properties(
        &self,
        namespace: &Namespace,
        removals: &[String],
        updates: BTreeMap<String, String>,
    ) -> Result<()>;

    /// Drops an empty namespace.
    ///
    /// Errors: [`Error::NotFound`](crate::Error::NotFound) when it does not exist;
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when it holds tables or
    /// namespaces.
    async fn drop_namespace(&self, namespace: &Namespace) -> Result<()>;

    /// The tables of a namespace, sorted by name.
    ///
    /// Errors: [`Error::NotFound`](crate::Error::NotFound) when the namespace does not exist.
    async fn list_tables(&self, namespace: &Namespace) -> Result<Vec<TableIdent>>;

    /// Whether a table exists.
    async fn table_exists(&self, ident: &TableIdent) -> Result<bool>;

    /// The table's current version (see "Fresh reads"). Writable unless it was moved
    /// ([`Table::ensure_writable`]).
    ///
    /// Errors: [`Error::NotFound`](crate::Error::NotFound) naming the table; the errors of
    /// reading its metadata file (which name the file).
    async fn load_table(&self, ident: &TableIdent) -> Result<Table>;

    /// The table's current version beyond doubt, for a destructive operation (orphan removal,
    /// the deletions of an expiration): [`Table::is_current`], refused when moved. The default
    /// is [`Catalog::load_table`] (a catalog pointer is beyond doubt); a directory catalog
    /// also lists the table's `metadata/` and refuses newer versions it cannot read.
    async fn load_table_for_write(&self, ident: &TableIdent) -> Result<Table> {
        let table = self.load_table(ident).await?;
        table.ensure_writable()?;
        Ok(table)
    }

    /// The table's current version if it is not `known` (a version of it loaded earlier),
    /// `None` if `known` is still current. Catalogs answer it cheaply where they can (the
    /// SQLite catalog reads the pointer row; a directory catalog checks that the next version
    /// does not exist); the default loads the table and compares metadata files.
    async fn refresh(&self, ident: &TableIdent, known: &Table) -> Result<Option<Table>> {
        let current = self.load_table(ident).await?;
        Ok((current.metadata_location() != known.metadata_location()).then_some(current))
    }

    /// Creates a table: its first metadata file, made from `creation` at the catalog's
    /// default location for `ident`, then the pointer.
    ///
    /// Errors: [`Error::AlreadyExists`](crate::Error::AlreadyExists) when the table exists
    /// (nothing is overwritten); [`Error::NotFound`](crate::Error::NotFound) when the namespace
    /// does not exist (catalogs that keep namespaces); the errors of
    /// [`TableCreation::metadata`].
    async fn create_table(&self, ident: &TableIdent, creation: &TableCreation) -> Result<Table>;

    /// The table [`Catalog::create_table`] would make, not yet created: its first metadata (at
    /// the location the catalog gives it) and the IO to write its first files with. A create
    /// transaction ([`Transaction::create`](crate::transaction::Transaction::create)) then
    /// makes the table and its first snapshot in one commit (`assert-create`, built from
    /// [`TableMetadata::creation_updates`](crate::spec::TableMetadata::creation_updates)):
    /// nothing is visible before it, so `CREATE TABLE ... AS SELECT` is atomic. The staged
    /// table has no metadata file (its `metadata_location` is empty).
    ///
    /// Errors: those of [`Catalog::create_table`] (the checks are repeated by the commit);
    /// [`Error::Unsupported`](crate::Error::Unsupported) where the catalog cannot stage a
    /// creation (the default).
    async fn stage_create(&self, ident: &TableIdent, creation: &TableCreation) -> Result<Table> {
        let _ = creation;
        Err(crate::Error::Unsupported(format!(
            "staging the creation of table {ident} in catalog {}",
            self.name()
        )))
    }

    /// Registers an existing metadata file as the table `ident` (no file is written).
    ///
    /// Errors: [`Error::AlreadyExists`](crate::Error::AlreadyExists); the errors of reading the
    /// metadata file; [`Error::Unsupported`](crate::Error::Unsupported) where the catalog
    /// cannot point at a file it did not write.
    async fn register_table(&self, ident: &TableIdent, metadata_location: &str) -> Result<Table>;

    /// Drops a table from the catalog. With `purge` also deletes the files its metadata
    /// reaches, under its location only (see "Destructive operations"); the files are found
    /// before the table is dropped, so a table whose files cannot be listed is not dropped.
    ///
    /// Errors: [`Error::NotFound`](crate::Error::NotFound) naming the table;
    /// [`Error::Moved`](crate::Error::Moved) with `purge` for a moved table.
    async fn drop_table(&self, ident: &TableIdent, purge: bool) -> Result<()>;

    /// Renames a table (its files stay where they are).
    ///
    /// Errors: [`Error::NotFound`](crate::Error::NotFound) when `from` or the namespace of `to`
    /// does not exist; [`Error::AlreadyExists`](crate::Error::AlreadyExists) when `to` does.
    async fn rename_table(&self, from: &TableIdent, to: &TableIdent) -> Result<()>;

    /// Commits a change: checks `requirements` against the table's current metadata, applies
    /// `updates` to it, writes the next metadata file and swaps the pointer, atomically (see the
    /// contract). With an `assert-create` requirement the table must not exist, and the
    /// updates build it from nothing. Returns the committed version.
    ///
    /// Errors: [`Error::CommitConflict`](crate::Error::CommitConflict) (a requirement does not
    /// hold, or a concurrent commit won; nothing changed);
    /// [`Error::CommitStateUnknown`](crate::Error::CommitStateUnknown) (the outcome is not
    /// known); [`Error::NotFound`](crate::Error::NotFound) for an unknown table;
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for updates that cannot apply;
    /// [`Error::Moved`](crate::Error::Moved) for a moved table.
    async fn commit_table(
        &self,
        ident: &TableIdent,
        requirements: &[TableRequirement],
        updates: &[TableUpdate],
    ) -> Result<Table>;
}
