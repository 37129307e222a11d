//! [`DirectoryCatalog`]: tables as directories under a root, Iceberg's "Hadoop" layout.
//!
//! A namespace is a directory, `<root>/<level>/<level>`; a table is a directory holding a
//! `metadata/` directory with its versions, `<root>/<levels>/<name>/metadata/vN.metadata.json`
//! plus `version-hint.text`. The current version is found by the one rule of
//! [`file`](super::file) (the hint, then forward while the next version exists); a commit
//! claims `v(N+1).metadata.json` with create-if-absent (the store decides atomically who gets
//! version N+1), then points the hint at it.
//!
//! A table handed over by its location alone (`--table e=/data/t`, `CREATE EXTERNAL TABLE ...
//! LOCATION`) is the table named by its last segment in the catalog rooted at its parent
//! ([`DirectoryCatalog::for_location`]).
//!
//! Namespaces have no properties of their own (their `location` is their directory), and on an
//! object store, which has no directories, a namespace exists while something is stored under
//! it; creating one there is not supported. Renaming and registering are not supported: a
//! table's files record its location, so a directory table cannot be moved by the catalog.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;

use super::commit::{
    check_requirements, claim, created_metadata, creates, delete_dropped_metadata_files,
    metadata_bytes, next_metadata,
};
use super::{Catalog, Namespace, TableIdent};
use crate::error::{Error, Result};
use crate::io::{FileIO, TableScope, normalize_location};
use crate::spec::properties::GC_ENABLED;
use crate::spec::{TableMetadata, TableRequirement, TableUpdate};
use crate::table::Table;
use crate::table::TableCreation;
use crate::table::locate::{
    VERSION_HINTS, is_metadata_file, metadata_file_version, parsed_bytes, successor_exists,
    write_version_hint,
};

/// Tables as directories under a root (see the module docs).
#[derive(Debug, Clone)]
pub struct DirectoryCatalog {
    name: String,
    root: String,
    io: FileIO,
    /// The version of each table this catalog (or a clone) last loaded strictly or committed.
    known: Arc<Mutex<HashMap<String, Known>>>,
}

/// A version of a table found current beyond doubt (a strict load, or this catalog's own
/// commit), and the bytes of its metadata file.
#[derive(Debug, Clone)]
struct Known {
    table: Table,
    version: u64,
    bytes: Bytes,
}

impl DirectoryCatalog {
    /// The catalog of the directories under `root` (a local path, made absolute, or a URI).
    ///
    /// Errors: [`Error::InvalidArgument`] for a root that is not a location.
    pub fn new(io: FileIO, root: &str) -> Result<Self> {
        let normalized = normalize_location(root)?;
        let root = match normalized.trim_end_matches('/') {
            "" => "/".to_string(),
            t if t.ends_with(':') => normalized.clone(),
            t => t.to_string(),
        };
        Ok(Self {
            name: root.clone(),
            root,
            io,
            known: Arc::default(),
        })
    }

    /// The catalog rooted at the parent of the table directory `location`, and the table's
    /// name in it (its last segment).
    ///
    /// Errors: [`Error::InvalidArgument`] for a location without a parent (a bucket's root).
    pub fn for_location(io: FileIO, location: &str) -> Result<(Self, TableIdent)> {
        let normalized = normalize_location(location)?;
        let trimmed = normalized.trim_end_matches('/');
        let (parent, name) = trimmed
            .rsplit_once('/')
            .filter(|(parent, name)| !name.is_empty() && !parent.ends_with(":/"))
            .ok_or_else(|| no_parent(location))?;
        let parent = match parent {
            "" => "/",
            "file://" => "file:///",
            p => p,
        };
        let catalog = Self::new(io, parent)?;
        let ident = TableIdent::new(Namespace::root(), name)?;
        Ok((catalog, ident))
    }

    /// Names the catalog (its root by default).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The root directory.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The directory of a namespace.
    ///
    /// Errors: [`Error::InvalidArgument`] for a level that cannot be a directory name.
    pub fn namespace_location(&self, namespace: &Namespace) -> Result<String> {
        let mut location = self.root.clone();
        for level in namespace.levels() {
            check_level(level, || format!("namespace '{namespace}'"))?;
            location = join(&location, level);
        }
        Ok(location)
    }

    /// The directory of a table.
    ///
    /// Errors: [`Error::InvalidArgument`] for a name that cannot be a directory name.
    pub fn table_location(&self, ident: &TableIdent) -> Result<String> {
        let namespace = self.namespace_location(&ident.namespace)?;
        check_level(&ident.name, || format!("table name '{ident}'"))?;
        Ok(join(&namespace, &ident.name))
    }

    /// Whether `location` holds a table: a metadata file or a version hint in `metadata/`.
    async fn is_table(&self, location: &str) -> Result<bool> {
        let names = match self.io.list_dir(&join(location, "metadata")).await {
            Ok(names) => names,
            Err(Error::NotFound { .. }) => return Ok(false),
            Err(e) => return Err(e),
        };
        Ok(names
            .iter()
            .any(|n| is_metadata_file(n) || VERSION_HINTS.contains(&n.as_str())))
    }

    /// `err` of loading `ident`: a directory without metadata is the table not found (the
    /// loader's error kept as the source).
    fn load_error(&self, ident: &TableIdent, err: Error) -> Error {
        match err {
            Error::NotFound { .. } => Error::NotFound {
                what: format!("table {ident} in catalog {}", self.name),
                source: Some(Box::new(err)),
            },
            other => other,
        }
    }

    fn namespace_not_found(&self, namespace: &Namespace) -> Error {
        Error::not_found(format!("namespace {namespace} in catalog {}", self.name))
    }

    /// The table's current version for a commit (strict: [`Table::load_version_for_write`])
    /// with its version number.
    ///
    /// A version this catalog found current before is reused without listing `metadata/`
    /// again while it still is, beyond doubt: no next version exists in any `vN` naming and
    /// its metadata file still holds exactly the bytes it had (a table dropped and created
    /// again under the name has other bytes there: at least its uuid differs). Each commit so
    /// lists the directory once, not twice (the transaction's refresh and the commit).
    async fn load_for_commit(&self, ident: &TableIdent) -> Result<(Table, u64)> {
        let location = self.table_location(ident)?;
        if let Some(known) = self.still_current(&location).await? {
            return Ok((known.table, known.version));
        }
        let (table, version) = Table::load_version_for_write(self.io.clone(), &location)
            .await
            .map_err(|e| self.load_error(ident, e))?;
        self.remember(&location, &table, version, None).await;
        Ok((table, version))
    }

    /// The known version of the table at `location` if it is still the current one.
    async fn still_current(&self, location: &str) -> Result<Option<Known>> {
        let known = lock(&self.known).get(location).cloned();
        let Some(known) = known else {
            return Ok(None);
        };
        let path = known.table.metadata_location();
        if successor_exists(&self.io, path, known.version).await? != Some(false) {
            return Ok(None);
        }
        match self.read_metadata_file(path).await {
            Some(bytes) if bytes == known.bytes => Ok(Some(known)),
            _ => Ok(None),
        }
    }

    /// The bytes of a metadata file (`None` when it cannot be read within the limit).
    async fn read_metadata_file(&self, path: &str) -> Option<Bytes> {
        let limit = self.io.read_limits().metadata_bytes;
        self.io.read_bounded(path, limit).await.ok()
    }

    /// Records `table` (version `version`, its metadata file holding `bytes`, read when not
    /// given) as found current beyond doubt.
    async fn remember(&self, location: &str, table: &Table, version: u64, bytes: Option<Bytes>) {
        // A strict load just read the file: its bytes are those its parse came from.
        let bytes = match bytes
            .or_else(|| parsed_bytes(&self.io, table.metadata_location(), table.metadata()))
        {
            Some(bytes) => Some(bytes),
            None => self.read_metadata_file(table.metadata_location()).await,
        };
        let entry = bytes.map(|bytes| Known {
            table: table.clone(),
            version,
            bytes,
        });
        let mut known = lock(&self.known);
        match entry {
            Some(entry) => known.insert(location.to_string(), entry),
            None => known.remove(location),
        };
    }

    /// Creates the table from `metadata`: `v1.metadata.json` by create-if-absent, then the hint.
    async fn create(&self, ident: &TableIdent, metadata: TableMetadata) -> Result<Table> {
        let location = self.table_location(ident)?;
        if !self.namespace_exists(&ident.namespace).await? {
            return Err(self.namespace_not_found(&ident.namespace));
        }
        if self.is_table(&location).await? {
            return Err(self.exists(ident));
        }
        let path = format!(
            "{}/metadata/v1.metadata.json",
            metadata.location.trim_end_matches('/')
        );
        let bytes = metadata_bytes(&metadata, &path)?;
        if !claim(&self.io, &ident.to_string(), &path, bytes).await? {
            return Err(self.exists(ident));
        }
        write_version_hint(&self.io, &metadata.location, 1).await;
        Ok(Table::from_parts(
            self.io.clone(),
            path,
            std::sync::Arc::new(metadata),
        ))
    }

    fn exists(&self, ident: &TableIdent) -> Error {
        let location = self
            .table_location(ident)
            .unwrap_or_else(|_| ident.to_string());
        Error::AlreadyExists {
            what: format!("table {location} (its metadata is never overwritten)"),
        }
    }
}

/// `dir/name` with one slash between (a root such as `/` or `file:///` ends with one already).
fn join(dir: &str, name: &str) -> String {
    match dir.ends_with('/') {
        true => format!("{dir}{name}"),
        false => format!("{dir}/{name}"),
    }
}

/// The error for a location at the top of a store.
fn no_parent(location: &str) -> Error {
    Error::invalid(
        format!("table location {location}"),
        "a table directory needs a parent directory",
    )
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every update is one insert or removal: a poisoned lock still holds consistent data.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Refuses a namespace level or table name that is not one directory name.
fn check_level(level: &str, what: impl FnOnce() -> String) -> Result<()> {
    if level.is_empty() || level == "." || level == ".." || level.contains(['/', '\\']) {
        return Err(Error::invalid(
            what(),
            format!("'{level}' cannot be a directory name (empty, '.', '..', or with a slash)"),
        ));
    }
    Ok(())
}

#[async_trait]
impl Catalog for DirectoryCatalog {
    fn name(&self) -> &str {
        &self.name
    }

    fn io(&self) -> &FileIO {
        &self.io
    }

    async fn list_namespaces(&self, parent: &Namespace) -> Result<Vec<Namespace>> {
        if !self.namespace_exists(parent).await? {
            return Err(self.namespace_not_found(parent));
        }
        let location = self.namespace_location(parent)?;
        let mut namespaces = Vec::new();
        for name in self.io.list_subdirs(&location).await? {
            let child = join(&location, &name);
            if check_level(&name, String::new).is_ok() && !self.is_table(&child).await? {
                namespaces.push(parent.child(name)?);
            }
        }
        Ok(namespaces)
    }

    async fn namespace_exists(&self, namespace: &Namespace) -> Result<bool> {
        let Some(parent) = namespace.parent() else {
            return Ok(true);
        };
        let location = self.namespace_location(namespace)?;
        let parent_location = self.namespace_location(&parent)?;
        let level = &namespace.levels()[namespace.levels().len() - 1];
        let listed = self.io.list_subdirs(&parent_location).await?;
        Ok(listed.iter().any(|n| n == level) && !self.is_table(&location).await?)
    }

    async fn create_namespace(
        &self,
        namespace: &Namespace,
        properties: BTreeMap<String, String>,
    ) -> Result<()> {
        let location = self.namespace_location(namespace)?;
        if namespace.is_root() || self.namespace_exists(namespace).await? {
            return Err(Error::AlreadyExists {
                what: format!("namespace '{namespace}' in catalog {}", self.name),
            });
        }
        if self.is_table(&location).await? {
            return Err(Error::AlreadyExists {
                what: format!("table {location} (a namespace cannot be created over it)"),
            });
        }
        if let Some((key, _)) = properties.iter().find(|(k, _)| k.as_str() != "location") {
            return Err(Error::Unsupported(format!(
                "namespace property '{key}': a directory catalog keeps no namespace properties"
            )));
        }
        if let Some(wanted) = properties.get("location")
            && normalize_location(wanted)? != location
        {
            return Err(Error::Unsupported(format!(
                "namespace '{namespace}' at {wanted}: a directory catalog's namespace is the \
                 directory {location}"
            )));
        }
        let Some(dir) = self.io.local_path(&location) else {
            return Err(Error::Unsupported(format!(
                "creating namespace '{namespace}' at {location}: an object store has no \
                 directories (create its tables directly)"
            )));
        };
        std::fs::create_dir_all(&dir).map_err(|e| Error::Io {
            path: location.clone(),
            source: Box::new(e),
        })
    }

    async fn namespace_properties(
        &self,
        namespace: &Namespace,
    ) -> Result<BTreeMap<String, String>> {
        if !self.namespace_exists(namespace).await? {
            return Err(self.namespace_not_found(namespace));
        }
        let location = self.namespace_location(namespace)?;
        Ok(BTreeMap::from([("location".to_string(), location)]))
    }

    async fn update_namespace_properties(
        &self,
        namespace: &Namespace,
        _removals: &[String],
        _updates: BTreeMap<String, String>,
    ) -> Result<()> {
        if !self.namespace_exists(namespace).await? {
            return Err(self.namespace_not_found(namespace));
        }
        Err(Error::Unsupported(format!(
            "namespace properties of '{namespace}': a directory catalog keeps none"
        )))
    }

    async fn drop_namespace(&self, namespace: &Namespace) -> Result<()> {
        if namespace.is_root() || !self.namespace_exists(namespace).await? {
            return Err(self.namespace_not_found(namespace));
        }
        let location = self.namespace_location(namespace)?;
        let Some(dir) = self.io.local_path(&location) else {
            return Err(Error::Unsupported(format!(
                "dropping namespace '{namespace}' at {location}: an object store has no \
                 directories"
            )));
        };
        // `remove_dir` removes only an empty directory: a namespace with anything in it stays.
        std::fs::remove_dir(&dir).map_err(|e| match e.kind() {
            std::io::ErrorKind::DirectoryNotEmpty => Error::invalid(
                format!("namespace '{namespace}'"),
                format!("cannot be dropped: {location} is not empty"),
            ),
            _ => Error::Io {
                path: location.clone(),
                source: Box::new(e),
            },
        })
    }

    async fn list_tables(&self, namespace: &Namespace) -> Result<Vec<TableIdent>> {
        if !self.namespace_exists(namespace).await? {
            return Err(self.namespace_not_found(namespace));
        }
        let location = self.namespace_location(namespace)?;
        let mut tables = Vec::new();
        for name in self.io.list_subdirs(&location).await? {
            if check_level(&name, String::new).is_ok()
                && self.is_table(&join(&location, &name)).await?
            {
                tables.push(TableIdent::new(namespace.clone(), name)?);
            }
        }
        Ok(tables)
    }

    async fn table_exists(&self, ident: &TableIdent) -> Result<bool> {
        self.is_table(&self.table_location(ident)?).await
    }

    async fn load_table(&self, ident: &TableIdent) -> Result<Table> {
        let location = self.table_location(ident)?;
        let table = Table::load(self.io.clone(), &location)
            .await
            .map_err(|e| self.load_error(ident, e))?;
        // Remembered when that costs nothing (the parse's bytes are still cached): a commit
        // that follows then proves it current by one existence check and one read, without
        // listing `metadata/` and parsing the file again (see `load_for_commit`).
        let name = table
            .metadata_location()
            .rsplit('/')
            .next()
            .unwrap_or_default();
        if let Some(version) = metadata_file_version(name)
            && let Some(bytes) = parsed_bytes(&self.io, table.metadata_location(), table.metadata())
        {
            self.remember(&location, &table, version, Some(bytes)).await;
        }
        Ok(table)
    }

    async fn load_table_for_write(&self, ident: &TableIdent) -> Result<Table> {
        Ok(self.load_for_commit(ident).await?.0)
    }

    async fn refresh(&self, ident: &TableIdent, known: &Table) -> Result<Option<Table>> {
        let path = known.metadata_location();
        let name = path.rsplit('/').next().unwrap_or_default();
        if let Some(version) = metadata_file_version(name)
            && successor_exists(known.io(), path, version).await? == Some(false)
        {
            return Ok(None);
        }
        let current = self.load_for_commit(ident).await?.0;
        Ok((current.metadata_location() != known.metadata_location()).then_some(current))
    }

    async fn create_table(&self, ident: &TableIdent, creation: &TableCreation) -> Result<Table> {
        let location = self.table_location(ident)?;
        let metadata = creation.metadata(&location)?;
        self.create(ident, metadata).await
    }

    async fn stage_create(&self, ident: &TableIdent, creation: &TableCreation) -> Result<Table> {
        let location = self.table_location(ident)?;
        if !self.namespace_exists(&ident.namespace).await? {
            return Err(self.namespace_not_found(&ident.namespace));
        }
        if self.is_table(&location).await? {
            return Err(self.exists(ident));
        }
        Ok(Table::staged(
            self.io.clone(),
            creation.metadata(&location)?,
        ))
    }

    async fn register_table(&self, ident: &TableIdent, metadata_location: &str) -> Result<Table> {
        Err(Error::Unsupported(format!(
            "registering {metadata_location} as {ident}: a directory catalog's table is its \
             directory (open the table where it is)"
        )))
    }

    async fn drop_table(&self, ident: &TableIdent, purge: bool) -> Result<()> {
        let (table, _) = self.load_for_commit(ident).await?;
        lock(&self.known).remove(&self.table_location(ident)?);
        let metadata = table.metadata();
        let scope = TableScope::new(table.io(), &metadata.location)?;
        let purged = match purge && GC_ENABLED.get(metadata.as_ref())? {
            true => crate::table::reachable_files(&table).await?,
            false => Default::default(),
        };
        // The pointer goes first (every metadata file and hint), so that a failure later leaves
        // only unreferenced files, never a table that names deleted ones.
        let metadata_dir = format!("{}/metadata", metadata.location.trim_end_matches('/'));
        let pointer: Vec<String> = table
            .io()
            .list_dir(&metadata_dir)
            .await?
            .into_iter()
            .filter(|n| is_metadata_file(n) || VERSION_HINTS.contains(&n.as_str()))
            .map(|n| format!("{metadata_dir}/{n}"))
            .collect();
        let mut first_error = None;
        for file in pointer.iter().chain(purged.iter()) {
            if let Err(e) = scope.delete(file).await {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    async fn rename_table(&self, from: &TableIdent, _to: &TableIdent) -> Result<()> {
        Err(Error::Unsupported(format!(
            "renaming {from}: a directory table's files record its location, so it cannot \
             be moved by the catalog"
        )))
    }

    async fn commit_table(
        &self,
        ident: &TableIdent,
        requirements: &[TableRequirement],
        updates: &[TableUpdate],
    ) -> Result<Table> {
        let name = ident.to_string();
        if creates(requirements) {
            let location = self.table_location(ident)?;
            if self.is_table(&location).await? {
                return Err(Error::CommitConflict {
                    table: name,
                    reason: "assert-create failed: the table exists".to_string(),
                });
            }
            check_requirements(&name, requirements, None)?;
            return self
                .create(ident, created_metadata(updates, &location)?)
                .await;
        }
        let (base, version) = self.load_for_commit(ident).await?;
        check_requirements(&name, requirements, Some(base.metadata()))?;
        let next = next_metadata(&name, base.metadata(), base.metadata_location(), updates)?;
        let path = format!(
            "{}/metadata/v{}.metadata.json",
            base.metadata().location.trim_end_matches('/'),
            version + 1
        );
        let bytes = metadata_bytes(&next, &path)?;
        if !claim(&self.io, &name, &path, bytes.clone()).await? {
            return Err(Error::CommitConflict {
                table: name,
                reason: format!("another writer created {path} first"),
            });
        }
        write_version_hint(&self.io, &base.metadata().location, version + 1).await;
        delete_dropped_metadata_files(base.io(), base.metadata(), &next).await;
        let committed = Table::from_parts(base.io().clone(), path, Arc::new(next));
        let location = self.table_location(ident)?;
        self.remember(&location, &committed, version + 1, Some(bytes))
            .await;
        Ok(committed)
    }
}

impl TableCreation {
    /// Creates the table as a table directory at `location` (the [`DirectoryCatalog`] rooted at
    /// its parent creates `<location>/metadata/v1.metadata.json` with create-if-absent, then
    /// `version-hint.text`).
    ///
    /// Errors: [`Error::AlreadyExists`] naming the location when a table already exists
    /// there (any metadata file found, or `v1.metadata.json` taken by a concurrent creator);
    /// nothing is overwritten. The errors of [`Self::metadata`] otherwise.
    ///
    /// The location is recorded normalised ([`crate::io::normalize_location`]): a relative
    /// local path is made absolute (against the working directory), `.` and `..` resolved.
    pub async fn create_at(&self, io: &FileIO, location: &str) -> Result<Table> {
        let location = crate::io::normalize_location(location)?;
        let location = location.trim_end_matches('/');
        if location.ends_with(".metadata.json") {
            return Err(Error::invalid(
                format_args!("location {location}"),
                "cannot hold a new table: a table location is a directory",
            ));
        }
        let (catalog, ident) = DirectoryCatalog::for_location(io.clone(), location)?;
        catalog.create_table(&ident, self).await
    }
}

#[cfg(test)]
#[path = "directory_tests.rs"]
mod tests;
