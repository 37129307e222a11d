//! What every catalog's [`commit_table`](super::Catalog::commit_table) does the same way:
//! requirements checked against the current metadata, updates applied, the next metadata file
//! written and claimed, and the metadata files the new log drops deleted when the table asks.

use std::collections::HashSet;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::io::{FileIO, TableScope};
use crate::spec::properties::METADATA_DELETE_AFTER_COMMIT;
use crate::spec::{ApplyContext, FormatVersion, TableMetadata, TableRequirement, TableUpdate};

/// Whether `requirements` ask for a new table (`assert-create`).
pub(crate) fn creates(requirements: &[TableRequirement]) -> bool {
    requirements
        .iter()
        .any(|r| matches!(r, TableRequirement::AssertCreate))
}

/// Checks every requirement against the current metadata (`None`: no table).
///
/// Errors: [`Error::CommitConflict`] naming `table` and the first requirement that fails.
pub(crate) fn check_requirements(
    table: &str,
    requirements: &[TableRequirement],
    current: Option<&TableMetadata>,
) -> Result<()> {
    for requirement in requirements {
        requirement
            .check(current)
            .map_err(|failed| Error::CommitConflict {
                table: table.to_string(),
                reason: failed.to_string(),
            })?;
    }
    Ok(())
}

/// The metadata after `updates`, replacing the metadata file `current_location` of `table`.
///
/// A snapshot stated against an older version (its sequence number not above the table's
/// last one, or in v3 its `first-row-id` behind `next-row-id`: another branch committed in
/// between) is a [`Error::CommitConflict`], so the writer retries on the new version; other
/// updates that cannot apply are the errors of [`TableMetadata::apply`].
pub(crate) fn next_metadata(
    table: &str,
    current: &TableMetadata,
    current_location: &str,
    updates: &[TableUpdate],
) -> Result<TableMetadata> {
    for update in updates {
        let TableUpdate::AddSnapshot { snapshot } = update else {
            continue;
        };
        let stale_sequence = current.format_version != FormatVersion::V1
            && snapshot.sequence_number <= current.last_sequence_number;
        let stale_rows = current.format_version == FormatVersion::V3
            && snapshot.first_row_id.unwrap_or(0) < current.next_row_id.unwrap_or(0);
        if stale_sequence || stale_rows {
            return Err(Error::CommitConflict {
                table: table.to_string(),
                reason: format!(
                    "snapshot {} was made for an older version of the table (another \
                     commit came first)",
                    snapshot.snapshot_id
                ),
            });
        }
    }
    let context = ApplyContext::new(now_ms()).with_previous_file(current_location);
    let next = current.apply(updates, &context)?;
    // Read before the commit: a bad value fails it instead of being ignored after it.
    METADATA_DELETE_AFTER_COMMIT.get(&next)?;
    Ok(next)
}

/// A new table's metadata, built from `updates` alone (an `assert-create` commit); its
/// location is `default_location` unless the updates set one.
pub(crate) fn created_metadata(
    updates: &[TableUpdate],
    default_location: &str,
) -> Result<TableMetadata> {
    let sets_location = updates
        .iter()
        .any(|u| matches!(u, TableUpdate::SetLocation { .. }));
    let mut all = Vec::with_capacity(updates.len() + 1);
    if !sets_location {
        all.push(TableUpdate::SetLocation {
            location: default_location.trim_end_matches('/').to_string(),
        });
    }
    all.extend_from_slice(updates);
    TableMetadata::from_updates(&all, &ApplyContext::new(now_ms()))
}

/// The JSON bytes of `metadata`, for the file `path`: compact, as Java and PyIceberg write them
/// (a table with thousands of snapshots has a metadata file of megabytes, written each commit).
pub(crate) fn metadata_bytes(metadata: &TableMetadata, path: &str) -> Result<Bytes> {
    serde_json::to_vec(&metadata.to_json())
        .map(Bytes::from)
        .map_err(|e| {
            Error::invalid(
                format!("metadata of {path}"),
                format!("not serializable: {e}"),
            )
        })
}

/// Creates `path` with `bytes` unless it exists: `Ok(true)` when this call created it,
/// `Ok(false)` when another file was there first (a lost race).
///
/// When the store's answer is an error, the file is read back to learn the outcome: our bytes
/// there mean the write landed; other bytes mean it lost; an absent file on a local file system
/// means it failed (the local store creates the file by an atomic link, so a failed request
/// left nothing). Anything else is [`Error::CommitStateUnknown`] for `table`: an object store
/// may still apply a request whose answer was lost.
pub(crate) async fn claim(io: &FileIO, table: &str, path: &str, bytes: Bytes) -> Result<bool> {
    let error = match io.write_new(path, bytes.clone()).await {
        Ok(created) => return Ok(created),
        // Refused before anything was sent (a store without conditional writes).
        Err(e @ Error::Unsupported(_)) => return Err(e),
        Err(e) => e,
    };
    match io.read(path).await {
        Ok(found) => Ok(found == bytes),
        Err(Error::NotFound { .. }) if io.local_path(path).is_some() => Err(error),
        Err(_) => Err(Error::CommitStateUnknown {
            table: table.to_string(),
            reason: format!("creating {path} failed, and whether it exists cannot be told"),
            source: Some(Box::new(error)),
        }),
    }
}

/// With `write.metadata.delete-after-commit.enabled` set in the new metadata, deletes the
/// metadata files the base's log named and the new log no longer does, as Java's commit does.
/// Best effort (after the swap the commit stands whatever happens here); a file still named by
/// the new log is never deleted, nor any file outside the table location.
pub(crate) async fn delete_dropped_metadata_files(
    io: &FileIO,
    base: &TableMetadata,
    next: &TableMetadata,
) {
    // A bad value was refused before the commit ([`next_metadata`]); here it means "no".
    if !METADATA_DELETE_AFTER_COMMIT.get(next).unwrap_or(false) {
        return;
    }
    let kept: HashSet<&str> = next
        .metadata_log
        .iter()
        .map(|e| e.metadata_file.as_str())
        .collect();
    let Ok(scope) = TableScope::new(io, &next.location) else {
        return;
    };
    let dropped = base
        .metadata_log
        .iter()
        .map(|e| e.metadata_file.as_str())
        .filter(|file| !kept.contains(file));
    for file in dropped {
        // Only under the table location (a crafted log may name any path).
        let _ = scope.delete(file).await;
    }
}

pub(crate) use crate::io::now_ms;
