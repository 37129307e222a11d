//! INSERT across processes: the rows are written into data files where they are (one writer
//! per partition: on the workers), and the statement's one commit happens where it was planned
//! (the coordinator).
//!
//! [`ParallelWrites`] (a physical optimizer rule that [`super::cluster::coordinator`] installs)
//! turns the single-partition `DataSinkExec(IcebergSink)` of an INSERT into
//! `IcebergCommitExec(CoalescePartitionsExec(IcebergWriteExec(input)))`. `IcebergWriteExec`
//! travels (it knows the table's metadata file, never its catalog) and returns one row per data
//! file written; `IcebergCommitExec` gathers them and commits them as the sink would have (fast
//! append, or the overwrite), once. A writer that fails deletes the files it wrote; when any
//! part of the statement fails, the commit node deletes every file reported to it and commits
//! nothing. DELETE, UPDATE and MERGE are split the same way ([`super::changes`]).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryArray, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef, UInt64Type};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::error::Result as DFResult;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use futures::StreamExt;
use futures::future::BoxFuture;
use prost::Message;
use tokio::sync::OnceCell;

use super::nodes::{CommitExec, Committer, Writer, WriterExec};
use super::{changes, wire};
use crate::dml::RowChangeSink;
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::spec::{DataContentType, FileFormat, Literal, Schema, TableMetadata};
use crate::table::Table;
use crate::write::IcebergSink;
use crate::write::sink::write_files;

/// The rule that writes the files of an INSERT (see the module docs), DELETE, UPDATE and MERGE
/// ([`super::changes`]) where their rows are.
#[derive(Debug, Default)]
pub struct ParallelWrites;

impl PhysicalOptimizerRule for ParallelWrites {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(exec) = node.downcast_ref::<DataSinkExec>() else {
                return Ok(Transformed::no(node));
            };
            let sink = exec.sink() as &dyn std::any::Any;
            if let Some(sink) = sink.downcast_ref::<RowChangeSink>() {
                let partitions = config.execution.target_partitions;
                return Ok(match changes::parallel(sink, exec.input(), partitions)? {
                    Some(plan) => Transformed::new(plan, true, TreeNodeRecursion::Jump),
                    None => Transformed::no(node),
                });
            }
            let Some(sink) = (exec.sink() as &dyn std::any::Any).downcast_ref::<IcebergSink>()
            else {
                return Ok(Transformed::no(node));
            };
            let sink = Arc::new(sink.clone());
            let spec = Arc::new(WriteSpec::of(&sink));
            let token = spec.token.clone();
            let write = WriteExec::new(unmerged(exec.input()), spec);
            let gathered = Arc::new(CoalescePartitionsExec::new(Arc::new(write)));
            Ok(Transformed::new(
                Arc::new(CommitExec::new(gathered, sink, token)),
                true,
                TreeNodeRecursion::Jump,
            ))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "icefloe_parallel_writes"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The input of a sink without the merge into one partition that the sink asked for: each
/// partition (sorted, for a sorted table) is written by its own writer.
pub(super) fn unmerged(input: &Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    if let Some(merge) = input.downcast_ref::<CoalescePartitionsExec>() {
        return Arc::clone(merge.input());
    }
    if let Some(merge) = input.downcast_ref::<SortPreservingMergeExec>() {
        return Arc::clone(merge.input());
    }
    Arc::clone(input)
}

/// The table a writer writes: loaded, or (decoded in another process) the metadata file it is
/// loaded from when the writer first runs.
#[derive(Debug)]
pub(super) struct WriteSpec {
    pub(super) io: FileIO,
    pub(super) metadata_location: String,
    pub(super) schema: Schema,
    pub(super) sort_order_id: Option<i32>,
    pub(super) statement: String,
    /// What the names of the statement's files start with (`<token>-<partition>-<uuid>`), so
    /// that a failed statement finds them all, also those of a worker that died.
    pub(super) token: String,
    pub(super) loaded: OnceCell<Table>,
}

impl WriteSpec {
    /// The writers of `sink`'s INSERT, under a token of their own.
    fn of(sink: &IcebergSink) -> Self {
        let (table, schema, sort_order_id, statement) = sink.files_of();
        Self {
            io: table.io().clone(),
            metadata_location: table.metadata_location().to_string(),
            schema: schema.clone(),
            sort_order_id,
            statement,
            token: uuid::Uuid::new_v4().simple().to_string(),
            loaded: OnceCell::new_with(Some(table.clone())),
        }
    }

    async fn table(&self) -> Result<Table> {
        let table = self
            .loaded
            .get_or_try_init(|| {
                Table::load_metadata_file(self.io.clone(), self.metadata_location.clone())
            })
            .await?;
        Ok(table.clone())
    }
}

/// An INSERT's writers: each partition of the rows into data files of the table; returns one
/// row per file written (`data_file`: the file's [`wire::DataFile`] bytes, `record_count`).
pub(super) type WriteExec = WriterExec<WriteSpec>;

impl Writer for WriteSpec {
    const NAME: &'static str = "IcebergWriteExec";

    fn schema() -> SchemaRef {
        Arc::new(ArrowSchema::new(vec![
            Field::new("data_file", DataType::Binary, false),
            Field::new("record_count", DataType::UInt64, false),
        ]))
    }

    fn statement(&self) -> &str {
        &self.statement
    }

    fn write(
        self: Arc<Self>,
        partition: usize,
        input: SendableRecordBatchStream,
        _context: Arc<TaskContext>,
    ) -> BoxFuture<'static, Result<RecordBatch>> {
        Box::pin(async move {
            let table = self.table().await?;
            let prefix = format!("{}-{partition}-", self.token);
            let (files, _) = write_files(
                &table,
                &self.schema,
                self.sort_order_id,
                &self.statement,
                &prefix,
                input,
            )
            .await?;
            files_batch(&files)
        })
    }
}

/// The rows of `files` (see [`WriteExec`]).
fn files_batch(files: &[(i32, crate::spec::DataFile)]) -> Result<RecordBatch> {
    let encoded: Vec<Vec<u8>> = files
        .iter()
        .map(|(spec, file)| data_file_to_wire(*spec, file).encode_to_vec())
        .collect();
    let counts: Vec<u64> = files
        .iter()
        .map(|(_, f)| u64::try_from(f.record_count).unwrap_or(0))
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(BinaryArray::from_iter_values(encoded)),
        Arc::new(UInt64Array::from(counts)),
    ];
    RecordBatch::try_new(WriteSpec::schema(), columns)
        .map_err(|e| Error::invalid("the data files written", e))
}

/// An INSERT's commit: the data files its writers report, committed once as the sink says (a
/// fast append, or the overwrite); answers the rows inserted.
impl Committer for IcebergSink {
    const NAME: &'static str = "IcebergCommitExec";

    fn commit_reports(
        self: Arc<Self>,
        mut input: SendableRecordBatchStream,
        token: String,
        _context: Arc<TaskContext>,
    ) -> BoxFuture<'static, Result<u64>> {
        Box::pin(async move {
            let (table, _, _, _) = self.files_of();
            let (metadata, io) = (Arc::clone(table.metadata()), table.io().clone());
            let mut files = Vec::new();
            let mut rows = 0u64;
            let mut failed = None;
            while let Some(batch) = input.next().await {
                let read = batch.map_err(Error::from).and_then(|batch| {
                    let counts = batch.column(1).as_primitive::<UInt64Type>();
                    rows += counts.values().iter().sum::<u64>();
                    data_files(&batch, &metadata)
                });
                match read {
                    Ok(more) => files.extend(more),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if let Some(e) = failed {
                let mut paths: Vec<String> = files.into_iter().map(|(_, f)| f.file_path).collect();
                paths.extend(statement_files(&io, &metadata.location, &format!("{token}-")).await);
                crate::transaction::delete_all(&io, &paths).await;
                return Err(e);
            }
            IcebergSink::commit(&self, files, rows).await
        })
    }
}

/// The files under the table's `data/` whose names start with `prefix`: every file the
/// statement's writers wrote, reported or not (a worker that died cannot report its files).
/// Best effort: a listing that fails finds none.
pub(super) async fn statement_files(
    io: &FileIO,
    table_location: &str,
    prefix: &str,
) -> Vec<String> {
    let data = format!("{}/data", table_location.trim_end_matches('/'));
    let (Ok(root), Ok(listing)) = (io.resolve(&data), io.list_files(&data).await) else {
        return Vec::new();
    };
    let root = root.path.to_string();
    listing
        .files
        .into_iter()
        .filter_map(|file| {
            let path = file.path.to_string();
            let name = path.rsplit('/').next()?;
            let relative = path.strip_prefix(&root)?.trim_start_matches('/');
            name.starts_with(prefix)
                .then(|| format!("{data}/{relative}"))
        })
        .collect()
}

/// The data files of a batch of [`WriteExec`]'s rows, their partition values typed by the
/// table's specs over `schema`.
fn data_files(
    batch: &RecordBatch,
    metadata: &TableMetadata,
) -> Result<Vec<(i32, crate::spec::DataFile)>> {
    let bytes = batch.column(0).as_binary::<i32>();
    (0..bytes.len())
        .map(|i| {
            let file = wire::DataFile::decode(bytes.value(i))
                .map_err(|e| Error::corrupt("a data file written by a worker", e.to_string()))?;
            written_file_from_wire(file, DataContentType::Data, metadata)
        })
        .collect()
}

pub(super) fn data_file_to_wire(spec_id: i32, file: &crate::spec::DataFile) -> wire::DataFile {
    wire::DataFile {
        spec_id,
        content: file.content as i32,
        file_path: file.file_path.clone(),
        file_format: format_name(&file.file_format),
        partition: file
            .partition
            .iter()
            .map(|v| v.as_ref().map(Literal::to_bytes).unwrap_or_default())
            .collect(),
        partition_null: file.partition.iter().map(Option::is_none).collect(),
        partition_kinds: file
            .partition
            .iter()
            .map(|v| literal_kind(v.as_ref()))
            .collect(),
        record_count: file.record_count,
        file_size_in_bytes: file.file_size_in_bytes,
        column_sizes: file.column_sizes.iter().map(|(k, v)| (*k, *v)).collect(),
        value_counts: file.value_counts.iter().map(|(k, v)| (*k, *v)).collect(),
        null_value_counts: file
            .null_value_counts
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect(),
        nan_value_counts: file
            .nan_value_counts
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect(),
        has_bounds: file.lower_bounds.is_some() || file.upper_bounds.is_some(),
        lower_bounds: file
            .lower_bounds
            .iter()
            .flatten()
            .map(|(k, v)| (*k, v.clone()))
            .collect(),
        upper_bounds: file
            .upper_bounds
            .iter()
            .flatten()
            .map(|(k, v)| (*k, v.clone()))
            .collect(),
        has_split_offsets: file.split_offsets.is_some(),
        split_offsets: file.split_offsets.clone().unwrap_or_default(),
        sort_order_id: file.sort_order_id,
        key_metadata: file.key_metadata.clone(),
        referenced_data_file: file.referenced_data_file.clone(),
        content_offset: file.content_offset,
        content_size_in_bytes: file.content_size_in_bytes,
        equality_ids: file.equality_ids.clone().unwrap_or_default(),
        has_equality_ids: file.equality_ids.is_some(),
        first_row_id: file.first_row_id,
    }
}

fn format_name(format: &FileFormat) -> String {
    match format {
        FileFormat::Parquet => "PARQUET".into(),
        FileFormat::Avro => "AVRO".into(),
        FileFormat::Orc => "ORC".into(),
        FileFormat::Puffin => "PUFFIN".into(),
        FileFormat::Other(name) => name.clone(),
    }
}

/// A file a worker wrote (content `content`: Parquet data files, or position deletes in
/// Parquet or Puffin), refusing any other.
pub(super) fn written_file_from_wire(
    file: wire::DataFile,
    content: DataContentType,
    metadata: &TableMetadata,
) -> Result<(i32, crate::spec::DataFile)> {
    let expected = match content {
        DataContentType::Data => &["PARQUET"][..],
        _ => &["PARQUET", "PUFFIN"][..],
    };
    if file.content != content as i32 || !expected.contains(&file.file_format.as_str()) {
        return Err(Error::corrupt(
            file.file_path.clone(),
            format!(
                "a worker reported a file of content {} and format {}, not one it writes as \
                 {content:?}",
                file.content, file.file_format
            ),
        ));
    }
    data_file_from_wire(file, metadata)
}

/// A data or delete file as it travelled, its partition values read back as they were sent.
pub(super) fn data_file_from_wire(
    file: wire::DataFile,
    metadata: &TableMetadata,
) -> Result<(i32, crate::spec::DataFile)> {
    let corrupt = |reason: String| Error::corrupt(file.file_path.clone(), reason);
    let content = match file.content {
        0 => DataContentType::Data,
        1 => DataContentType::PositionDeletes,
        2 => DataContentType::EqualityDeletes,
        other => return Err(corrupt(format!("file content {other}"))),
    };
    let format = match file.file_format.as_str() {
        "PARQUET" => FileFormat::Parquet,
        "AVRO" => FileFormat::Avro,
        "ORC" => FileFormat::Orc,
        "PUFFIN" => FileFormat::Puffin,
        other => FileFormat::Other(other.to_string()),
    };
    let spec = metadata
        .partition_specs
        .iter()
        .find(|s| s.spec_id == file.spec_id)
        .ok_or_else(|| {
            corrupt(format!(
                "partition spec {} is not the table's",
                file.spec_id
            ))
        })?;
    let n = file.partition.len();
    if spec.fields.len() != n || file.partition_null.len() != n || file.partition_kinds.len() != n {
        return Err(corrupt(format!(
            "{n} partition values for a spec of {} fields",
            spec.fields.len()
        )));
    }
    let mut partition = Vec::with_capacity(n);
    for ((bytes, null), kind) in file
        .partition
        .iter()
        .zip(&file.partition_null)
        .zip(&file.partition_kinds)
    {
        partition.push(match null {
            true => None,
            false => Some(literal_from_kind(*kind, bytes).map_err(corrupt)?),
        });
    }
    let mut data = crate::spec::DataFile::new(
        content,
        file.file_path.clone(),
        format,
        file.record_count,
        file.file_size_in_bytes,
    );
    data.partition = partition;
    data.column_sizes = file.column_sizes.into_iter().collect();
    data.value_counts = file.value_counts.into_iter().collect();
    data.null_value_counts = file.null_value_counts.into_iter().collect();
    data.nan_value_counts = file.nan_value_counts.into_iter().collect();
    if file.has_bounds {
        data.lower_bounds = Some(file.lower_bounds.into_iter().collect());
        data.upper_bounds = Some(file.upper_bounds.into_iter().collect());
    }
    if file.has_split_offsets {
        data.split_offsets = Some(file.split_offsets);
    }
    if file.has_equality_ids {
        data.equality_ids = Some(file.equality_ids);
    }
    data.sort_order_id = file.sort_order_id;
    data.key_metadata = file.key_metadata;
    data.first_row_id = file.first_row_id;
    data.referenced_data_file = file.referenced_data_file;
    data.content_offset = file.content_offset;
    data.content_size_in_bytes = file.content_size_in_bytes;
    Ok((file.spec_id, data))
}

/// The kind of a partition value on the wire: which [`Literal`] it is (a decimal's scale and
/// a fixed value's length are not needed to read it back).
fn literal_kind(value: Option<&Literal>) -> u32 {
    match value {
        None => 0,
        Some(Literal::Boolean(_)) => 1,
        Some(Literal::Int(_)) => 2,
        Some(Literal::Long(_)) => 3,
        Some(Literal::Float(_)) => 4,
        Some(Literal::Double(_)) => 5,
        Some(Literal::Decimal(_)) => 6,
        Some(Literal::Date(_)) => 7,
        Some(Literal::Time(_)) => 8,
        Some(Literal::Timestamp(_)) => 9,
        Some(Literal::Timestamptz(_)) => 10,
        Some(Literal::TimestampNs(_)) => 11,
        Some(Literal::TimestamptzNs(_)) => 12,
        Some(Literal::String(_)) => 13,
        Some(Literal::Uuid(_)) => 14,
        Some(Literal::Fixed(_)) => 15,
        Some(Literal::Binary(_)) => 16,
    }
}

/// The partition value of kind `kind` (see [`literal_kind`]) in `bytes`.
fn literal_from_kind(kind: u32, bytes: &[u8]) -> std::result::Result<Literal, String> {
    use crate::spec::PrimitiveType as P;
    let ty = match kind {
        1 => P::Boolean,
        2 => P::Int,
        3 => P::Long,
        4 => P::Float,
        5 => P::Double,
        6 => P::Decimal {
            precision: 38,
            scale: 0,
        },
        7 => P::Date,
        8 => P::Time,
        9 => P::Timestamp,
        10 => P::Timestamptz,
        11 => P::TimestampNs,
        12 => P::TimestamptzNs,
        13 => P::String,
        14 => P::Uuid,
        15 => P::Fixed(bytes.len() as u64),
        16 => P::Binary,
        other => return Err(format!("a partition value of unknown kind {other}")),
    };
    Literal::from_bytes(&ty, bytes).map_err(|e| e.to_string())
}
