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
//! partitions and deletes among the tasks the statement's scan planned, which travel with it
//! (each delete file once; only when they are unknown does a writer with changed rows plan
//! the snapshot the rows were read from). It returns one row: its files and the data files
//! they stand for ([`wire::ChangeReport`]).
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
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, BinaryArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef};
use datafusion::error::Result as DFResult;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{Column, case, is_null};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, Partitioning};
use futures::StreamExt;
use futures::future::BoxFuture;
use prost::Message;
use tokio::sync::OnceCell;

use super::nodes::{CommitExec, Committer, Writer, WriterExec};
use super::wire;
use super::write::{
    data_file_from_wire, data_file_to_wire, statement_files, unmerged, written_file_from_wire,
};
use crate::dml::{RowChangeKind, RowChangeSink, RowWrites, Written, locations};
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
            Some(tasks) => Scanned::Tasks(Arc::clone(tasks)),
            None => Scanned::Unknown,
        },
        loaded: OnceCell::new_with(Some(change.table.clone())),
    };
    let token = spec.token.clone();
    let write = ChangeWriteExec::new(shuffled, Arc::new(spec));
    let gathered = Arc::new(CoalescePartitionsExec::new(Arc::new(write)));
    let commit = CommitExec::new(gathered, Arc::new(sink.clone()), token);
    Ok(Some(Arc::new(commit)))
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
    Tasks(Arc<Vec<FileScanTask>>),
    /// As they travelled, read once the table is loaded (their files' specs are checked
    /// against it), by the first writer that needs them.
    Sent {
        wire: (Vec<wire::ScanTask>, Vec<wire::DeleteTask>),
        read: OnceCell<Arc<Vec<FileScanTask>>>,
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
            Scanned::Tasks(tasks) => Some(Arc::clone(tasks)),
            Scanned::Sent { wire, read } => {
                let (tasks, deletes) = wire;
                let metadata = table.metadata();
                let read = read
                    .get_or_try_init(|| async {
                        tasks_from_wire(tasks, deletes, metadata).map(Arc::new)
                    })
                    .await?;
                Some(Arc::clone(read))
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

/// A DELETE's, UPDATE's or MERGE's writers: the files of the changed rows of each partition of
/// the rows (all the changed rows of a data file in one partition); returns one row per
/// partition, its [`wire::ChangeReport`].
pub(super) type ChangeWriteExec = WriterExec<ChangeSpec>;

impl Writer for ChangeSpec {
    const NAME: &'static str = "IcebergChangeWriteExec";

    fn schema() -> SchemaRef {
        Arc::new(ArrowSchema::new(vec![Field::new(
            "report",
            DataType::Binary,
            false,
        )]))
    }

    fn statement(&self) -> &str {
        &self.statement
    }

    fn write(
        self: Arc<Self>,
        partition: usize,
        input: SendableRecordBatchStream,
        context: Arc<TaskContext>,
    ) -> BoxFuture<'static, Result<RecordBatch>> {
        Box::pin(async move {
            let width = input.schema().fields().len();
            let writes = self.writes(partition).await?;
            let written = writes.write(input, width, false, &context).await?;
            let report = report_of(&written).encode_to_vec();
            RecordBatch::try_new(
                Self::schema(),
                vec![Arc::new(BinaryArray::from_iter_values([report])) as ArrayRef],
            )
            .map_err(|e| Error::invalid(&self.statement, e))
        })
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

/// A row-level statement's commit: what its writers report, committed once as the sink would
/// (the same conflict checks); answers the rows changed.
impl Committer for RowChangeSink {
    const NAME: &'static str = "IcebergChangeCommitExec";

    fn commit_reports(
        self: Arc<Self>,
        input: SendableRecordBatchStream,
        token: String,
        context: Arc<TaskContext>,
    ) -> BoxFuture<'static, Result<u64>> {
        Box::pin(async move {
            let change = self.change();
            let io = change.table.io();
            let mut reported = Vec::new();
            match commit(&self, input, &token, &context, &mut reported).await {
                Ok(count) => Ok(count),
                Err(e @ Error::CommitStateUnknown { .. }) => Err(e),
                Err(e) => {
                    let location = &change.table.metadata().location;
                    reported.extend(statement_files(io, location, &format!("{token}-")).await);
                    crate::transaction::delete_all(io, &reported).await;
                    Err(e)
                }
            }
        })
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
        reported.extend(locations(&vectors));
        written.delete_files.extend(vectors);
    }
    written.handled = tasks;
    sink.commit(written).await
}
