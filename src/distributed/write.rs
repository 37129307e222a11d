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
//! nothing.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryArray, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef, UInt64Type};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::StreamExt;
use prost::Message;
use tokio::sync::OnceCell;

use super::wire;
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::spec::{DataContentType, FileFormat, Literal, Schema, TableMetadata, Type};
use crate::table::Table;
use crate::write::IcebergSink;
use crate::write::sink::write_files;

/// The rule that writes an INSERT's data files where its rows are; see the module docs.
#[derive(Debug, Default)]
pub struct ParallelWrites;

impl PhysicalOptimizerRule for ParallelWrites {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(exec) = node.downcast_ref::<DataSinkExec>() else {
                return Ok(Transformed::no(node));
            };
            let Some(sink) = (exec.sink() as &dyn std::any::Any).downcast_ref::<IcebergSink>()
            else {
                return Ok(Transformed::no(node));
            };
            let sink = Arc::new(sink.clone());
            let write = WriteExec::new(unmerged(exec.input()), &sink);
            let token = write.spec.token.clone();
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
fn unmerged(input: &Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
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

/// Writes each partition of its input into data files of a table; returns one row per file
/// written (`spec_id`, `data_file`: the file's [`wire::DataFile`] bytes). One writer per
/// partition; a writer that fails deletes its files.
#[derive(Debug)]
pub(crate) struct WriteExec {
    input: Arc<dyn ExecutionPlan>,
    spec: Arc<WriteSpec>,
    properties: Arc<PlanProperties>,
}

/// The schema of the rows [`WriteExec`] returns.
fn files_schema() -> SchemaRef {
    Arc::new(ArrowSchema::new(vec![
        Field::new("data_file", DataType::Binary, false),
        Field::new("record_count", DataType::UInt64, false),
    ]))
}

impl WriteExec {
    fn new(input: Arc<dyn ExecutionPlan>, sink: &IcebergSink) -> Self {
        let (table, schema, sort_order_id, statement) = sink.files_of();
        let spec = WriteSpec {
            io: table.io().clone(),
            metadata_location: table.metadata_location().to_string(),
            schema: schema.clone(),
            sort_order_id,
            statement,
            token: uuid::Uuid::new_v4().simple().to_string(),
            loaded: OnceCell::new_with(Some(table.clone())),
        };
        Self::with_spec(input, Arc::new(spec))
    }

    pub(super) fn with_spec(input: Arc<dyn ExecutionPlan>, spec: Arc<WriteSpec>) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(files_schema()),
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

    pub(super) fn spec(&self) -> &WriteSpec {
        &self.spec
    }
}

impl DisplayAs for WriteExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IcebergWriteExec: {}", self.spec.statement)
    }
}

impl ExecutionPlan for WriteExec {
    fn name(&self) -> &str {
        "IcebergWriteExec"
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
                "IcebergWriteExec has one child".into(),
            )),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let spec = Arc::clone(&self.spec);
        let written = async move {
            let table = spec.table().await?;
            let prefix = format!("{}-{partition}-", spec.token);
            let (files, _) = write_files(
                &table,
                &spec.schema,
                spec.sort_order_id,
                &spec.statement,
                &prefix,
                input,
            )
            .await?;
            files_batch(&files).map_err(DataFusionError::from)
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            files_schema(),
            futures::stream::once(written),
        )))
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
    RecordBatch::try_new(files_schema(), columns)
        .map_err(|e| Error::invalid("the data files written", e))
}

/// Commits the data files its input reports, once, as the INSERT's sink says; returns the
/// rows inserted (`count`, as DataFusion's sink does).
#[derive(Debug)]
pub(crate) struct CommitExec {
    input: Arc<dyn ExecutionPlan>,
    sink: Arc<IcebergSink>,
    /// The writers' [`WriteSpec::token`].
    token: String,
    properties: Arc<PlanProperties>,
}

fn count_schema() -> SchemaRef {
    Arc::new(ArrowSchema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]))
}

impl CommitExec {
    fn new(input: Arc<dyn ExecutionPlan>, sink: Arc<IcebergSink>, token: String) -> Self {
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
            properties,
        }
    }
}

impl DisplayAs for CommitExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IcebergCommitExec: ")?;
        self.sink.fmt_as(DisplayFormatType::Default, f)
    }
}

impl ExecutionPlan for CommitExec {
    fn name(&self) -> &str {
        "IcebergCommitExec"
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
            ))),
            Err(_) => Err(DataFusionError::Internal(
                "IcebergCommitExec has one child".into(),
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
                "IcebergCommitExec has one partition, not partition {partition}"
            )));
        }
        let mut input = self.input.execute(0, context)?;
        let sink = Arc::clone(&self.sink);
        let token = self.token.clone();
        let committed = async move {
            let (table, schema, _, _) = sink.files_of();
            let (metadata, io) = (Arc::clone(table.metadata()), table.io().clone());
            let mut files = Vec::new();
            let mut rows = 0u64;
            let mut failed = None;
            while let Some(batch) = input.next().await {
                let read = batch.map_err(Error::from).and_then(|batch| {
                    let counts = batch.column(1).as_primitive::<UInt64Type>();
                    rows += counts.values().iter().sum::<u64>();
                    data_files(&batch, &metadata, schema)
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
                return Err(DataFusionError::from(e));
            }
            let count = sink.commit(files, rows).await?;
            RecordBatch::try_new(
                count_schema(),
                vec![Arc::new(UInt64Array::from(vec![count]))],
            )
            .map_err(DataFusionError::from)
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            count_schema(),
            futures::stream::once(committed),
        )))
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
    schema: &Schema,
) -> Result<Vec<(i32, crate::spec::DataFile)>> {
    let bytes = batch.column(0).as_binary::<i32>();
    (0..bytes.len())
        .map(|i| {
            let file = wire::DataFile::decode(bytes.value(i))
                .map_err(|e| Error::corrupt("a data file written by a worker", e.to_string()))?;
            data_file_from_wire(file, metadata, schema)
        })
        .collect()
}

fn data_file_to_wire(spec_id: i32, file: &crate::spec::DataFile) -> wire::DataFile {
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

fn data_file_from_wire(
    file: wire::DataFile,
    metadata: &TableMetadata,
    schema: &Schema,
) -> Result<(i32, crate::spec::DataFile)> {
    let corrupt = |reason: String| Error::corrupt(file.file_path.clone(), reason);
    if file.content != DataContentType::Data as i32 || file.file_format != "PARQUET" {
        return Err(corrupt(format!(
            "a worker reported a file of content {} and format {}, not a Parquet data file",
            file.content, file.file_format
        )));
    }
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
    let types = spec.partition_type(schema)?;
    if types.fields.len() != file.partition.len()
        || file.partition_null.len() != file.partition.len()
    {
        return Err(corrupt(format!(
            "{} partition values for a spec of {} fields",
            file.partition.len(),
            types.fields.len()
        )));
    }
    let mut partition = Vec::with_capacity(file.partition.len());
    for ((bytes, null), field) in file
        .partition
        .iter()
        .zip(&file.partition_null)
        .zip(&types.fields)
    {
        let Type::Primitive(ty) = &field.field_type else {
            return Err(corrupt(format!(
                "partition field {} is not primitive",
                field.name
            )));
        };
        partition.push(match null {
            true => None,
            false => Some(Literal::from_bytes(ty, bytes).map_err(|e| corrupt(e.to_string()))?),
        });
    }
    let mut data = crate::spec::DataFile::new(
        DataContentType::Data,
        file.file_path.clone(),
        FileFormat::Parquet,
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
    data.sort_order_id = file.sort_order_id;
    data.key_metadata = file.key_metadata;
    Ok((file.spec_id, data))
}
