//! Removing orphan files (issue 8, item 4): files under a table's location that no metadata
//! reaches and that are older than a threshold, the leftovers of failed or crashed writes (data
//! files written but never committed, manifests and metadata files of a lost commit).
//!
//! As in Iceberg Java's `DeleteOrphanFiles`:
//!
//! 1. The referenced files are walked from the table's metadata ([`reachable_files`]: metadata
//!    files of the log and the current one, manifest lists, manifests, every data and delete
//!    file of every manifest, DELETED entries included, statistics and partition statistics),
//!    plus `metadata/version-hint.text` (and `.txt`).
//! 2. The location (by default the table location) is listed recursively. Files and
//!    directories whose name starts with `.` or `_` are skipped, as Java's hidden-path filter
//!    does (a name holding `=` is a partition directory and is not hidden).
//! 3. A listed file is an orphan when its resolved location is not referenced and it was last
//!    modified before the threshold. Locations are compared after resolution, so `file:///t/a`
//!    and `/t/a` (and relocated paths) are the same file.
//!
//! Nothing is deleted when the walk or the listing fails: either error is returned as is (an
//! incomplete walk would make live files look orphaned). The threshold protects writers still
//! running: their files are young. The table must be freshly loaded: files committed after it
//! was loaded are not known to the walk, so only the threshold keeps them (Java's default, three
//! days, is [`OrphanFiles::new`]'s).

use crate::maintenance::Progress;
use std::collections::BTreeSet;

use futures::{StreamExt, TryStreamExt, stream};
use object_store::path::Path as ObjectPath;

use crate::catalog::now_ms;
use crate::error::{Error, Result};
use crate::io::{ListedFile, ResolvedLocation};
use crate::scan::deletes::index::resolved_key;
use crate::spec::properties::GC_ENABLED;
use crate::table::Table;
use crate::table::locate::{VERSION_HINTS, metadata_file_version};
use crate::table::reachable_files;

/// Java's default age of an orphan: files modified in the last three days are kept.
pub const DEFAULT_ORPHAN_AGE_MS: i64 = 3 * 24 * 60 * 60 * 1000;

/// How many files are deleted at a time.
const DELETE_CONCURRENCY: usize = 16;

/// Options of [`remove_orphan_files`].
///
/// ```
/// use icefloe::maintenance::OrphanFiles;
///
/// // Files older than three days, listed only; or older than an instant, deleted.
/// let listed = OrphanFiles::new().dry_run();
/// let deleted = OrphanFiles::new().with_older_than_ms(1_700_000_000_000);
/// assert!(listed.dry_run && !deleted.dry_run);
/// ```
#[derive(Debug, Clone)]
pub struct OrphanFiles {
    /// Only files last modified before this instant (epoch milliseconds) are orphans.
    pub older_than_ms: i64,
    /// List the orphans without deleting them.
    pub dry_run: bool,
    /// The directory to clean (default: the table location). It must be at or under the table
    /// location and hold the table's current metadata file.
    pub location: Option<String>,
    /// Told `(deleted, total)` while orphans are deleted.
    pub progress: Progress,
}

impl Default for OrphanFiles {
    fn default() -> Self {
        Self::new()
    }
}

impl OrphanFiles {
    /// Java's defaults: files older than three days ([`DEFAULT_ORPHAN_AGE_MS`] before now) under
    /// the table location, deleted.
    pub fn new() -> Self {
        Self {
            older_than_ms: now_ms().saturating_sub(DEFAULT_ORPHAN_AGE_MS),
            dry_run: false,
            location: None,
            progress: Progress::default(),
        }
    }

    /// Only files last modified before `timestamp_ms` (epoch milliseconds) are orphans.
    pub fn with_older_than_ms(mut self, timestamp_ms: i64) -> Self {
        self.older_than_ms = timestamp_ms;
        self
    }

    /// Lists the orphans without deleting anything.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// Cleans `location` instead of the whole table location (see [`OrphanFiles::location`]).
    pub fn with_location(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }
}

/// What [`remove_orphan_files`] found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrphanReport {
    /// The directory that was listed, as given (or the table location).
    pub location: String,
    /// The orphans, sorted, as locations under the table location (`<table location>/data/..`,
    /// in the table location's style: `file:///t/..` or `/t/..`).
    pub orphan_files: Vec<String>,
    /// How many orphans were deleted (0 in a dry run).
    pub deleted: usize,
    /// How many files the listing returned (hidden ones included).
    pub listed: usize,
    /// Unreferenced files kept because they are younger than the threshold.
    pub recent_unreferenced: usize,
    /// Symbolic links found under the location: never followed, never deleted.
    pub links: usize,
}

/// Finds the files under the table location that no metadata references and that were last
/// modified before `options.older_than_ms`, and deletes them unless `options.dry_run`.
///
/// ```no_run
/// # async fn example() -> icefloe::Result<()> {
/// use icefloe::maintenance::{OrphanFiles, remove_orphan_files};
/// use icefloe::{FileIO, Table};
///
/// let table = Table::load(FileIO::default(), "/warehouse/db/orders").await?;
/// let report = remove_orphan_files(&table, &OrphanFiles::new().dry_run()).await?;
/// for file in &report.orphan_files {
///     println!("{file}");
/// }
/// # Ok(())
/// # }
/// ```
///
/// Errors (nothing is deleted): [`Error::InvalidArgument`] naming the table when the location
/// is outside the table location or does not hold its current metadata file; the error of the
/// metadata walk (a manifest list or manifest that cannot be read, naming it) or of the
/// listing. A failed deletion returns its error naming the file (the orphans deleted before it
/// stay deleted).
pub async fn remove_orphan_files(table: &Table, options: &OrphanFiles) -> Result<OrphanReport> {
    check_table(table, options)?;
    let io = table.io();
    let table_location = trim_slash(&table.metadata().location);
    let location = options
        .location
        .as_deref()
        .map_or(table_location, trim_slash);
    let table_root = io.resolve(table_location)?;
    let root = io.resolve(location)?;
    check_location(table, &table_root, &root, location)?;
    let referenced = referenced_keys(table, &root, location).await?;
    let newest = newest_version(table);
    let listing = io.list_files(location).await?;
    let mut report = OrphanReport {
        location: location.to_string(),
        listed: listing.files.len(),
        links: listing.links.len(),
        ..OrphanReport::default()
    };
    let mut orphans: Vec<(String, ListedFile)> = Vec::new();
    for file in listing.files {
        let (Some(in_table), Some(in_root)) = (
            relative(&file.path, &table_root.path),
            relative(&file.path, &root.path),
        ) else {
            continue; // never outside the location, whatever the store lists
        };
        if is_hidden(&in_root)
            || referenced.contains(&key(&root, &file.path))
            || is_newer_version(&in_table, newest)
        {
            continue;
        }
        if file.last_modified_ms >= options.older_than_ms {
            report.recent_unreferenced += 1;
            continue;
        }
        orphans.push((join(table_location, &in_table), file));
    }
    orphans.sort_by(|a, b| a.0.cmp(&b.0));
    if !options.dry_run {
        report.deleted = delete_all(table, &root, &orphans, &options.progress).await?;
    }
    report.orphan_files = orphans.into_iter().map(|(l, _)| l).collect();
    Ok(report)
}

/// Orphan removal needs the table's newest version (a version beyond it would make its files
/// look orphaned), a table that is where its metadata says, and, to delete, `gc.enabled`.
fn check_table(table: &Table, options: &OrphanFiles) -> Result<()> {
    table.ensure_writable()?;
    if !table.is_current() {
        return Err(Error::invalid(
            format_args!("table {}", table.metadata_location()),
            "cannot have its orphan files removed: it was loaded for reading, and may not be \
             its newest version; load it with Table::load_for_write or from its catalog",
        ));
    }
    if !options.dry_run && !GC_ENABLED.get(table.metadata())? {
        return Err(Error::invalid(
            format_args!("table {}", table.metadata().location),
            "cannot have its orphan files removed: its gc.enabled is false (its files may be \
             shared with other tables); only a dry run is allowed",
        ));
    }
    Ok(())
}

/// The version number of the table's current metadata file when it is a file-system table's
/// `vN.metadata.json`, whose creation is its commit (a catalog's `NNNNN-<uuid>` files are
/// committed by the catalog's pointer: a higher-numbered one is a lost or killed writer's).
fn newest_version(table: &Table) -> Option<u64> {
    let name = table.metadata_location().rsplit('/').next()?;
    name.starts_with('v')
        .then(|| metadata_file_version(name))
        .flatten()
}

/// A file-system table's metadata file of a version after the current one (a commit that
/// landed after the table was loaded): never an orphan, however old it looks.
fn is_newer_version(in_table: &str, newest: Option<u64>) -> bool {
    let Some(name) = in_table.strip_prefix("metadata/") else {
        return false;
    };
    match (metadata_file_version(name), newest) {
        (Some(version), Some(newest)) => version > newest,
        _ => false,
    }
}

/// The location must be at or under the table location (nothing outside the table is ever
/// deleted) and must hold the current metadata file (else the table location in the metadata
/// is not where its files are, and every live file would look orphaned).
fn check_location(
    table: &Table,
    table_root: &ResolvedLocation,
    root: &ResolvedLocation,
    location: &str,
) -> Result<()> {
    let table_location = &table.metadata().location;
    let what = || format!("orphan location {location} of table {table_location}");
    if !is_under(root, table_root) {
        return Err(Error::invalid(what(), "is outside the table location"));
    }
    let metadata_file = table.io().resolve(table.metadata_location())?;
    if !is_under(&metadata_file, root) {
        return Err(Error::invalid(
            what(),
            format_args!(
                "does not hold the current metadata file {}",
                table.metadata_location()
            ),
        ));
    }
    Ok(())
}

/// The resolved keys ([`resolved_key`]) of every referenced file and of the version hints.
///
/// Errors: a referenced location that cannot be resolved, or one whose path lies under the
/// cleaned location in another store (`s3a://b/t/..` against `s3://b/t`): compared key by key,
/// such a file would look orphaned while the table reads it.
async fn referenced_keys(
    table: &Table,
    root: &ResolvedLocation,
    location: &str,
) -> Result<BTreeSet<String>> {
    let io = table.io();
    let mut files = reachable_files(table).await?;
    let table_location = trim_slash(&table.metadata().location);
    let metadata_dir = table
        .metadata_location()
        .rsplit_once('/')
        .map(|(dir, _)| dir.to_string());
    for dir in [Some(join(table_location, "metadata")), metadata_dir]
        .into_iter()
        .flatten()
    {
        files.extend(VERSION_HINTS.iter().map(|name| join(&dir, name)));
    }
    let mut keys = BTreeSet::new();
    for file in &files {
        let resolved = io.resolve(file)?;
        check_same_store(&resolved, root, file, location)?;
        keys.insert(resolved_key(&resolved));
    }
    Ok(keys)
}

/// Refuses a referenced file whose path is under the cleaned location but whose store is
/// another (a scheme or authority mismatch, as Java's `PrefixMismatchMode.ERROR`).
pub(super) fn check_same_store(
    file: &ResolvedLocation,
    root: &ResolvedLocation,
    name: &str,
    location: &str,
) -> Result<()> {
    if file.store_url != root.store_url && file.path.prefix_matches(&root.path) {
        return Err(Error::invalid(
            format_args!("orphan location {location}"),
            format_args!(
                "the table references {name}, in another store ({}) than the location ({}) \
                 under the same path",
                file.store_url.as_str(),
                root.store_url.as_str()
            ),
        ));
    }
    Ok(())
}

/// A listed object's key, in [`resolved_key`]'s form.
fn key(root: &ResolvedLocation, path: &ObjectPath) -> String {
    format!("{}{}", root.store_url.as_str(), path)
}

/// Whether `inner` is `outer` or lies under it (same store, whole path segments).
fn is_under(inner: &ResolvedLocation, outer: &ResolvedLocation) -> bool {
    inner.store_url == outer.store_url && inner.path.prefix_matches(&outer.path)
}

/// `path` relative to `prefix` (`data/a.parquet`); `None` when it is not under it or is it.
fn relative(path: &ObjectPath, prefix: &ObjectPath) -> Option<String> {
    let parts: Vec<String> = path
        .prefix_match(prefix)?
        .map(|p| p.as_ref().to_string())
        .collect();
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Java's hidden-path rule: a segment starting with `_` or `.`, unless it holds `=` (a
/// partition directory such as `_region=eu`).
fn is_hidden(relative: &str) -> bool {
    relative
        .split('/')
        .any(|s| (s.starts_with('_') || s.starts_with('.')) && !s.contains('='))
}

/// Deletes exactly the listed files, a few at a time; returns how many were deleted.
async fn delete_all(
    table: &Table,
    root: &ResolvedLocation,
    orphans: &[(String, ListedFile)],
    progress: &Progress,
) -> Result<usize> {
    let total = orphans.len();
    let io = table.io();
    // Owned items: a closure over borrowed ones makes the future not `Send` (a rustc
    // limitation with higher-ranked lifetimes).
    stream::iter(orphans.iter().cloned())
        .map(|(location, file)| async move {
            io.delete_listed(root.store.as_ref(), &file, &location)
                .await
        })
        .buffer_unordered(DELETE_CONCURRENCY)
        .try_fold(0, |n, ()| async move {
            progress.report(n + 1, total);
            Ok(n + 1)
        })
        .await
}

/// A location without its trailing slashes (the root `/` stays `/`).
fn trim_slash(location: &str) -> &str {
    match location.trim_end_matches('/') {
        "" => &location[..location.len().min(1)],
        trimmed => trimmed,
    }
}

/// `base/relative`, with one slash between them.
fn join(base: &str, relative: &str) -> String {
    match base.ends_with('/') {
        true => format!("{base}{relative}"),
        false => format!("{base}/{relative}"),
    }
}
