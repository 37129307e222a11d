//! Table maintenance: the one home of the work that looks after a table's snapshots, refs and
//! files rather than its rows. The SQL procedures (`crate::sql`) and the CLI's commands call
//! it; each change is a [`crate::transaction::Transaction`].
//!
//! - [`SnapshotManager`] creates, replaces and drops branches and tags, fast-forwards and rolls
//!   back, cherry-picks, and expires snapshots ([`ExpireSnapshots`]) with the deletion of the
//!   files only expired snapshots reach.
//! - [`reachable_files`] lists every file a table's metadata reaches, found from the metadata
//!   alone (used by `DROP TABLE ... PURGE` and by orphan removal).
//! - [`remove_orphan_files`] deletes the files under a table's location that no metadata
//!   reaches and that are older than a threshold: the leftovers of failed or crashed writes.
//!   [`OrphanFiles`] holds its options (threshold, dry run, location), [`OrphanReport`] says
//!   what was found and deleted.
//! - [`check_table`] verifies that every file the metadata reaches exists with its recorded
//!   size and that the recorded counts agree (`icefloe check`).
//! - [`rewrite_manifests`] merges small data manifests into manifests of a target size, as a
//!   `replace` snapshot.

mod check;
mod compaction;
mod orphans;
#[cfg(test)]
mod orphans_tests;
mod rewrite;
mod snapshots;

pub use crate::table::reachable_files;
pub use check::{CheckReport, check_table};
pub use compaction::{
    Cancel, RewriteDataFiles, RewriteDataFilesResult, RewritePositionDeletes,
    RewritePositionDeletesResult, Strategy, rewrite_data_files, rewrite_position_delete_files,
};
#[cfg(test)]
use orphans::check_same_store;
pub use orphans::{DEFAULT_ORPHAN_AGE_MS, OrphanFiles, OrphanReport, remove_orphan_files};
pub use rewrite::{RewriteReport, rewrite_manifests, rewrite_manifests_with_progress};
pub use snapshots::{BranchRetention, ExpireReport, ExpireSnapshots, Progress, SnapshotManager};
