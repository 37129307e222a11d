//! The Parquet scan of data files across processes: DataFusion's `DataSourceExec` over icefloe's
//! guarded `ParquetSource`, sent whole.
//!
//! DataFusion's own encoding of the inner Parquet source would lose what icefloe attaches to it
//! (each file's surviving rows after position deletes, the field-id adapter, the `_pos` column,
//! the guarded and size-checking readers), so a scan travels as its parts: the file groups and
//! expressions in datafusion-proto's messages, the rest in icefloe's ([`wire::Scan`]). A worker
//! rebuilds it as `build_exec` does, reading through its own runtime's store for the plan's
//! store URL.

use std::sync::Arc;

use datafusion::arrow::datatypes::{Schema as ArrowSchema, SchemaRef};
use datafusion::common::config::TableParquetOptions;
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, Constraints, ScalarValue, Statistics};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::ParquetRowSelection;
use datafusion::datasource::physical_plan::{
    FileGroup, FileScanConfig, FileScanConfigBuilder, FileSource, ParquetSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::TaskContext;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use datafusion::physical_expr::projection::{ProjectionExpr, ProjectionExprs};
use datafusion::physical_expr::{LexOrdering, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{
    PhysicalExtensionCodec, PhysicalPlanDecodeContext, PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf;
use datafusion_proto_common::protobuf_common as common;

use super::origin::{
    io_from_wire, io_to_wire, planning_from_wire, planning_to_wire, register_store,
};
use super::{IcefloeCodec, corrupt, wire};
use crate::io::FileIO;
use crate::scan::adapter::FieldIdAdapterFactory;
use crate::scan::exec::{HeldMemory, report_planning};
use crate::scan::guard::{GuardedSource, NamedAs, ScanOrigin};
use crate::scan::reader::reader_factory;
use crate::spec::{FormatVersion, NameMapping};

/// `exec` as it travels, or why it cannot.
pub(super) fn encode(
    exec: &DataSourceExec,
    codec: &IcefloeCodec,
    converter: &dyn PhysicalProtoConverterExtension,
) -> DFResult<wire::Scan> {
    let refused = |why: &str| {
        DataFusionError::NotImplemented(format!(
            "icefloe's codec cannot send this DataSourceExec: {why}"
        ))
    };
    let (config, guarded) = exec
        .downcast_to_file_source::<GuardedSource>()
        .ok_or_else(|| refused("it is not an icefloe scan"))?;
    let origin = guarded
        .origin()
        .ok_or_else(|| refused("the scan was built without its origin"))?;
    let parquet = guarded
        .inner()
        .downcast_ref::<ParquetSource>()
        .ok_or_else(|| refused("its source is not a Parquet source"))?;
    if config.output_partitioning.is_some() {
        return Err(refused("it declares an output partitioning"));
    }
    let expr = |e: &Arc<dyn PhysicalExpr>| converter.physical_expr_to_proto(e, codec);
    let table_schema = guarded.table_schema();
    let file_columns = table_schema.file_schema().fields().len();
    let mut file_groups = Vec::with_capacity(config.file_groups.len());
    let mut extras = Vec::new();
    for group in &config.file_groups {
        let mut files = Vec::with_capacity(group.len());
        for file in group.iter() {
            let mut proto = protobuf::PartitionedFile::try_from(file)?;
            proto.statistics = None;
            files.push(proto);
            extras.push(file_extras(file, file_columns, &origin.io)?);
        }
        file_groups.push(protobuf::FileGroup { files });
    }
    let projection = guarded
        .projection()
        .map(|p| {
            Ok::<_, DataFusionError>(protobuf::ProjectionExprs {
                projections: p
                    .iter()
                    .map(|e| {
                        Ok(protobuf::ProjectionExpr {
                            alias: e.alias.clone(),
                            expr: Some(expr(&e.expr)?),
                        })
                    })
                    .collect::<DFResult<_>>()?,
            })
        })
        .transpose()?;
    let output_ordering = config
        .output_ordering
        .iter()
        .map(|ordering| {
            Ok(protobuf::PhysicalSortExprNodeCollection {
                physical_sort_expr_nodes: ordering
                    .iter()
                    .map(|s| {
                        Ok(protobuf::PhysicalSortExprNode {
                            expr: Some(Box::new(expr(&s.expr)?)),
                            asc: !s.options.descending,
                            nulls_first: s.options.nulls_first,
                        })
                    })
                    .collect::<DFResult<_>>()?,
            })
        })
        .collect::<DFResult<_>>()?;
    Ok(wire::Scan {
        object_store_url: config.object_store_url.as_str().to_string(),
        origin: Some(wire::Origin {
            store: origin.store.clone(),
            io: Some(io_to_wire(&origin.io, codec.sends_credentials())),
            adapter: Some(adapter_to_wire(&origin.adapter)?),
            planning: origin.planning.as_ref().map(planning_to_wire),
        }),
        file_schema: Some(table_schema.file_schema().as_ref().try_into()?),
        partition_columns: Some(fields(table_schema.table_partition_cols())?),
        virtual_columns: Some(fields(table_schema.virtual_columns())?),
        file_groups,
        statistics: Some(common::Statistics::from(&config.statistics())),
        projection,
        predicate: parquet.filter().as_ref().map(expr).transpose()?,
        limit: config.limit.map(|l| l as u64),
        batch_size: config.batch_size.map(|b| b as u64),
        parquet_options: Some(common::TableParquetOptions::try_from(
            parquet.table_parquet_options(),
        )?),
        output_ordering,
        constraints: Some(common::Constraints::from(config.constraints.clone())),
        preserve_order: config.preserve_order,
        extras,
    })
}

fn fields(fields: &datafusion::arrow::datatypes::Fields) -> DFResult<protobuf::Schema> {
    Ok((&ArrowSchema::new(fields.clone())).try_into()?)
}

/// What `file` carries besides DataFusion's encoding of it (see [`wire::FileExtras`]).
fn file_extras(
    file: &PartitionedFile,
    file_columns: usize,
    io: &FileIO,
) -> DFResult<wire::FileExtras> {
    let mut extras = wire::FileExtras::default();
    if let Some(selection) = file.extension::<ParquetRowSelection>() {
        extras.has_selection = true;
        extras.selection = selection
            .selection()
            .iter()
            .map(|run| (run.row_count as u64) << 1 | u64::from(run.skip))
            .collect();
    }
    if let Some(NamedAs(name)) = file.extension::<NamedAs>() {
        match derived_name(name, file.object_meta.location.as_ref(), io) {
            Some((rule, suffix)) => {
                extras.named_by = Some(rule);
                extras.named_suffix = suffix;
            }
            None => extras.named_as = Some(name.to_string()),
        }
    }
    if let Some(stats) = &file.statistics {
        extras.has_statistics = true;
        extras.rows = stats.num_rows.get_value().map(|&n| n as u64);
        extras.rows_exact = stats.num_rows.is_exact().unwrap_or(false);
        for (column, c) in stats
            .column_statistics
            .iter()
            .take(file_columns)
            .enumerate()
        {
            let column = u32::try_from(column).unwrap_or(u32::MAX);
            match (&c.min_value, &c.max_value) {
                (Precision::Exact(min), Precision::Exact(max)) if min == max => {
                    extras.constants.insert(column, min.try_into()?);
                }
                _ if c.null_count.is_exact() == Some(true)
                    && c.null_count.get_value() == stats.num_rows.get_value()
                    && stats.num_rows.is_exact() == Some(true) =>
                {
                    extras.all_null.push(column);
                }
                _ => {}
            }
        }
    }
    Ok(extras)
}

/// How a worker derives `name`, the error name of the file at `path` that relocation moved
/// (`<location> (read as <moved>)`): the relocation rule whose old prefix begins the location
/// and how many bytes of `path` end it. `None` when the name is not derived so (it then
/// travels whole).
fn derived_name(name: &str, path: &str, io: &FileIO) -> Option<(u32, u32)> {
    let (location, _) = name.split_once(" (read as ")?;
    io.relocation()
        .rules()
        .iter()
        .enumerate()
        .find_map(|(index, (old, _))| {
            let suffix = location.strip_prefix(old.as_str())?;
            let derived = path.ends_with(suffix) && io.named(location) == name;
            derived.then(|| {
                Some((
                    u32::try_from(index).ok()?,
                    u32::try_from(suffix.len()).ok()?,
                ))
            })?
        })
}

/// The error name of the file at `path`, as [`derived_name`] or the sender said.
fn file_name(extra: &wire::FileExtras, path: &str, io: &FileIO) -> DFResult<Option<String>> {
    if let Some(name) = &extra.named_as {
        return Ok(Some(name.clone()));
    }
    let Some(rule) = extra.named_by else {
        return Ok(None);
    };
    let (old, _) = io.relocation().rules().get(rule as usize).ok_or_else(|| {
        corrupt(format!(
            "a file named by relocation rule {rule}, which the scan lacks"
        ))
    })?;
    let suffix = path
        .len()
        .checked_sub(extra.named_suffix as usize)
        .and_then(|start| path.get(start..))
        .ok_or_else(|| {
            corrupt(format!(
                "a file name of {} bytes of its path '{path}'",
                extra.named_suffix
            ))
        })?;
    Ok(Some(io.named(&format!("{old}{suffix}"))))
}

fn adapter_to_wire(adapter: &FieldIdAdapterFactory) -> DFResult<wire::Adapter> {
    let (name_mapping, defaults, format_version) = adapter.parts();
    Ok(wire::Adapter {
        name_mapping: name_mapping
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| DataFusionError::External(Box::new(e)))?,
        defaults: defaults
            .iter()
            .map(|(name, value)| Ok((name.clone(), value.try_into()?)))
            .collect::<DFResult<_>>()?,
        format_version: format_version.number() as u32,
    })
}

fn adapter_from_wire(adapter: Option<&wire::Adapter>) -> DFResult<FieldIdAdapterFactory> {
    let adapter = adapter.ok_or_else(|| corrupt("a scan without its field-id adapter"))?;
    let name_mapping = adapter
        .name_mapping
        .as_deref()
        .map(NameMapping::parse)
        .transpose()
        .map_err(|e| corrupt(format!("the scan's name mapping: {e}")))?;
    let defaults = adapter
        .defaults
        .iter()
        .map(|(name, value)| Ok((name.clone(), scalar(value)?)))
        .collect::<DFResult<_>>()?;
    let version = FormatVersion::try_from(i64::from(adapter.format_version))?;
    Ok(FieldIdAdapterFactory::new(
        name_mapping.map(Arc::new),
        defaults,
        version,
    ))
}

fn scalar(value: &protobuf::ScalarValue) -> DFResult<ScalarValue> {
    ScalarValue::try_from(value).map_err(|e| corrupt(format!("a scalar value: {e}")))
}

fn schema(schema: Option<&protobuf::Schema>, what: &str) -> DFResult<SchemaRef> {
    let schema = schema.ok_or_else(|| corrupt(format!("a scan without its {what}")))?;
    ArrowSchema::try_from(schema)
        .map(Arc::new)
        .map_err(|e| corrupt(format!("the scan's {what}: {e}")))
}

/// The scan `scan` describes, reading through `ctx`'s runtime.
pub(super) fn decode(
    scan: &wire::Scan,
    ctx: &TaskContext,
    codec: &IcefloeCodec,
    converter: &dyn PhysicalProtoConverterExtension,
) -> DFResult<Arc<dyn ExecutionPlan>> {
    let origin = scan
        .origin
        .as_ref()
        .ok_or_else(|| corrupt("a scan without its origin"))?;
    let io = io_from_wire(origin.io.as_ref(), ctx)?;
    let url = ObjectStoreUrl::parse(&scan.object_store_url)
        .map_err(|e| corrupt(format!("the scan's store URL: {e}")))?;
    register_store(&io, &origin.store, &url)?;

    let file_schema = schema(scan.file_schema.as_ref(), "file schema")?;
    let partition_columns = schema(scan.partition_columns.as_ref(), "partition columns")?;
    let virtual_columns = schema(scan.virtual_columns.as_ref(), "virtual columns")?;
    let table_schema = TableSchema::builder(Arc::clone(&file_schema))
        .with_table_partition_cols(partition_columns.fields().clone())
        .with_virtual_columns(virtual_columns.fields().clone())
        .build();
    let full_schema = Arc::clone(table_schema.table_schema());
    let decode_ctx = PhysicalPlanDecodeContext::new(ctx, codec as &dyn PhysicalExtensionCodec);
    let expr = |node: Option<&protobuf::PhysicalExprNode>| {
        let node = node.ok_or_else(|| corrupt("an expression without its node"))?;
        converter.proto_to_physical_expr(node, &full_schema, &decode_ctx)
    };

    let options = match &scan.parquet_options {
        Some(options) => TableParquetOptions::try_from(options)?,
        None => return Err(corrupt("a scan without its Parquet options")),
    };
    let mut parquet = ParquetSource::new(table_schema)
        .with_table_parquet_options(options)
        .with_parquet_file_reader_factory(reader_factory(&ctx.runtime_env(), &url)?);
    if let Some(predicate) = &scan.predicate {
        parquet = parquet.with_predicate(expr(Some(predicate))?);
    }
    let adapter = adapter_from_wire(origin.adapter.as_ref())?;
    let planning = origin.planning.as_ref().map(planning_from_wire);
    let guarded: Arc<dyn FileSource> = Arc::new(GuardedSource::new(Arc::new(parquet)).with_origin(
        ScanOrigin {
            store: origin.store.clone(),
            io: io.clone(),
            adapter: adapter.clone(),
            planning: planning.clone(),
        },
    ));
    let source = match &scan.projection {
        Some(projection) => {
            let exprs = projection
                .projections
                .iter()
                .map(|p| Ok(ProjectionExpr::new(expr(p.expr.as_ref())?, p.alias.clone())))
                .collect::<DFResult<Vec<_>>>()?;
            let pushed = guarded.try_pushdown_projection(&ProjectionExprs::new(exprs))?;
            pushed.unwrap_or(guarded)
        }
        None => guarded,
    };
    if let Some(planning) = &planning {
        report_planning(source.metrics(), planning);
    }

    let file_groups = file_groups(scan, ctx, &file_schema, &io)?;
    let mut output_ordering = Vec::with_capacity(scan.output_ordering.len());
    for ordering in &scan.output_ordering {
        let sorts = ordering
            .physical_sort_expr_nodes
            .iter()
            .map(|s| {
                let mut sort = PhysicalSortExpr::new_default(expr(s.expr.as_deref())?);
                sort.options.descending = !s.asc;
                sort.options.nulls_first = s.nulls_first;
                Ok(sort)
            })
            .collect::<DFResult<Vec<_>>>()?;
        output_ordering.extend(LexOrdering::new(sorts));
    }
    let statistics = scan
        .statistics
        .as_ref()
        .ok_or_else(|| corrupt("a scan without its statistics"))?;
    let constraints = match &scan.constraints {
        Some(c) => Constraints::try_from(c)?,
        None => Constraints::default(),
    };
    let config: FileScanConfig = FileScanConfigBuilder::new(url, source)
        .with_file_groups(file_groups)
        .with_statistics(Statistics::try_from(statistics)?)
        .with_limit(scan.limit.map(|l| l as usize))
        .with_batch_size(scan.batch_size.map(|b| b as usize))
        .with_output_ordering(output_ordering)
        .with_constraints(constraints)
        .with_preserve_order(scan.preserve_order)
        .with_expr_adapter(Some(Arc::new(adapter)))
        .build();
    Ok(DataSourceExec::from_data_source(config))
}

/// The scan's files with what icefloe attaches to them: statistics, row selections (their
/// memory reserved in `ctx`'s pool) and names.
fn file_groups(
    scan: &wire::Scan,
    ctx: &TaskContext,
    file_schema: &SchemaRef,
    io: &FileIO,
) -> DFResult<Vec<FileGroup>> {
    let count: usize = scan.file_groups.iter().map(|g| g.files.len()).sum();
    if scan.extras.len() != count {
        return Err(corrupt(format!(
            "a scan of {count} files with what {} files carry",
            scan.extras.len()
        )));
    }
    let selected_rows: usize = scan
        .extras
        .iter()
        .map(|e| e.selection.len() * std::mem::size_of::<RowSelector>())
        .sum();
    let memory = match selected_rows {
        0 => None,
        bytes => Some(Arc::new(HeldMemory::reserve_bytes(
            &ctx.runtime_env().memory_pool,
            bytes,
        )?)),
    };
    let mut extras = scan.extras.iter();
    let mut groups = Vec::with_capacity(scan.file_groups.len());
    for group in &scan.file_groups {
        let mut files = Vec::with_capacity(group.files.len());
        for proto in &group.files {
            let mut file = PartitionedFile::try_from(proto)
                .map_err(|e| corrupt(format!("a file of the scan: {e}")))?;
            let Some(extra) = extras.next() else {
                return Err(corrupt("a file without what it carries"));
            };
            if extra.has_statistics {
                let size = file.object_meta.size;
                file = file.with_statistics(Arc::new(file_statistics(extra, file_schema, size)?));
            }
            if let Some(name) = file_name(extra, file.object_meta.location.as_ref(), io)? {
                file = file.with_extension(NamedAs(name.into()));
            }
            if extra.has_selection {
                file = file.with_extension(ParquetRowSelection::new(selection(&extra.selection)));
                if let Some(memory) = &memory {
                    file = file.with_extension(Arc::clone(memory));
                }
            }
            files.push(file);
        }
        groups.push(FileGroup::new(files));
    }
    Ok(groups)
}

fn selection(runs: &[u64]) -> RowSelection {
    let selectors: Vec<RowSelector> = runs
        .iter()
        .map(|&run| {
            let rows = usize::try_from(run >> 1).unwrap_or(usize::MAX);
            match run & 1 {
                1 => RowSelector::skip(rows),
                _ => RowSelector::select(rows),
            }
        })
        .collect();
    RowSelection::from(selectors)
}

/// A file's statistics over the file schema, as [`file_extras`] kept them.
fn file_statistics(
    extra: &wire::FileExtras,
    file_schema: &SchemaRef,
    size: u64,
) -> DFResult<Statistics> {
    let rows = extra.rows.map(|r| usize::try_from(r).unwrap_or(usize::MAX));
    let mut columns = vec![ColumnStatistics::new_unknown(); file_schema.fields().len()];
    let width = columns.len();
    let column = |index: u32| match (index as usize) < width {
        true => Ok(index as usize),
        false => Err(corrupt(format!(
            "statistics of column {index} of a file schema of {width} columns"
        ))),
    };
    for (&index, value) in &extra.constants {
        let value = scalar(value)?;
        columns[column(index)?] = ColumnStatistics {
            null_count: Precision::Exact(0),
            min_value: Precision::Exact(value.clone()),
            max_value: Precision::Exact(value),
            distinct_count: Precision::Exact(1),
            ..ColumnStatistics::new_unknown()
        };
    }
    for &index in &extra.all_null {
        let rows = rows.ok_or_else(|| corrupt("an all-null column of a file without rows"))?;
        columns[column(index)?].null_count = Precision::Exact(rows);
    }
    Ok(Statistics {
        num_rows: match (rows, extra.rows_exact) {
            (Some(rows), true) => Precision::Exact(rows),
            (Some(rows), false) => Precision::Inexact(rows),
            (None, _) => Precision::Absent,
        },
        total_byte_size: Precision::Inexact(usize::try_from(size).unwrap_or(usize::MAX)),
        column_statistics: columns,
    })
}
