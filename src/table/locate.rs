//! File-system tables (Iceberg's "Hadoop" tables, and tables handed over as a bare directory):
//! where their current metadata pointer is, by one rule shared by readers, writers and
//! maintenance.
//!
//! A location whose name ends in `.metadata.json`, `.metadata.json.gz` or `.json` is a metadata
//! file itself, read as given. Any other location is a table directory, whose current version
//! is found as Java's `HadoopTableOperations` finds it:
//!
//! 1. `metadata/version-hint.text` (or `version-hint.txt`) holds a version number `N` (also
//!    written `vN`), naming `metadata/vN.metadata.json` (or `vN.gz.metadata.json`,
//!    `vN.metadata.json.gz`), or, as some writers do, the name of a metadata file inside
//!    `metadata/`. Anything else (a path, `..`, text) is [`Error::Corrupt`] naming the hint: a
//!    hint is never followed out of the table. A blank or absent hint is no hint.
//! 2. Without a hint, `metadata/` is listed and the highest version is the pointer (both the
//!    `vN` names of file-system tables and the `NNNNN-<uuid>` names of catalogs count).
//! 3. From that version the chain is followed forward while the next version exists: a writer
//!    killed after creating `v(N+1).metadata.json` (its commit point) and before updating the
//!    hint leaves a stale hint, and a hint pointing backwards is never trusted over the files.
//!
//! The version the pointer names must be readable: a corrupt or missing one is an error for
//! every command, reads included ([`Access::Read`] and [`Access::Write`] alike). Only a version
//! *beyond* a readable pointer may be skipped, and only by a read: [`Access::Write`] (commits and
//! destructive maintenance) also lists `metadata/` and refuses a newer version it cannot read or
//! reach, or two files claiming one version, instead of acting on an older state.
//!
//! Locations keep the style of the input: a `file:///t` table yields `file:///t/metadata/...`,
//! a `/t` table yields `/t/metadata/...`.

use bytes::Bytes;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::io::{FileIO, location_key};
use crate::spec::TableMetadata;
use crate::table::cache::{Cached, ManifestCache};

/// The names a version hint may have, in the order they are tried.
pub const VERSION_HINTS: [&str; 2] = ["version-hint.text", "version-hint.txt"];

/// The largest version hint read: a version number or a file name is far shorter.
const MAX_HINT_BYTES: u64 = 4096;

/// The file-name endings of a `vN` metadata file, plain first.
const VERSION_SUFFIXES: [&str; 3] = [".metadata.json", ".gz.metadata.json", ".metadata.json.gz"];

/// What a version hint says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionHint {
    /// A version number: `metadata/vN.metadata.json` (or a gzip form).
    Version(u64),
    /// The name of a metadata file inside `metadata/` (`00003-<uuid>.metadata.json`).
    FileName(String),
}

/// How the caller will use the table it locates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    /// Reading: a version beyond a readable pointer that cannot be read is skipped.
    #[default]
    Read,
    /// Committing or deleting files: the current version must be beyond doubt.
    Write,
}

/// How the current version of a table directory was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FoundBy {
    /// The version hint (its file name and contents), then `beyond` newer versions after it.
    Hint {
        /// `version-hint.text` or `version-hint.txt`.
        file: &'static str,
        /// The hint, trimmed.
        content: String,
        /// How many versions past the hint's the chain went on.
        beyond: u64,
    },
    /// The highest version listed in `metadata/` (no hint).
    Listing,
}

impl std::fmt::Display for FoundBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Hint { file, content, .. } => write!(f, "metadata/{file} -> {content}")?,
            Self::Listing => f.write_str("newest metadata file in metadata/")?,
        }
        if let Self::Hint {
            beyond: n @ 1.., ..
        } = self
        {
            write!(f, " (stale: {n} newer version(s) found after it)")?;
        }
        Ok(())
    }
}

/// The current version of a table directory.
#[derive(Debug, Clone)]
pub struct CurrentVersion {
    /// The table directory, as given (without a trailing slash).
    pub table_dir: String,
    /// The current metadata file.
    pub metadata_location: String,
    /// Its parsed contents.
    pub metadata: Arc<TableMetadata>,
    /// Its version number.
    pub version: u64,
    /// How it was found.
    pub found_by: FoundBy,
    /// Newer metadata files that could not be read and were skipped ([`Access::Read`] only).
    pub skipped: Vec<String>,
}

impl CurrentVersion {
    /// The location the next commit creates: `metadata/v(N+1).metadata.json`, whatever the
    /// current file's naming (a fixed name is what makes create-if-absent the commit point).
    pub fn next_metadata_location(&self) -> String {
        join(
            &join(&self.table_dir, "metadata"),
            &format!("v{}.metadata.json", self.version + 1),
        )
    }
}

/// The metadata file of the table at `location` (a metadata file, or a table directory).
///
/// A metadata file is returned as given, without reading it. For a table directory the chosen
/// file has been read and parsed; use [`locate_and_load`] to keep that parse.
///
/// Errors: those of [`current_version`].
pub async fn locate_metadata(io: &FileIO, location: &str) -> Result<String> {
    if is_metadata_file(location) {
        return Ok(location.to_string());
    }
    Ok(current_version(io, location, Access::Read)
        .await?
        .metadata_location)
}

/// Like [`locate_metadata`], but also returns the parsed metadata, so that a table directory's
/// metadata file is read and parsed once.
pub async fn locate_and_load(io: &FileIO, location: &str) -> Result<(String, Arc<TableMetadata>)> {
    if is_metadata_file(location) {
        let metadata = load_metadata(io, location).await?;
        return Ok((location.to_string(), metadata));
    }
    let current = current_version(io, location, Access::Read)
        .await
        .map_err(|e| catalog_name_hint(location, e))?;
    Ok((current.metadata_location, current.metadata))
}

/// Whether `location`, given where a table directory belongs, is more likely a catalog table's
/// name (`namespace.table`): it has a dot, no path separator or scheme, and nothing is there.
pub fn looks_like_catalog_name(location: &str) -> bool {
    location.contains('.')
        && !location.contains(['/', '\\', ':'])
        && !std::path::Path::new(location).exists()
}

/// A table directory that does not exist, named like a catalog table: says so.
fn catalog_name_hint(location: &str, error: Error) -> Error {
    match error {
        Error::NotFound { .. } if looks_like_catalog_name(location) => Error::not_found(format!(
            "a table directory or metadata file '{location}': there is no such file or \
             directory; a name like `namespace.table` is a table of a catalog, read through \
             the catalog by that name"
        )),
        other => other,
    }
}

/// The current version of the table directory `table_dir` (see the module docs for the rule).
///
/// Errors: [`Error::NotFound`] naming the directory when it holds no metadata file;
/// [`Error::Corrupt`] naming the hint when it is not a version or a metadata file name in
/// `metadata/`, or names a version that does not exist; the error of the metadata file the
/// pointer names when it cannot be read. With [`Access::Write`] also [`Error::Corrupt`] naming
/// `metadata/` when a newer version cannot be read or reached, or two files claim one version.
pub async fn current_version(
    io: &FileIO,
    table_dir: &str,
    access: Access,
) -> Result<CurrentVersion> {
    let table_dir = trim_slash(table_dir);
    let metadata_dir = join(table_dir, "metadata");
    let hint = read_version_hint(io, &metadata_dir).await?;
    let listing = match (&hint, access) {
        (Some(_), Access::Read) => None,
        _ => Some(list_versions(io, &metadata_dir).await?),
    };
    let (mut name, mut metadata, found_by) = match &hint {
        Some((file, content, hint)) => {
            let (name, metadata) =
                hinted_version(io, &metadata_dir, file, hint, listing.as_ref()).await?;
            let found_by = FoundBy::Hint {
                file,
                content: content.clone(),
                beyond: 0,
            };
            (name, metadata, found_by)
        }
        None => {
            let name = newest_listed(table_dir, listing.as_ref(), access)?;
            let metadata = load_metadata(io, &join(&metadata_dir, &name)).await?;
            (name, metadata, FoundBy::Listing)
        }
    };
    let mut location = join(&metadata_dir, &name);
    let mut version = metadata_file_version(&name).unwrap_or(0);
    let (mut found_by, mut skipped) = (found_by, Vec::new());
    while let Some(next) = next_version(io, &metadata_dir, version, &name, listing.as_ref()).await?
    {
        let next_location = join(&metadata_dir, &next);
        match load_metadata(io, &next_location).await {
            Ok(loaded) => {
                (name, location, metadata) = (next, next_location, loaded);
                version += 1;
                if let FoundBy::Hint { beyond, .. } = &mut found_by {
                    *beyond += 1;
                }
            }
            Err(e) if access == Access::Write => {
                return Err(unreadable_beyond(&metadata_dir, version, e));
            }
            Err(_) => {
                skipped.push(next_location);
                break;
            }
        }
    }
    if let Some(listing) = &listing {
        check_nothing_beyond(&metadata_dir, version, listing, access)?;
    }
    Ok(CurrentVersion {
        table_dir: table_dir.to_string(),
        metadata_location: location,
        metadata,
        version,
        found_by,
        skipped,
    })
}

/// The table directory of a table location or metadata file: a metadata file inside a
/// `metadata/` directory belongs to that directory's parent; `None` for a metadata file
/// elsewhere.
pub fn table_dir_of(location: &str) -> Option<String> {
    if !is_metadata_file(location) {
        return Some(trim_slash(location).to_string());
    }
    let (dir, _) = location.rsplit_once('/')?;
    let (table_dir, last) = dir.rsplit_once('/')?;
    (last == "metadata" && !table_dir.is_empty()).then(|| table_dir.to_string())
}

/// Whether version `version + 1` exists beside the current metadata file `metadata_location`
/// (version `version`), in any of the `vN` namings, found with one existence check per naming:
/// `None` when the current file is not `vN`-named (a catalog-style name's successor can only be
/// found by listing).
pub(crate) async fn successor_exists(
    io: &FileIO,
    metadata_location: &str,
    version: u64,
) -> Result<Option<bool>> {
    let Some((dir, name)) = metadata_location.rsplit_once('/') else {
        return Ok(None);
    };
    let v_named = VERSION_SUFFIXES
        .iter()
        .any(|suffix| name == format!("v{version}{suffix}"));
    if !v_named {
        return Ok(None);
    }
    for suffix in VERSION_SUFFIXES {
        if io
            .exists(&format!("{dir}/v{}{suffix}", version + 1))
            .await?
        {
            return Ok(Some(true));
        }
    }
    Ok(Some(false))
}

/// Points the table directory's `version-hint.text` at `version` (best effort: the commit
/// happened when `vN.metadata.json` was created, and a stale hint is followed past).
pub async fn write_version_hint(io: &FileIO, table_dir: &str, version: u64) {
    let hint = join(&join(trim_slash(table_dir), "metadata"), VERSION_HINTS[0]);
    let _ = io.write(&hint, Bytes::from(version.to_string())).await;
}

/// Parses the contents of a version hint: `Ok(None)` when blank, a [`VersionHint`] when it is
/// a version number (optionally `v`-prefixed) or the name of a metadata file (no directory
/// part), else an [`Error::Corrupt`] (without a path: the caller names the hint file).
pub fn parse_version_hint(bytes: &[u8]) -> Result<Option<VersionHint>> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Error::corrupt_with("", "a version hint must be text", e))?
        .trim();
    if text.is_empty() {
        return Ok(None);
    }
    let digits = text.strip_prefix('v').unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return match digits.parse::<u64>() {
            Ok(version) => Ok(Some(VersionHint::Version(version))),
            Err(e) => Err(Error::corrupt_with("", "the version is out of range", e)),
        };
    }
    let name = text.strip_prefix("metadata/").unwrap_or(text);
    if !name.contains(['/', '\\']) && metadata_file_version(name).is_some() {
        return Ok(Some(VersionHint::FileName(name.to_string())));
    }
    Err(Error::corrupt(
        "",
        format!(
            "'{}' is neither a version number nor the name of a metadata file in metadata/",
            text.escape_debug()
        ),
    ))
}

/// Reads and parses a metadata file (gzip when its name says so or its bytes start with the
/// gzip magic); errors name the file.
///
/// Errors: [`Error::NotFound`] naming the file when it is missing, [`Error::Corrupt`] naming it
/// when it is not valid (gzipped) metadata JSON, [`Error::Unsupported`] for a format version
/// icefloe cannot read.
pub async fn load_metadata(io: &FileIO, metadata_location: &str) -> Result<Arc<TableMetadata>> {
    let limit = io.read_limits().metadata_bytes;
    let bytes = io
        .read_bounded(metadata_location, limit)
        .await
        .map_err(|e| match e {
            Error::NotFound { source, .. } => Error::NotFound {
                what: format!("metadata file {}", io.named(metadata_location)),
                source,
            },
            other => other,
        })?;
    // The file is read every time; the parse is reused only for the very same bytes.
    let cache = ManifestCache::global();
    let key = metadata_cache_key(io, metadata_location, limit);
    if let Some(Cached::Metadata(raw, parsed)) = cache.get(&key)
        && raw == bytes
    {
        return Ok(parsed);
    }
    let parsed = Arc::new(
        TableMetadata::parse_file(&bytes, limit).map_err(|e| e.in_file(metadata_location))?,
    );
    cache.insert(key, Cached::Metadata(bytes, Arc::clone(&parsed)));
    Ok(parsed)
}

/// The cache key of a metadata file's parse (the read limit decides what parses, for gzip).
fn metadata_cache_key(io: &FileIO, metadata_location: &str, limit: u64) -> String {
    format!("metadata|{limit}|{}", location_key(io, metadata_location))
}

/// The bytes `metadata` was parsed from by [`load_metadata`] of `metadata_location`, while the
/// cache still holds that parse (no IO).
pub(crate) fn parsed_bytes(
    io: &FileIO,
    metadata_location: &str,
    metadata: &Arc<TableMetadata>,
) -> Option<Bytes> {
    let limit = io.read_limits().metadata_bytes;
    let key = metadata_cache_key(io, metadata_location, limit);
    match ManifestCache::global().get(&key) {
        Some(Cached::Metadata(raw, parsed)) if Arc::ptr_eq(&parsed, metadata) => Some(raw),
        _ => None,
    }
}

/// Whether a location names a metadata file rather than a table directory.
pub(crate) fn is_metadata_file(location: &str) -> bool {
    let name = file_name(location);
    name.ends_with(".json") || name.ends_with(".metadata.json.gz")
}

/// The last segment of a slash-separated location.
fn file_name(location: &str) -> &str {
    let trimmed = location.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// `dir/name`, with exactly one slash between them.
fn join(dir: &str, name: &str) -> String {
    format!(
        "{}/{}",
        dir.trim_end_matches('/'),
        name.trim_start_matches('/')
    )
}

/// A location without its trailing slashes (the root `/` stays `/`).
fn trim_slash(location: &str) -> &str {
    match location.trim_end_matches('/') {
        "" => &location[..location.len().min(1)],
        trimmed => trimmed,
    }
}

/// The first version hint that exists and is not blank: its name, trimmed contents and meaning.
async fn read_version_hint(
    io: &FileIO,
    metadata_dir: &str,
) -> Result<Option<(&'static str, String, VersionHint)>> {
    for name in VERSION_HINTS {
        let path = join(metadata_dir, name);
        let bytes = match io.read_bounded(&path, MAX_HINT_BYTES).await {
            Ok(bytes) => bytes,
            Err(Error::NotFound { .. }) => continue,
            Err(e) => return Err(e),
        };
        if let Some(hint) = parse_version_hint(&bytes).map_err(|e| e.in_file(&path))? {
            let content = String::from_utf8_lossy(&bytes).trim().to_string();
            return Ok(Some((name, content, hint)));
        }
    }
    Ok(None)
}

/// The metadata files of `metadata/` by version number.
type Listing = BTreeMap<u64, Vec<String>>;

/// Lists `metadata/` (a missing directory lists empty).
async fn list_versions(io: &FileIO, metadata_dir: &str) -> Result<Listing> {
    let names = match io.list_dir(metadata_dir).await {
        Ok(names) => names,
        Err(Error::NotFound { .. }) => Vec::new(),
        Err(e) => return Err(e),
    };
    let mut listing = Listing::new();
    for name in names {
        if let Some(version) = metadata_file_version(&name) {
            listing.entry(version).or_default().push(name);
        }
    }
    for names in listing.values_mut() {
        names.sort();
    }
    Ok(listing)
}

/// The metadata file the hint names, loaded: it must exist and be readable.
async fn hinted_version(
    io: &FileIO,
    metadata_dir: &str,
    file: &str,
    hint: &VersionHint,
    listing: Option<&Listing>,
) -> Result<(String, Arc<TableMetadata>)> {
    let candidates: Vec<String> = match hint {
        VersionHint::FileName(name) => vec![name.clone()],
        VersionHint::Version(n) => VERSION_SUFFIXES
            .iter()
            .map(|s| format!("v{n}{s}"))
            .collect(),
    };
    for name in &candidates {
        if listing.is_some_and(|l| !l.values().flatten().any(|listed| listed == name)) {
            continue;
        }
        match load_metadata(io, &join(metadata_dir, name)).await {
            Ok(metadata) => return Ok((name.clone(), metadata)),
            Err(Error::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Err(Error::corrupt(
        join(metadata_dir, file),
        format!(
            "the hint names {}, which does not exist",
            join(metadata_dir, &candidates[0])
        ),
    ))
}

/// The highest listed version's file (no hint).
fn newest_listed(table_dir: &str, listing: Option<&Listing>, access: Access) -> Result<String> {
    let Some((version, names)) = listing.and_then(|l| l.iter().next_back()) else {
        return Err(Error::not_found(format!(
            "a metadata file in table directory {table_dir}"
        )));
    };
    if names.len() > 1 && access == Access::Write {
        return Err(ambiguous(&join(table_dir, "metadata"), *version, names));
    }
    Ok(names[names.len() - 1].clone())
}

/// The file of version `version + 1`, if it exists: from the listing when there is one, else
/// probed in the naming style of the current file `name`.
async fn next_version(
    io: &FileIO,
    metadata_dir: &str,
    version: u64,
    name: &str,
    listing: Option<&Listing>,
) -> Result<Option<String>> {
    let next = version + 1;
    if let Some(listing) = listing {
        return match listing.get(&next).map(Vec::as_slice) {
            None | Some([]) => Ok(None),
            Some([one]) => Ok(Some(one.clone())),
            Some(many) => Err(ambiguous(metadata_dir, next, many)),
        };
    }
    let Some(suffix) = VERSION_SUFFIXES
        .iter()
        .rev()
        .find(|s| name.starts_with('v') && name.ends_with(*s))
    else {
        // A catalog-style name: only a listing can find the next one.
        let listing = list_versions(io, metadata_dir).await?;
        return Box::pin(next_version(
            io,
            metadata_dir,
            version,
            name,
            Some(&listing),
        ))
        .await;
    };
    let candidate = format!("v{next}{suffix}");
    Ok(io
        .exists(&join(metadata_dir, &candidate))
        .await?
        .then_some(candidate))
}

/// [`Access::Write`]: no version may lie beyond the current one unreached.
fn check_nothing_beyond(
    metadata_dir: &str,
    version: u64,
    listing: &Listing,
    access: Access,
) -> Result<()> {
    let Some((newer, names)) = listing.range(version + 1..).next() else {
        return Ok(());
    };
    if access == Access::Read {
        return Ok(());
    }
    Err(Error::corrupt(
        metadata_dir,
        format!(
            "{} (version {newer}) is newer than the current version {version}, but version {} \
             is missing: refusing to write to a table whose newest state is in doubt",
            names[0],
            version + 1
        ),
    ))
}

fn ambiguous(metadata_dir: &str, version: u64, names: &[String]) -> Error {
    Error::corrupt(
        metadata_dir,
        format!(
            "{} metadata files claim version {version} ({}): refusing to write to a table \
             whose newest state is in doubt",
            names.len(),
            names.join(", ")
        ),
    )
}

fn unreadable_beyond(metadata_dir: &str, version: u64, cause: Error) -> Error {
    Error::Corrupt {
        path: metadata_dir.to_string(),
        reason: format!(
            "version {} after the current version {version} cannot be read: refusing to write \
             to a table whose newest state is in doubt",
            version + 1
        ),
        source: Some(Box::new(cause)),
    }
}

/// The version number in a metadata file name, or `None` when the name is not one.
///
/// Recognised: `vN.metadata.json`, `vN.gz.metadata.json`, `vN.metadata.json.gz` (file-system
/// tables) and `NNNNN-<uuid>.metadata.json` with the same gzip forms (catalog tables).
pub(crate) fn metadata_file_version(name: &str) -> Option<u64> {
    let stem = name
        .strip_suffix(".gz.metadata.json")
        .or_else(|| name.strip_suffix(".metadata.json.gz"))
        .or_else(|| name.strip_suffix(".metadata.json"))?;
    let digits = match stem.strip_prefix('v') {
        Some(version) => version,
        None => stem.split_once('-')?.0,
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
#[path = "locate_tests.rs"]
mod tests;
