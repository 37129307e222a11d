//! DELETE, UPDATE and MERGE across processes: the files of a row-level statement are written
//! where its rows are (on the workers), and its one commit happens where it was planned (the
//! coordinator), with the same conflict checks as in one process.
//!
//! [`super::write::ParallelWrites`] turns the statement's `DataSinkExec(RowChangeSink)` into
//!
//! ```text
//! IcebergChangeCommitExec                       coordinator: one RowDelta, one commit
//!   CoalescePartitionsExec
//!     IcebergChangeWriteExec                    workers: new rows, copies or delete files
//!       RepartitionExec: hash(_file)            every changed row of a data file to one writer
//!         the statement's rows (_file, _pos)
//! ```
//!
//! Each writer sees every changed row of the data files it has, so it writes what one
//! process would for them: their copies without the changed rows (copy-on-write), a position
//! delete file per partition (merge-on-read, v2) or one deletion vector per data file
//! (merge-on-read, v3), and the new rows of UPDATE and MERGE. It finds those data files'
//! partitions and deletes in the snapshot the rows were read from (it plans that snapshot
//! when it has a changed row). It returns one row: its files and the data files they stand
//! for ([`wire::ChangeReport`]).
//!
//! The commit node gathers the reports, rewrites (v3) the deletion vectors that share a Puffin
//! file with a replaced one (only it knows every replaced vector), and commits as the sink
//! would. Every file's name starts with the statement's token: when any part fails, the
//! commit node deletes the files reported to it and those it lists under `data/` (a worker
//! that died cannot report its files), and commits nothing.
//!
//! The rows a MERGE inserts have no `_file`: they are spread over the writers by the values
//! of their first columns (up to four), the other rows' values hashing as NULL.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, BinaryArray, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::expressions::{Column, case, is_null};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::StreamExt;
use prost::Message;
use tokio::sync::OnceCell;

use super::wire;
use super::write::{
    Committed, data_file_from_wire, data_file_to_wire, statement_files, unmerged,
    written_file_from_wire,
};
use crate::dml::{RowChangeKind, RowChangeSink, RowWrites, Written};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::scan::FileScanTask;
use crate::scan::deletes::DeleteFileTask;
use crate::spec::properties::RowLevelMode;
use crate::spec::{DataContentType, FormatVersion, Schema, TableMetadata};
use crate::table::Table;

/// `sink`'s statement as writers over `input` (its rows, before they were merged into one
/// partition) and a commit node, when its rows are read (not TRUNCATE, not a DELETE decided
/// by metadata): see the module docs.
pub(super) fn parallel(
    sink: &RowChangeSink,
    input: &Arc<dyn ExecutionPlan>,
    partitions: usize,
) -> DFResult<Option<Arc<dyn ExecutionPlan>>> {
    let change = sink.change();
    let input = unmerged(input);
    let width = input.schema().fields().len();
    let file_column = match change.kind {
        RowChangeKind::Delete | RowChangeKind::Update => width.checked_sub(2),
        RowChangeKind::Merge => width.checked_sub(3),
        RowChangeKind::Truncate => None,
    };
    let Some(file_column) = file_column else {
        return Ok(None);
    };
    if input
        .downcast_ref::<datafusion::physical_plan::empty::EmptyExec>()
        .is_some()
    {
        return Ok(None);
    }
    let schema = input.schema();
    let file: Arc<dyn PhysicalExpr> =
        Arc::new(Column::new(schema.field(file_column).name(), file_column));
    let mut keys = vec![Arc::clone(&file)];
    if change.kind == RowChangeKind::Merge {
        // The rows a MERGE inserts have no `_file`: spread by their values (NULL for the
        // others, whose `_file` alone places them).
        let inserted = is_null(Arc::clone(&file))?;
        for (i, field) in schema.fields()[..file_column].iter().enumerate() {
            if keys.len() > 4 || !spreads(field.data_type()) {
                continue;
            }
            let value: Arc<dyn PhysicalExpr> = Arc::new(Column::new(field.name(), i));
            keys.push(case(None, vec![(Arc::clone(&inserted), value)], None)?);
        }
    }
    let by_file = Partitioning::Hash(keys, partitions.max(1));
    let shuffled = Arc::new(RepartitionExec::try_new(input, by_file)?);
    let spec = ChangeSpec {
        io: change.table.io().clone(),
        metadata_location: change.table.metadata_location().to_string(),
        kind: change.kind,
        schema: change.schema.clone(),
        base_snapshot: change.base_snapshot,
        statement: change.name(),
        token: uuid::Uuid::new_v4().simple().to_string(),
        scanned: match &change.scanned_files {
            Some(tasks) => Scanned::Tasks(tasks.clone()),
            None => Scanned::Unknown,
        },
        loaded: OnceCell::new_with(Some(change.table.clone())),
    };
    let token = spec.token.clone();
    let write = ChangeWriteExec::with_spec(shuffled, Arc::new(spec));
    let gathered = Arc::new(CoalescePartitionsExec::new(Arc::new(write)));
    Ok(Some(Arc::new(ChangeCommitExec::new(
        gathered,
        Arc::new(sink.clone()),
        token,
        Committed::default(),
    ))))
}

/// Whether values of `ty` spread rows well when hashed (and hash cheaply).
fn spreads(ty: &DataType) -> bool {
    ty.is_primitive()
        || matches!(
            ty,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Binary
        )
}

/// What a writer of a row-level statement needs: the table (loaded, or the metadata file it is
/// loaded from when the writer first runs in another process) and the statement.
#[derive(Debug)]
pub(super) struct ChangeSpec {
    pub(super) io: FileIO,
    pub(super) metadata_location: String,
    pub(super) kind: RowChangeKind,
    pub(super) schema: Schema,
    pub(super) base_snapshot: Option<i64>,
    pub(super) statement: String,
    /// What the names of the statement's files start with (`<token>-<partition>-<uuid>`).
    pub(super) token: String,
    /// The tasks the statement's scan planned, when known: sent, so that a writer finds its
    /// data files' partitions and deletes without planning.
    pub(super) scanned: Scanned,
    pub(super) loaded: OnceCell<Table>,
}

/// The tasks the statement's scan planned.
#[derive(Debug)]
pub(super) enum Scanned {
    /// Unknown: a writer with changed rows plans the snapshot they were read from.
    Unknown,
    /// Where the statement was planned.
    Tasks(Vec<FileScanTask>),
    /// As they travelled, read once the table is loaded (their files' specs are checked
    /// against it), by the first writer that needs them.
    Sent {
        wire: (Vec<wire::ScanTask>, Vec<wire::DeleteTask>),
        read: OnceCell<Vec<FileScanTask>>,
    },
}

impl ChangeSpec {
    async fn writes(&self, partition: usize) -> Result<RowWrites> {
        let table = self
            .loaded
            .get_or_try_init(|| {
                Table::load_metadata_file(self.io.clone(), self.metadata_location.clone())
            })
            .await?;
        let scanned_files = match &self.scanned {
            Scanned::Unknown => None,
            Scanned::Tasks(tasks) => Some(tasks.clone()),
            Scanned::Sent { wire, read } => {
                let (tasks, deletes) = wire;
                let metadata = table.metadata();
                let read = read
                    .get_or_try_init(|| async { tasks_from_wire(tasks, deletes, metadata) })
                    .await?;
                Some(read.clone())
            }
        };
        Ok(RowWrites {
            kind: self.kind,
            table: table.clone(),
            schema: self.schema.clone(),
            base_snapshot: self.base_snapshot,
            scanned_files,
            name: self.statement.clone(),
            file_prefix: format!("{}-{partition}-", self.token),
        })
    }

    /// The planned tasks as they travel (none when unknown): each task, and each delete file
    /// once (tasks share them).
    pub(super) fn scanned_to_wire(&self) -> Option<(Vec<wire::ScanTask>, Vec<wire::DeleteTask>)> {
        match &self.scanned {
            Scanned::Unknown => None,
            Scanned::Tasks(tasks) => Some(tasks_to_wire(tasks)),
            Scanned::Sent { wire, .. } => Some(wire.clone()),
        }
    }
}

pub(super) fn tasks_to_wire(
    tasks: &[FileScanTask],
) -> (Vec<wire::ScanTask>, Vec<wire::DeleteTask>) {
    let mut deletes = Vec::new();
    let mut index: HashMap<(&str, Option<i64>), u32> = HashMap::new();
    let scanned = tasks
        .iter()
        .map(|task| {
            let indexes = task
                .deletes
                .iter()
                .map(|delete| {
                    let file = &delete.file;
                    let key = (file.file_path.as_str(), file.content_offset);
                    *index.entry(key).or_insert_with(|| {
                        deletes.push(wire::DeleteTask {
                            file: Some(data_file_to_wire(delete.partition_spec_id, file)),
                            data_sequence_number: delete.data_sequence_number,
                        });
                        (deletes.len() - 1) as u32
                    })
                })
                .collect();
            wire::ScanTask {
                data_file: Some(data_file_to_wire(task.partition_spec_id, &task.data_file)),
                data_sequence_number: task.data_sequence_number,
                deletes: indexes,
            }
        })
        .collect();
    (scanned, deletes)
}

/// The tasks of [`tasks_to_wire`], their files read against `metadata`.
pub(super) fn tasks_from_wire(
    scanned: &[wire::ScanTask],
    deletes: &[wire::DeleteTask],
    metadata: &TableMetadata,
) -> Result<Vec<FileScanTask>> {
    let missing = || Error::corrupt("the tasks of a row-level change", "a task without its file");
    let deletes: Vec<Arc<DeleteFileTask>> = deletes
        .iter()
        .map(|delete| {
            let file = delete.file.clone().ok_or_else(missing)?;
            let (partition_spec_id, file) = data_file_from_wire(file, metadata)?;
            Ok(Arc::new(DeleteFileTask {
                file,
                partition_spec_id,
                data_sequence_number: delete.data_sequence_number,
            }))
        })
        .collect::<Result<_>>()?;
    scanned
        .iter()
        .map(|task| {
            let file = task.data_file.clone().ok_or_else(missing)?;
            let (partition_spec_id, data_file) = data_file_from_wire(file, metadata)?;
            let deletes = task
                .deletes
                .iter()
                .map(|i| {
                    deletes.get(*i as usize).cloned().ok_or_else(|| {
                        Error::corrupt(
                            "the tasks of a row-level change",
                            format!("a task names delete file {i} of {}", deletes.len()),
                        )
                    })
                })
                .collect::<Result<_>>()?;
            Ok(FileScanTask {
                data_file,
                partition_spec_id,
                data_sequence_number: task.data_sequence_number,
                deletes,
            })
        })
        .collect()
}

/// Writes the files of the changed rows of each partition of its input (all the changed rows
/// of a data file in one partition); returns one row per partition: its
/// [`wire::ChangeReport`]. A writer that fails deletes its files.
#[derive(Debug)]
pub(crate) struct ChangeWriteExec {
    input: Arc<dyn ExecutionPlan>,
    spec: Arc<ChangeSpec>,
    properties: Arc<PlanProperties>,
}

/// The schema of the rows [`ChangeWriteExec`] returns.
fn report_schema() -> SchemaRef {
    Arc::new(ArrowSchema::new(vec![Field::new(
        "report",
        DataType::Binary,
        false,
    )]))
}

impl ChangeWriteExec {
    pub(super) fn with_spec(input: Arc<dyn ExecutionPlan>, spec: Arc<ChangeSpec>) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(report_schema()),
            input.properties().partitioning.clone(),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            input,
            spec,
            properties,
        }
    }

    pub(super) fn spec(&self) -> &ChangeSpec {
        &self.spec
    }
}

impl DisplayAs for ChangeWriteExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IcebergChangeWriteExec: {}", self.spec.statement)
    }
}

impl ExecutionPlan for ChangeWriteExec {
    fn name(&self) -> &str {
        "IcebergChangeWriteExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DFResult<TreeNodeRecursion>,
    ) -> DFResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![false]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        match <[_; 1]>::try_from(children) {
            Ok([input]) => Ok(Arc::new(Self::with_spec(input, Arc::clone(&self.spec)))),
            Err(_) => Err(DataFusionError::Internal(
                "IcebergChangeWriteExec has one child".into(),
            )),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        let width = self.input.schema().fields().len();
        let input = self.input.execute(partition, Arc::clone(&context))?;
        let spec = Arc::clone(&self.spec);
        let written = async move {
            let writes = spec.writes(partition).await?;
            let written = writes.write(input, width, false, &context).await?;
            let report = report_of(&written).encode_to_vec();
            RecordBatch::try_new(
                report_schema(),
                vec![Arc::new(BinaryArray::from_iter_values([report])) as ArrayRef],
            )
            .map_err(|e| Error::invalid(&spec.statement, e))
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            report_schema(),
            futures::stream::once(async move { written.await.map_err(DataFusionError::from) }),
        )))
    }
}

fn report_of(written: &Written) -> wire::ChangeReport {
    let files = |files: &[(i32, crate::spec::DataFile)]| {
        files
            .iter()
            .map(|(spec, file)| data_file_to_wire(*spec, file))
            .collect()
    };
    wire::ChangeReport {
        data_files: files(&written.data_files),
        delete_files: files(&written.delete_files),
        handled: written
            .handled
            .iter()
            .map(|t| t.data_file.file_path.clone())
            .collect(),
        rows: written.rows,
        updated: written.updated,
        inserted: written.inserted,
    }
}

/// Commits what its input's writers report, once, as the statement's sink would; returns
/// the rows changed (`count`).
#[derive(Debug)]
pub(crate) struct ChangeCommitExec {
    input: Arc<dyn ExecutionPlan>,
    sink: Arc<RowChangeSink>,
    /// The writers' [`ChangeSpec::token`].
    token: String,
    /// Set to the answer once the commit happened.
    committed: Committed,
    properties: Arc<PlanProperties>,
}

fn count_schema() -> SchemaRef {
    Arc::new(ArrowSchema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]))
}

impl ChangeCommitExec {
    fn new(
        input: Arc<dyn ExecutionPlan>,
        sink: Arc<RowChangeSink>,
        token: String,
        committed: Committed,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(count_schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            input,
            sink,
            token,
            committed,
            properties,
        }
    }
}

impl ChangeCommitExec {
    pub(super) fn committed(&self) -> Committed {
        Arc::clone(&self.committed)
    }
}

impl DisplayAs for ChangeCommitExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IcebergChangeCommitExec: ")?;
        self.sink.fmt_as(DisplayFormatType::Default, f)
    }
}

impl ExecutionPlan for ChangeCommitExec {
    fn name(&self) -> &str {
        "IcebergChangeCommitExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        vec![Distribution::SinglePartition]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DFResult<TreeNodeRecursion>,
    ) -> DFResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        match <[_; 1]>::try_from(children) {
            Ok([input]) => Ok(Arc::new(Self::new(
                input,
                Arc::clone(&self.sink),
                self.token.clone(),
                Arc::clone(&self.committed),
            ))),
            Err(_) => Err(DataFusionError::Internal(
                "IcebergChangeCommitExec has one child".into(),
            )),
        }
    }

    fn metrics(&self) -> Option<datafusion::physical_plan::metrics::MetricsSet> {
        datafusion::datasource::sink::DataSink::metrics(self.sink.as_ref())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "IcebergChangeCommitExec has one partition, not partition {partition}"
            )));
        }
        let input = self.input.execute(0, Arc::clone(&context))?;
        let (sink, token) = (Arc::clone(&self.sink), self.token.clone());
        let committed = Arc::clone(&self.committed);
        let committed = async move {
            let change = sink.change();
            let (io, location) = (
                change.table.io().clone(),
                change.table.metadata().location.clone(),
            );
            let mut reported = Vec::new();
            let result = commit(&sink, input, &token, &context, &mut reported).await;
            match result {
                Ok(count) => {
                    let _ = committed.set(count);
                    Ok(count)
                }
                Err(e @ Error::CommitStateUnknown { .. }) => Err(e),
                Err(e) => {
                    reported.extend(statement_files(&io, &location, &format!("{token}-")).await);
                    crate::transaction::delete_all(&io, &reported).await;
                    Err(e)
                }
            }
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            count_schema(),
            futures::stream::once(async move {
                let count = committed.await?;
                RecordBatch::try_new(
                    count_schema(),
                    vec![Arc::new(UInt64Array::from(vec![count])) as ArrayRef],
                )
                .map_err(DataFusionError::from)
            }),
        )))
    }
}

/// Gathers the writers' reports from `input` (the files reported are added to `reported` as
/// they come), carries the deletion vectors no writer could, and commits through `sink`.
async fn commit(
    sink: &RowChangeSink,
    mut input: SendableRecordBatchStream,
    token: &str,
    context: &Arc<TaskContext>,
    reported: &mut Vec<String>,
) -> Result<u64> {
    let change = sink.change();
    let metadata = Arc::clone(change.table.metadata());
    let mut written = Written::default();
    let mut handled: Vec<String> = Vec::new();
    while let Some(batch) = input.next().await {
        let batch = batch?;
        let reports = batch.column(0).as_binary::<i32>();
        for bytes in reports.iter().flatten() {
            let report = wire::ChangeReport::decode(bytes).map_err(|e| {
                Error::corrupt(
                    "the files a worker wrote for a row-level change",
                    e.to_string(),
                )
            })?;
            reported.extend(
                report
                    .data_files
                    .iter()
                    .chain(&report.delete_files)
                    .map(|f| f.file_path.clone()),
            );
            for (content, files, into) in [
                (
                    DataContentType::Data,
                    report.data_files,
                    &mut written.data_files,
                ),
                (
                    DataContentType::PositionDeletes,
                    report.delete_files,
                    &mut written.delete_files,
                ),
            ] {
                for file in files {
                    into.push(written_file_from_wire(file, content, &metadata)?);
                }
            }
            handled.extend(report.handled);
            written.rows += report.rows;
            written.updated += report.updated;
            written.inserted += report.inserted;
        }
    }
    let distinct: HashSet<&str> = handled.iter().map(String::as_str).collect();
    if distinct.len() != handled.len() {
        return Err(Error::invalid(
            change.name(),
            "two writers changed rows of the same data file",
        ));
    }
    // v3 merge-on-read: the vectors sharing a Puffin file with one the writers replaced are
    // carried into a new one here, where every replaced vector is known.
    let mut writes = change.writes();
    writes.file_prefix = format!("{token}-commit-");
    let carry =
        writes.mode()? == RowLevelMode::MergeOnRead && metadata.format_version == FormatVersion::V3;
    let tasks = writes.tasks_of(&distinct, carry).await?;
    let carried: Vec<_> = tasks
        .iter()
        .filter(|t| !distinct.contains(t.data_file.file_path.as_str()))
        .cloned()
        .collect();
    if !carried.is_empty() {
        let vectors = writes.carry_vectors(&carried, context).await?;
        reported.extend(vectors.iter().map(|(_, f)| f.file_path.clone()));
        written.delete_files.extend(vectors);
    }
    written.handled = tasks;
    sink.commit(written).await
}
