//! Appending data files to a table in one call: a [`Transaction`] with one [`FastAppend`]
//! (see [`crate::transaction`] for the commit loop, retries and cleanup).

use std::collections::BTreeMap;

use crate::error::Result;
use crate::spec::DataFile;
use crate::table::Table;
use crate::transaction::{FastAppend, Transaction, WriteTarget};

/// What an append commits: data files with the partition spec they were written for.
#[derive(Debug, Clone)]
pub struct AppendFiles {
    /// The files, each with its partition spec id.
    pub files: Vec<(i32, DataFile)>,
    /// The branch to commit to (`main` for the table's current state).
    pub branch: String,
    /// Extra snapshot-summary properties (a cherry-pick's `source-snapshot-id`).
    pub summary_properties: BTreeMap<String, String>,
}

impl AppendFiles {
    /// An append of `files` to `main`.
    pub fn new(files: Vec<(i32, DataFile)>) -> Self {
        Self {
            files,
            branch: "main".to_string(),
            summary_properties: BTreeMap::new(),
        }
    }

    /// The transaction action.
    pub fn into_action(self) -> FastAppend {
        let mut action = FastAppend::new(self.files).to_branch(self.branch);
        for (key, value) in self.summary_properties {
            action = action.with_summary_property(key, value);
        }
        action
    }
}

/// Appends `append` to the table `target` names (its current version) and returns the table
/// as committed. The data files are the caller's: they are not deleted when the commit fails.
///
/// Errors: those of [`Transaction::commit`].
pub async fn append(target: &WriteTarget, append: AppendFiles) -> Result<Table> {
    append_to(target.begin().await?, append).await
}

/// [`append`] on a transaction already begun.
pub async fn append_to(transaction: Transaction, append: AppendFiles) -> Result<Table> {
    transaction.with_action(append.into_action()).commit().await
}
