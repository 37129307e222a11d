//! All object store access: turning the locations written in metadata into (store, path)
//! pairs, relocating tables that were moved, and reading and listing objects.
//!
//! Stores come from DataFusion's [`RuntimeEnv`] registry, so any store an application registers
//! there (`s3://bucket`, `gs://bucket`, ...) is used by URL; local paths use the local file
//! system; other cloud locations get a store built from the IO's [`StorageProperties`] and the
//! environment ([`storage`]), registered in the runtime for the scans that read through it.

mod limits;
mod listing;
mod lock;
mod relocation;
mod scope;
pub mod storage;

use std::ops::Range;
use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

pub use limits::{
    DEFAULT_AVRO_FILE_BYTES, DEFAULT_DECODED_BYTES, DEFAULT_DELETE_FILE_BYTES,
    DEFAULT_METADATA_BYTES, ReadLimits,
};
pub use listing::{ListedFile, Listing};
pub use lock::CommitLock;
pub use relocation::Relocation;
pub use scope::{KeptReason, TableScope};
pub use storage::StorageProperties;

use crate::error::{Error, Result};
use limits::check_size;

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
    limits: ReadLimits,
    storage: Arc<StorageProperties>,
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
            limits: ReadLimits::default(),
            storage: Arc::default(),
        }
    }

    /// This IO building the cloud stores it needs (`s3://`, `gs://`, `abfss://`, ...) from
    /// `storage` (Iceberg's FileIO properties) on top of the environment, unless the runtime
    /// has a store registered for the location's bucket.
    pub fn with_storage(mut self, storage: StorageProperties) -> Self {
        self.storage = Arc::new(storage);
        self
    }

    /// The storage properties cloud stores are built from.
    pub fn storage(&self) -> &StorageProperties {
        &self.storage
    }

    /// This IO with one more relocation rule: paths under `old` are read under `new`.
    pub fn with_rule(&self, old: &str, new: &str) -> Self {
        Self {
            relocation: self.relocation.clone().with_rule(old, new),
            ..self.clone()
        }
    }

    /// The relocation rules in force.
    pub fn relocation(&self) -> &Relocation {
        &self.relocation
    }

    /// `location` as errors name it: as the metadata writes it and, when a relocation rule
    /// moves it, also where it was looked for (`s3://old/t/m.avro (read as /mnt/t/m.avro)`).
    pub fn named(&self, location: &str) -> String {
        match self.relocation.apply(location) {
            std::borrow::Cow::Borrowed(_) => location.to_string(),
            std::borrow::Cow::Owned(moved) => format!("{location} (read as {moved})"),
        }
    }

    /// `error` about `location` with a missing or unreadable file named as [`FileIO::named`]
    /// says (a corrupt file stays named by its own path).
    pub fn name_missing(&self, location: &str, error: Error) -> Error {
        match error {
            Error::NotFound { source, .. } => Error::NotFound {
                what: self.named(location),
                source,
            },
            Error::Io { source, .. } => Error::Io {
                path: self.named(location),
                source,
            },
            other => other,
        }
    }

    /// The runtime whose store registry is used.
    pub fn runtime(&self) -> &Arc<RuntimeEnv> {
        &self.runtime
    }

    /// The store `location` lives in after relocation (`file://`, `s3://bucket`), as its
    /// locations write it.
    pub(crate) fn store_of(&self, location: &str) -> Result<String> {
        Ok(self.split(location)?.0)
    }

    /// The location after relocation, as an absolute location string (`file:///...`,
    /// `s3://bucket/...`).
    pub fn absolute(&self, location: &str) -> Result<String> {
        let (store, path) = self.split(location)?;
        Ok(format!("{store}/{path}"))
    }

    /// Resolves a location (as written in metadata) to its store and object path.
    ///
    /// Locations are taken as written: the path after `scheme://authority` is the object's key,
    /// never percent-decoded (writers store `%` in file names literally).
    pub fn resolve(&self, location: &str) -> Result<ResolvedLocation> {
        let (store, path) = self.split(location)?;
        let invalid = |reason: &dyn std::fmt::Display| {
            Error::invalid(format_args!("location '{location}'"), reason)
        };
        let mut store_url = ObjectStoreUrl::parse(&store).map_err(|e| invalid(&e))?;
        let object_store = match self.runtime.object_store(&store_url) {
            Ok(found) => found,
            Err(_) => {
                let (url, built) =
                    storage::cloud_store(&store, &self.storage)?.ok_or_else(|| {
                        // DataFusion's error says no more than this.
                        invalid(&format_args!(
                            "no object store for {} is registered in this session: icefloe builds \
                         stores for file://, s3://, s3a://, gs://, abfss:// and wasbs:// \
                         locations; register one for other schemes in DataFusion's runtime",
                            store_url.as_str()
                        ))
                    })?;
                if self.runtime.object_store(&url).is_err() {
                    self.runtime
                        .register_object_store(url.as_ref(), Arc::clone(&built));
                }
                store_url = url;
                built
            }
        };
        let path = if store == "file://" {
            // The local store maps a path's string to the file name as is: build it from the
            // literal file name so `%`, spaces and non-ASCII names are found.
            ObjectPath::from_absolute_path(format!("/{path}")).map_err(|e| invalid(&e))?
        } else {
            ObjectPath::from(path.as_str())
        };
        Ok(ResolvedLocation {
            store_url,
            path,
            store: object_store,
        })
    }

    /// The file-system path of a location whose store is the plain local file system (the
    /// default `file://` store, rooted at `/`); `None` for every other store, including a
    /// local store an application registered with another root. Batch readers read such
    /// files directly, many in one blocking task, where a store request costs two hand-offs
    /// to Tokio's blocking pool per file.
    pub fn local_path(&self, location: &str) -> Option<std::path::PathBuf> {
        static PLAIN: LazyLock<(LocalFileSystem, String)> = LazyLock::new(|| {
            let local = LocalFileSystem::new();
            let name = local.to_string();
            (local, name)
        });
        let r = self.resolve(location).ok()?;
        let (plain, name) = &*PLAIN;
        if r.store.to_string() != *name {
            return None;
        }
        plain.path_to_filesystem(&r.path).ok()
    }

    /// Reads a whole local file found by [`FileIO::local_path`], blocking; errors name
    /// `location` as [`FileIO::read`]'s do.
    pub fn read_local(path: &std::path::Path, location: &str) -> Result<Bytes> {
        match std::fs::read(path) {
            Ok(bytes) => Ok(Bytes::from(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::NotFound {
                what: location.to_string(),
                source: Some(Box::new(e)),
            }),
            Err(e) => Err(Error::Io {
                path: location.to_string(),
                source: Box::new(e),
            }),
        }
    }

    /// Reads a whole object.
    pub async fn read(&self, location: &str) -> Result<Bytes> {
        let r = self.resolve(location)?;
        let got = r
            .store
            .get(&r.path)
            .await
            .map_err(|e| store_error(&self.named(location), e))?;
        got.bytes()
            .await
            .map_err(|e| store_error(&self.named(location), e))
    }

    /// Reads a byte range of an object.
    pub async fn read_range(&self, location: &str, range: Range<u64>) -> Result<Bytes> {
        let r = self.resolve(location)?;
        r.store
            .get_range(&r.path, range)
            .await
            .map_err(|e| store_error(&self.named(location), e))
    }

    /// This IO with other bounds on the metadata files read whole (see [`ReadLimits`]).
    pub fn with_read_limits(mut self, limits: ReadLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The bounds in force on the metadata files read whole.
    pub fn read_limits(&self) -> &ReadLimits {
        &self.limits
    }

    /// Reads a whole object of at most `max_bytes`, never more: one ranged request of
    /// `max_bytes + 1` bytes (the store answers with the object's real size), or, for a
    /// plain local file, a size check before the file is opened.
    ///
    /// Errors: [`Error::NotFound`] naming the location when it is missing; [`Error::Corrupt`]
    /// naming it when it is larger than `max_bytes` or, locally, not a regular file (a device
    /// such as `/dev/zero` or a FIFO, which would never end or never open).
    pub async fn read_bounded(&self, location: &str, max_bytes: u64) -> Result<Bytes> {
        if let Some(local) = self.local_path(location) {
            let owned = location.to_string();
            let read = move || Self::read_local_bounded(&local, &owned, max_bytes);
            let read = match tokio::runtime::Handle::try_current() {
                Ok(runtime) => runtime.spawn_blocking(read).await.map_err(|e| Error::Io {
                    path: location.to_string(),
                    source: Box::new(e),
                })?,
                Err(_) => read(),
            };
            return read.map_err(|e| self.name_missing(location, e));
        }
        self.read_store_bounded(location, max_bytes).await
    }

    /// [`FileIO::read_bounded`] through the object store.
    async fn read_store_bounded(&self, location: &str, max_bytes: u64) -> Result<Bytes> {
        let r = self.resolve(location)?;
        let options = object_store::GetOptions {
            range: Some(object_store::GetRange::Bounded(
                0..max_bytes.saturating_add(1),
            )),
            ..Default::default()
        };
        let got = match r.store.get_opts(&r.path, options).await {
            Ok(got) => got,
            Err(e @ object_store::Error::NotFound { .. }) => {
                return Err(store_error(&self.named(location), e));
            }
            // An empty object has no range to serve, and a few stores serve none: the size
            // comes from a head request, then the whole object is read.
            Err(e) => {
                let size = match r.store.head(&r.path).await {
                    Ok(meta) => meta.size,
                    Err(_) => return Err(store_error(&self.named(location), e)),
                };
                check_size(location, size, max_bytes)?;
                if size == 0 {
                    return Ok(Bytes::new());
                }
                r.store
                    .get(&r.path)
                    .await
                    .map_err(|e| store_error(&self.named(location), e))?
            }
        };
        check_size(location, got.meta.size, max_bytes)?;
        got.bytes()
            .await
            .map_err(|e| store_error(&self.named(location), e))
    }

    /// Reads a whole local file found by [`FileIO::local_path`] of at most `max_bytes`,
    /// blocking; errors as [`FileIO::read_bounded`]'s.
    pub fn read_local_bounded(
        path: &std::path::Path,
        location: &str,
        max_bytes: u64,
    ) -> Result<Bytes> {
        use std::io::Read;
        let io_error = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::NotFound => Error::NotFound {
                what: location.to_string(),
                source: Some(Box::new(e)),
            },
            _ => Error::Io {
                path: location.to_string(),
                source: Box::new(e),
            },
        };
        let meta = std::fs::metadata(path).map_err(io_error)?;
        if !meta.is_file() {
            return Err(Error::corrupt(
                location,
                "is not a regular file (a directory, device or FIFO)",
            ));
        }
        check_size(location, meta.len(), max_bytes)?;
        let file = std::fs::File::open(path).map_err(io_error)?;
        let capacity = usize::try_from(meta.len()).unwrap_or(0);
        let mut bytes = Vec::with_capacity(capacity);
        file.take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io_error)?;
        check_size(location, bytes.len() as u64, max_bytes)?;
        Ok(Bytes::from(bytes))
    }

    /// The object's metadata (size, modification time).
    pub async fn head(&self, location: &str) -> Result<ObjectMeta> {
        let r = self.resolve(location)?;
        r.store
            .head(&r.path)
            .await
            .map_err(|e| store_error(&self.named(location), e))
    }

    /// Whether an object exists.
    pub async fn exists(&self, location: &str) -> Result<bool> {
        match self.head(location).await {
            Ok(_) => Ok(true),
            Err(Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Writes a whole object, replacing any object at the location.
    pub async fn write(&self, location: &str, bytes: Bytes) -> Result<()> {
        let r = self.resolve(location)?;
        r.store
            .put(&r.path, bytes.into())
            .await
            .map_err(|e| store_error(&self.named(location), e))?;
        Ok(())
    }

    /// Writes a whole object only if none exists at the location: `Ok(false)` when one does
    /// (the store decides atomically; this is how a metadata file claims its version).
    pub async fn write_new(&self, location: &str, bytes: Bytes) -> Result<bool> {
        let r = self.resolve(location)?;
        let options = object_store::PutOptions {
            mode: object_store::PutMode::Create,
            ..Default::default()
        };
        match r.store.put_opts(&r.path, bytes.into(), options).await {
            Ok(_) => Ok(true),
            // Some stores answer 412 Precondition Failed to If-None-Match.
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(false),
            Err(object_store::Error::NotImplemented { .. }) => Err(Error::Unsupported(format!(
                "{}: the store cannot create a file only if it is absent (a conditional \
                 write), which a commit needs so that two writers never both make one version; \
                 nothing was written. Use a store with conditional writes (S3 and most \
                 S3-compatible stores have them; object_store's `aws_conditional_put` must not \
                 be `disabled`) or a catalog",
                self.named(location)
            ))),
            Err(e) => Err(store_error(&self.named(location), e)),
        }
    }

    /// Deletes an object; a missing object is not an error.
    pub async fn delete(&self, location: &str) -> Result<()> {
        let r = self.resolve(location)?;
        match r.store.delete(&r.path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(store_error(&self.named(location), e)),
        }
    }

    /// The names (last path segment) of the objects directly under a directory location.
    pub async fn list_dir(&self, location: &str) -> Result<Vec<String>> {
        let r = self.resolve(location)?;
        let listed = r
            .store
            .list_with_delimiter(Some(&r.path))
            .await
            .map_err(|e| store_error(&self.named(location), e))?;
        Ok(listed
            .objects
            .into_iter()
            .filter_map(|o| o.location.filename().map(str::to_string))
            .collect())
    }

    /// The names of the directories directly under a directory location, sorted (a missing
    /// directory has none). Local symbolic links are not followed: a link is not a directory.
    pub async fn list_subdirs(&self, location: &str) -> Result<Vec<String>> {
        if let Some(dir) = self.local_path(location) {
            return local_blocking(location, dir, local_subdirs).await;
        }
        let r = self.resolve(location)?;
        let listed = r
            .store
            .list_with_delimiter(Some(&r.path))
            .await
            .map_err(|e| store_error(&self.named(location), e))?;
        let mut names: Vec<String> = listed
            .common_prefixes
            .into_iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Lists every object under a directory location, recursively.
    pub async fn list_recursive(&self, location: &str) -> Result<Vec<ObjectMeta>> {
        let r = self.resolve(location)?;
        r.store
            .list(Some(&r.path))
            .try_collect()
            .await
            .map_err(|e| store_error(&self.named(location), e))
    }

    /// `(store, key)` of a relocated location: `("file://", "tmp/t/x")`, `("s3://b", "k/x")`.
    fn split(&self, location: &str) -> Result<(String, String)> {
        let relocated = self.relocation.apply(location);
        split_location(&relocated).ok_or_else(|| not_a_location(location))
    }
}

/// A data file's identity: its resolved store and path (the location itself when no store
/// resolves it: such a file is never read, and a delete naming it applies to nothing).
pub(crate) fn location_key(io: &FileIO, location: &str) -> String {
    match io.resolve(location) {
        Ok(resolved) => resolved_key(&resolved),
        Err(_) => location.to_string(),
    }
}

/// [`location_key`] of an already resolved location.
pub(crate) fn resolved_key(resolved: &ResolvedLocation) -> String {
    format!("{}{}", resolved.store_url.as_str(), resolved.path)
}

/// The current time in epoch milliseconds (0 before 1970).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Runs `walk` on the local directory `dir` (the location `shown`) on a blocking thread.
pub(crate) async fn local_blocking<T: Send + 'static>(
    shown: &str,
    dir: std::path::PathBuf,
    walk: fn(&std::path::Path, &str) -> Result<T>,
) -> Result<T> {
    let location = shown.to_string();
    tokio::task::spawn_blocking(move || walk(&dir, &location))
        .await
        .map_err(|e| Error::Io {
            path: shown.to_string(),
            source: Box::new(e),
        })?
}

/// The directories directly in a local directory, by name, sorted (none when it is missing).
fn local_subdirs(dir: &std::path::Path, shown: &str) -> Result<Vec<String>> {
    let io_error = |e: std::io::Error| Error::Io {
        path: shown.to_string(),
        source: Box::new(e),
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_error)?;
        if entry.file_type().map_err(io_error)?.is_dir() {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// A location in the form a table location is recorded in: `.` and `..` segments resolved,
/// repeated slashes collapsed, and a relative local path made absolute against the working
/// directory. The style stays: `file:///t`, `/t` and `s3://b/t` keep their form.
///
/// Errors: [`Error::InvalidArgument`] for a location that is not one (`file://host/..`).
pub fn normalize_location(location: &str) -> Result<String> {
    let invalid = || not_a_location(location);
    if let Some((scheme, rest)) = location.split_once("://")
        && is_scheme(scheme)
    {
        if scheme.eq_ignore_ascii_case("file") {
            let key = local_key(rest)
                .filter(|_| rest.starts_with('/'))
                .ok_or_else(invalid)?;
            return Ok(format!("{scheme}:///{key}"));
        }
        let (authority, key) = rest.split_once('/').unwrap_or((rest, ""));
        let key = clean_path(key);
        return Ok(format!("{scheme}://{authority}{key}")
            .trim_end_matches('/')
            .to_string());
    }
    let (prefix, path) = match location.strip_prefix("file:") {
        Some(path) => ("file:", path),
        None => ("", location),
    };
    let key = local_key(path).ok_or_else(invalid)?;
    Ok(format!("{prefix}/{key}"))
}

/// The error of a location that is not one (`file://host/x`: a remote host).
fn not_a_location(location: &str) -> Error {
    Error::invalid(
        format_args!("location '{location}'"),
        "is not a valid location",
    )
}

/// Splits a location into its store (`scheme://authority`) and the key inside it. Bare paths
/// and `file:` locations are local files (relative paths are taken from the current directory).
fn split_location(location: &str) -> Option<(String, String)> {
    if let Some((scheme, rest)) = location.split_once("://")
        && is_scheme(scheme)
    {
        if scheme.eq_ignore_ascii_case("file") {
            if !rest.starts_with('/') {
                return None; // file://host/... names a remote host
            }
            return Some(("file://".to_string(), local_key(rest)?));
        }
        let (authority, key) = rest.split_once('/').unwrap_or((rest, ""));
        let key = clean_path(key);
        return Some((
            format!("{scheme}://{authority}"),
            key.trim_start_matches('/').to_string(),
        ));
    }
    let path = location.strip_prefix("file:").unwrap_or(location);
    Some(("file://".to_string(), local_key(path)?))
}

fn is_scheme(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

/// The key of a local path in the local file system store: absolute, cleaned, no leading `/`.
fn local_key(path: &str) -> Option<String> {
    let absolute = if path.starts_with('/') {
        path.to_string()
    } else {
        std::env::current_dir()
            .ok()?
            .join(path)
            .to_string_lossy()
            .into_owned()
    };
    Some(clean_path(&absolute).trim_start_matches('/').to_string())
}

/// Removes `.` and empty segments (`a//b`, `./a`) from a slash path and resolves `..` against
/// the segment before it (`a/../b` is `b`).
fn clean_path(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    let mut out = String::with_capacity(path.len());
    for seg in &segments {
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
        other if asked_instance_metadata(&other) => Error::Io {
            path: location.to_string(),
            source: Box::new(NoCredentials(other)),
        },
        other => Error::Io {
            path: location.to_string(),
            source: Box::new(other),
        },
    }
}

/// Whether S3 failed while asking the instance metadata service for credentials: what it does
/// when no credentials are configured anywhere else.
fn asked_instance_metadata(err: &object_store::Error) -> bool {
    let text = err.to_string();
    text.contains("/latest/api/token") || text.contains("/latest/meta-data/iam")
}

/// An S3 request without credentials: says where credentials come from.
#[derive(Debug)]
struct NoCredentials(object_store::Error);

impl std::fmt::Display for NoCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "no S3 credentials were found (none in the storage properties or the environment, \
             and no instance metadata service answered): set s3.access-key-id and \
             s3.secret-access-key (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or \
             s3.anonymous=true for a public bucket",
        )
    }
}

impl std::error::Error for NoCredentials {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn write_new_claims_a_location_once() {
        let dir = tempfile::tempdir().unwrap();
        let io = FileIO::default();
        let at = format!("{}/metadata/v2.metadata.json", dir.path().display());
        assert!(io.write_new(&at, Bytes::from("first")).await.unwrap());
        assert!(!io.write_new(&at, Bytes::from("second")).await.unwrap());
        assert_eq!(io.read(&at).await.unwrap(), Bytes::from("first"));
        io.write(&at, Bytes::from("third")).await.unwrap();
        assert_eq!(io.read(&at).await.unwrap(), Bytes::from("third"));
        io.delete(&at).await.unwrap();
        io.delete(&at).await.unwrap();
        assert!(!io.exists(&at).await.unwrap());
    }

    #[test]
    fn locations_become_urls() {
        let io = FileIO::default();
        assert_eq!(io.absolute("/tmp/a/b").unwrap(), "file:///tmp/a/b");
        assert_eq!(io.absolute("file:///tmp/a//b").unwrap(), "file:///tmp/a/b");
        assert_eq!(io.absolute("file:/tmp/x").unwrap(), "file:///tmp/x");
        assert_eq!(io.absolute("s3://bucket/k/v").unwrap(), "s3://bucket/k/v");
        assert_eq!(io.absolute("/tmp/a/../b/./c").unwrap(), "file:///tmp/b/c");
        let rel = io.absolute("rel/x").unwrap();
        assert!(
            rel.starts_with("file:///") && rel.ends_with("/rel/x"),
            "{rel}"
        );
    }

    #[test]
    fn locations_are_taken_literally() {
        let io = FileIO::new(
            Arc::new(RuntimeEnv::default()),
            Relocation::new()
                .with_rule("file:///old", "/new")
                .with_rule("/bare", "/new2"),
        );
        // Locations are never percent-decoded: `%C3` in a location is `%C3` in the file name.
        let r = io.resolve("file:///old/p=%C3%A9/f.parquet").unwrap();
        assert_eq!(r.path.as_ref(), "new/p=%C3%A9/f.parquet");
        let direct = io.resolve("/new/p=%C3%A9/f.parquet").unwrap();
        assert_eq!(r.path, direct.path);
        let r = io.resolve("/bare/p=%C3/f.parquet").unwrap();
        let direct = io.resolve("/new2/p=%C3/f.parquet").unwrap();
        assert_eq!(r.path, direct.path);
    }

    #[tokio::test]
    async fn literal_file_names_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().to_str().unwrap();
        for name in ["lit%C3%A9", "uni\u{e9}", "with space", "hash#q?"] {
            std::fs::write(dir.path().join(name), name.as_bytes()).unwrap();
            let io = FileIO::default();
            let bytes = io.read(&format!("{base}/{name}")).await.unwrap();
            assert_eq!(&bytes[..], name.as_bytes());
            let bytes = io.read(&format!("file://{base}/{name}")).await.unwrap();
            assert_eq!(&bytes[..], name.as_bytes());
        }
    }

    #[test]
    fn unregistered_store_is_a_clear_error() {
        let io = FileIO::default();
        let err = io
            .resolve("hdfs://cluster/t/metadata/v1.metadata.json")
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("no object store for hdfs://cluster/ is registered")
                && !err.to_string().contains("RuntimeEnv"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn missing_file_is_not_found_naming_it() {
        let io = FileIO::default();
        let err = io.read("/definitely/not/here.json").await.unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
        assert!(err.to_string().contains("/definitely/not/here.json"));
    }
}

#[cfg(test)]
#[path = "object_store_tests.rs"]
mod object_store_tests;

#[cfg(test)]
#[path = "bounded_tests.rs"]
mod bounded_tests;
