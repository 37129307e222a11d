//! Choosing the table state to read (spec: "Snapshot References", `snapshot-log`): the current
//! snapshot, a snapshot id, a branch or tag, or the snapshot that was current at a timestamp.
//!
//! The schema rule (as Spark): reads of a snapshot id, a tag or a timestamp use that snapshot's
//! schema (`schema-id`); reads of the current snapshot or of a branch use the table's current
//! schema.
//!
//! "Current at an instant" follows the `snapshot-log` (the log is the record of what `main`
//! pointed at, rollbacks included); when the log is empty, trimmed, or names an expired
//! snapshot, it falls back to the snapshots' own timestamps along `main`'s parent chain.

#[cfg(test)]
mod tests;

use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat};

use super::metadata::TableMetadata;
use super::schema::Schema;
use super::snapshot::Snapshot;
use super::snapshot::SnapshotRetention;
use crate::error::{Error, Result};

/// Which state of a table a read sees.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SnapshotSelector {
    /// The current snapshot (`main`), with the current schema.
    #[default]
    Current,
    /// One snapshot by id, with that snapshot's schema.
    SnapshotId(i64),
    /// A branch (current schema) or a tag (the tagged snapshot's schema), by name; `main` is the
    /// current snapshot.
    Ref(String),
    /// The snapshot that was current at this instant (epoch milliseconds), with its schema.
    AsOfTimestamp(i64),
}

/// What a selector resolved to.
#[derive(Debug, Clone, Copy)]
pub struct ResolvedSnapshot<'a> {
    /// The snapshot to read; `None` for a table without snapshots (reads as empty).
    pub snapshot: Option<&'a Snapshot>,
    /// The schema rows are read with.
    pub schema: &'a Schema,
}

impl TableMetadata {
    /// Resolves a selector. Errors ([`crate::Error::NotFound`]) name what was asked: an unknown
    /// snapshot id, an unknown ref, a timestamp before the first snapshot.
    pub fn resolve(&self, selector: &SnapshotSelector) -> Result<ResolvedSnapshot<'_>> {
        let current = || ResolvedSnapshot {
            snapshot: self.current_snapshot(),
            schema: self.current_schema(),
        };
        Ok(match selector {
            SnapshotSelector::Current => current(),
            SnapshotSelector::SnapshotId(id) => self.of_snapshot(
                self.snapshot_by_id(*id)
                    .ok_or_else(|| Error::not_found(format!("snapshot {id}")))?,
            ),
            SnapshotSelector::AsOfTimestamp(ts) => self.of_snapshot(self.snapshot_as_of(*ts)?),
            SnapshotSelector::Ref(name) => {
                let reference = self
                    .refs
                    .get(name)
                    .ok_or_else(|| Error::not_found(format!("ref '{name}'")))?;
                let snapshot = self.snapshot_by_id(reference.snapshot_id).ok_or_else(|| {
                    Error::corrupt(
                        "",
                        format!(
                            "ref '{name}' points at missing snapshot {}",
                            reference.snapshot_id
                        ),
                    )
                })?;
                match reference.retention {
                    SnapshotRetention::Branch { .. } => ResolvedSnapshot {
                        snapshot: Some(snapshot),
                        schema: self.current_schema(),
                    },
                    SnapshotRetention::Tag { .. } => self.of_snapshot(snapshot),
                }
            }
        })
    }

    fn of_snapshot<'a>(&'a self, snapshot: &'a Snapshot) -> ResolvedSnapshot<'a> {
        ResolvedSnapshot {
            snapshot: Some(snapshot),
            schema: self.schema_for_snapshot(snapshot),
        }
    }

    /// The snapshot that was current at `timestamp_ms`: the last `snapshot-log` entry at or
    /// before it; when the log is absent or trimmed before that instant, the newest ancestor of
    /// `main` (following parent ids from the current snapshot) committed at or before it.
    ///
    /// A log entry naming an expired snapshot also falls back to the parent chain. An instant
    /// before the first snapshot is [`Error::NotFound`] giving both times in ISO-8601 UTC.
    pub fn snapshot_as_of(&self, timestamp_ms: i64) -> Result<&Snapshot> {
        if let Some(snapshot) = self.logged_as_of(timestamp_ms) {
            return Ok(snapshot);
        }
        self.ancestors_of_current()
            .find(|s| s.timestamp_ms <= timestamp_ms)
            .ok_or_else(|| self.nothing_as_of(timestamp_ms))
    }

    /// The snapshot of the last log entry at or before `timestamp_ms`, if it still exists.
    fn logged_as_of(&self, timestamp_ms: i64) -> Option<&Snapshot> {
        self.snapshot_log
            .iter()
            .rev()
            .find(|entry| entry.timestamp_ms <= timestamp_ms)
            .and_then(|entry| self.snapshot_by_id(entry.snapshot_id))
    }

    /// The current snapshot, then its parent, grandparent, ... while they exist (newest first).
    /// Stops at a missing (expired) parent; a cycle in broken metadata ends the walk too.
    pub fn ancestors_of_current(&self) -> impl Iterator<Item = &Snapshot> {
        self.ancestors_of(self.current_snapshot())
    }

    /// `start`, then its parent, grandparent, ... while they exist (newest first).
    pub fn ancestors_of<'a>(
        &'a self,
        start: Option<&'a Snapshot>,
    ) -> impl Iterator<Item = &'a Snapshot> {
        let mut next = start;
        let mut steps = 0;
        std::iter::from_fn(move || {
            let snapshot = next?;
            steps += 1;
            next = match snapshot.parent_snapshot_id {
                Some(parent) if steps < self.snapshots.len() => self.snapshot_by_id(parent),
                _ => None,
            };
            Some(snapshot)
        })
    }

    fn nothing_as_of(&self, timestamp_ms: i64) -> Error {
        let asked = format_timestamp_ms(timestamp_ms);
        let oldest = self.snapshots.iter().min_by_key(|s| s.timestamp_ms);
        // Expiration leaves the oldest snapshot's parent, or log entries, naming snapshots
        // that are gone: the table is older than what is left of it.
        let expired = oldest
            .and_then(|s| s.parent_snapshot_id)
            .is_some_and(|parent| self.snapshot_by_id(parent).is_none())
            || self
                .snapshot_log
                .iter()
                .any(|e| self.snapshot_by_id(e.snapshot_id).is_none());
        if let (true, Some(oldest)) = (expired, oldest) {
            return Error::not_found(format!(
                "no snapshot as of {asked}: the table's history before {} was expired; the \
                 oldest snapshot left is {}, committed then",
                format_timestamp_ms(oldest.timestamp_ms),
                oldest.snapshot_id
            ));
        }
        let first = self
            .snapshots
            .iter()
            .map(|s| s.timestamp_ms)
            .chain(self.snapshot_log.iter().map(|e| e.timestamp_ms))
            .min();
        Error::not_found(match first {
            Some(first) => format!(
                "no snapshot as of {asked} (first snapshot committed at {})",
                format_timestamp_ms(first)
            ),
            None => format!("no snapshot as of {asked} (the table has no snapshots)"),
        })
    }
}

/// Epoch milliseconds as ISO-8601 UTC (`2024-01-01T10:00:00.000Z`); out-of-range values are
/// shown as the raw number.
pub fn format_timestamp_ms(timestamp_ms: i64) -> String {
    DateTime::from_timestamp_millis(timestamp_ms).map_or_else(
        || format!("{timestamp_ms} ms"),
        |t| t.to_rfc3339_opts(SecondsFormat::Millis, true),
    )
}

/// Parses a point in time into epoch milliseconds: an integer (epoch milliseconds) or an
/// ISO-8601 date-time with or without a zone (`2024-01-01T10:00:00`, `2024-01-01 10:00:00.123`,
/// `2024-01-01T10:00:00Z`, `2024-01-01T10:00:00+02:00`) or a date (`2024-01-01`, midnight).
/// Without a zone the time is UTC. Anything else is [`Error::InvalidArgument`].
pub fn parse_timestamp_ms(s: &str) -> Result<i64> {
    let text = s.trim();
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    parse_iso_ms(text).ok_or_else(|| {
        Error::invalid(
            format_args!("'{s}'"),
            "is not a timestamp: expected epoch milliseconds or ISO-8601 such as 2024-01-01, \
             2024-01-01T10:00:00, 2024-01-01 10:00:00.123Z or 2024-01-01T10:00:00+02:00",
        )
    })
}

fn parse_iso_ms(text: &str) -> Option<i64> {
    // One layout for both separators; `Z` is the zero offset.
    let mut normalized = text.replacen(' ', "T", 1);
    if normalized.ends_with(['Z', 'z']) {
        normalized.pop();
        normalized.push_str("+00:00");
    }
    const ZONED: [&str; 2] = ["%Y-%m-%dT%H:%M:%S%.f%:z", "%Y-%m-%dT%H:%M%:z"];
    const LOCAL: [&str; 2] = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"];
    let zoned = ZONED
        .iter()
        .find_map(|f| DateTime::parse_from_str(&normalized, f).ok())
        .map(|t| t.timestamp_millis());
    let local = || {
        LOCAL
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(&normalized, f).ok())
            .or_else(|| {
                NaiveDate::parse_from_str(&normalized, "%Y-%m-%d")
                    .ok()
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
            })
            .map(|t| t.and_utc().timestamp_millis())
    };
    zoned.or_else(local)
}
