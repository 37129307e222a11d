//! A loaded table: its metadata file, the parsed metadata and the [`FileIO`] that reads it.

pub mod cache;
mod creation;
pub mod locate;
mod manifests;
mod reachable;

pub use creation::{
    TableCreation, arrow_to_iceberg_type, assign_fresh_ids, parse_partition_term, split_terms,
};
pub(crate) use creation::{
    evolved_partition_name, partition_name, resolve_source, transform_named,
};
pub(crate) use manifests::{MANIFEST_CONCURRENCY, read_manifests};
pub use manifests::{partition_type, read_manifest, read_manifest_list};
pub use reachable::reachable_files;

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::io::{FileIO, Relocation, StorageProperties};
use crate::spec::{SnapshotSelector, TableMetadata};
use locate::{Access, current_version, load_metadata, locate_and_load, table_dir_of};

/// How to open a table.
#[derive(Debug, Clone, Default)]
pub struct TableOptions {
    /// Path rewriting for tables whose metadata names another machine's paths.
    pub relocation: Relocation,
    /// Which state of the table to read (default: the current snapshot).
    pub snapshot: SnapshotSelector,
    /// How to reach a table on a cloud store (`s3.endpoint`, `s3.access-key-id`, ...), on top
    /// of the session's ([`StorageProperties::of_session`]) and the environment.
    pub storage: StorageProperties,
}

impl TableOptions {
    /// Reaches the table's cloud store with these properties (see [`StorageProperties`]).
    pub fn with_storage(mut self, storage: StorageProperties) -> Self {
        self.storage = storage;
        self
    }

    /// Adds a relocation rule: paths under `old` are read under `new`.
    pub fn with_relocation(mut self, old: impl Into<String>, new: impl Into<String>) -> Self {
        self.relocation = self.relocation.with_rule(old, new);
        self
    }

    /// Uses a whole set of relocation rules.
    pub fn with_relocation_rules(mut self, relocation: Relocation) -> Self {
        self.relocation = relocation;
        self
    }

    /// Reads the given snapshot (with its schema) instead of the current one.
    pub fn with_snapshot_id(mut self, snapshot_id: i64) -> Self {
        self.snapshot = SnapshotSelector::SnapshotId(snapshot_id);
        self
    }

    /// Reads a branch (with the current schema) or a tag (with its snapshot's schema).
    pub fn with_ref(mut self, name: impl Into<String>) -> Self {
        self.snapshot = SnapshotSelector::Ref(name.into());
        self
    }

    /// Reads the snapshot that was current at `timestamp_ms` (epoch milliseconds).
    pub fn as_of_timestamp_ms(mut self, timestamp_ms: i64) -> Self {
        self.snapshot = SnapshotSelector::AsOfTimestamp(timestamp_ms);
        self
    }

    /// Reads the state a selector names.
    pub fn with_snapshot(mut self, selector: SnapshotSelector) -> Self {
        self.snapshot = selector;
        self
    }
}

/// A table whose metadata records another location than the place it was found at: it was
/// copied or moved (`cp -r t t2`). Reads relocate its paths to where it is; writes and
/// destructive commands refuse it (they would act on the recorded location, another table)
/// unless the caller relocates explicitly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    /// The location the metadata records (`location`).
    pub recorded: String,
    /// Where the table was found.
    pub found: String,
}

/// One version of a table: the metadata file it was loaded from and its parsed contents.
///
/// Cheap to clone; immutable. Loading the table again gives the newest version.
#[derive(Debug, Clone)]
pub struct Table {
    io: FileIO,
    metadata_location: String,
    metadata: Arc<TableMetadata>,
    moved: Option<Moved>,
    /// Whether `metadata_location` is known to be the newest version (loaded with
    /// [`Access::Write`], from a catalog pointer, or the result of a commit).
    current: bool,
}

impl Table {
    /// Loads a table from a metadata file (plain or gzip) or a table directory (its current
    /// version, as [`locate`] finds it) for reading. A table found at another place
    /// than the location its metadata records ([`Moved`]) is read there: its recorded paths are
    /// relocated to where it was found.
    pub async fn load(io: FileIO, location: &str) -> Result<Self> {
        let (metadata_location, metadata) = locate_and_load(&io, location).await?;
        Ok(Self::of_file(io, metadata_location, metadata, false))
    }

    /// Loads the current version of the table directory (or of the table of the metadata file)
    /// at `location` for a commit or a destructive command ([`Access::Write`]).
    ///
    /// Errors: those of [`current_version`]; [`Error::InvalidArgument`] for a metadata file
    /// outside a `metadata/` directory; [`Error::Moved`] when the table was moved or copied
    /// and the caller's relocation does not say so.
    pub async fn load_for_write(io: FileIO, location: &str) -> Result<Self> {
        Ok(Self::load_version_for_write(io, location).await?.0)
    }

    /// [`Table::load_for_write`], with the version number of the current metadata file.
    pub(crate) async fn load_version_for_write(io: FileIO, location: &str) -> Result<(Self, u64)> {
        let (table, version) = Self::load_version_strict(io, location).await?;
        table.ensure_writable()?;
        Ok((table, version))
    }

    /// The current version of the table directory at `location`, found strictly
    /// ([`Access::Write`]: beyond doubt), with its version number; a moved table is loaded
    /// relocated (not refused).
    pub(crate) async fn load_version_strict(io: FileIO, location: &str) -> Result<(Self, u64)> {
        let table_dir = table_dir_of(location).ok_or_else(|| {
            Error::invalid(
                format_args!("location {location}"),
                "cannot be written to: a metadata file outside a metadata/ directory has no \
                 table directory; open the table by its directory",
            )
        })?;
        let current = current_version(&io, &table_dir, Access::Write).await?;
        let table = Self::found(
            io,
            Some(&current.table_dir),
            current.metadata_location,
            current.metadata,
            true,
        );
        Ok((table, current.version))
    }

    /// Loads a table from a known metadata file (a catalog's pointer: the current version).
    pub async fn load_metadata_file(io: FileIO, metadata_location: String) -> Result<Self> {
        let metadata = load_metadata(&io, &metadata_location).await?;
        Ok(Self::of_file(io, metadata_location, metadata, true))
    }

    /// A table read from `metadata_location`, found in the table directory that holds it.
    fn of_file(
        io: FileIO,
        metadata_location: String,
        metadata: Arc<TableMetadata>,
        current: bool,
    ) -> Self {
        let found = table_dir_of(&metadata_location);
        Self::found(io, found.as_deref(), metadata_location, metadata, current)
    }

    /// A table that is not created yet: its first metadata, with no metadata file (see
    /// [`crate::catalog::Catalog::stage_create`]).
    pub fn staged(io: FileIO, metadata: TableMetadata) -> Self {
        Self::from_parts(io, String::new(), Arc::new(metadata))
    }

    /// A table from metadata already in hand (the result of a commit: current, not moved).
    pub fn from_parts(io: FileIO, metadata_location: String, metadata: Arc<TableMetadata>) -> Self {
        Self {
            io,
            metadata_location,
            metadata,
            moved: None,
            current: true,
        }
    }

    /// A loaded table found in the directory `found`: moved when that is not where its
    /// metadata says, and then read through a relocation from the recorded location to it.
    fn found(
        io: FileIO,
        found: Option<&str>,
        metadata_location: String,
        metadata: Arc<TableMetadata>,
        current: bool,
    ) -> Self {
        let moved = found.and_then(|dir| moved(&io, dir, &metadata.location));
        // The caller's own rule for the recorded location wins over the implicit one.
        let io = match &moved {
            Some(m) if io.relocation().split(&m.recorded).is_none() => {
                io.with_rule(&m.recorded, &m.found)
            }
            _ => io,
        };
        Self {
            io,
            metadata_location,
            metadata,
            moved,
            current,
        }
    }

    /// The parsed metadata.
    pub fn metadata(&self) -> &Arc<TableMetadata> {
        &self.metadata
    }

    /// The metadata file this version was read from (as written, before relocation).
    pub fn metadata_location(&self) -> &str {
        &self.metadata_location
    }

    /// The IO used to read the table's files.
    pub fn io(&self) -> &FileIO {
        &self.io
    }

    /// Where the table was found, when that is not the location its metadata records.
    pub fn moved(&self) -> Option<&Moved> {
        self.moved.as_ref()
    }

    /// Whether this version is known to be the table's newest (see [`Table::load_for_write`]);
    /// a table read with [`Table::load`] may be older.
    pub fn is_current(&self) -> bool {
        self.current
    }

    /// Refuses a moved table ([`Error::Moved`]): a write or a deletion would act on the
    /// location its metadata records, which is another table.
    pub fn ensure_writable(&self) -> Result<()> {
        match &self.moved {
            None => Ok(()),
            Some(m) => Err(Error::Moved {
                recorded: m.recorded.clone(),
                found: m.found.clone(),
            }),
        }
    }
}

/// Whether a table found in `found` whose metadata records `recorded` was moved: the two name
/// different places after `io`'s relocation (local directories compared after resolving
/// symbolic links).
fn moved(io: &FileIO, found: &str, recorded: &str) -> Option<Moved> {
    let (Ok(at), Ok(says)) = (io.resolve(found), io.resolve(recorded)) else {
        return None;
    };
    if at.store_url == says.store_url && at.path == says.path {
        return None;
    }
    let canonical = |location: &str| {
        io.local_path(location)
            .and_then(|p| std::fs::canonicalize(p).ok())
    };
    if let (Some(a), Some(b)) = (canonical(found), canonical(recorded))
        && a == b
    {
        return None;
    }
    Some(Moved {
        recorded: recorded.to_string(),
        found: io.absolute(found).unwrap_or_else(|_| found.to_string()),
    })
}
