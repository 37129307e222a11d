//! All object store access: turning the locations written in metadata into (store, path)
//! pairs, relocating tables that were moved, and reading and listing objects.
//!
//! Stores come from DataFusion's [`RuntimeEnv`] registry, so any store an application registers
//! there (`s3://`, `gs://`, ...) is usable by URL; local paths use the local file system.

mod relocation;

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use url::Url;

pub use relocation::Relocation;

use crate::error::{Error, Result};

/// Where a location lives: its store, the store's URL and the object path inside it.
#[derive(Debug, Clone)]
pub struct ResolvedLocation {
    /// The store's URL (`file://`, `s3://bucket`).
    pub store_url: ObjectStoreUrl,
    /// The object's path inside the store.
    pub path: ObjectPath,
    /// The store itself.
    pub store: Arc<dyn ObjectStore>,
}

/// Reads and lists objects named by the locations written in Iceberg metadata, after
/// relocation.
#[derive(Debug, Clone)]
pub struct FileIO {
    runtime: Arc<RuntimeEnv>,
    relocation: Relocation,
}

impl Default for FileIO {
    fn default() -> Self {
        Self::new(Arc::new(RuntimeEnv::default()), Relocation::default())
    }
}

impl FileIO {
    /// A `FileIO` over the stores registered in `runtime`, rewriting paths with `relocation`.
    pub fn new(runtime: Arc<RuntimeEnv>, relocation: Relocation) -> Self {
        Self {
            runtime,
            relocation,
        }
    }

    /// The relocation rules in force.
    pub fn relocation(&self) -> &Relocation {
        &self.relocation
    }

    /// The runtime whose store registry is used.
    pub fn runtime(&self) -> &Arc<RuntimeEnv> {
        &self.runtime
    }

    /// The location after relocation, as an absolute URL string (`file:///...`, `s3://...`).
    pub fn absolute(&self, location: &str) -> Result<String> {
        Ok(self.to_url(location)?.to_string())
    }

    /// Resolves a location (as written in metadata) to its store and object path.
    pub fn resolve(&self, location: &str) -> Result<ResolvedLocation> {
        let url = self.to_url(location)?;
        let store_url = ObjectStoreUrl::parse(&url[..url::Position::BeforePath])
            .map_err(|e| Error::InvalidArgument(format!("location '{location}': {e}")))?;
        let store = self.runtime.object_store(&store_url).map_err(|e| {
            Error::InvalidArgument(format!(
                "no object store is registered for '{location}' ({}): {e}",
                store_url.as_str()
            ))
        })?;
        let path = ObjectPath::from_url_path(url.path())
            .map_err(|e| Error::InvalidArgument(format!("location '{location}': {e}")))?;
        Ok(ResolvedLocation {
            store_url,
            path,
            store,
        })
    }

    /// Reads a whole object.
    pub async fn read(&self, location: &str) -> Result<Bytes> {
        let r = self.resolve(location)?;
        let got = r
            .store
            .get(&r.path)
            .await
            .map_err(|e| store_error(location, e))?;
        got.bytes().await.map_err(|e| store_error(location, e))
    }

    /// Reads a byte range of an object.
    pub async fn read_range(&self, location: &str, range: Range<u64>) -> Result<Bytes> {
        let r = self.resolve(location)?;
        r.store
            .get_range(&r.path, range)
            .await
            .map_err(|e| store_error(location, e))
    }

    /// The object's metadata (size, modification time).
    pub async fn head(&self, location: &str) -> Result<ObjectMeta> {
        let r = self.resolve(location)?;
        r.store
            .head(&r.path)
            .await
            .map_err(|e| store_error(location, e))
    }

    /// Whether an object exists.
    pub async fn exists(&self, location: &str) -> Result<bool> {
        match self.head(location).await {
            Ok(_) => Ok(true),
            Err(Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The names (last path segment) of the objects directly under a directory location.
    pub async fn list_dir(&self, location: &str) -> Result<Vec<String>> {
        let r = self.resolve(location)?;
        let listed = r
            .store
            .list_with_delimiter(Some(&r.path))
            .await
            .map_err(|e| store_error(location, e))?;
        Ok(listed
            .objects
            .into_iter()
            .filter_map(|o| o.location.filename().map(str::to_string))
            .collect())
    }

    /// Lists every object under a directory location, recursively.
    pub async fn list_recursive(&self, location: &str) -> Result<Vec<ObjectMeta>> {
        let r = self.resolve(location)?;
        r.store
            .list(Some(&r.path))
            .try_collect()
            .await
            .map_err(|e| store_error(location, e))
    }

    fn to_url(&self, location: &str) -> Result<Url> {
        let relocated = self.relocation.apply(location);
        location_to_url(&relocated)
            .ok_or_else(|| Error::InvalidArgument(format!("'{location}' is not a valid location")))
    }
}

/// Turns a location into a URL: URLs stay as they are, absolute paths become `file://` URLs,
/// relative paths are taken from the current directory.
fn location_to_url(location: &str) -> Option<Url> {
    if let Some((scheme, _)) = location.split_once("://")
        && !scheme.is_empty()
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        let mut url = Url::parse(location).ok()?;
        if url.scheme() == "file" && url.host_str().is_some_and(|h| !h.is_empty()) {
            return None;
        }
        // `file:` URLs: collapse `//` inside the path the way a file system would.
        if url.scheme() == "file" {
            let cleaned = clean_path(url.path());
            url.set_path(&cleaned);
        }
        return Some(url);
    }
    let path = location.strip_prefix("file:").unwrap_or(location);
    let absolute = if path.starts_with('/') {
        std::path::PathBuf::from(path)
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    let cleaned = clean_path(&absolute.to_string_lossy());
    Url::from_file_path(cleaned).ok()
}

/// Removes `.` segments and empty segments (`a//b`, `./a`) from a slash path, keeping `..`.
fn clean_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for seg in path.split('/') {
        if seg.is_empty() || seg == "." {
            continue;
        }
        out.push('/');
        out.push_str(seg);
    }
    if out.is_empty() {
        out.push('/');
    }
    if path.ends_with('/') && !out.ends_with('/') {
        out.push('/');
    }
    out
}

/// Maps an object store error to icefloe's, naming the location.
pub(crate) fn store_error(location: &str, err: object_store::Error) -> Error {
    match err {
        object_store::Error::NotFound { source, .. } => Error::NotFound {
            what: location.to_string(),
            source: Some(source),
        },
        other => Error::Io {
            path: location.to_string(),
            source: Box::new(other),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_become_urls() {
        let io = FileIO::default();
        assert_eq!(io.absolute("/tmp/a/b").unwrap(), "file:///tmp/a/b");
        assert_eq!(io.absolute("file:///tmp/a//b").unwrap(), "file:///tmp/a/b");
        assert_eq!(io.absolute("file:/tmp/x").unwrap(), "file:///tmp/x");
        assert_eq!(io.absolute("s3://bucket/k/v").unwrap(), "s3://bucket/k/v");
        let rel = io.absolute("rel/x").unwrap();
        assert!(rel.starts_with("file:///") && rel.ends_with("/rel/x"), "{rel}");
    }

    #[test]
    fn unregistered_store_is_a_clear_error() {
        let io = FileIO::default();
        let err = io.resolve("s3://bucket/t/metadata/v1.metadata.json").unwrap_err();
        assert!(err.to_string().contains("no object store is registered"), "{err}");
    }

    #[tokio::test]
    async fn missing_file_is_not_found_naming_it() {
        let io = FileIO::default();
        let err = io.read("/definitely/not/here.json").await.unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
        assert!(err.to_string().contains("/definitely/not/here.json"));
    }
}
