//! Locating a table's metadata file from a path: a metadata file itself (plain or gzip), or a
//! table directory (`metadata/version-hint.text` or `.txt`, else the newest valid metadata file).
//!
//! This is how file-system tables (Iceberg's "Hadoop" tables, and tables handed over as a bare
//! directory) find their current metadata pointer:
//!
//! 1. A location whose name ends in `.metadata.json`, `.metadata.json.gz` or `.json` is the
//!    metadata file itself.
//! 2. Otherwise it is a table directory. `metadata/version-hint.text` (or `version-hint.txt`)
//!    holds a version number `N`, naming `metadata/vN.metadata.json` (or `vN.gz.metadata.json`,
//!    or `vN.metadata.json.gz`); a hint holding a file name or a full path is accepted too.
//! 3. When the hint is absent, empty, unreadable as a version, or names a missing or invalid
//!    file, `metadata/` is listed and the metadata file with the highest version number that
//!    parses is chosen. Both the `vN` names of file-system tables and the `NNNNN-<uuid>` names
//!    written by catalogs count, plain or gzip.
//!
//! Locations keep the style of the input: a `file:///t` table yields `file:///t/metadata/...`,
//! a `/t` table yields `/t/metadata/...`.

use std::io::Read;

use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::spec::TableMetadata;

/// The names a version hint may have, in the order they are tried.
const VERSION_HINTS: [&str; 2] = ["version-hint.text", "version-hint.txt"];

/// The first two bytes of every gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The metadata file of the table at `location` (a metadata file, or a table directory).
///
/// A metadata file is returned as given, without reading it. For a table directory the chosen
/// file has been read and parsed; use [`locate_and_load`] to keep that parse.
///
/// Errors: [`Error::NotFound`] naming the directory when it holds no valid metadata file.
pub async fn locate_metadata(io: &FileIO, location: &str) -> Result<String> {
    if is_metadata_file(location) {
        return Ok(location.to_string());
    }
    let (metadata_location, _) = locate_in_dir(io, location).await?;
    Ok(metadata_location)
}

/// Like [`locate_metadata`], but also returns the parsed metadata, so that a table directory's
/// metadata file is read and parsed once.
pub async fn locate_and_load(io: &FileIO, location: &str) -> Result<(String, TableMetadata)> {
    if is_metadata_file(location) {
        let metadata = load_metadata(io, location).await?;
        return Ok((location.to_string(), metadata));
    }
    locate_in_dir(io, location).await
}

/// Reads and parses a metadata file (gzip when its name says so or its bytes start with the
/// gzip magic); errors name the file.
///
/// Errors: [`Error::NotFound`] naming the file when it is missing, [`Error::Corrupt`] naming it
/// when it is not valid (gzipped) metadata JSON, [`Error::Unsupported`] for a format version
/// icefloe cannot read.
pub async fn load_metadata(io: &FileIO, metadata_location: &str) -> Result<TableMetadata> {
    let bytes = io.read(metadata_location).await.map_err(|e| match e {
        Error::NotFound { source, .. } => Error::NotFound {
            what: format!("metadata file {metadata_location}"),
            source,
        },
        other => other,
    })?;
    parse_metadata_bytes(metadata_location, &bytes)
}

/// Parses the bytes of a metadata file, gunzipping them first when they are gzip.
fn parse_metadata_bytes(path: &str, bytes: &[u8]) -> Result<TableMetadata> {
    if !bytes.starts_with(&GZIP_MAGIC) {
        return TableMetadata::parse(bytes).map_err(|e| e.in_file(path));
    }
    let mut json = Vec::with_capacity(bytes.len() * 8);
    flate2::read::MultiGzDecoder::new(bytes)
        .read_to_end(&mut json)
        .map_err(|e| Error::corrupt_with(path, "invalid gzip stream", e))?;
    TableMetadata::parse(&json).map_err(|e| e.in_file(path))
}

/// Whether a location names a metadata file rather than a table directory.
fn is_metadata_file(location: &str) -> bool {
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

/// Finds and loads the current metadata file of a table directory: through the version hint,
/// else the newest valid metadata file in `metadata/`.
async fn locate_in_dir(io: &FileIO, table_dir: &str) -> Result<(String, TableMetadata)> {
    let table_dir = table_dir.trim_end_matches('/');
    let metadata_dir = join(table_dir, "metadata");
    if let Some(hint) = read_version_hint(io, &metadata_dir).await? {
        for candidate in hint_candidates(table_dir, &metadata_dir, &hint) {
            if let Some(metadata) = try_load(io, &candidate).await? {
                return Ok((candidate, metadata));
            }
        }
    }
    newest_valid(io, table_dir, &metadata_dir).await
}

/// The trimmed contents of the first version hint file that exists and is not blank.
async fn read_version_hint(io: &FileIO, metadata_dir: &str) -> Result<Option<String>> {
    for name in VERSION_HINTS {
        match io.read(&join(metadata_dir, name)).await {
            Ok(bytes) => {
                let hint = String::from_utf8_lossy(&bytes).trim().to_string();
                if !hint.is_empty() {
                    return Ok(Some(hint));
                }
            }
            Err(Error::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// The metadata files a version hint may mean, most likely first.
///
/// A number `N` (optionally written `vN`) names `vN.metadata.json` and its gzip forms; a
/// location with a scheme or a leading `/` is taken as is; a relative path starting with
/// `metadata/` is relative to the table directory; any other text is a file name in
/// `metadata/` (with `.metadata.json` appended when it lacks a `.json` ending).
fn hint_candidates(table_dir: &str, metadata_dir: &str, hint: &str) -> Vec<String> {
    let digits = hint.strip_prefix('v').unwrap_or(hint);
    if let Ok(version) = digits.parse::<u64>() {
        return [".metadata.json", ".gz.metadata.json", ".metadata.json.gz"]
            .iter()
            .map(|suffix| join(metadata_dir, &format!("v{version}{suffix}")))
            .collect();
    }
    if hint.contains("://") || hint.starts_with('/') {
        return vec![hint.to_string()];
    }
    if hint.starts_with("metadata/") {
        return vec![join(table_dir, hint)];
    }
    let mut candidates = vec![join(metadata_dir, hint)];
    if !is_metadata_file(hint) {
        candidates.push(join(metadata_dir, &format!("{hint}.metadata.json")));
    }
    candidates
}

/// Loads a candidate metadata file; `None` when it is missing or not valid metadata, so the
/// caller can try the next one. Other failures (I/O, unsupported versions) are returned.
async fn try_load(io: &FileIO, location: &str) -> Result<Option<TableMetadata>> {
    match load_metadata(io, location).await {
        Ok(metadata) => Ok(Some(metadata)),
        Err(Error::NotFound { .. } | Error::Corrupt { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Lists `metadata/` and loads the metadata file with the highest version that parses.
async fn newest_valid(
    io: &FileIO,
    table_dir: &str,
    metadata_dir: &str,
) -> Result<(String, TableMetadata)> {
    let names = match io.list_dir(metadata_dir).await {
        Ok(names) => names,
        Err(Error::NotFound { .. }) => Vec::new(),
        Err(e) => return Err(e),
    };
    let mut candidates: Vec<(u64, String)> = names
        .into_iter()
        .filter_map(|name| metadata_file_version(&name).map(|v| (v, name)))
        .collect();
    candidates.sort_by(|a, b| b.cmp(a));
    let mut first_error = None;
    for (_, name) in candidates {
        let location = join(metadata_dir, &name);
        match load_metadata(io, &location).await {
            Ok(metadata) => return Ok((location, metadata)),
            Err(e @ (Error::NotFound { .. } | Error::Corrupt { .. })) => {
                first_error.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(Error::NotFound {
        what: format!("a valid metadata file in table directory {table_dir}"),
        source: first_error.map(|e| Box::new(e) as _),
    })
}

/// The version number in a metadata file name, or `None` when the name is not one.
///
/// Recognised: `vN.metadata.json`, `vN.gz.metadata.json`, `vN.metadata.json.gz` (file-system
/// tables) and `NNNNN-<uuid>.metadata.json` with the same gzip forms (catalog tables).
fn metadata_file_version(name: &str) -> Option<u64> {
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
#[path = "file_tests.rs"]
mod tests;
