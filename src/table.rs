//! A loaded table: its metadata file, the parsed metadata and the [`FileIO`] that reads it.

use std::sync::Arc;

use crate::catalog::file::{load_metadata, locate_and_load};
use crate::error::Result;
use crate::io::{FileIO, Relocation};
use crate::spec::{SnapshotSelector, TableMetadata};

/// How to open a table.
#[derive(Debug, Clone, Default)]
pub struct TableOptions {
    /// Path rewriting for tables whose metadata names another machine's paths.
    pub relocation: Relocation,
    /// Which state of the table to read (default: the current snapshot).
    pub snapshot: SnapshotSelector,
}

impl TableOptions {
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

/// One version of a table: the metadata file it was loaded from and its parsed contents.
///
/// Cheap to clone; immutable. Loading the table again gives the newest version.
#[derive(Debug, Clone)]
pub struct Table {
    io: FileIO,
    metadata_location: String,
    metadata: Arc<TableMetadata>,
}

impl Table {
    /// Loads a table from a metadata file (plain or gzip) or a table directory (through
    /// `metadata/version-hint.text`, else the newest valid metadata file).
    pub async fn load(io: FileIO, location: &str) -> Result<Self> {
        let (metadata_location, metadata) = locate_and_load(&io, location).await?;
        Ok(Self::from_parts(io, metadata_location, Arc::new(metadata)))
    }

    /// Loads a table from a known metadata file.
    pub async fn load_metadata_file(io: FileIO, metadata_location: String) -> Result<Self> {
        let metadata = load_metadata(&io, &metadata_location).await?;
        Ok(Self {
            io,
            metadata_location,
            metadata: Arc::new(metadata),
        })
    }

    /// A table from metadata already in hand.
    pub fn from_parts(io: FileIO, metadata_location: String, metadata: Arc<TableMetadata>) -> Self {
        Self {
            io,
            metadata_location,
            metadata,
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
}
