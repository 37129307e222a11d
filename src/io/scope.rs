//! The one rule of every destructive operation (expiration, `DROP TABLE ... PURGE`, the
//! metadata files a commit drops, orphan removal): it deletes only files under the table's own
//! location. A path named by metadata (manifest entries, manifest lists, the metadata log,
//! statistics files) may point anywhere (an absolute path, another `file://` spelling,
//! `<location>/data/../../../victim`); such files are reported and kept.

use std::path::PathBuf;

use super::{FileIO, ResolvedLocation};
use crate::error::Result;

/// Why a file was not deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeptReason {
    /// It is not under the table location (after relocation, normalising `..`, schemes and,
    /// for local files, symbolic links).
    OutsideTable,
    /// The table's `gc.enabled` is `false`: its files may be shared with other tables.
    GcDisabled,
    /// It is a symbolic link (never followed out of the table).
    SymbolicLink,
}

impl KeptReason {
    /// The reason as the CLI prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OutsideTable => "outside the table location",
            Self::GcDisabled => "gc.enabled is false",
            Self::SymbolicLink => "a symbolic link",
        }
    }
}

/// The files under one table location: what a destructive operation may delete.
#[derive(Debug, Clone)]
pub struct TableScope {
    io: FileIO,
    location: String,
    root: ResolvedLocation,
    /// The local table directory with its symbolic links resolved.
    canonical_root: Option<PathBuf>,
}

impl TableScope {
    /// The scope of the table at `table_location` (as its metadata records it), reached
    /// through `io`.
    pub fn new(io: &FileIO, table_location: &str) -> Result<Self> {
        let root = io.resolve(table_location)?;
        let canonical_root = io
            .local_path(table_location)
            .and_then(|p| std::fs::canonicalize(p).ok());
        Ok(Self {
            io: io.clone(),
            location: table_location.to_string(),
            root,
            canonical_root,
        })
    }

    /// The table location.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Whether `location` lies strictly under the table location; `Err` with the reason when
    /// not (or when it is a symbolic link).
    pub fn check(&self, location: &str) -> std::result::Result<(), KeptReason> {
        let Ok(file) = self.io.resolve(location) else {
            return Err(KeptReason::OutsideTable);
        };
        let lexically_under = file.store_url == self.root.store_url
            && file.path != self.root.path
            && file.path.prefix_matches(&self.root.path);
        if !lexically_under {
            return Err(KeptReason::OutsideTable);
        }
        let Some(path) = self.io.local_path(location) else {
            return Ok(()); // object stores have no links: the key decides
        };
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(KeptReason::SymbolicLink);
        }
        // The directory holding the file, with its links resolved, must be in the table.
        let parent = path.parent().and_then(|p| std::fs::canonicalize(p).ok());
        match (parent, &self.canonical_root) {
            (Some(parent), Some(root)) if parent.starts_with(root) => Ok(()),
            (None, _) => Ok(()), // no such directory: nothing there to delete
            _ => Err(KeptReason::OutsideTable),
        }
    }

    /// Deletes `location` if it lies under the table location (a missing file is not an
    /// error); `Ok(Err(reason))` when it was kept.
    pub async fn delete(&self, location: &str) -> Result<std::result::Result<(), KeptReason>> {
        if let Err(reason) = self.check(location) {
            return Ok(Err(reason));
        }
        self.io.delete(location).await?;
        Ok(Ok(()))
    }
}

#[cfg(test)]
#[path = "scope_tests.rs"]
mod tests;
