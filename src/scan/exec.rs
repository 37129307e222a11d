//! Handing planned files to DataFusion: one `DataSourceExec` over `ParquetSource` per object
//! store, with files spread over the session's target partitions, per-file statistics from the
//! manifests, and the field-id adapter resolving each file's columns.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Schema as ArrowSchema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, DFSchema, ScalarValue, Statistics};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::FileSource;
use datafusion::datasource::physical_plan::parquet::ParquetRowSelection;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::Result as DFResult;
use datafusion::execution::SessionState;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::utils::conjunction;
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::physical_expr::{PhysicalExpr, create_physical_expr};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder};
use datafusion::physical_plan::union::UnionExec;

use super::adapter::FieldIdAdapterFactory;
use super::count::RowCountExec;
use super::deletes::DeleteFileTask;
use super::deletes::equality::{EqualityDeleteExec, EqualityDeletes};
use super::deletes::index::resolved_key;
use super::deletes::positions::{self, surviving_rows};
use super::guard::{NamedAs, ScanOrigin};
use super::plan::{FileScanTask, PlanStats};
use super::reader::parquet_source;
use crate::error::Result;
use crate::io::FileIO;
use crate::spec::properties::DEFAULT_NAME_MAPPING;
use crate::spec::{DataContentType, Literal, Schema, TableMetadata, Transform, Type};
use crate::table::Table;
use crate::to_arrow::{field_to_arrow, literal_to_scalar};

/// What a scan reads: the table, the schema rows are read with, its Arrow form, and the files.
pub(crate) struct ScanInput<'a> {
    pub(crate) table: &'a Table,
    pub(crate) schema: &'a Schema,
    pub(crate) arrow_schema: SchemaRef,
    pub(crate) tasks: Vec<FileScanTask>,
    /// What planning read and skipped, reported as the scan's metrics.
    pub(crate) stats: PlanStats,
    /// Whether the scan also yields each row's identity: [`FILE_COLUMN`] and [`POS_COLUMN`]
    /// after the read schema's columns (projection indexes count them there).
    pub(crate) row_ids: bool,
    /// Per read-schema column, the number of distinct values table statistics give (empty or
    /// `Absent`: none); always inexact (an estimate, perhaps of an older snapshot).
    pub(crate) distinct_counts: Vec<Precision<usize>>,
}

/// The row-identity column holding each row's data file (its `file_path` in the manifest),
/// dictionary-encoded: Iceberg's `_file` metadata column.
pub const FILE_COLUMN: &str = "_file";
/// The row-identity column holding each row's position in its data file (0-based, counting
/// deleted rows too): Iceberg's `_pos` metadata column.
pub const POS_COLUMN: &str = "_pos";

/// The Arrow type of [`FILE_COLUMN`].
pub(crate) fn file_column_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// The two row-identity fields a scan with `row_ids` appends: [`FILE_COLUMN`] and
/// [`POS_COLUMN`] (a Parquet row-number virtual column).
pub(crate) fn row_id_fields() -> [FieldRef; 2] {
    let file = Field::new(FILE_COLUMN, file_column_type(), false);
    let pos = Field::new(POS_COLUMN, DataType::Int64, false)
        .with_extension_type(datafusion::parquet::arrow::RowNumber);
    [Arc::new(file), Arc::new(pos)]
}

/// `schema` with the row-identity fields appended.
pub(crate) fn with_row_id_fields(schema: &ArrowSchema) -> ArrowSchema {
    let mut fields: Vec<FieldRef> = schema.fields().iter().cloned().collect();
    fields.extend(row_id_fields());
    ArrowSchema::new_with_metadata(fields, schema.metadata().clone())
}

/// Builds the physical plan of a scan.
pub(crate) async fn build_exec(
    state: &dyn Session,
    input: ScanInput<'_>,
    projection: Option<&Vec<usize>>,
    filters: &[Expr],
    limit: Option<usize>,
) -> DFResult<Arc<dyn ExecutionPlan>> {
    let io = input.table.io();
    let adapter = Arc::new(adapter_factory(input.table.metadata(), input.schema)?);
    let constants = IdentityConstants::new(input.table.metadata(), input.schema);
    let equality = EqualityPlan::new(&input)?;
    let file_schema = equality.as_ref().map_or_else(
        || Arc::clone(&input.arrow_schema),
        |e| Arc::clone(&e.file_schema),
    );
    let has_positions = input.tasks.iter().any(|t| {
        t.deletes
            .iter()
            .any(|d| d.file.content == DataContentType::PositionDeletes)
    });
    let mut positions = if has_positions {
        positions::load(io, &input.tasks).await?
    } else {
        Default::default()
    };
    let memory = Arc::new(HeldMemory::reserve(state, &positions)?);
    let layout = Layout::new(&file_schema, equality.is_some(), input.row_ids);
    let mut by_store: BTreeMap<String, (ObjectStoreUrl, String, Vec<PartitionedFile>)> =
        BTreeMap::new();
    for (ordinal, task) in input.tasks.iter().enumerate() {
        let location = io.resolve(&task.data_file.file_path)?;
        let mut file = partitioned_file(&location.path, task, &constants, &file_schema)?;
        if !io.relocation().rules().is_empty() {
            let named = io.named(&task.data_file.file_path);
            if named != task.data_file.file_path {
                file = file.with_extension(NamedAs(named.into()));
            }
        }
        if layout.has_partition_values() {
            file.partition_values = layout.partition_values(ordinal, &task.data_file.file_path);
            if let Some(stats) = file.statistics.take() {
                file = file.with_statistics(stats);
            }
        }
        let deleted = match positions.is_empty() || task.deletes.is_empty() {
            true => None,
            false => positions.remove(&resolved_key(&location)),
        };
        if let Some(deleted) = deleted {
            let rows = u64::try_from(task.data_file.record_count).unwrap_or(0);
            if let Some(selection) = surviving_rows(&deleted, rows) {
                if !selection.selects_any() {
                    continue; // every row is deleted: the file is not read at all
                }
                file = file
                    .with_extension(ParquetRowSelection::new(selection))
                    .with_extension(Arc::clone(&memory));
            }
        }
        by_store
            .entry(location.store_url.as_str().to_string())
            .or_insert_with(|| {
                // A store the table's IO built (a cloud store from its properties) is found by
                // DataFusion in the session's runtime, which may not be the IO's.
                let runtime = state.runtime_env();
                if runtime.object_store(&location.store_url).is_err() {
                    runtime.register_object_store(location.store_url.as_ref(), location.store);
                }
                let store = io.store_of(&task.data_file.file_path).unwrap_or_default();
                (location.store_url, store, Vec::new())
            })
            .2
            .push(file);
    }
    // The row-identity columns sit after the partition columns of the file scan.
    let output_schema = match input.row_ids {
        true => Arc::new(with_row_id_fields(&input.arrow_schema)),
        false => Arc::clone(&input.arrow_schema),
    };
    let projection: Option<Vec<usize>> = match input.row_ids {
        true => Some(
            projection
                .cloned()
                .unwrap_or_else(|| (0..output_schema.fields().len()).collect()),
        ),
        false => projection.cloned(),
    };
    let projection = projection.as_ref();
    let translated = projection.map(|p| layout.translate(p, input.arrow_schema.fields().len()));
    // With equality deletes the scan reads the key columns and the data file ordinal too.
    let (scan_projection, limit) = match &equality {
        Some(e) => (Some(e.scan_projection(translated.as_ref())), None),
        None => (translated.clone(), limit),
    };
    if by_store.is_empty() {
        let projected = match projection {
            Some(p) => Arc::new(output_schema.project(p)?),
            None => Arc::clone(&output_schema),
        };
        return Ok(Arc::new(RowCountExec::empty(projected, &input.stats)));
    }
    let predicate = conjunction(filters.iter().cloned())
        .and_then(|f| physical_predicate(state, &input.arrow_schema, f));
    let target_partitions = state.config_options().execution.target_partitions.max(1);
    let mut plans = Vec::with_capacity(by_store.len());
    for (_, (store_url, store, files)) in by_store {
        let table_schema = layout.table_schema();
        let first = plans.is_empty();
        let origin = ScanOrigin {
            store,
            io: io.clone(),
            adapter: adapter.as_ref().clone(),
            planning: first.then(|| input.stats.clone()),
        };
        let source = parquet_source(state, &store_url, table_schema, predicate.as_ref())?
            .with_origin(origin);
        if first {
            report_planning(source.metrics(), &input.stats);
        }
        let mut statistics = total_statistics(&files, &file_schema, layout.extra_columns());
        with_distinct_counts(&mut statistics, &input.distinct_counts);
        let config = FileScanConfigBuilder::new(store_url, Arc::new(source))
            .with_file_groups(spread(files, target_partitions))
            .with_statistics(statistics)
            .with_projection_indices(scan_projection.clone())?
            .with_limit(limit)
            .with_expr_adapter(Some(Arc::clone(&adapter) as _))
            .build();
        plans.push(DataSourceExec::from_data_source(config) as Arc<dyn ExecutionPlan>);
    }
    let scan = UnionExec::try_new(plans)?;
    match equality {
        Some(e) => e.wrap(
            io.clone(),
            scan,
            translated.as_ref(),
            input.arrow_schema.fields().len(),
        ),
        None => Ok(scan),
    }
}

/// Where a file scan's columns sit: the file schema (read schema plus hidden key columns),
/// then the partition columns (the data file ordinal of an equality-delete scan, the
/// row-identity file), then the virtual row number.
struct Layout {
    file_schema: SchemaRef,
    ordinal: bool,
    row_ids: bool,
}

impl Layout {
    fn new(file_schema: &SchemaRef, ordinal: bool, row_ids: bool) -> Self {
        Self {
            file_schema: Arc::clone(file_schema),
            ordinal,
            row_ids,
        }
    }

    fn has_partition_values(&self) -> bool {
        self.ordinal || self.row_ids
    }

    /// How many columns follow the file schema.
    fn extra_columns(&self) -> usize {
        usize::from(self.ordinal) + 2 * usize::from(self.row_ids)
    }

    fn partition_values(&self, ordinal: usize, file_path: &str) -> Vec<ScalarValue> {
        let mut values = Vec::with_capacity(2);
        if self.ordinal {
            values.push(ScalarValue::UInt32(Some(
                u32::try_from(ordinal).unwrap_or(u32::MAX),
            )));
        }
        if self.row_ids {
            values.push(ScalarValue::Dictionary(
                Box::new(DataType::Int32),
                Box::new(ScalarValue::Utf8(Some(file_path.to_string()))),
            ));
        }
        values
    }

    fn table_schema(&self) -> TableSchema {
        let mut partition_cols = Vec::new();
        if self.ordinal {
            partition_cols.push(Arc::new(Field::new(
                ORDINAL_COLUMN,
                DataType::UInt32,
                false,
            )));
        }
        let mut builder = TableSchema::builder(Arc::clone(&self.file_schema));
        if self.row_ids {
            let [file, pos] = row_id_fields();
            partition_cols.push(file);
            builder = builder.with_virtual_columns(vec![pos]);
        }
        builder.with_table_partition_cols(partition_cols).build()
    }

    /// A projection over the read schema (`read_columns` of them) and the row-identity
    /// columns after it, as indexes into [`Self::table_schema`].
    fn translate(&self, projection: &[usize], read_columns: usize) -> Vec<usize> {
        let row_ids = self.file_schema.fields().len() + usize::from(self.ordinal);
        projection
            .iter()
            .map(|&p| match p.checked_sub(read_columns) {
                Some(extra) if self.row_ids => row_ids + extra,
                _ => p,
            })
            .collect()
    }
}

/// Planning's counts as metrics of the (first) Parquet scan, so EXPLAIN ANALYZE shows them:
/// `manifests_total`, `manifests_pruned`, `data_files_total`, `data_files_pruned_by_partition`,
/// `data_files_pruned_by_metrics`, `data_files_scanned`, `delete_files_matched` and
/// `planning_time`. (`bytes_scanned` is DataFusion's own Parquet metric of that name: the
/// bytes actually read, after row-group and page pruning.)
pub(crate) fn report_planning(metrics: &ExecutionPlanMetricsSet, stats: &PlanStats) {
    let counts = [
        ("manifests_total", stats.manifests_total),
        ("manifests_pruned", stats.manifests_pruned),
        ("data_files_total", stats.data_files_total),
        (
            "data_files_pruned_by_partition",
            stats.data_files_pruned_by_partition,
        ),
        (
            "data_files_pruned_by_metrics",
            stats.data_files_pruned_by_metrics,
        ),
        ("data_files_scanned", stats.data_files_scanned),
        ("delete_files_matched", stats.delete_files_matched),
    ];
    for (name, value) in counts {
        MetricBuilder::new(metrics).global_counter(name).add(value);
    }
    MetricBuilder::new(metrics)
        .subset_time("planning_time", 0)
        .add_duration(stats.planning_time);
}

/// Memory held by the deleted positions of a scan's files, reserved in the session's pool
/// and released when the plan is dropped (every file with a row selection holds it).
#[derive(Debug)]
pub(crate) struct HeldMemory(#[allow(dead_code)] MemoryReservation);

impl HeldMemory {
    fn reserve(state: &dyn Session, positions: &positions::DeletedPositions) -> DFResult<Self> {
        let bytes: u64 = positions.values().map(|b| b.serialized_size() as u64).sum();
        Self::reserve_bytes(
            &state.runtime_env().memory_pool,
            usize::try_from(bytes).unwrap_or(usize::MAX),
        )
    }

    /// `bytes` of `pool`, held by the row selections of a scan's files.
    pub(crate) fn reserve_bytes(
        pool: &Arc<dyn datafusion::execution::memory_pool::MemoryPool>,
        bytes: usize,
    ) -> DFResult<Self> {
        let reservation = MemoryConsumer::new("icefloe position deletes").register(pool);
        reservation.try_grow(bytes)?;
        Ok(Self(reservation))
    }
}

/// How a scan with equality deletes is laid out: the file schema with any key column the read
/// schema lacks (a dropped column still keyed by a delete file), the hidden data file ordinal,
/// and which delete files apply to each data file.
struct EqualityPlan {
    /// The read schema plus hidden key columns.
    file_schema: SchemaRef,
    /// The distinct equality delete files.
    files: Vec<Arc<DeleteFileTask>>,
    /// Per data file ordinal (task index), the indexes into `files` that apply.
    per_file: Vec<Vec<usize>>,
    /// The file-schema column of each key field id.
    key_columns: BTreeMap<i32, usize>,
}

/// The hidden partition column naming each row's data file.
const ORDINAL_COLUMN: &str = "__icefloe_data_file";

impl EqualityPlan {
    fn new(input: &ScanInput<'_>) -> Result<Option<Self>> {
        let mut files: Vec<Arc<DeleteFileTask>> = Vec::new();
        let mut by_path: HashMap<&str, usize> = HashMap::new();
        let mut per_file = Vec::with_capacity(input.tasks.len());
        for task in &input.tasks {
            let mut applying = Vec::new();
            for delete in &task.deletes {
                if delete.file.content != DataContentType::EqualityDeletes {
                    continue;
                }
                let next = files.len();
                let index = *by_path
                    .entry(delete.file.file_path.as_str())
                    .or_insert(next);
                if index == next {
                    files.push(Arc::clone(delete));
                }
                applying.push(index);
            }
            per_file.push(applying);
        }
        if files.is_empty() {
            return Ok(None);
        }
        let mut fields: Vec<FieldRef> = input.arrow_schema.fields().iter().cloned().collect();
        let mut key_columns = BTreeMap::new();
        let ids = files
            .iter()
            .flat_map(|f| f.file.equality_ids.iter().flatten());
        for &id in ids {
            if key_columns.contains_key(&id) {
                continue;
            }
            let column = match input.schema.columns().iter().position(|c| c.id == id) {
                Some(column) => column,
                None => {
                    fields.push(hidden_key_field(input.table.metadata(), id)?);
                    fields.len() - 1
                }
            };
            key_columns.insert(id, column);
        }
        Ok(Some(Self {
            file_schema: Arc::new(ArrowSchema::new(fields)),
            files,
            per_file,
            key_columns,
        }))
    }

    /// The columns the scan reads: the query's, then missing key columns, then the ordinal.
    fn scan_projection(&self, projection: Option<&Vec<usize>>) -> Vec<usize> {
        let mut columns = self.query_columns(projection);
        for column in self.key_columns.values() {
            if !columns.contains(column) {
                columns.push(*column);
            }
        }
        columns.push(self.file_schema.fields().len());
        columns
    }

    fn query_columns(&self, projection: Option<&Vec<usize>>) -> Vec<usize> {
        match projection {
            Some(p) => p.clone(),
            // Everything of the read schema (hidden key columns come after it).
            None => (0..self.read_columns()).collect(),
        }
    }

    fn read_columns(&self) -> usize {
        self.file_schema
            .fields()
            .iter()
            .filter(|f| !f.name().starts_with(HIDDEN_PREFIX))
            .count()
    }

    /// The filter over `scan`, which reads [`Self::scan_projection`].
    fn wrap(
        self,
        io: FileIO,
        scan: Arc<dyn ExecutionPlan>,
        projection: Option<&Vec<usize>>,
        read_columns: usize,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let scanned = self.scan_projection(projection);
        let query = match projection {
            Some(p) => p.len(),
            None => read_columns,
        };
        let position = |column: usize| scanned.iter().position(|c| *c == column).unwrap_or(0);
        let key_columns: HashMap<i32, usize> = self
            .key_columns
            .iter()
            .map(|(id, column)| (*id, position(*column)))
            .collect();
        let key_types = self
            .key_columns
            .iter()
            .map(|(id, column)| (*id, self.file_schema.field(*column).data_type().clone()))
            .collect();
        let deletes = Arc::new(EqualityDeletes::new(io, self.files, key_types));
        let ordinal = scanned.len() - 1;
        let exec =
            EqualityDeleteExec::new(scan, deletes, self.per_file, key_columns, ordinal, query)?;
        Ok(Arc::new(exec))
    }
}

/// Names of columns the scan reads for itself.
const HIDDEN_PREFIX: &str = "__icefloe_";

/// A key column of an equality delete file that the read schema lacks (dropped since): read
/// by its field id, typed as the newest schema that has it.
fn hidden_key_field(metadata: &TableMetadata, id: i32) -> Result<FieldRef> {
    let field = metadata
        .schemas
        .iter()
        .rev()
        .find_map(|s| s.columns().iter().find(|c| c.id == id))
        .ok_or_else(|| {
            crate::Error::Unsupported(format!(
                "an equality delete file keys on field id {id}, which is not a top-level column \
                 of any schema of the table"
            ))
        })?;
    let arrow = field_to_arrow(field, true, &field.name)?;
    Ok(Arc::new(
        Field::new(
            format!("{HIDDEN_PREFIX}key_{id}"),
            arrow.data_type().clone(),
            true,
        )
        .with_metadata(arrow.metadata().clone()),
    ))
}

/// The adapter resolving file columns by field id, with the table's name mapping and the
/// v3 `initial-default` values of the read schema.
fn adapter_factory(metadata: &TableMetadata, schema: &Schema) -> Result<FieldIdAdapterFactory> {
    let name_mapping = DEFAULT_NAME_MAPPING.get(metadata)?.map(Arc::new);
    let mut defaults = HashMap::new();
    for field in schema.columns() {
        let (Some(default), Type::Primitive(ty)) = (&field.initial_default, &field.field_type)
        else {
            continue;
        };
        let value = Literal::from_json(ty, default).map_err(|e| {
            crate::Error::from(e)
                .within(format_args!("initial-default of column '{}'", field.name))
                .in_file("table metadata")
        })?;
        defaults.insert(field.name.clone(), literal_to_scalar(Some(&value), ty)?);
    }
    Ok(FieldIdAdapterFactory::new(
        name_mapping,
        defaults,
        metadata.format_version,
    ))
}

fn physical_predicate(
    state: &dyn Session,
    schema: &SchemaRef,
    filter: Expr,
) -> Option<Arc<dyn PhysicalExpr>> {
    let df_schema = DFSchema::try_from(Arc::clone(schema)).ok()?;
    // A filter DataFusion cannot plan here is still applied above the scan; it just does not
    // prune row groups.
    if state.as_any().is::<SessionState>() {
        return state.create_physical_expr(filter, &df_schema).ok();
    }
    // Another session (a host's over the DataFusion FFI) would plan the filter on its side, as
    // an expression this scan cannot look into (its columns cannot be mapped onto each file's):
    // planned here, with that session's properties.
    let context = SimplifyContext::builder()
        .with_schema(Arc::new(df_schema.clone()))
        .with_config_options(Arc::new(state.config_options().clone()))
        .with_query_execution_start_time(state.execution_props().query_execution_start_time)
        .build();
    let filter = ExprSimplifier::new(context)
        .coerce(filter, &df_schema)
        .ok()?;
    create_physical_expr(
        &filter,
        &df_schema,
        state.execution_props(),
        &PhysicalPlanningContext::default(),
    )
    .ok()
}

/// For each partition spec, which read-schema columns are identity-partitioned and where their
/// value sits in the partition tuple.
struct IdentityConstants {
    /// spec id -> (tuple position, column index, column type)
    by_spec: HashMap<i32, Vec<(usize, usize, crate::spec::PrimitiveType)>>,
    /// Per read-schema column: its field id and type when it is primitive (metrics exist).
    metric_columns: Vec<Option<(i32, crate::spec::PrimitiveType)>>,
}

impl IdentityConstants {
    fn new(metadata: &TableMetadata, schema: &Schema) -> Self {
        let mut by_spec = HashMap::new();
        for spec in &metadata.partition_specs {
            let mut cols = Vec::new();
            for (pos, field) in spec.fields.iter().enumerate() {
                if field.transform != Transform::Identity {
                    continue;
                }
                let Some(col) = schema
                    .columns()
                    .iter()
                    .position(|c| c.id == field.source_id)
                else {
                    continue;
                };
                if let Type::Primitive(ty) = &schema.columns()[col].field_type {
                    cols.push((pos, col, ty.clone()));
                }
            }
            by_spec.insert(spec.spec_id, cols);
        }
        let metric_columns = schema
            .columns()
            .iter()
            .map(|c| match &c.field_type {
                Type::Primitive(ty) => Some((c.id, ty.clone())),
                _ => None,
            })
            .collect();
        Self {
            by_spec,
            metric_columns,
        }
    }
}

/// A Parquet file with the facts its manifest entry proves: row count, size, and the constant
/// value of identity-partitioned columns (which DataFusion then uses in place of the column,
/// so files that do not store their partition columns read correctly).
fn partitioned_file(
    path: &object_store::path::Path,
    task: &FileScanTask,
    constants: &IdentityConstants,
    schema: &SchemaRef,
) -> Result<PartitionedFile> {
    let data_file = &task.data_file;
    let size = u64::try_from(data_file.file_size_in_bytes).unwrap_or(0);
    let num_rows = usize::try_from(data_file.record_count).unwrap_or(0);
    // With deletes the record count is an upper bound, not the row count.
    let exact = task.deletes.is_empty();
    let mut columns: Vec<ColumnStatistics> = (0..schema.fields().len())
        .map(|col| metric_column(constants.metric_columns.get(col), data_file, exact))
        .collect();
    for (pos, col, ty) in constants
        .by_spec
        .get(&task.partition_spec_id)
        .into_iter()
        .flatten()
    {
        let Some(value) = data_file.partition.get(*pos) else {
            continue;
        };
        let scalar = literal_to_scalar(value.as_ref(), ty)?;
        columns[*col] = constant_column(scalar, num_rows, exact);
    }
    let mut file = PartitionedFile::new(String::new(), size);
    // Set the parsed path directly: a round trip through a string would escape `%` again.
    file.object_meta.location = path.clone();
    file.statistics = Some(Arc::new(Statistics {
        num_rows: if exact {
            Precision::Exact(num_rows)
        } else {
            Precision::Inexact(num_rows)
        },
        total_byte_size: Precision::Inexact(usize::try_from(size).unwrap_or(usize::MAX)),
        column_statistics: columns,
    }));
    Ok(file)
}

/// A column's statistics from the file's metrics: its null count (exact without deletes), and
/// its bounds as inexact min and max (bounds may be truncated or loose; DataFusion must not
/// answer MIN/MAX from them).
fn metric_column(
    column: Option<&Option<(i32, crate::spec::PrimitiveType)>>,
    file: &crate::spec::DataFile,
    exact: bool,
) -> ColumnStatistics {
    let Some(Some((id, ty))) = column else {
        return ColumnStatistics::new_unknown();
    };
    let mut stats = ColumnStatistics::new_unknown();
    if let Some(nulls) = file.null_value_counts.get(id) {
        let nulls = usize::try_from(*nulls).unwrap_or(0);
        stats.null_count = if exact {
            Precision::Exact(nulls)
        } else {
            Precision::Inexact(nulls)
        };
    }
    let bound = |bounds: &Option<HashMap<i32, Vec<u8>>>| {
        let bytes = bounds.as_ref()?.get(id)?;
        let value = Literal::from_bytes(ty, bytes).ok()?;
        literal_to_scalar(Some(&value), ty).ok()
    };
    if let Some(min) = bound(&file.lower_bounds) {
        stats.min_value = Precision::Inexact(min);
    }
    if let Some(max) = bound(&file.upper_bounds) {
        stats.max_value = Precision::Inexact(max);
    }
    stats
}

fn constant_column(value: ScalarValue, num_rows: usize, exact: bool) -> ColumnStatistics {
    if value.is_null() {
        ColumnStatistics {
            null_count: if exact {
                Precision::Exact(num_rows)
            } else {
                Precision::Inexact(num_rows)
            },
            ..ColumnStatistics::new_unknown()
        }
    } else {
        ColumnStatistics {
            null_count: Precision::Exact(0),
            min_value: Precision::Exact(value.clone()),
            max_value: Precision::Exact(value),
            distinct_count: Precision::Exact(1),
            ..ColumnStatistics::new_unknown()
        }
    }
}

/// Table-level statistics: the sum of the files' record counts, exact when no deletes apply
/// to any of them (deleted rows are never answered from record counts).
fn total_statistics(files: &[PartitionedFile], schema: &SchemaRef, extra: usize) -> Statistics {
    let stats = files.iter().filter_map(|f| f.statistics.as_deref());
    let num_rows = stats
        .clone()
        .map(|s| s.num_rows.get_value().copied().unwrap_or(0))
        .sum();
    let exact = stats
        .clone()
        .all(|s| s.num_rows.is_exact().unwrap_or(false));
    // Column statistics merged across files (min of mins, max of maxes, summed null counts);
    // a file without a value makes the total unknown.
    let mut total = match extra {
        0 => Statistics::try_merge_iter(stats, schema)
            .unwrap_or_else(|_| Statistics::new_unknown(schema)),
        n => {
            let mut unknown = Statistics::new_unknown(schema);
            unknown
                .column_statistics
                .extend((0..n).map(|_| ColumnStatistics::new_unknown()));
            unknown
        }
    };
    total.num_rows = if exact {
        Precision::Exact(num_rows)
    } else {
        Precision::Inexact(num_rows)
    };
    total
}

/// Sets the distinct counts of table statistics on the columns that have none, inexact and
/// never above the row count.
fn with_distinct_counts(statistics: &mut Statistics, distinct_counts: &[Precision<usize>]) {
    let rows = statistics.num_rows.get_value().copied();
    for (column, ndv) in statistics.column_statistics.iter_mut().zip(distinct_counts) {
        let Some(&ndv) = ndv.get_value() else {
            continue;
        };
        if column.distinct_count.get_value().is_none() {
            column.distinct_count = Precision::Inexact(rows.map_or(ndv, |rows| ndv.min(rows)));
        }
    }
}

/// Spreads files over `n` groups, largest first into the currently smallest group, so the
/// partitions carry similar byte counts.
fn spread(mut files: Vec<PartitionedFile>, n: usize) -> Vec<FileGroup> {
    files.sort_by_key(|f| std::cmp::Reverse(f.object_meta.size));
    let n = n.min(files.len()).max(1);
    let mut groups: Vec<(u64, Vec<PartitionedFile>)> = (0..n).map(|_| (0, Vec::new())).collect();
    for file in files {
        if let Some(group) = groups.iter_mut().min_by_key(|(bytes, _)| *bytes) {
            group.0 += file.object_meta.size;
            group.1.push(file);
        }
    }
    groups.into_iter().map(|(_, f)| FileGroup::new(f)).collect()
}

/// The value of a named metric summed over a whole physical plan (`None` when no node reports
/// it): how tools read the planning counts (`manifests_pruned`, `data_files_scanned`, ...)
/// that [`report_planning`] attaches to the scan.
pub fn plan_metric(plan: &Arc<dyn ExecutionPlan>, name: &str) -> Option<usize> {
    let own = plan
        .metrics()
        .and_then(|m| m.sum_by_name(name))
        .map(|v| v.as_usize());
    let children = plan
        .children()
        .into_iter()
        .filter_map(|c| plan_metric(c, name));
    own.into_iter().chain(children).reduce(|a, b| a + b)
}
