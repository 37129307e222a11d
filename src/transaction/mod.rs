//! Every change to a table is a [`Transaction`]: actions that turn into requirements and
//! updates ([`TableRequirement`], [`TableUpdate`]: the Iceberg REST commit model), committed by
//! a [`Catalog`] through one commit loop.
//!
//! ```no_run
//! # async fn example(catalog: std::sync::Arc<dyn icefloe::catalog::Catalog>) -> icefloe::Result<()> {
//! use icefloe::catalog::TableIdent;
//!
//! let ident = TableIdent::parse_dotted("db.orders")?;
//! let table = catalog
//!     .transaction(&ident)
//!     .await?
//!     .set_properties([("commit.retry.num-retries", "8")])
//!     .create_tag("audited", None, None)
//!     .commit()
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! # The commit loop
//!
//! 0. Once, before any lock: each action writes what does not depend on the version it will
//!    be stated on ([`Action::stage`]: the manifests of new data files).
//! 1. Take the local commit lock ([`FileIO::lock_commits`]), and refresh the table so the
//!    attempt builds on the newest version: cheaply the first time ([`Catalog::refresh`]),
//!    loaded again after a lost race. A table replaced under its name (another uuid) ends the
//!    commit.
//! 2. Validate each action against what changed since the transaction's base
//!    ([`Action::validate`]; a failure ends the commit: it is not a race to retry).
//! 3. Turn each action into requirements and updates on the metadata the previous actions
//!    leave ([`Action::changes`]); snapshot-making actions write their manifest list here
//!    ([`SnapshotProducer`]), reusing the manifests and data files written in step 0.
//! 4. [`Catalog::commit_table`] with every requirement (and `assert-table-uuid` of the base:
//!    a table replaced under the same name is never followed). On
//!    [`Error::CommitConflict`] wait (jittered, exponential) and go to 1, up to
//!    `commit.retry.num-retries` times.
//!
//! After success the manifest lists of lost attempts are deleted; after a final failure every
//! file the actions wrote is; after [`Error::CommitStateUnknown`] nothing is deleted (the commit
//! may have happened) and the error is returned as it is.
//!
//! A create transaction ([`Transaction::create`], on a table [`Catalog::stage_create`] staged)
//! makes the table and the actions' changes in one commit: its requirement is `assert-create`
//! alone, its updates the table's [`TableMetadata::creation_updates`] and then the actions'.
//! It is never retried: losing the race means another writer created the table
//! ([`Error::AlreadyExists`]).

mod actions;
mod partitioning;
mod producer;
mod retry;
mod row_delta;
mod schema;
mod sort_order;
mod statistics;
mod target;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

pub use actions::{
    BranchRetention, ExpireSnapshots, FastAppend, MoveBranch, RemoveRef, SetRef, UpdateProperties,
    UpgradeFormatVersion,
};
pub use partitioning::UpdateSpec;
pub use producer::SnapshotProducer;
pub use retry::RetryPolicy;
pub use row_delta::{Isolation, RowDelta};
pub use schema::{ColumnPosition, NewColumn, UpdateSchema};
pub use sort_order::ReplaceSortOrder;
pub use statistics::{SetPartitionStatistics, SetStatistics};
pub use target::WriteTarget;

use crate::catalog::{Catalog, TableIdent};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::spec::{
    ApplyContext, DataFile, SnapshotReference, TableMetadata, TableRequirement, TableUpdate,
};
use crate::table::Table;

/// How long a commit waits for the local commit lock ([`FileIO::lock_commits`]) before it
/// goes on without it.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// What an action asks of a commit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    /// What must hold of the table's current metadata.
    pub requirements: Vec<TableRequirement>,
    /// How the metadata changes.
    pub updates: Vec<TableUpdate>,
}

/// What an action may use while it turns into [`Changes`].
#[derive(Debug)]
pub struct CommitContext<'a> {
    /// The IO of the table (its relocation included).
    pub io: &'a FileIO,
    /// The table's name, for messages.
    pub table: &'a str,
    /// The time of this attempt (epoch milliseconds).
    pub now_ms: i64,
}

/// One change of a transaction.
///
/// An action is turned into [`Changes`] once per commit attempt, on the metadata as the
/// table and the transaction's earlier actions leave it. Files it writes once (data files,
/// manifests) are reused by every attempt; [`Action::written`] and [`Action::superseded`]
/// tell the commit loop what to delete after a failure or a success.
#[async_trait]
pub trait Action: std::fmt::Debug + Send + Sync {
    /// Checks that what another writer committed since `base` (the version the transaction
    /// started from) does not invalidate this action, now that the table is at `current`.
    /// An error ends the commit (it is not retried). The default accepts every change.
    fn validate(&self, base: &TableMetadata, current: &TableMetadata) -> Result<()> {
        let _ = (base, current);
        Ok(())
    }

    /// Writes, once and before the commit lock is taken, what does not depend on the
    /// version the action is finally stated on (the manifests of new data files), so that
    /// the lock is held only for what must be: `base` is the transaction's base. The default
    /// writes nothing.
    async fn stage(&mut self, context: &CommitContext<'_>, base: &TableMetadata) -> Result<()> {
        let _ = (context, base);
        Ok(())
    }

    /// The requirements and updates of this action on `current`.
    async fn changes(
        &mut self,
        context: &CommitContext<'_>,
        current: &TableMetadata,
    ) -> Result<Changes>;

    /// Every file this action wrote (deleted when the transaction fails for good).
    fn written(&self) -> Vec<String> {
        Vec::new()
    }

    /// Files written for attempts that did not commit (deleted after a success).
    fn superseded(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The conflict of a metadata change whose `what` (`schema`, `partition spec`, `sort order`)
/// another writer changed from id `before` to `after` since the change's base was read.
fn changed_since(base: &TableMetadata, what: &str, before: i32, after: i32) -> Error {
    Error::CommitConflict {
        table: base.location.clone(),
        reason: format!(
            "another writer changed the {what} ({what} {before} became {after}) since this \
             change read it; nothing was changed"
        ),
    }
}

impl dyn Catalog {
    /// A transaction on the current version of table `ident` of this catalog
    /// ([`Transaction::load`]): `catalog.transaction(&ident).await?.fast_append(files).commit()`.
    pub async fn transaction(self: &Arc<Self>, ident: &TableIdent) -> Result<Transaction> {
        Transaction::load(Arc::clone(self), ident.clone()).await
    }
}

/// A change of one table: actions committed together, atomically (see the module docs).
#[derive(Debug)]
pub struct Transaction {
    catalog: Arc<dyn Catalog>,
    ident: TableIdent,
    base: Table,
    actions: Vec<Box<dyn Action>>,
    /// Whether the commit creates the table (see [`Transaction::create`]).
    creates: bool,
}

impl Transaction {
    /// A transaction on the table's current version (refused for a moved table).
    pub async fn load(catalog: Arc<dyn Catalog>, ident: TableIdent) -> Result<Self> {
        let base = catalog.load_table(&ident).await?;
        Ok(Self::on(catalog, ident, base))
    }

    /// A transaction starting from `base`, a version of the table `ident` of `catalog` (it
    /// need not be the newest: the commit refreshes it).
    pub fn on(catalog: Arc<dyn Catalog>, ident: TableIdent, base: Table) -> Self {
        Self {
            catalog,
            ident,
            base,
            actions: Vec::new(),
            creates: false,
        }
    }

    /// A transaction that creates the table `ident` of `catalog` from `staged` (what
    /// [`Catalog::stage_create`] returned) together with its actions, in one commit (see the
    /// module docs): `CREATE TABLE ... AS SELECT` writes its data files for the staged table
    /// and commits them with the table.
    pub fn create(catalog: Arc<dyn Catalog>, ident: TableIdent, staged: Table) -> Self {
        Self {
            creates: true,
            ..Self::on(catalog, ident, staged)
        }
    }

    /// The version the transaction started from.
    pub fn base(&self) -> &Table {
        &self.base
    }

    /// The catalog.
    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        &self.catalog
    }

    /// The table's name in the catalog.
    pub fn ident(&self) -> &TableIdent {
        &self.ident
    }

    /// Adds an action.
    pub fn with_action(mut self, action: impl Action + 'static) -> Self {
        self.actions.push(Box::new(action));
        self
    }

    /// Appends data files (each with its partition spec id) to `main`.
    pub fn fast_append(self, files: Vec<(i32, DataFile)>) -> Self {
        self.with_action(FastAppend::new(files))
    }

    /// Sets table properties.
    pub fn set_properties<K: Into<String>, V: Into<String>>(
        self,
        properties: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        self.with_action(UpdateProperties::set(properties))
    }

    /// Sets and removes table properties in one change ([`UpdateProperties`]).
    pub fn update_properties(self, update: UpdateProperties) -> Self {
        self.with_action(update)
    }

    /// Evolves the current schema ([`UpdateSchema`]): a metadata-only change.
    pub fn update_schema(self, update: UpdateSchema) -> Self {
        self.with_action(update)
    }

    /// Evolves the default partition spec ([`UpdateSpec`]): a metadata-only change.
    pub fn update_spec(self, update: UpdateSpec) -> Self {
        self.with_action(update)
    }

    /// Replaces the default sort order ([`ReplaceSortOrder`]): a metadata-only change.
    pub fn replace_sort_order(self, order: ReplaceSortOrder) -> Self {
        self.with_action(order)
    }

    /// Upgrades the format version ([`UpgradeFormatVersion`]).
    pub fn upgrade_format_version(self, version: crate::spec::FormatVersion) -> Self {
        self.with_action(UpgradeFormatVersion::to(version))
    }

    /// Removes table properties.
    pub fn remove_properties<K: Into<String>>(self, keys: impl IntoIterator<Item = K>) -> Self {
        self.with_action(UpdateProperties::remove(keys))
    }

    /// Creates tag `name` at `snapshot_id` (default: the current snapshot).
    pub fn create_tag(
        self,
        name: impl Into<String>,
        snapshot_id: Option<i64>,
        max_ref_age_ms: Option<i64>,
    ) -> Self {
        self.with_action(SetRef::create_tag(name, snapshot_id, max_ref_age_ms))
    }

    /// Commits every action (see the module docs) and returns the committed version.
    ///
    /// Errors: [`Error::CommitConflict`] when every attempt lost its race;
    /// [`Error::CommitStateUnknown`] when the outcome of an attempt cannot be known (nothing
    /// is deleted then); an action's error; the catalog's.
    pub async fn commit(mut self) -> Result<Table> {
        let result = self.commit_loop().await;
        match &result {
            Ok(_) => delete_all(self.base.io(), &self.superseded()).await,
            Err(Error::CommitStateUnknown { .. }) => {}
            Err(_) => delete_all(self.base.io(), &self.written()).await,
        }
        result
    }

    async fn commit_loop(&mut self) -> Result<Table> {
        if self.creates {
            return self.commit_create().await;
        }
        let start = Arc::clone(self.base.metadata());
        let policy = RetryPolicy::of(&start)?;
        self.stage(&start).await?;
        let mut current = self.base.clone();
        let mut attempt = 0;
        loop {
            let lock = self
                .base
                .io()
                .lock_commits(&start.location, LOCK_WAIT)
                .await;
            let result = match self.attempt(&start, &mut current, attempt > 0).await {
                Ok(changes) => {
                    let (requirements, updates) = changes;
                    self.catalog
                        .commit_table(&self.ident, &requirements, &updates)
                        .await
                }
                Err(e) => {
                    drop(lock);
                    return Err(e);
                }
            };
            drop(lock);
            match result {
                Err(Error::CommitConflict { .. }) if attempt < policy.retries => {
                    tokio::time::sleep(policy.jittered_wait(attempt)).await;
                    attempt += 1;
                }
                Err(Error::CommitConflict { reason, .. }) if attempt > 0 => {
                    return Err(policy.exhausted(&self.ident.to_string(), attempt, &reason));
                }
                other => return other,
            }
        }
    }

    /// The first steps of an attempt: refresh (cheaply the first time; after a lost race the
    /// table is loaded again), validate, turn the actions into requirements and updates. An
    /// error here ends the commit (it is not a lost race).
    async fn attempt(
        &mut self,
        start: &TableMetadata,
        current: &mut Table,
        reload: bool,
    ) -> Result<(Vec<TableRequirement>, Vec<TableUpdate>)> {
        if reload {
            *current = self.catalog.load_table(&self.ident).await?;
        } else if let Some(fresh) = self.catalog.refresh(&self.ident, current).await? {
            *current = fresh;
        }
        current.ensure_writable()?;
        let metadata = Arc::clone(current.metadata());
        if metadata.table_uuid != start.table_uuid {
            return Err(Error::invalid(
                format!("table {}", self.ident),
                format!(
                    "it was replaced by another table (uuid {} where the transaction began \
                     with {})",
                    metadata.table_uuid.as_deref().unwrap_or("none"),
                    start.table_uuid.as_deref().unwrap_or("none")
                ),
            ));
        }
        for action in &self.actions {
            action.validate(start, &metadata)?;
        }
        let name = self.ident.to_string();
        let context = CommitContext {
            io: current.io(),
            table: &name,
            now_ms: crate::catalog::now_ms(),
        };
        let mut requirements: Vec<TableRequirement> = start
            .table_uuid
            .iter()
            .map(|uuid| TableRequirement::AssertTableUuid { uuid: uuid.clone() })
            .collect();
        let mut updates = Vec::new();
        // What the earlier actions made of the table (only cloned when there are several).
        let mut preview = std::borrow::Cow::Borrowed(metadata.as_ref());
        let last = self.actions.len().saturating_sub(1);
        for (i, action) in self.actions.iter_mut().enumerate() {
            let changes = action.changes(&context, &preview).await?;
            if i < last {
                let next = preview.apply(&changes.updates, &ApplyContext::new(context.now_ms))?;
                preview = std::borrow::Cow::Owned(next);
            }
            requirements.extend(changes.requirements);
            updates.extend(changes.updates);
        }
        Ok((first_of_each(requirements), updates))
    }

    /// Step 0 of the commit loop: each action writes what does not depend on the version it
    /// will be stated on.
    async fn stage(&mut self, start: &TableMetadata) -> Result<()> {
        let name = self.ident.to_string();
        let context = CommitContext {
            io: self.base.io(),
            table: &name,
            now_ms: crate::catalog::now_ms(),
        };
        for action in &mut self.actions {
            action.stage(&context, start).await?;
        }
        Ok(())
    }

    /// The one attempt of a create transaction.
    async fn commit_create(&mut self) -> Result<Table> {
        let staged = Arc::clone(self.base.metadata());
        // Not retried, but a table whose retry settings are unreadable is refused as every
        // later commit to it would be.
        RetryPolicy::of(&staged)?;
        self.stage(&staged).await?;
        let name = self.ident.to_string();
        let context = CommitContext {
            io: self.base.io(),
            table: &name,
            now_ms: crate::catalog::now_ms(),
        };
        let mut updates = staged.creation_updates();
        let mut preview = staged.as_ref().clone();
        for action in &mut self.actions {
            let changes = action.changes(&context, &preview).await?;
            preview = preview.apply(&changes.updates, &ApplyContext::new(context.now_ms))?;
            updates.extend(changes.updates);
        }
        let created = self
            .catalog
            .commit_table(&self.ident, &[TableRequirement::AssertCreate], &updates)
            .await;
        match created {
            Err(Error::CommitConflict { .. }) => Err(Error::AlreadyExists {
                what: format!("table {} (created by another writer first)", self.ident),
            }),
            other => other,
        }
    }

    fn written(&self) -> Vec<String> {
        self.actions.iter().flat_map(|a| a.written()).collect()
    }

    fn superseded(&self) -> Vec<String> {
        self.actions.iter().flat_map(|a| a.superseded()).collect()
    }
}

/// The requirements without repeats of one kind (and ref): the first of each is the one
/// stated against the table's current metadata, later ones against what earlier actions of
/// the transaction made of it.
fn first_of_each(requirements: Vec<TableRequirement>) -> Vec<TableRequirement> {
    let mut seen = BTreeSet::new();
    requirements
        .into_iter()
        .filter(|r| seen.insert(requirement_key(r)))
        .collect()
}

fn requirement_key(requirement: &TableRequirement) -> String {
    match requirement {
        TableRequirement::AssertRefSnapshotId { ref_name, .. } => format!("ref {ref_name}"),
        other => format!("{:?}", std::mem::discriminant(other)),
    }
}

/// The requirement that ref `name` is still where `metadata` has it (absent when it has none).
pub(crate) fn ref_unchanged(metadata: &TableMetadata, name: &str) -> TableRequirement {
    TableRequirement::AssertRefSnapshotId {
        ref_name: name.to_string(),
        snapshot_id: metadata.refs.get(name).map(|r| r.snapshot_id),
    }
}

/// The update pointing ref `name` at `reference`.
pub(crate) fn set_ref(name: &str, reference: &SnapshotReference) -> TableUpdate {
    TableUpdate::SetSnapshotRef {
        ref_name: name.to_string(),
        reference: reference.clone(),
    }
}

/// Deletes files (best effort: they are unreferenced either way).
pub(crate) async fn delete_all(io: &FileIO, paths: &[String]) {
    for path in paths {
        let _ = io.delete(path).await;
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
