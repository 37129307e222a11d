//! Listing every file under a location for orphan removal: what the store holds, including
//! what object_store's own listing hides.
//!
//! On the local file system the directory tree is walked directly, because object_store's
//! listing (a) follows symbolic links, so a `data/link -> /elsewhere` inside a table would list
//! (and orphan removal delete) files elsewhere, and (b) skips the `<name>#<digits>` staging files
//! its writes leave when a writer is killed mid-write, so they could never be cleaned. Here
//! links are reported, never followed, and staging files are listed like any file.

use std::path::{Path, PathBuf};

use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use super::{FileIO, store_error};
use crate::error::{Error, Result};

/// One listed file.
#[derive(Debug, Clone)]
pub struct ListedFile {
    /// Its path in the store (the local store: its absolute path without the leading `/`).
    pub path: ObjectPath,
    /// Last modification, epoch milliseconds.
    pub last_modified_ms: i64,
    /// Its local file-system path (local stores only), used to delete it.
    pub local: Option<PathBuf>,
}

/// What [`FileIO::list_files`] found.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// The regular files, recursively.
    pub files: Vec<ListedFile>,
    /// Symbolic links met (files or directories), not followed, as store paths.
    pub links: Vec<ObjectPath>,
}

impl FileIO {
    /// Every regular file under a directory location, recursively, without following links
    /// (see the module docs).
    pub async fn list_files(&self, location: &str) -> Result<Listing> {
        if let Some(dir) = self.local_path(location) {
            return super::local_blocking(location, dir, walk_local).await;
        }
        let r = self.resolve(location)?;
        let files = r
            .store
            .list(Some(&r.path))
            .map_ok(|o| ListedFile {
                path: o.location,
                last_modified_ms: o.last_modified.timestamp_millis(),
                local: None,
            })
            .try_collect()
            .await
            .map_err(|e| store_error(location, e))?;
        Ok(Listing {
            files,
            links: Vec::new(),
        })
    }

    /// Deletes a listed file: through the local file system for local files (staging names
    /// included), else through its store. A missing file is not an error.
    pub async fn delete_listed(
        &self,
        store: &dyn ObjectStore,
        file: &ListedFile,
        shown: &str,
    ) -> Result<()> {
        match &file.local {
            Some(path) => match tokio::fs::remove_file(path).await {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::Io {
                    path: shown.to_string(),
                    source: Box::new(e),
                }),
                _ => Ok(()),
            },
            None => match store.delete(&file.path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(store_error(shown, e)),
            },
        }
    }
}

/// Walks a local directory tree without following links; a missing directory lists empty.
fn walk_local(root: &Path, shown: &str) -> Result<Listing> {
    let mut listing = Listing::default();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_error(shown, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| io_error(shown, e))?;
            let kind = entry.file_type().map_err(|e| io_error(shown, e))?;
            let path = entry.path();
            if kind.is_symlink() {
                listing.links.push(object_path(&path, shown)?);
            } else if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                let modified = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .map_err(|e| io_error(shown, e))?;
                listing.files.push(ListedFile {
                    path: object_path(&path, shown)?,
                    last_modified_ms: epoch_ms(modified),
                    local: Some(path),
                });
            }
        }
    }
    Ok(listing)
}

/// The local store's path of a file-system path.
fn object_path(path: &Path, shown: &str) -> Result<ObjectPath> {
    ObjectPath::from_absolute_path(path).map_err(|e| Error::Io {
        path: format!("{shown} ({})", path.display()),
        source: Box::new(e),
    })
}

fn epoch_ms(time: std::time::SystemTime) -> i64 {
    match time.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

fn io_error(shown: &str, e: std::io::Error) -> Error {
    Error::Io {
        path: shown.to_string(),
        source: Box::new(e),
    }
}
