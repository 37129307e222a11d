//! Choosing the table state to read (spec: "Snapshot References", `snapshot-log`): the current
//! snapshot, a snapshot id, a branch or tag, or the snapshot that was current at a timestamp.
//!
//! The schema rule (as Spark): reads of a snapshot id, a tag or a timestamp use that snapshot's
//! schema (`schema-id`); reads of the current snapshot or of a branch use the table's current
//! schema.
//!
//! SKELETON: types and signatures are the contract; bodies are filled in by the owner.

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
                        format!("ref '{name}' points at missing snapshot {}", reference.snapshot_id),
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
    pub fn snapshot_as_of(&self, timestamp_ms: i64) -> Result<&Snapshot> {
        todo!("{timestamp_ms}")
    }
}
