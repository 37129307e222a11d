//! [`IcebergTableProvider`]: a DataFusion `TableProvider` over one snapshot of an Iceberg table.

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::Result as DFResult;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

use crate::dml::{RowChange, RowChangeKind, RowChangeSink};
use crate::error::{Error, Result};
use crate::expr::Predicate;
use crate::expr::convert::{convert, convert_filters};
use crate::io::{FileIO, StorageProperties};
use crate::scan::count::{RowCountExec, live_rows_from_list};
use crate::scan::exec::{ScanInput, build_exec};
use crate::scan::plan::{Pruner, plan_scan};
use crate::scan::{
    FileScanTask, IncrementalRange, PlanStats, ScanPlan, plan_incremental_files, read_manifest_list,
};
use crate::spec::{Literal, PrimitiveType, Transform, Type};
use crate::spec::{Schema, Snapshot, SnapshotSelector};
use crate::table::{Table, TableOptions};
use crate::to_arrow::schema_to_arrow;
use crate::write::{
    IcebergSink, IcefloeOptions, OverwriteMode, WriteTarget, sink_input, write_ordering,
};

/// A DataFusion table over one snapshot (by default the current one) of an Iceberg table, or
/// over the rows appended between two snapshots ([`IcebergTableProvider::incremental`]).
///
/// The schema is the table's current schema when reading the current snapshot or a branch,
/// and the snapshot's own schema (`schema-id`) when reading a snapshot id, a tag or a
/// timestamp. Scans plan the snapshot's live data files from metadata and read them with
/// DataFusion's Parquet reader, matching columns by field id.
///
/// `INSERT INTO` (DataFusion's `insert_into`) appends to the current state (`main`) or to the
/// branch the provider reads, once the provider knows where the table's pointer lives
/// ([`IcebergTableProvider::with_write_target`]; [`IcebergTableProvider::open`] sets it). After
/// a commit the provider, and its clones, read the committed table; providers of a tag, a
/// snapshot id or a timestamp stay fixed and refuse INSERT.
#[derive(Debug, Clone)]
pub struct IcebergTableProvider {
    /// The table as this provider last saw it: the state loaded, then each of its commits.
    table: Arc<RwLock<Table>>,
    selector: SnapshotSelector,
    read: ReadKind,
    schema: Arc<Schema>,
    arrow_schema: SchemaRef,
    write_target: Option<WriteTarget>,
    /// Why this provider is not written, when it was made where writes cannot happen (a table
    /// that travelled in a logical plan): said instead of the missing write target.
    unwritable: Option<Arc<str>>,
    /// Whether scans also yield `_file` and `_pos` ([`Self::with_row_ids`]).
    row_ids: bool,
    /// What the scans with row identities planned, for the statement reading them.
    row_scans: Option<Arc<RowScans>>,
    /// The v3 `write-default` of each top-level column that has one: what an INSERT that
    /// leaves the column out writes.
    defaults: Arc<HashMap<String, Expr>>,
}

/// What the scans of a provider with row identities ([`IcebergTableProvider::with_row_ids`])
/// planned, kept for the row-level statement that reads it: its sink then knows the tasks of
/// the files it changes without planning again.
#[derive(Debug, Default)]
pub(crate) struct RowScans {
    /// Data files every row of which this matches (by their metrics) are not read but listed
    /// as whole: a DELETE's whole condition.
    drop_whole: Option<Predicate>,
    planned: std::sync::Mutex<Option<PlannedRows>>,
}

/// The files the last scan with row identities planned.
#[derive(Debug, Default, Clone)]
pub(crate) struct PlannedRows {
    /// The tasks it reads.
    pub(crate) scanned: Vec<FileScanTask>,
    /// The tasks it left out because every row matches [`RowScans::drop_whole`] (none have
    /// equality deletes).
    pub(crate) whole: Vec<FileScanTask>,
}

/// What a scan plans.
#[derive(Debug, Clone)]
enum ReadKind {
    /// Every live data file of the head of a branch (`main` for the current state), moving
    /// with this provider's commits (no snapshot: the table reads as empty).
    Head(String),
    /// Every live data file of a snapshot (`None`: the table has no snapshot, reads as empty).
    Snapshot(Option<i64>),
    /// The data files the snapshots of a range appended.
    Incremental(IncrementalRange),
}

impl IcebergTableProvider {
    /// Opens the table at `location` (a metadata file or a table directory), reading objects
    /// through the stores registered in `ctx`.
    ///
    /// INSERTs commit to that location as a directory table ([`WriteTarget::directory`]: the
    /// next `vN.metadata.json`; a metadata file outside a `metadata/` directory is read-only);
    /// for a table of a catalog, build the provider with
    /// [`IcebergTableProvider::with_write_target`] and [`WriteTarget::new`] instead.
    pub async fn open(ctx: &SessionContext, location: &str, options: TableOptions) -> Result<Self> {
        let session = StorageProperties::of_session(ctx.state().config());
        let options = TableOptions {
            storage: session.merged(&options.storage),
            ..options
        };
        Self::open_with_runtime(ctx.runtime_env(), location, options).await
    }

    /// [`IcebergTableProvider::open`] with the object stores of `runtime`, for a table opened
    /// before (or while) its session is built; register it in a session using that runtime.
    pub async fn open_with_runtime(
        runtime: Arc<RuntimeEnv>,
        location: &str,
        options: TableOptions,
    ) -> Result<Self> {
        let io = FileIO::new(runtime, options.relocation.clone()).with_storage(options.storage);
        let target = WriteTarget::directory(&io, location).ok();
        let table = Table::load(io, location).await?;
        let provider = Self::try_new(table, options.snapshot)?;
        Ok(match target {
            Some(target) => provider.with_write_target(target),
            None => provider,
        })
    }

    /// A provider over a loaded table, at the state `selector` names (see
    /// [`SnapshotSelector`] for which schema each kind of read uses).
    pub fn try_new(table: Table, selector: SnapshotSelector) -> Result<Self> {
        let resolved = table
            .metadata()
            .resolve(&selector)
            .map_err(|e| in_table(e, &table))?;
        let read = match &selector {
            SnapshotSelector::Current => ReadKind::Head("main".to_string()),
            SnapshotSelector::Ref(name)
                if table
                    .metadata()
                    .refs
                    .get(name)
                    .is_some_and(|r| r.is_branch()) =>
            {
                ReadKind::Head(name.clone())
            }
            _ => ReadKind::Snapshot(resolved.snapshot.map(|s| s.snapshot_id)),
        };
        let schema = resolved.schema.clone();
        Self::with_read(table, selector, read, schema)
    }

    fn with_read(
        table: Table,
        selector: SnapshotSelector,
        read: ReadKind,
        schema: Schema,
    ) -> Result<Self> {
        let arrow_schema = Arc::new(schema_to_arrow(&schema)?);
        let defaults = write_defaults(&schema)?;
        Ok(Self {
            table: Arc::new(RwLock::new(table)),
            selector,
            read,
            schema: Arc::new(schema),
            arrow_schema,
            write_target: None,
            unwritable: None,
            row_ids: false,
            row_scans: None,
            defaults: Arc::new(defaults),
        })
    }

    /// This provider with each row's identity after the table's columns: `_file` (its data
    /// file's path, dictionary-encoded) and `_pos` (its position in that file), Iceberg's
    /// metadata columns. Row-level changes (DELETE, UPDATE, MERGE) read their target this way.
    ///
    /// Errors: a table with a column of one of those names.
    pub fn with_row_ids(&self) -> Result<Self> {
        use crate::scan::exec::{FILE_COLUMN, POS_COLUMN, with_row_id_fields};
        if let Some(clash) = self
            .schema
            .columns()
            .iter()
            .find(|c| c.name == FILE_COLUMN || c.name == POS_COLUMN)
        {
            return Err(Error::Unsupported(format!(
                "row-level changes to a table with a column named '{}' (the name of an \
                 Iceberg metadata column)",
                clash.name
            )));
        }
        let mut with = self.clone();
        // A fixed view: the statement's rows and its commit are stated on this version.
        with.table = Arc::new(RwLock::new(self.table()));
        with.row_ids = true;
        with.row_scans = Some(Arc::default());
        with.arrow_schema = Arc::new(with_row_id_fields(&self.arrow_schema));
        Ok(with)
    }

    /// This provider (one with row identities) with its scans leaving out the data files every
    /// row of which matches `predicate` by their metrics (and that have no equality deletes):
    /// they are listed in [`Self::planned_rows`] as whole instead. For a DELETE whose whole
    /// condition is `predicate`, which drops those files without reading them.
    pub(crate) fn dropping_whole_files(mut self, predicate: Predicate) -> Self {
        if self.row_ids {
            self.row_scans = Some(Arc::new(RowScans {
                drop_whole: Some(predicate),
                planned: Default::default(),
            }));
        }
        self
    }

    /// What the last scan of this provider (one with row identities) planned.
    pub(crate) fn planned_rows(&self) -> Option<PlannedRows> {
        let scans = self.row_scans.as_ref()?;
        scans.planned.lock().ok()?.clone()
    }

    /// Whether scans yield the row-identity columns ([`Self::with_row_ids`]).
    pub fn has_row_ids(&self) -> bool {
        self.row_ids
    }

    /// The same table at another state (no IO: the metadata is already loaded), with the same
    /// write target. The two share the table as last seen: a commit through either (an
    /// `INSERT INTO t.branch_x`) moves both.
    pub fn at(&self, selector: SnapshotSelector) -> Result<Self> {
        let mut at = Self::try_new(self.table(), selector)?;
        at.write_target = self.write_target.clone();
        at.unwritable = self.unwritable.clone();
        at.table = Arc::clone(&self.table);
        Ok(at)
    }

    /// Moves this provider (and the providers made from it with [`Self::at`]) to the table's
    /// current version when another writer committed since it last looked. Cheap when nothing
    /// changed: the catalog's [`refresh`](crate::catalog::Catalog::refresh) (for a table
    /// directory, one existence check of the next `vN.metadata.json` per naming). Providers
    /// without a write target, and those of a fixed state (a tag, a snapshot id, a time, an
    /// incremental range), stay as they are.
    ///
    /// DataFusion looks each table up for every statement, so icefloe's schema providers call
    /// this there: a session sees other processes' commits in its next statement.
    ///
    /// Errors: those of loading the table's current version.
    pub async fn refresh(&self) -> Result<()> {
        let (Some(target), ReadKind::Head(_)) = (&self.write_target, &self.read) else {
            return Ok(());
        };
        let known = self.table();
        let fresh = match target.catalog().refresh(target.ident(), &known).await {
            Ok(fresh) => fresh,
            // The strict check of a commit refused something a read may pass over (an
            // unreadable version beyond the current one): load as a reader does.
            Err(_) => Some(target.catalog().load_table(target.ident()).await?),
        };
        if let Some(fresh) = fresh {
            advance(&self.table, &fresh);
        }
        Ok(())
    }

    /// This provider committing INSERTs to `target` (where the table's metadata pointer
    /// lives: its directory, or its SQLite catalog row). Without a target, INSERT is refused.
    pub fn with_write_target(mut self, target: WriteTarget) -> Self {
        self.write_target = Some(target);
        self
    }

    /// Where INSERTs commit (`None`: the provider is read-only).
    pub fn write_target(&self) -> Option<&WriteTarget> {
        self.write_target.as_ref()
    }

    /// The rows appended after snapshot `from_exclusive` up to and including the snapshot `to`
    /// names (the current snapshot, a snapshot id, or a branch), on one branch's history.
    ///
    /// Only `append` snapshots can be read incrementally: any other operation between the two
    /// is an error naming that snapshot; so is a `from` that is not an ancestor of `to`, and a
    /// tag given where a branch is needed. Rows are read with the current schema. `from == to`
    /// reads no rows. A timestamp `to` means the snapshot current at that instant.
    ///
    /// Errors: an unknown snapshot or ref is [`Error::NotFound`]; a tag, a `from` that is not
    /// an ancestor of `to`, and a non-append snapshot in between are
    /// [`Error::InvalidArgument`]. Each names the table.
    pub fn incremental(table: Table, from_exclusive: i64, to: SnapshotSelector) -> Result<Self> {
        let metadata = table.metadata();
        let range =
            IncrementalRange::resolve(metadata, table.metadata_location(), from_exclusive, &to)?;
        let schema = metadata.current_schema().clone();
        Self::with_read(table, to, ReadKind::Incremental(range), schema)
    }

    /// The selector this provider was made with.
    pub fn selector(&self) -> &SnapshotSelector {
        &self.selector
    }

    /// The table this provider reads: as loaded, or as its last INSERT committed it.
    pub fn table(&self) -> Table {
        match self.table.read() {
            Ok(table) => table.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The snapshot this provider reads (`None`: the table has no snapshot yet); for an
    /// incremental read, the last snapshot of the range.
    pub fn snapshot_id(&self) -> Option<i64> {
        self.snapshot_in(&self.table()).ok().flatten()
    }

    /// The snapshot a scan of `table` (this provider's table) reads.
    fn snapshot_in(&self, table: &Table) -> Result<Option<i64>> {
        match &self.read {
            ReadKind::Head(_) => Ok(table
                .metadata()
                .resolve(&self.selector)
                .map_err(|e| in_table(e, table))?
                .snapshot
                .map(|s| s.snapshot_id)),
            ReadKind::Snapshot(id) => Ok(*id),
            ReadKind::Incremental(range) => Ok(Some(range.to)),
        }
    }

    /// The snapshots an incremental read covers (`None` for a snapshot read).
    pub fn incremental_range(&self) -> Option<&IncrementalRange> {
        match &self.read {
            ReadKind::Head(_) | ReadKind::Snapshot(_) => None,
            ReadKind::Incremental(range) => Some(range),
        }
    }

    /// The data files a scan reads, planned from metadata.
    pub async fn plan_files(&self) -> Result<Vec<FileScanTask>> {
        Ok(self.plan(Predicate::AlwaysTrue).await?.tasks)
    }

    /// The scan of the rows that may match `filter` (over the read schema), planned from
    /// metadata: the data files left after pruning, and what was pruned.
    pub async fn plan(&self, filter: Predicate) -> Result<ScanPlan> {
        self.plan_in(&self.table(), filter).await
    }

    async fn plan_in(&self, table: &Table, filter: Predicate) -> Result<ScanPlan> {
        let metadata = table.metadata();
        let io = table.io();
        match &self.read {
            ReadKind::Head(_) | ReadKind::Snapshot(_) => {
                let Some(id) = self.snapshot_in(table)? else {
                    return Ok(ScanPlan::default());
                };
                let snapshot = snapshot(table, id)?;
                let pruner = Pruner::new(metadata, &self.schema, filter);
                plan_scan(io, metadata, snapshot, &pruner)
                    .await
                    .map_err(|e| in_table(e, table))
            }
            ReadKind::Incremental(range) => {
                let started = std::time::Instant::now();
                let all = plan_incremental_files(io, metadata, range)
                    .await
                    .map_err(|e| in_table(e, table))?;
                let total = all.len();
                // The same stage-2 pruning as a snapshot scan (exact for identity partitions,
                // which `supports_filters_pushdown` relies on).
                let pruner = Pruner::new(metadata, &self.schema, filter);
                let tasks: Vec<FileScanTask> = all
                    .into_iter()
                    .filter(|t| {
                        pruner.partition_may_match(t.partition_spec_id, &t.data_file)
                            && pruner.metrics_may_match(&t.data_file)
                    })
                    .collect();
                let stats = PlanStats {
                    data_files_total: total,
                    data_files_scanned: tasks.len(),
                    bytes_scanned: tasks
                        .iter()
                        .map(|t| u64::try_from(t.data_file.file_size_in_bytes).unwrap_or(0))
                        .sum(),
                    planning_time: started.elapsed(),
                    ..PlanStats::default()
                };
                Ok(ScanPlan { tasks, stats })
            }
        }
    }

    /// A scan of rows without columns and without filters (`SELECT count(*) FROM t`) answered
    /// from the manifest list alone, when its counts are exact (see [`live_rows_from_list`]);
    /// `None` otherwise, and for incremental reads.
    async fn count_only(
        &self,
        table: &Table,
        limit: Option<usize>,
    ) -> Result<Option<RowCountExec>> {
        if matches!(self.read, ReadKind::Incremental(_)) {
            return Ok(None);
        }
        let Some(id) = self.snapshot_in(table)? else {
            return Ok(None);
        };
        let started = std::time::Instant::now();
        let manifests = read_manifest_list(table.io(), table.metadata(), snapshot(table, id)?)
            .await
            .map_err(|e| in_table(e, table))?;
        let Some((rows, files)) = live_rows_from_list(&manifests) else {
            return Ok(None);
        };
        let rows = usize::try_from(rows).unwrap_or(usize::MAX);
        let stats = PlanStats {
            manifests_total: manifests.len(),
            data_files_total: files,
            planning_time: started.elapsed(),
            ..PlanStats::default()
        };
        let rows = limit.map_or(rows, |limit| rows.min(limit));
        Ok(Some(RowCountExec::rows(rows, &stats)))
    }

    /// The distinct counts table statistics give the columns of a scan of `table` (none for
    /// incremental reads and scans with row identities; see [`crate::statistics`]).
    async fn distinct_counts(&self, table: &Table) -> Result<Vec<Precision<usize>>> {
        if self.row_ids || table.metadata().statistics.is_empty() {
            return Ok(Vec::new());
        }
        Ok(match (&self.read, self.snapshot_in(table)?) {
            (ReadKind::Head(_) | ReadKind::Snapshot(_), Some(id)) => {
                crate::statistics::ndv::distinct_counts(table, id, &self.schema).await
            }
            _ => Vec::new(),
        })
    }

    /// The Iceberg schema rows are read with.
    pub fn iceberg_schema(&self) -> &Schema {
        &self.schema
    }
}

#[async_trait]
impl TableProvider for IcebergTableProvider {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.arrow_schema)
    }

    fn get_column_default(&self, column: &str) -> Option<&Expr> {
        self.defaults.get(column)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DFResult<Vec<TableProviderFilterPushDown>> {
        // A filter on columns that every partition spec of the table partitions by identity is
        // decided exactly by the partition tuples during planning (a file's rows all carry its
        // partition value), so DataFusion need not apply it again. Every other filter prunes
        // manifests, files, row groups and pages, and DataFusion still applies it to the rows.
        Ok(filters
            .iter()
            .map(|f| match self.decided_by_partitions(f) {
                true => TableProviderFilterPushDown::Exact,
                false => TableProviderFilterPushDown::Inexact,
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let table = self.table();
        if filters.is_empty()
            && projection.is_some_and(Vec::is_empty)
            && let Some(exec) = self.count_only(&table, limit).await?
        {
            return Ok(Arc::new(exec));
        }
        let (filter, _) = convert_filters(filters, &self.schema);
        let mut plan = self.plan_in(&table, filter).await?;
        // With a limit, no filter left for DataFusion to apply and no deletes, record counts
        // are row counts: files past the limit need not be opened.
        let residual = filters.iter().any(|f| !self.decided_by_partitions(f));
        if let Some(limit) = limit.filter(|_| !residual) {
            keep_files_for_limit(&mut plan.tasks, limit);
            plan.stats.data_files_scanned = plan.tasks.len();
        }
        if let Some(scans) = &self.row_scans {
            let whole: Vec<FileScanTask>;
            (whole, plan.tasks) = match &scans.drop_whole {
                Some(p) => plan.tasks.into_iter().partition(|t| {
                    !t.deletes
                        .iter()
                        .any(|d| d.file.content == crate::spec::DataContentType::EqualityDeletes)
                        && crate::expr::eval::metrics::file_all_match(p, &t.data_file)
                }),
                None => (Vec::new(), plan.tasks),
            };
            plan.stats.data_files_scanned = plan.tasks.len();
            if let Ok(mut planned) = scans.planned.lock() {
                *planned = Some(PlannedRows {
                    scanned: plan.tasks.clone(),
                    whole,
                });
            }
        }
        let distinct_counts = self.distinct_counts(&table).await?;
        let input = ScanInput {
            table: &table,
            schema: &self.schema,
            arrow_schema: self.read_arrow_schema()?,
            tasks: plan.tasks,
            stats: plan.stats,
            row_ids: self.row_ids,
            distinct_counts,
        };
        // Filters on the row-identity columns are left to DataFusion (they prune nothing).
        let filters: Vec<Expr> = filters
            .iter()
            .filter(|f| !self.row_ids || !refers_to_row_ids(f))
            .cloned()
            .collect();
        build_exec(state, input, projection, &filters, limit).await
    }

    /// `INSERT INTO`: a [`DataSinkExec`] whose [`IcebergSink`] streams the rows into data
    /// files and commits one fast append to the branch this provider reads (`main` for the
    /// current state), then moves this provider to the committed table. `INSERT OVERWRITE`
    /// commits the new files in an `overwrite` snapshot that removes every live file of the
    /// branch, or with `SET icefloe.overwrite_mode = 'dynamic'` those of the partitions the
    /// new rows fall in.
    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let mut sink = self.sink(input.schema(), insert_op)?;
        let ordering = write_ordering(state, self.table().metadata(), &input.schema())?;
        let (ordering, order_id) = ordering.unzip();
        let input = sink_input(input, ordering.as_ref())?;
        sink = sink.with_sort_order_id(order_id);
        if insert_op == InsertOp::Overwrite {
            let mode = match state.config_options().extensions.get::<IcefloeOptions>() {
                Some(options) => options.overwrite()?,
                None => OverwriteMode::Static,
            };
            sink = sink.with_overwrite(mode);
        }
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), ordering)))
    }

    /// `DELETE` is planned by icefloe's analyzer rule (`icefloe::sql::register`), which hands
    /// the statement's whole input to the table; this hook is refused: DataFusion 55 passes it
    /// an incomplete condition for `IN` / `EXISTS` subqueries and folded predicates
    /// (apache/datafusion#24654), and deleting by it could delete every row.
    async fn delete_from(
        &self,
        _state: &dyn Session,
        _filters: Vec<Expr>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        Err(self.unplanned(RowChangeKind::Delete).into())
    }

    /// Refused as [`Self::delete_from`] is: UPDATE is planned by icefloe's analyzer rule.
    async fn update(
        &self,
        _state: &dyn Session,
        _assignments: Vec<(String, Expr)>,
        _filters: Vec<Expr>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        Err(self.unplanned(RowChangeKind::Update).into())
    }

    /// `TRUNCATE TABLE`: one `delete` snapshot removing every data and delete file of the
    /// branch, decided from metadata alone (no data file is read); the count is the rows
    /// removed. Runs when the plan executes.
    async fn truncate(&self, _state: &dyn Session) -> DFResult<Arc<dyn ExecutionPlan>> {
        let table = self.table();
        let mut change = self.row_change(RowChangeKind::Truncate, table.clone())?;
        change.whole_files = self.plan_in(&table, Predicate::AlwaysTrue).await?.tasks;
        let schema: SchemaRef = Arc::new(datafusion::arrow::datatypes::Schema::empty());
        let input = Arc::new(datafusion::physical_plan::empty::EmptyExec::new(
            Arc::clone(&schema),
        ));
        let sink = RowChangeSink::new(change, schema);
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}

impl IcebergTableProvider {
    /// The error of a row-level hook DataFusion called directly (see [`Self::delete_from`]).
    fn unplanned(&self, kind: RowChangeKind) -> Error {
        let name = match &self.write_target {
            Some(target) => target.name().to_string(),
            None => self.table().metadata_location().to_string(),
        };
        Error::Unsupported(format!(
            "{} on Iceberg table {name} without icefloe's planning: call \
             icefloe::sql::register(&ctx) on the session first (DataFusion 55 hands table \
             providers an incomplete condition for some statements, apache/datafusion#24654, \
             so icefloe does not change rows from it)",
            kind.statement()
        ))
    }

    /// The branch a write to this provider goes to: the head it reads (`main` for the current
    /// state); tags, snapshot ids, timestamps and incremental reads are refused.
    pub fn write_branch(&self, statement: &str) -> Result<String> {
        let name = match &self.write_target {
            Some(target) => target.name().to_string(),
            None => self.table().metadata_location().to_string(),
        };
        match &self.read {
            ReadKind::Head(branch) => Ok(branch.clone()),
            ReadKind::Snapshot(_) => Err(Error::invalid(
                format_args!("table {name} at {}", describe(&self.selector)),
                format_args!(
                    "cannot be written by {statement}: only the current state or a branch can \
                     be written"
                ),
            )),
            ReadKind::Incremental(_) => Err(Error::invalid(
                format_args!("incremental read of table {name}"),
                format_args!("cannot be written by {statement}"),
            )),
        }
    }

    /// This provider refusing every write with `why` (it has no write target: it was made
    /// where a commit cannot happen).
    #[cfg(feature = "distributed")]
    pub(crate) fn refusing_writes(mut self, why: &str) -> Self {
        self.unwritable = Some(Arc::from(why));
        self
    }

    /// The error of a write (`what`: the statement and its table) to this provider, which has
    /// no write target.
    fn no_write_target(&self, what: String) -> Error {
        Error::Unsupported(match &self.unwritable {
            Some(why) => format!("{what}: {why}"),
            None => format!(
                "{what}: this provider does not know where the table's metadata pointer lives \
                 (build it with IcebergTableProvider::with_write_target)"
            ),
        })
    }

    /// A row-level change of this provider's table (its branch, write target and schema) on
    /// `table`, the version the statement reads; after its commit this provider (and those
    /// sharing its table) moves to the committed version. Refused for read-only providers,
    /// tags, snapshot ids, timestamps and moved tables.
    pub fn row_change(&self, kind: RowChangeKind, table: Table) -> Result<RowChange> {
        let statement = kind.statement();
        let branch = self.write_branch(statement)?;
        table.ensure_writable()?;
        let target = self.write_target.clone().ok_or_else(|| {
            let what = format!("{statement} on table {}", table.metadata_location());
            self.no_write_target(what)
        })?;
        let base_snapshot = table.metadata().branch_head(&branch);
        let lock = Arc::clone(&self.table);
        let follow = Arc::new(move |committed: &Table| advance(&lock, committed));
        Ok(RowChange {
            kind,
            table,
            schema: self.schema.as_ref().clone(),
            target,
            branch,
            base_snapshot,
            condition: None,
            whole_files: Vec::new(),
            whole_partitions: false,
            scanned_files: None,
            on_commit: Some(follow),
        })
    }
}

/// Whether `filter` reads `_file` or `_pos`.
fn refers_to_row_ids(filter: &Expr) -> bool {
    use crate::scan::exec::{FILE_COLUMN, POS_COLUMN};
    filter
        .column_refs()
        .iter()
        .any(|c| c.name == FILE_COLUMN || c.name == POS_COLUMN)
}

impl IcebergTableProvider {
    /// The Arrow schema of the table's columns (without the row-identity columns).
    fn read_arrow_schema(&self) -> Result<SchemaRef> {
        match self.row_ids {
            false => Ok(Arc::clone(&self.arrow_schema)),
            true => {
                let n = self.arrow_schema.fields().len() - 2;
                let projected = self.arrow_schema.project(&(0..n).collect::<Vec<_>>());
                Ok(Arc::new(projected.map_err(|e| {
                    Error::invalid("the row-identity schema", e)
                })?))
            }
        }
    }

    /// Whether `filter` converts exactly and reads only columns that every partition spec of
    /// the table partitions by identity.
    pub(crate) fn decided_by_partitions(&self, filter: &Expr) -> bool {
        let Some(predicate) = convert(filter, &self.schema) else {
            return false;
        };
        let table = self.table();
        let specs = &table.metadata().partition_specs;
        let ids = predicate.field_ids();
        // Float partitions are left to DataFusion: NaN and signed zeros compare differently
        // under Iceberg's rules and DataFusion's.
        let float = |id: &i32| {
            self.schema.columns().iter().any(|c| {
                c.id == *id
                    && matches!(
                        c.field_type,
                        Type::Primitive(PrimitiveType::Float | PrimitiveType::Double)
                    )
            })
        };
        !ids.is_empty()
            && !specs.is_empty()
            && !ids.iter().any(float)
            && ids.iter().all(|id| {
                specs.iter().all(|spec| {
                    spec.fields
                        .iter()
                        .any(|f| f.source_id == *id && f.transform == Transform::Identity)
                })
            })
    }
}

impl IcebergTableProvider {
    /// The sink of an INSERT into this provider, or why it cannot be written.
    fn sink(&self, input_schema: SchemaRef, insert_op: InsertOp) -> Result<IcebergSink> {
        let table = self.table();
        let name = match &self.write_target {
            Some(target) => target.name().to_string(),
            None => table.metadata_location().to_string(),
        };
        if insert_op == InsertOp::Replace {
            return Err(Error::Unsupported(format!(
                "{insert_op} into Iceberg table {name}: use INSERT INTO or INSERT OVERWRITE"
            )));
        }
        // A copied or moved table: refused before a data file is written anywhere.
        table.ensure_writable()?;
        let branch = match &self.read {
            ReadKind::Head(branch) => branch.clone(),
            ReadKind::Snapshot(_) => {
                return Err(Error::invalid(
                    format_args!("table {name} at {}", describe(&self.selector)),
                    "cannot be written by INSERT INTO: only the current state or a branch can \
                     be written",
                ));
            }
            ReadKind::Incremental(_) => {
                return Err(Error::invalid(
                    format_args!("incremental read of table {name}"),
                    "cannot be written by INSERT INTO",
                ));
            }
        };
        let target = self
            .write_target
            .clone()
            .ok_or_else(|| self.no_write_target(format!("INSERT INTO table {name}")))?;
        let lock = Arc::clone(&self.table);
        let follow = Arc::new(move |committed: &Table| advance(&lock, committed));
        let sink = IcebergSink::try_new(
            table,
            self.schema.as_ref().clone(),
            input_schema,
            target,
            branch,
        )?;
        Ok(sink.with_on_commit(follow))
    }
}

/// Moves a provider's table to `committed` unless it already holds a later state: two
/// INSERTs through one provider may finish their commits in either order.
fn advance(lock: &RwLock<Table>, committed: &Table) {
    let mut table = match lock.write() {
        Ok(table) => table,
        Err(poisoned) => poisoned.into_inner(),
    };
    if is_later(committed, &table) {
        *table = committed.clone();
    }
}

/// Whether `new` is a later version of the table than `old`: `old`'s metadata file is in
/// `new`'s metadata log (and not the reverse); when neither log names the other (logs are
/// bounded by `write.metadata.previous-versions-max`), by sequence number, then update time.
fn is_later(new: &Table, old: &Table) -> bool {
    let logs = |t: &Table, location: &str| {
        t.metadata()
            .metadata_log
            .iter()
            .any(|e| e.metadata_file == location)
    };
    if logs(new, old.metadata_location()) {
        return true;
    }
    if logs(old, new.metadata_location()) || new.metadata_location() == old.metadata_location() {
        return false;
    }
    let (n, o) = (new.metadata(), old.metadata());
    (n.last_sequence_number, n.last_updated_ms) >= (o.last_sequence_number, o.last_updated_ms)
}

/// A non-branch state, for messages.
fn describe(selector: &SnapshotSelector) -> String {
    match selector {
        SnapshotSelector::Current => "the current snapshot".to_string(),
        SnapshotSelector::SnapshotId(id) => format!("snapshot {id}"),
        SnapshotSelector::Ref(name) => format!("tag '{name}' (tags are read-only)"),
        SnapshotSelector::AsOfTimestamp(ms) => format!("the snapshot as of {ms} ms"),
    }
}

/// The snapshot `id` of `table`, or a not-found error naming the table.
fn snapshot(table: &Table, id: i64) -> Result<&Snapshot> {
    table.metadata().snapshot_by_id(id).ok_or_else(|| {
        Error::not_found(format!(
            "snapshot {id} in table {}",
            table.metadata_location()
        ))
    })
}

/// Drops the files after the first ones whose record counts reach `limit`, unless deletes
/// apply to any file (then record counts overstate rows).
fn keep_files_for_limit(tasks: &mut Vec<FileScanTask>, limit: usize) {
    if tasks.iter().any(|t| !t.deletes.is_empty()) {
        return;
    }
    let mut rows = 0usize;
    let keep = tasks
        .iter()
        .position(|t| {
            rows = rows.saturating_add(usize::try_from(t.data_file.record_count).unwrap_or(0));
            rows >= limit
        })
        .map_or(tasks.len(), |i| i + 1);
    tasks.truncate(keep);
}

/// Adds the table's metadata file to a not-found or invalid-argument error from the spec layer.
fn in_table(err: Error, table: &Table) -> Error {
    match err {
        Error::NotFound { what, source } => Error::NotFound {
            what: format!("{what} in table {}", table.metadata_location()),
            source,
        },
        Error::InvalidArgument { what, reason } => Error::InvalidArgument {
            what: format!("{what} in table {}", table.metadata_location()),
            reason,
        },
        other => other,
    }
}

/// The `write-default` of each top-level primitive column that has one, as a literal.
fn write_defaults(schema: &Schema) -> Result<HashMap<String, Expr>> {
    let mut defaults = HashMap::new();
    for field in schema.columns() {
        let (Some(value), Type::Primitive(ty)) = (&field.write_default, &field.field_type) else {
            continue;
        };
        let literal = Literal::from_json(ty, value).map_err(|e| {
            Error::from(e).within(format_args!("write-default of column '{}'", field.name))
        })?;
        let scalar = crate::to_arrow::literal_to_scalar(Some(&literal), ty)?;
        defaults.insert(field.name.clone(), datafusion::logical_expr::lit(scalar));
    }
    Ok(defaults)
}
