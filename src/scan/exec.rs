//! Handing planned files to DataFusion: one `DataSourceExec` over `ParquetSource` per object
//! store, with files spread over the session's target partitions, per-file statistics from the
//! manifests, and the field-id adapter resolving each file's columns.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, DFSchema, ScalarValue, Statistics};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::CachedParquetFileReaderFactory;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result as DFResult;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::utils::conjunction;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::union::UnionExec;

use super::adapter::FieldIdAdapterFactory;
use super::plan::FileScanTask;
use super::reader::SizeCheckingReaderFactory;
use crate::error::Result;
use crate::spec::{Literal, NameMapping, Schema, TableMetadata, Transform, Type};
use crate::table::Table;
use crate::to_arrow::literal_to_scalar;

/// What a scan reads: the table, the schema rows are read with, its Arrow form, and the files.
pub(crate) struct ScanInput<'a> {
    pub(crate) table: &'a Table,
    pub(crate) schema: &'a Schema,
    pub(crate) arrow_schema: SchemaRef,
    pub(crate) tasks: Vec<FileScanTask>,
}

/// Builds the physical plan of a scan.
pub(crate) async fn build_exec(
    state: &dyn Session,
    input: ScanInput<'_>,
    projection: Option<&Vec<usize>>,
    filters: &[Expr],
    limit: Option<usize>,
) -> DFResult<Arc<dyn ExecutionPlan>> {
    let adapter = Arc::new(adapter_factory(input.table.metadata(), input.schema)?);
    let constants = IdentityConstants::new(input.table.metadata(), input.schema);
    let mut by_store: BTreeMap<String, (ObjectStoreUrl, Vec<PartitionedFile>)> = BTreeMap::new();
    for task in &input.tasks {
        let location = input.table.io().resolve(&task.data_file.file_path)?;
        let file = partitioned_file(&location.path, task, &constants, &input.arrow_schema)?;
        by_store
            .entry(location.store_url.as_str().to_string())
            .or_insert_with(|| (location.store_url, Vec::new()))
            .1
            .push(file);
    }
    if by_store.is_empty() {
        let projected = match projection {
            Some(p) => Arc::new(input.arrow_schema.project(p)?),
            None => Arc::clone(&input.arrow_schema),
        };
        return Ok(Arc::new(EmptyExec::new(projected)));
    }
    let predicate = conjunction(filters.iter().cloned())
        .and_then(|f| physical_predicate(state, &input.arrow_schema, f));
    let parquet_options = state.table_options().parquet.clone();
    let target_partitions = state.config_options().execution.target_partitions.max(1);
    let mut plans = Vec::with_capacity(by_store.len());
    for (_, (store_url, files)) in by_store {
        let store = state.runtime_env().object_store(&store_url)?;
        let metadata_cache = state.runtime_env().cache_manager.get_file_metadata_cache();
        let readers = SizeCheckingReaderFactory::new(
            Arc::new(CachedParquetFileReaderFactory::new(
                Arc::clone(&store),
                metadata_cache,
            )),
            store,
        );
        let mut source = ParquetSource::new(Arc::clone(&input.arrow_schema))
            .with_table_parquet_options(parquet_options.clone())
            .with_parquet_file_reader_factory(Arc::new(readers));
        if let Some(predicate) = &predicate {
            source = source.with_predicate(Arc::clone(predicate));
        }
        let statistics = total_statistics(&files, &input.arrow_schema);
        let config = FileScanConfigBuilder::new(store_url, Arc::new(source))
            .with_file_groups(spread(files, target_partitions))
            .with_statistics(statistics)
            .with_projection_indices(projection.cloned())?
            .with_limit(limit)
            .with_expr_adapter(Some(Arc::clone(&adapter) as _))
            .build();
        plans.push(DataSourceExec::from_data_source(config) as Arc<dyn ExecutionPlan>);
    }
    UnionExec::try_new(plans)
}

/// The adapter resolving file columns by field id, with the table's name mapping and the
/// v3 `initial-default` values of the read schema.
fn adapter_factory(metadata: &TableMetadata, schema: &Schema) -> Result<FieldIdAdapterFactory> {
    let name_mapping = metadata
        .property("schema.name-mapping.default")
        .and_then(|json| NameMapping::parse(json).ok())
        .map(Arc::new);
    let mut defaults = HashMap::new();
    for field in schema.columns() {
        let (Some(default), Type::Primitive(ty)) = (&field.initial_default, &field.field_type)
        else {
            continue;
        };
        let value = Literal::from_json(ty, default).map_err(|e| {
            crate::Error::corrupt(
                "table metadata",
                format!("initial-default of column '{}': {e}", field.name),
            )
        })?;
        defaults.insert(field.name.clone(), literal_to_scalar(Some(&value), ty)?);
    }
    Ok(FieldIdAdapterFactory::new(name_mapping, defaults))
}

fn physical_predicate(
    state: &dyn Session,
    schema: &SchemaRef,
    filter: Expr,
) -> Option<Arc<dyn datafusion::physical_expr::PhysicalExpr>> {
    let df_schema = DFSchema::try_from(Arc::clone(schema)).ok()?;
    // A filter DataFusion cannot plan here is still applied above the scan; it just does not
    // prune row groups.
    state.create_physical_expr(filter, &df_schema).ok()
}

/// For each partition spec, which read-schema columns are identity-partitioned and where their
/// value sits in the partition tuple.
struct IdentityConstants {
    /// spec id -> (tuple position, column index, column type)
    by_spec: HashMap<i32, Vec<(usize, usize, crate::spec::PrimitiveType)>>,
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
        Self { by_spec }
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
    let mut columns = vec![ColumnStatistics::new_unknown(); schema.fields().len()];
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
        columns[*col] = constant_column(scalar, num_rows);
    }
    let mut file = PartitionedFile::new(String::new(), size);
    // Set the parsed path directly: a round trip through a string would escape `%` again.
    file.object_meta.location = path.clone();
    file.statistics = Some(Arc::new(Statistics {
        num_rows: Precision::Exact(num_rows),
        total_byte_size: Precision::Inexact(usize::try_from(size).unwrap_or(usize::MAX)),
        column_statistics: columns,
    }));
    Ok(file)
}

fn constant_column(value: ScalarValue, num_rows: usize) -> ColumnStatistics {
    if value.is_null() {
        ColumnStatistics {
            null_count: Precision::Exact(num_rows),
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

/// Table-level statistics: the exact sum of the files' record counts (no deletes apply).
fn total_statistics(files: &[PartitionedFile], schema: &SchemaRef) -> Statistics {
    let num_rows = files
        .iter()
        .filter_map(|f| f.statistics.as_ref())
        .map(|s| s.num_rows.get_value().copied().unwrap_or(0))
        .sum();
    let mut stats = Statistics::new_unknown(schema);
    stats.num_rows = Precision::Exact(num_rows);
    stats
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
