//! Row-level changes: DELETE, UPDATE and TRUNCATE applied to a table from the rows they
//! change, in copy-on-write or merge-on-read mode, committed as one [`RowDelta`].
//!
//! A statement hands [`RowChangeSink`] the rows it changes, each with its identity (`_file`,
//! `_pos`: see `IcebergTableProvider::with_row_ids`) and, for UPDATE, its new values. The sink
//! gathers the changed positions per data file (a bitmap each) while it streams the new rows
//! into data files, then:
//!
//! - **copy-on-write** (`write.<op>.mode` unset or `copy-on-write`): every data file with a
//!   changed row is removed; a file with rows left is rewritten without the changed ones (one
//!   scan of all of them, existing deletes applied), and the delete files that only applied to
//!   removed files go too;
//! - **merge-on-read** (`merge-on-read`): the data files stay; v2 tables get one position
//!   delete file per partition of the changed data files, v3 tables one deletion vector per
//!   changed data file (all in one Puffin file), merged with the file's earlier vector and
//!   its own position deletes, which the same commit removes.
//!
//! Files whose every row the statement changes by metadata alone ([`RowChange::whole_files`]:
//! a DELETE whose condition the partition tuples decide, TRUNCATE) are removed without being
//! read. Nothing is committed when no row changes. A failure at any point deletes what the
//! statement wrote and commits nothing (but after [`Error::CommitStateUnknown`], when the
//! commit may have happened).
//!
//! The sink runs in two halves: `RowWrites` writes the files of the rows it is given (in any
//! process: it needs no catalog) and returns them as `Written`; the sink's commit turns them
//! into the [`RowDelta`]. On a cluster each worker runs the first half for its share of the
//! rows and the coordinator the second (`icefloe::distributed`, feature `distributed`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, BooleanBufferBuilder, Int64Array, RecordBatch,
    StringArray,
};
use datafusion::arrow::compute::{cast, filter_record_batch};
use datafusion::arrow::datatypes::{DataType, Int32Type, SchemaRef};
use datafusion::datasource::sink::DataSink;
use datafusion::error::Result as DFResult;
use datafusion::execution::{SendableRecordBatchStream, SessionStateBuilder, TaskContext};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlanProperties};
use futures::StreamExt;
use roaring::RoaringTreemap;

use crate::error::{Error, Result};
use crate::expr::Predicate;
use crate::io::{FileIO, location_key};
use crate::scan::deletes::positions;
use crate::scan::exec::{ScanInput, build_exec};
use crate::scan::{FileScanTask, PlanStats, plan_files};
use crate::spec::properties::{
    DELETE_ISOLATION_LEVEL, DELETE_MODE, MERGE_ISOLATION_LEVEL, MERGE_MODE, Property, RowLevelMode,
    UPDATE_ISOLATION_LEVEL, UPDATE_MODE,
};
use crate::spec::{DataFile, FormatVersion, Literal, Schema};
use crate::table::Table;
use crate::to_arrow::schema_to_arrow;
use crate::transaction::{Isolation, RowDelta, WriteTarget, delete_all};
use crate::write::{
    AppendWriter, DeletionVector, OnCommit, write_deletion_vectors_named,
    write_position_deletes_named,
};

pub(crate) mod lineage;
pub use lineage::{
    LAST_UPDATED_SEQUENCE_NUMBER, LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID, ROW_ID, ROW_ID_FIELD_ID,
};

/// What a row-level statement does with the rows it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowChangeKind {
    /// The rows (`_file`, `_pos`) are deleted.
    Delete,
    /// The rows (the table's columns with their new values, then `_file`, `_pos`) replace the
    /// rows they identify.
    Update,
    /// Every row goes (no input rows: [`RowChange::whole_files`] lists every file).
    Truncate,
    /// Each row is an action (the table's columns, `_file`, `_pos`, then the action, one of
    /// [`ACTION_UPDATE`], [`ACTION_DELETE`], [`ACTION_INSERT`]): updated and deleted rows go,
    /// updated and inserted rows' values are written.
    Merge,
}

/// A MERGE row that replaces the target row it identifies with its values.
pub const ACTION_UPDATE: u8 = 1;
/// A MERGE row that deletes the target row it identifies.
pub const ACTION_DELETE: u8 = 2;
/// A MERGE row whose values are inserted.
pub const ACTION_INSERT: u8 = 3;

impl RowChangeKind {
    /// The statement, for messages.
    pub fn statement(&self) -> &'static str {
        match self {
            Self::Delete => "DELETE",
            Self::Update => "UPDATE",
            Self::Truncate => "TRUNCATE",
            Self::Merge => "MERGE",
        }
    }

    fn mode_property(&self) -> &'static Property<RowLevelMode> {
        match self {
            Self::Update => &UPDATE_MODE,
            Self::Merge => &MERGE_MODE,
            Self::Delete | Self::Truncate => &DELETE_MODE,
        }
    }

    fn isolation_property(&self) -> &'static Property<&'static str> {
        match self {
            Self::Update => &UPDATE_ISOLATION_LEVEL,
            Self::Merge => &MERGE_ISOLATION_LEVEL,
            Self::Delete | Self::Truncate => &DELETE_ISOLATION_LEVEL,
        }
    }
}

/// One row-level statement on one table: what [`RowChangeSink`] needs besides the rows.
#[derive(Clone)]
pub struct RowChange {
    /// What the statement does.
    pub kind: RowChangeKind,
    /// The version of the table the statement read its rows from.
    pub table: Table,
    /// The schema the rows were read with (the table's current schema).
    pub schema: Schema,
    /// Where the table's pointer lives.
    pub target: WriteTarget,
    /// The branch changed (`main` for the current state).
    pub branch: String,
    /// The snapshot the rows were read from (`None`: the table had none).
    pub base_snapshot: Option<i64>,
    /// The statement's condition, when it is known whole (no subquery): concurrent appends
    /// conflict only when they may hold matching rows (serializable isolation).
    pub condition: Option<Predicate>,
    /// Data files every live row of which the statement changes, known from metadata (a
    /// DELETE whose condition their partition tuples or column metrics decide, TRUNCATE):
    /// removed without being read, with the delete files that reference them alone (see
    /// [`Self::whole_partitions`]; TRUNCATE: every delete file).
    pub whole_files: Vec<FileScanTask>,
    /// Whether `whole_files` are every data file of their partitions (the condition is
    /// decided by the partition tuples): the delete files of those partitions go too.
    pub whole_partitions: bool,
    /// The tasks the statement's scan planned, when known: they include every data file with
    /// a changed row (checked), so the sink need not plan the snapshot again.
    pub scanned_files: Option<Arc<Vec<FileScanTask>>>,
    /// Called with the committed table.
    pub on_commit: Option<OnCommit>,
}

impl fmt::Debug for RowChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowChange")
            .field("kind", &self.kind)
            .field("target", &self.target.name())
            .field("branch", &self.branch)
            .field("whole_files", &self.whole_files.len())
            .finish_non_exhaustive()
    }
}

impl RowChange {
    /// The statement and its table, for messages (`DELETE db.t`).
    pub(crate) fn name(&self) -> String {
        format!("{} {}", self.kind.statement(), self.target.name())
    }

    /// The write mode, from the table's properties (merge-on-read needs a v2 or v3 table).
    pub fn mode(&self) -> Result<RowLevelMode> {
        mode_of(self.kind, &self.table, &self.name())
    }

    /// What writing the statement's files needs (named with a uuid alone).
    pub(crate) fn writes(&self) -> RowWrites {
        RowWrites {
            kind: self.kind,
            table: self.table.clone(),
            schema: self.schema.clone(),
            base_snapshot: self.base_snapshot,
            scanned_files: self.scanned_files.clone(),
            name: self.name(),
            file_prefix: String::new(),
        }
    }
}

/// The write mode of statement `kind` (named `name`) on `table`.
fn mode_of(kind: RowChangeKind, table: &Table, name: &str) -> Result<RowLevelMode> {
    let metadata = table.metadata();
    let mode = kind.mode_property().get(metadata.as_ref())?;
    if mode == RowLevelMode::MergeOnRead && metadata.format_version == FormatVersion::V1 {
        return Err(Error::Unsupported(format!(
            "{name}: merge-on-read needs a v2 or v3 table (delete files), this one is v1; \
             set {} to copy-on-write or upgrade the table",
            kind.mode_property().key()
        )));
    }
    Ok(mode)
}

/// What writing the files of a row-level statement needs, in any process (no catalog, no
/// commit): the version of the table its rows were read from, and how its files are named.
/// [`RowChangeSink`] writes a whole statement with one; across processes each writer of a
/// share of the rows has its own (`distributed::write`).
#[derive(Clone)]
pub(crate) struct RowWrites {
    pub(crate) kind: RowChangeKind,
    pub(crate) table: Table,
    /// The schema the rows were read with.
    pub(crate) schema: Schema,
    pub(crate) base_snapshot: Option<i64>,
    /// See [`RowChange::scanned_files`].
    pub(crate) scanned_files: Option<Arc<Vec<FileScanTask>>>,
    /// The statement, for messages (`DELETE db.t`).
    pub(crate) name: String,
    /// What the names of the files written start with (before their uuid).
    pub(crate) file_prefix: String,
}

/// The files a writer of a row-level statement wrote, and the rows they account for.
#[derive(Debug, Default)]
pub(crate) struct Written {
    /// Data files: the new rows (UPDATE, MERGE), then the copies (copy-on-write).
    pub(crate) data_files: Vec<(i32, DataFile)>,
    /// Position delete files or deletion vectors (merge-on-read).
    pub(crate) delete_files: Vec<(i32, DataFile)>,
    /// The data files these files stand for: replaced by their copies (copy-on-write), or
    /// deleted from (merge-on-read).
    pub(crate) handled: Vec<FileScanTask>,
    /// Rows changed (deleted or updated).
    pub(crate) rows: u64,
    /// Of `rows`, those updated.
    pub(crate) updated: u64,
    /// Rows inserted (MERGE).
    pub(crate) inserted: u64,
}

impl Written {
    /// The locations of every file written.
    pub(crate) fn paths(&self) -> Vec<String> {
        locations(self.data_files.iter().chain(&self.delete_files))
    }
}

/// The locations of `files`.
pub(crate) fn locations<'a>(files: impl IntoIterator<Item = &'a (i32, DataFile)>) -> Vec<String> {
    files
        .into_iter()
        .map(|(_, f)| f.file_path.clone())
        .collect()
}

impl RowWrites {
    /// The write mode (see [`RowChange::mode`]).
    pub(crate) fn mode(&self) -> Result<RowLevelMode> {
        mode_of(self.kind, &self.table, &self.name)
    }

    /// Writes the files of the changed rows in `data` (`width` columns, laid out as
    /// [`RowChangeKind`] says): the new rows, and for each data file with a changed row its
    /// copy without them (copy-on-write) or the delete files that delete them (merge-on-read).
    /// Every changed row of a data file must be in `data` (a writer sees all of a file's).
    ///
    /// With `carry_vectors` (the whole statement's rows), the deletion vectors that share a
    /// Puffin file with a replaced one are rewritten too (see [`Self::affected`]). After a
    /// failure no file written is left.
    pub(crate) async fn write(
        &self,
        data: SendableRecordBatchStream,
        width: usize,
        carry_vectors: bool,
        context: &Arc<TaskContext>,
    ) -> Result<Written> {
        let mode = self.mode()?;
        let io = self.table.io();
        let metadata = Arc::clone(self.table.metadata());
        let schema = match lineage::carries_lineage(&metadata) {
            true => lineage::with_lineage_columns(&self.schema),
            false => self.schema.clone(),
        };
        let mut writer =
            AppendWriter::new(io, &metadata, &schema)?.with_file_prefix(self.file_prefix.clone());
        let gathered = match self.gather(data, width, &mut writer).await {
            Ok(gathered) => gathered,
            Err(e) => {
                writer.abort().await;
                return Err(e);
            }
        };
        let whole_vectors = carry_vectors
            && mode == RowLevelMode::MergeOnRead
            && metadata.format_version == FormatVersion::V3;
        let replaced = async {
            let tasks = self.affected(&gathered, whole_vectors).await?;
            let (copies, deletes) = self.replace(&tasks, &gathered, mode, context).await?;
            Ok::<_, Error>((tasks, copies, deletes))
        }
        .await;
        let (handled, copies, delete_files) = match replaced {
            Ok(replaced) => replaced,
            Err(e) => {
                writer.abort().await;
                return Err(e);
            }
        };
        let data_files = match writer.finish().await {
            Ok(mut files) => {
                files.extend(copies);
                files
            }
            Err(e) => {
                delete_all(io, &locations(copies.iter().chain(&delete_files))).await;
                return Err(e);
            }
        };
        Ok(Written {
            data_files,
            delete_files,
            handled,
            rows: gathered.rows,
            updated: gathered.updated,
            inserted: gathered.inserted,
        })
    }

    #[cfg(feature = "distributed")]
    /// Rewrites the deletion vectors of `tasks` as they are (no new position: files that share
    /// a Puffin file with a vector other writers replaced); returns the delete files written.
    pub(crate) async fn carry_vectors(
        &self,
        tasks: &[FileScanTask],
        context: &Arc<TaskContext>,
    ) -> Result<Vec<(i32, DataFile)>> {
        let none = Gathered::default();
        let (_, deletes) = self
            .replace(tasks, &none, RowLevelMode::MergeOnRead, context)
            .await?;
        Ok(deletes)
    }

    /// Reads the changed rows: their positions per data file, and (UPDATE, MERGE) their new
    /// values into `writer`.
    async fn gather(
        &self,
        mut data: SendableRecordBatchStream,
        width: usize,
        writer: &mut AppendWriter,
    ) -> Result<Gathered> {
        let identity = match self.kind {
            RowChangeKind::Truncate => None,
            RowChangeKind::Merge => width.checked_sub(3),
            RowChangeKind::Delete | RowChangeKind::Update => width.checked_sub(2),
        };
        let Some(file_column) = identity else {
            // TRUNCATE: no rows are read.
            return Ok(Gathered::default());
        };
        let pos_column = file_column + 1;
        let name = &self.name;
        let values_of = |batch: &RecordBatch| {
            batch
                .project(&(0..file_column).collect::<Vec<_>>())
                .map_err(|e| Error::invalid(name, e))
        };
        let arrow_schema = Arc::new(schema_to_arrow(&self.schema)?);
        // v3: the new rows carry the lineage of the rows they replace.
        let mut lineage = match lineage::carries_lineage(self.table.metadata()) {
            true => Some(lineage::ChangedRowIds::new(self)?),
            false => None,
        };
        let mut gathered = Gathered::default();
        let twice = || {
            Error::invalid(
                name,
                "a row of the table was matched by more than one row of the statement's \
                 source; each row can be changed once",
            )
        };
        while let Some(batch) = data.next().await {
            let batch = batch?;
            match self.kind {
                RowChangeKind::Merge => {
                    let actions = action_codes(&batch, pos_column + 1)?;
                    let changes = BooleanArray::from_iter(
                        actions
                            .iter()
                            .map(|a| Some(*a == ACTION_UPDATE || *a == ACTION_DELETE)),
                    );
                    let changed = filter_record_batch(&batch, &changes)
                        .map_err(|e| Error::invalid(name, e))?;
                    if gathered.add(&changed, file_column, pos_column)? != changed.num_rows() {
                        return Err(twice());
                    }
                    let written = BooleanArray::from_iter(
                        actions
                            .iter()
                            .map(|a| Some(*a == ACTION_UPDATE || *a == ACTION_INSERT)),
                    );
                    let rows = filter_record_batch(&batch, &written)
                        .map_err(|e| Error::invalid(name, e))?;
                    gathered.inserted +=
                        actions.iter().filter(|a| **a == ACTION_INSERT).count() as u64;
                    gathered.updated +=
                        actions.iter().filter(|a| **a == ACTION_UPDATE).count() as u64;
                    if rows.num_rows() > 0 {
                        let values = values_of(&rows)?;
                        let mut values =
                            crate::write::conform(values, &arrow_schema, name, "merged")?;
                        if let Some(lineage) = &mut lineage {
                            let (files, positions) =
                                (rows.column(file_column), rows.column(pos_column));
                            values = lineage.attach(values, files, positions).await?;
                        }
                        writer.write(&values).await?;
                    }
                }
                RowChangeKind::Update => {
                    if gathered.add(&batch, file_column, pos_column)? != batch.num_rows() {
                        return Err(twice());
                    }
                    gathered.updated += batch.num_rows() as u64;
                    let mut values =
                        crate::write::conform(values_of(&batch)?, &arrow_schema, name, "updated")?;
                    if let Some(lineage) = &mut lineage {
                        let (files, positions) =
                            (batch.column(file_column), batch.column(pos_column));
                        values = lineage.attach(values, files, positions).await?;
                    }
                    writer.write(&values).await?;
                }
                _ => {
                    gathered.add(&batch, file_column, pos_column)?;
                }
            }
        }
        Ok(gathered)
    }

    /// The files that stand for the changed rows of `tasks`' data files: their copies
    /// (copy-on-write: `(copies, [])`) or delete files (merge-on-read: `([], deletes)`).
    /// After a failure none are left.
    async fn replace(
        &self,
        tasks: &[FileScanTask],
        gathered: &Gathered,
        mode: RowLevelMode,
        context: &Arc<TaskContext>,
    ) -> Result<(Vec<(i32, DataFile)>, Vec<(i32, DataFile)>)> {
        if tasks.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let io = self.table.io();
        let metadata = self.table.metadata();
        match (mode, metadata.format_version) {
            (RowLevelMode::CopyOnWrite, _) => {
                let existing = deleted_positions(io, tasks).await?;
                let mut rewrite = Vec::new();
                for task in tasks {
                    let path = &task.data_file.file_path;
                    let mut gone = gathered.positions.get(path).cloned().unwrap_or_default();
                    if let Some(already) = existing.get(&location_key(io, path)) {
                        gone |= already;
                    }
                    let rows = u64::try_from(task.data_file.record_count).unwrap_or(0);
                    if gone.len() < rows {
                        rewrite.push(task.clone());
                    }
                }
                Ok((self.rewrite(rewrite, gathered, context).await?, Vec::new()))
            }
            (RowLevelMode::MergeOnRead, FormatVersion::V3) => {
                let existing = deleted_positions(io, tasks).await?;
                // One vector per data file: the earlier one and the position deletes of this
                // file alone are merged into it (and go in the commit).
                let vectors: Vec<DeletionVector> = tasks
                    .iter()
                    .map(|task| {
                        let path = &task.data_file.file_path;
                        let mut positions =
                            gathered.positions.get(path).cloned().unwrap_or_default();
                        if let Some(already) = existing.get(&location_key(io, path)) {
                            positions |= already;
                        }
                        DeletionVector {
                            data_file: path.clone(),
                            spec_id: task.partition_spec_id,
                            partition: task.data_file.partition.clone(),
                            positions,
                        }
                    })
                    .collect();
                let files =
                    write_deletion_vectors_named(io, metadata, &vectors, &self.file_prefix).await?;
                Ok((Vec::new(), files))
            }
            (RowLevelMode::MergeOnRead, _) => {
                // One delete file per partition: keyed by spec and the tuple's text, ordered
                // once per data file.
                let mut by_partition: BTreeMap<(i32, String), PartitionDeletes> = BTreeMap::new();
                for task in tasks {
                    let path = &task.data_file.file_path;
                    if let Some(deleted) = gathered.positions.get(path) {
                        let partition = &task.data_file.partition;
                        let key = (task.partition_spec_id, format!("{partition:?}"));
                        by_partition
                            .entry(key)
                            .or_insert_with(|| (partition.clone(), BTreeMap::new()))
                            .1
                            .insert(path.clone(), deleted.clone());
                    }
                }
                // Each file written in a task of its own.
                let mut writes = tokio::task::JoinSet::new();
                for (order, ((spec_id, _), (partition, deletes))) in
                    by_partition.into_iter().enumerate()
                {
                    let (io, metadata) = (io.clone(), Arc::clone(metadata));
                    let prefix = self.file_prefix.clone();
                    writes.spawn(async move {
                        let file = write_position_deletes_named(
                            &io, &metadata, spec_id, &partition, &deletes, &prefix,
                        )
                        .await;
                        file.map(|f| (order, spec_id, f))
                    });
                }
                let (mut files, failure) = join_all(writes, &self.name).await;
                if let Some(e) = failure {
                    let paths: Vec<String> =
                        files.iter().map(|(_, _, f)| f.file_path.clone()).collect();
                    delete_all(io, &paths).await;
                    return Err(e);
                }
                // In the order of the partitions (the commit's manifests list them so).
                files.sort_by_key(|(order, _, _)| *order);
                let files = files.into_iter().map(|(_, spec, f)| (spec, f)).collect();
                Ok((Vec::new(), files))
            }
        }
    }

    /// The planned tasks (data file, spec, deletes) of the data files with changed rows.
    ///
    /// With `whole_vectors` (merge-on-read on v3), also the data files whose deletion vectors
    /// share a Puffin file with one the change replaces: their vectors are carried into the
    /// new Puffin file, so that no live Puffin file holds a replaced vector (readers that read
    /// a whole Puffin file, as PyIceberg 0.12 does, would apply the stale one).
    async fn affected(
        &self,
        gathered: &Gathered,
        whole_vectors: bool,
    ) -> Result<Vec<FileScanTask>> {
        let changed: HashSet<&str> = gathered.positions.keys().map(String::as_str).collect();
        self.tasks_of(&changed, whole_vectors).await
    }

    /// The planned tasks of the data files `changed` (see [`Self::affected`]).
    pub(crate) async fn tasks_of(
        &self,
        changed: &HashSet<&str>,
        whole_vectors: bool,
    ) -> Result<Vec<FileScanTask>> {
        if changed.is_empty() {
            return Ok(Vec::new());
        }
        let Some(snapshot) = self
            .base_snapshot
            .and_then(|id| self.table.metadata().snapshot_by_id(id))
        else {
            return Err(Error::invalid(
                &self.name,
                "rows were read from a table without a snapshot",
            ));
        };
        let is_changed = |t: &FileScanTask| changed.contains(t.data_file.file_path.as_str());
        let vector_files = |t: &FileScanTask| -> Vec<String> {
            t.deletes
                .iter()
                .filter(|d| d.is_deletion_vector())
                .map(|d| d.file.file_path.clone())
                .collect()
        };
        // The scan's own tasks, when they hold every changed file and no deletion vector that
        // shares a Puffin file with others needs carrying over; else the snapshot's.
        let scanned = self.scanned_files.as_ref().filter(|tasks| {
            let found: Vec<&FileScanTask> = tasks.iter().filter(|t| is_changed(t)).collect();
            found.len() == changed.len()
                && !(whole_vectors && found.iter().any(|t| !vector_files(t).is_empty()))
        });
        let planned;
        let tasks: &[FileScanTask] = match scanned {
            Some(tasks) => tasks,
            None => {
                planned = plan_files(self.table.io(), self.table.metadata(), snapshot).await?;
                &planned
            }
        };
        let replaced: HashSet<String> = match whole_vectors {
            true => tasks
                .iter()
                .filter(|t| is_changed(t))
                .flat_map(vector_files)
                .collect(),
            false => HashSet::new(),
        };
        let mut affected: Vec<FileScanTask> = Vec::new();
        let mut found = 0;
        for task in tasks {
            if is_changed(task) {
                found += 1;
                affected.push(task.clone());
            } else if vector_files(task).iter().any(|p| replaced.contains(p)) {
                affected.push(task.clone());
            }
        }
        if found != changed.len() {
            let known: HashSet<&str> = affected
                .iter()
                .map(|t| t.data_file.file_path.as_str())
                .collect();
            let unknown = changed
                .iter()
                .find(|p| !known.contains(*p))
                .copied()
                .unwrap_or_default();
            return Err(Error::invalid(
                &self.name,
                format_args!(
                    "a changed row names data file {unknown}, which is not live in snapshot {}",
                    snapshot.snapshot_id
                ),
            ));
        }
        Ok(affected)
    }

    /// Copy-on-write: writes the rows of `tasks` that the statement did not change (existing
    /// deletes applied by the scan) into new data files: one scan of them all, each of its
    /// partitions copied by a writer of its own in a task of its own (so files are encoded in
    /// parallel). Returns the files written; after a failure none are left.
    async fn rewrite(
        &self,
        tasks: Vec<FileScanTask>,
        gathered: &Gathered,
        context: &Arc<TaskContext>,
    ) -> Result<Vec<(i32, DataFile)>> {
        if tasks.is_empty() {
            return Ok(Vec::new());
        }
        // Twice as many copies as the session runs at once (fewer when there are fewer files):
        // while one waits or finishes early another keeps its core busy, and at most two row
        // groups per core are held in memory.
        let config = context.session_config();
        let copies = tasks.len().clamp(1, 2 * config.target_partitions().max(1));
        let state = SessionStateBuilder::new()
            .with_config(config.clone().with_target_partitions(copies))
            .with_runtime_env(context.runtime_env())
            .build();
        let changed: HashMap<String, RoaringTreemap> = tasks
            .iter()
            .filter_map(|t| {
                let path = &t.data_file.file_path;
                Some((path.clone(), gathered.positions.get(path)?.clone()))
            })
            .collect();
        let changed = Arc::new(Gathered {
            positions: changed,
            ..Gathered::default()
        });
        // v3: the copies keep their rows' lineage (see the `lineage` module).
        let lineage = lineage::carries_lineage(self.table.metadata())
            .then(|| lineage::Inherited::new(&tasks));
        let schema = match lineage {
            Some(_) => lineage::with_lineage_columns(&self.schema),
            None => self.schema.clone(),
        };
        let arrow_schema = Arc::new(schema_to_arrow(&schema)?);
        let input = ScanInput {
            table: &self.table,
            schema: &schema,
            arrow_schema,
            tasks,
            stats: PlanStats::default(),
            row_ids: true,
            distinct_counts: Vec::new(),
        };
        let plan = build_exec(&state, input, None, &[], None).await?;
        let io = self.table.io();
        let metadata = self.table.metadata();
        let mut copies = tokio::task::JoinSet::new();
        for partition in 0..plan.output_partitioning().partition_count() {
            let rows = plan.execute(partition, state.task_ctx())?;
            let writer = AppendWriter::new(io, metadata, &schema)?
                .with_file_prefix(self.file_prefix.clone());
            let (changed, name) = (Arc::clone(&changed), self.name.clone());
            copies.spawn(copy_unchanged(rows, changed, lineage.clone(), writer, name));
        }
        let (files, failure) = join_all(copies, &self.name).await;
        let files: Vec<(i32, DataFile)> = files.into_iter().flatten().collect();
        if let Some(e) = failure {
            delete_all(io, &locations(&files)).await;
            return Err(e);
        }
        Ok(files)
    }
}

/// The DataFusion [`DataSink`] of a row-level statement (see the module docs): consumes the
/// changed rows, writes, commits one [`RowDelta`] to the branch, and returns the number of
/// rows deleted or updated (TRUNCATE: removed).
///
/// Metrics (EXPLAIN ANALYZE): `rows_changed` (the count returned), `rows_deleted`,
/// `rows_updated`, `rows_inserted`, `data_files_removed`, `data_files_written`,
/// `delete_files_written`, `bytes_written`, `commit_time`.
#[derive(Clone)]
pub struct RowChangeSink {
    change: RowChange,
    input_schema: SchemaRef,
    metrics: ExecutionPlanMetricsSet,
}

impl fmt::Debug for RowChangeSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowChangeSink")
            .field("change", &self.change)
            .finish_non_exhaustive()
    }
}

impl RowChangeSink {
    /// A sink for `change`, fed rows of `input_schema` (see [`RowChangeKind`] for the columns).
    pub fn new(change: RowChange, input_schema: SchemaRef) -> Self {
        Self {
            change,
            input_schema,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The statement.
    #[cfg(feature = "distributed")]
    pub(crate) fn change(&self) -> &RowChange {
        &self.change
    }

    async fn run(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let width = self.input_schema.fields().len();
        let written = self
            .change
            .writes()
            .write(data, width, true, context)
            .await?;
        self.commit(written).await
    }

    /// Commits `written` (every file of the statement) and the files the change removes by
    /// metadata as one [`RowDelta`] to the branch; returns the rows changed. Commits nothing
    /// when no row changes. A failure deletes `written`'s files (but not after
    /// [`Error::CommitStateUnknown`], when the commit may have happened).
    pub(crate) async fn commit(&self, written: Written) -> Result<u64> {
        let paths = written.paths();
        let io = self.change.table.io();
        match self.commit_written(written).await {
            // Nothing committed: any file written is unreferenced.
            Ok(0) => {
                delete_all(io, &paths).await;
                Ok(0)
            }
            Ok(changed) => Ok(changed),
            Err(e @ Error::CommitStateUnknown { .. }) => Err(e),
            Err(e) => {
                delete_all(io, &paths).await;
                Err(e)
            }
        }
    }

    async fn commit_written(&self, written: Written) -> Result<u64> {
        let change = &self.change;
        let no_rows = written.rows == 0 && written.inserted == 0;
        if no_rows && change.whole_files.is_empty() {
            return Ok(0);
        }
        let mode = change.mode()?;
        let io = change.table.io();
        let isolation = change
            .kind
            .isolation_property()
            .get(change.table.metadata().as_ref())
            .and_then(Isolation::parse)?;
        let mut delta = RowDelta::new(change.base_snapshot)
            .to_branch(change.branch.clone())
            .isolation(isolation);
        if let Some(condition) = &change.condition {
            delta = delta.conflict_filter(condition.clone());
        }
        let mut changed = written.rows + written.inserted;
        // Files removed whole, by metadata: their live rows count as changed.
        let whole: Vec<&FileScanTask> = change.whole_files.iter().collect();
        let existing = deleted_positions(io, &whole).await?;
        for task in &whole {
            let already = existing
                .get(&location_key(io, &task.data_file.file_path))
                .map_or(0, RoaringTreemap::len);
            changed += u64::try_from(task.data_file.record_count)
                .unwrap_or(0)
                .saturating_sub(already);
            let scope = match (change.kind, change.whole_partitions) {
                (RowChangeKind::Truncate, _) => DeleteScope::All,
                (_, true) => DeleteScope::Partition,
                (_, false) => DeleteScope::Referenced,
            };
            delta = remove_with_deletes(delta, task, scope);
        }
        let v3 = change.table.metadata().format_version == FormatVersion::V3;
        for task in &written.handled {
            delta = match mode {
                RowLevelMode::CopyOnWrite => {
                    remove_with_deletes(delta, task, DeleteScope::Referenced)
                }
                RowLevelMode::MergeOnRead => {
                    let mut delta = delta;
                    if v3 {
                        // The file's vector replaces its earlier one and the position deletes
                        // of this file alone.
                        let path = task.data_file.file_path.as_str();
                        for delete in &task.deletes {
                            if delete.file.referenced_data_file.as_deref() == Some(path) {
                                delta = delta.remove_delete_file(&delete.file);
                            }
                        }
                    }
                    delta.touch(task.partition_spec_id, &task.data_file)
                }
            };
        }
        let metric = |name: &'static str| MetricBuilder::new(&self.metrics).global_counter(name);
        if mode == RowLevelMode::MergeOnRead {
            metric("delete_files_written").add(written.delete_files.len());
            delta = delta.add_delete_files(written.delete_files);
        }
        let data_files = written.data_files;
        metric("data_files_written").add(data_files.len());
        let bytes: i64 = data_files.iter().map(|(_, f)| f.file_size_in_bytes).sum();
        metric("bytes_written").add(usize::try_from(bytes).unwrap_or(0));
        metric("data_files_removed").add(match mode {
            RowLevelMode::CopyOnWrite => written.handled.len() + whole.len(),
            RowLevelMode::MergeOnRead => whole.len(),
        });
        delta = delta.add_data_files(data_files);
        if delta.is_empty() {
            return Ok(0);
        }
        let timer = MetricBuilder::new(&self.metrics).subset_time("commit_time", 0);
        let started = timer.timer();
        let committed = change
            .target
            .transaction(change.table.clone())
            .with_action(delta)
            .commit()
            .await;
        started.done();
        let table = committed?;
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        metric("rows_changed").add(count(changed));
        metric("rows_updated").add(count(written.updated));
        metric("rows_inserted").add(count(written.inserted));
        metric("rows_deleted").add(count(changed - written.updated - written.inserted));
        if let Some(f) = &change.on_commit {
            f(&table);
        }
        Ok(changed)
    }
}

/// Waits for every task of `tasks`: what the successful ones returned, and the first failure
/// (a task's error, or its panic as an error of the statement `name`).
async fn join_all<T: 'static>(
    mut tasks: tokio::task::JoinSet<Result<T>>,
    name: &str,
) -> (Vec<T>, Option<Error>) {
    let mut done = Vec::new();
    let mut failure = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(value)) => done.push(value),
            Ok(Err(e)) => failure = failure.or(Some(e)),
            Err(e) => failure = failure.or(Some(Error::invalid(name, e))),
        }
    }
    (done, failure)
}

/// Writes the rows of `rows` (the table's columns, then `_file`, `_pos`) that `changed` does
/// not hold into `writer`'s files, and closes them (or deletes them after a failure). With
/// `lineage` (v3) the table's columns are followed by the rows' stored lineage, which is
/// resolved before the copy.
async fn copy_unchanged(
    mut rows: SendableRecordBatchStream,
    changed: Arc<Gathered>,
    lineage: Option<Arc<lineage::Inherited>>,
    mut writer: AppendWriter,
    name: String,
) -> Result<Vec<(i32, DataFile)>> {
    let copied = async {
        while let Some(batch) = rows.next().await {
            let batch = match &lineage {
                Some(lineage) => lineage.resolve(batch?)?,
                None => batch?,
            };
            let width = batch.num_columns() - 2;
            let keep = changed.unchanged(&batch, width, width + 1)?;
            let values = batch
                .project(&(0..width).collect::<Vec<_>>())
                .map_err(|e| Error::invalid(&name, e))?;
            let kept = filter_record_batch(&values, &keep).map_err(|e| Error::invalid(&name, e))?;
            if kept.num_rows() > 0 {
                writer.write(&kept).await?;
            }
        }
        Ok::<_, Error>(())
    }
    .await;
    match copied {
        Ok(()) => writer.finish().await,
        Err(e) => {
            writer.abort().await;
            Err(e)
        }
    }
}

/// Which of a removed data file's delete files go with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeleteScope {
    /// Those that reference it alone (deletion vectors, single-file position deletes).
    Referenced,
    /// Also those of its partition (every data file of the partition is removed too); delete
    /// files of unpartitioned specs stay.
    Partition,
    /// All of them (every data file of the table is removed).
    All,
}

/// Removes a data file and the delete files `scope` says go with it.
fn remove_with_deletes(mut delta: RowDelta, task: &FileScanTask, scope: DeleteScope) -> RowDelta {
    delta = delta.remove_data_file(task.partition_spec_id, &task.data_file);
    for delete in &task.deletes {
        let referenced =
            delete.file.referenced_data_file.as_deref() == Some(task.data_file.file_path.as_str());
        let same_partition = delete.partition_spec_id == task.partition_spec_id
            && !delete.file.partition.is_empty()
            && delete.file.partition == task.data_file.partition;
        let goes = match scope {
            DeleteScope::Referenced => referenced,
            DeleteScope::Partition => referenced || same_partition,
            DeleteScope::All => true,
        };
        if goes {
            delta = delta.remove_delete_file(&delete.file);
        }
    }
    delta
}

/// The positions already deleted from each of `tasks`' data files, by location key.
async fn deleted_positions(
    io: &FileIO,
    tasks: &[impl std::borrow::Borrow<FileScanTask>],
) -> Result<positions::DeletedPositions> {
    let with_deletes: Vec<FileScanTask> = tasks
        .iter()
        .map(|t| t.borrow())
        .filter(|t| !t.deletes.is_empty())
        .cloned()
        .collect();
    match with_deletes.is_empty() {
        true => Ok(Default::default()),
        false => positions::load(io, &with_deletes).await,
    }
}

/// A partition's tuple and the deleted positions of each of its data files.
type PartitionDeletes = (Vec<Option<Literal>>, BTreeMap<String, RoaringTreemap>);

/// The changed positions of each data file (by `file_path`), and how many there are.
#[derive(Debug, Default)]
struct Gathered {
    positions: HashMap<String, RoaringTreemap>,
    /// Rows changed (deleted or updated).
    rows: u64,
    /// Rows inserted (MERGE).
    inserted: u64,
    /// Of `rows`, those updated (the others are deleted).
    updated: u64,
}

impl Gathered {
    /// Adds the rows of `batch` (identity in columns `file` and `pos`); returns how many were
    /// not already there.
    fn add(&mut self, batch: &RecordBatch, file: usize, pos: usize) -> Result<usize> {
        let mut fresh = 0;
        for_each_run(batch, file, pos, |path, positions| {
            let bitmap = match self.positions.get_mut(path) {
                Some(bitmap) => bitmap,
                None => self.positions.entry(path.to_string()).or_default(),
            };
            // Scans yield a file's rows in order: appended at once while they ascend past the
            // bitmap's last position, inserted one by one from the first that does not.
            let ascending = match bitmap.append(positions.iter().copied()) {
                Ok(n) => n,
                Err(e) => e.valid_until(),
            };
            let ascending = usize::try_from(ascending).unwrap_or(positions.len());
            fresh += ascending;
            for position in &positions[ascending..] {
                fresh += usize::from(bitmap.insert(*position));
            }
        })?;
        self.rows += fresh as u64;
        Ok(fresh)
    }

    /// Which rows of `batch` (identity in columns `file` and `pos`) the statement did not
    /// change.
    fn unchanged(&self, batch: &RecordBatch, file: usize, pos: usize) -> Result<BooleanArray> {
        let mut keep = BooleanBufferBuilder::new(batch.num_rows());
        for_each_run(batch, file, pos, |path, positions| {
            let Some(bitmap) = self.positions.get(path) else {
                keep.append_n(positions.len(), true);
                return;
            };
            match consecutive(positions).and_then(|(first, last)| within(bitmap, first, last)) {
                // A run of consecutive positions (a scan without earlier deletes): every row
                // kept but the changed positions of its range, found in the bitmap.
                Some((first, changed)) => {
                    let start = keep.len();
                    keep.append_n(positions.len(), true);
                    for lo in changed {
                        keep.set_bit(start + (lo - first) as usize, false);
                    }
                }
                None => {
                    for p in positions {
                        keep.append(!bitmap.contains(*p));
                    }
                }
            }
        })?;
        Ok(BooleanArray::new(keep.finish(), None))
    }
}

/// The first and last of `positions` when each is one more than the one before.
fn consecutive(positions: &[u64]) -> Option<(u64, u64)> {
    let (first, last) = (*positions.first()?, *positions.last()?);
    positions
        .windows(2)
        .all(|w| w[1] == w[0].wrapping_add(1))
        .then_some((first, last))
}

/// The low halves of `bitmap`'s positions from `first` to `last`, with the low half of
/// `first`, when both share their high half (always, below 2^32 rows a file).
fn within(
    bitmap: &RoaringTreemap,
    first: u64,
    last: u64,
) -> Option<(u32, roaring::bitmap::Iter<'_>)> {
    let (high, low) = ((first >> 32) as u32, first as u32);
    if (last >> 32) as u32 != high {
        return None;
    }
    let (_, part) = bitmap.bitmaps().find(|(h, _)| *h == high)?;
    Some((low, part.range(low..=last as u32)))
}

/// The MERGE action of each row of `batch` (column `column`).
fn action_codes(batch: &RecordBatch, column: usize) -> Result<Vec<u8>> {
    let actions = cast(batch.column(column), &DataType::UInt8)
        .map_err(|e| Error::invalid("the actions of a MERGE", e))?;
    let actions = actions.as_primitive::<datafusion::arrow::datatypes::UInt8Type>();
    Ok((0..actions.len())
        .map(|i| match actions.is_null(i) {
            true => 0,
            false => actions.value(i),
        })
        .collect())
}

/// Calls `f` with each run of consecutive rows of `batch` in one data file, in order: the
/// file's path and the rows' positions in it (so a batch of one file costs one lookup).
fn for_each_run(
    batch: &RecordBatch,
    file: usize,
    pos: usize,
    mut f: impl FnMut(&str, &[u64]),
) -> Result<()> {
    let bad = |what: &str, column: &ArrayRef| {
        Error::invalid(
            "the rows of a row-level change",
            format_args!("the {what} column has type {}", column.data_type()),
        )
    };
    let positions = batch.column(pos);
    let positions: &Int64Array = positions
        .as_primitive_opt()
        .ok_or_else(|| bad("_pos", positions))?;
    let files = batch.column(file);
    let plain: ArrayRef;
    let (keys, values): (Option<&_>, &StringArray) = match files.data_type() {
        DataType::Dictionary(_, _) => {
            let dictionary = files
                .as_dictionary_opt::<Int32Type>()
                .ok_or_else(|| bad("_file", files))?;
            let values = dictionary
                .values()
                .as_string_opt::<i32>()
                .ok_or_else(|| bad("_file", files))?;
            (Some(dictionary.keys()), values)
        }
        _ => {
            plain = cast(files, &DataType::Utf8).map_err(|_| bad("_file", files))?;
            (None, plain.as_string::<i32>())
        }
    };
    let mut run: Vec<u64> = Vec::new();
    let mut run_file: Option<(usize, &str)> = None;
    for row in 0..batch.num_rows() {
        let index = keys.map_or(row, |k| k.value(row) as usize);
        if positions.is_null(row) || keys.map_or(values.is_null(row), |k| k.is_null(row)) {
            return Err(Error::invalid(
                "the rows of a row-level change",
                "a row has no identity (_file or _pos is NULL)",
            ));
        }
        // Dictionary keys name a run's file; plain strings are compared.
        let same = run_file
            .is_some_and(|(i, p)| i == index || (keys.is_none() && p == values.value(index)));
        if !same {
            if let Some((_, path)) = run_file {
                f(path, &run);
            }
            run.clear();
            run_file = Some((index, values.value(index)));
        }
        run.push(u64::try_from(positions.value(row)).unwrap_or(0));
    }
    if let Some((_, path)) = run_file {
        f(path, &run);
    }
    Ok(())
}

impl DisplayAs for RowChangeSink {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = self.change.mode().map_or("unknown", |m| m.as_str());
        let statement = self.change.kind.statement();
        let table = self.change.target.name();
        let branch = &self.change.branch;
        match t {
            DisplayFormatType::TreeRender => {
                writeln!(f, "statement={statement}")?;
                writeln!(f, "table={table}")?;
                write!(f, "mode={mode}")
            }
            _ => write!(
                f,
                "IcebergRowChange: statement={statement}, table={table}, branch={branch}, \
                 mode={mode}, files_removed_by_metadata={}",
                self.change.whole_files.len()
            ),
        }
    }
}

#[async_trait]
impl DataSink for RowChangeSink {
    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn schema(&self) -> &SchemaRef {
        &self.input_schema
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> DFResult<u64> {
        Ok(self.run(data, context).await?)
    }
}

#[cfg(test)]
mod gathered_tests {
    use super::*;

    fn batch(rows: &[(&str, i64)]) -> RecordBatch {
        let files = StringArray::from_iter_values(rows.iter().map(|(f, _)| *f));
        let positions = Int64Array::from_iter_values(rows.iter().map(|(_, p)| *p));
        RecordBatch::try_from_iter([
            ("_file", Arc::new(files) as ArrayRef),
            ("_pos", Arc::new(positions) as ArrayRef),
        ])
        .unwrap()
    }

    #[test]
    fn positions_are_counted_once_in_order_or_not() {
        let mut gathered = Gathered::default();
        let first = batch(&[("a", 1), ("a", 2), ("a", 9), ("b", 4)]);
        assert_eq!(gathered.add(&first, 0, 1).unwrap(), 4);
        // Ascending past the bitmap's end, then back below it, then a repeat.
        let second = batch(&[
            ("a", 10),
            ("a", 12),
            ("a", 5),
            ("a", 11),
            ("a", 2),
            ("b", 4),
        ]);
        assert_eq!(gathered.add(&second, 0, 1).unwrap(), 4);
        assert_eq!(gathered.rows, 8);
        let a: Vec<u64> = gathered.positions["a"].iter().collect();
        assert_eq!(a, [1, 2, 5, 9, 10, 11, 12]);
        let b: Vec<u64> = gathered.positions["b"].iter().collect();
        assert_eq!(b, [4]);
    }

    #[test]
    fn unchanged_rows_are_those_whose_positions_were_not_gathered() {
        let mut gathered = Gathered::default();
        let changed = batch(&[("a", 1), ("a", 3), ("a", 4), ("b", 0), ("c", 1 << 33)]);
        gathered.add(&changed, 0, 1).unwrap();
        // Consecutive runs (a, then b), a run with a gap (a), a file without changes (d),
        // positions past 2^32 (c).
        let rows = [
            ("a", 0),
            ("a", 1),
            ("a", 2),
            ("a", 3),
            ("a", 4),
            ("a", 5),
            ("b", 0),
            ("b", 1),
            ("a", 7),
            ("a", 3),
            ("d", 1),
            ("c", (1 << 33) - 1),
            ("c", 1 << 33),
        ];
        let keep = gathered.unchanged(&batch(&rows), 0, 1).unwrap();
        let keep: Vec<bool> = keep.iter().map(Option::unwrap).collect();
        let expected = [
            true, false, true, false, false, true, false, true, true, false, true, true, false,
        ];
        assert_eq!(keep, expected);
    }
}
