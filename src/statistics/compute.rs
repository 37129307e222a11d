//! Computing table statistics (spec: "Table Statistics"; Puffin spec,
//! `apache-datasketches-theta-v1`): one theta sketch per column of a snapshot's live rows
//! (deletes applied), written into a Puffin file under the table's `metadata/` directory and
//! registered by a `set-statistics` commit. A failed commit deletes the file.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::execution::{SessionStateBuilder, TaskContext};
use datafusion::prelude::SessionConfig;
use futures::StreamExt;

use super::theta::{ColumnSketch, ndv};
use crate::error::{Error, Result};
use crate::expr::Predicate;
use crate::scan::exec::{ScanInput, build_exec};
use crate::scan::plan::{Pruner, plan_scan};
use crate::spec::metadata::StatisticsFile;
use crate::spec::puffin::{NDV_PROPERTY, NewBlob, PuffinWriter, THETA_BLOB_TYPE};
use crate::spec::statistics::BlobMetadata;
use crate::spec::{NestedField, PrimitiveType, Schema, Snapshot, SnapshotSelector, Type};
use crate::table::Table;
use crate::to_arrow::schema_to_arrow;
use crate::transaction::{SetStatistics, WriteTarget};

/// What [`compute_table_stats`] computes: which columns (default: every top-level primitive
/// column) of which snapshot (default: the current one).
#[derive(Debug, Clone, Default)]
pub struct ComputeTableStats {
    columns: Option<Vec<String>>,
    snapshot_id: Option<i64>,
}

impl ComputeTableStats {
    /// Every top-level primitive column of the current snapshot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only these top-level columns (by name, as the snapshot's schema has them).
    pub fn with_columns<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
        self.columns = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    /// Of this snapshot instead of the current one.
    pub fn with_snapshot_id(mut self, snapshot_id: i64) -> Self {
        self.snapshot_id = Some(snapshot_id);
        self
    }
}

/// What [`compute_table_stats`] wrote and committed.
#[derive(Debug, Clone)]
pub struct TableStatsReport {
    /// The snapshot the statistics describe.
    pub snapshot_id: i64,
    /// The Puffin file.
    pub statistics_path: String,
    /// Per column: its name, field id and estimated number of distinct values.
    pub columns: Vec<(String, i32, u64)>,
    /// The table as committed.
    pub table: Table,
}

/// Computes a theta sketch of each chosen column over the snapshot's live rows, writes them
/// into a Puffin file (`<location>/metadata/<snapshot id>-<uuid>.stats`, each blob with its
/// `ndv` property) and commits `set-statistics`, replacing the snapshot's statistics file.
///
/// Errors: a table without snapshots, an unknown snapshot, a column that is not a top-level
/// primitive column ([`Error::InvalidArgument`]), and those of reading and committing; the
/// Puffin file is deleted when the commit fails.
pub async fn compute_table_stats(
    target: &WriteTarget,
    options: &ComputeTableStats,
) -> Result<TableStatsReport> {
    let table = target.load().await?;
    let metadata = table.metadata();
    let selector = match options.snapshot_id {
        Some(id) => SnapshotSelector::SnapshotId(id),
        None => SnapshotSelector::Current,
    };
    let resolved = metadata.resolve(&selector)?;
    let Some(snapshot) = resolved.snapshot else {
        return Err(Error::invalid(
            format_args!("table {}", target.name()),
            "it has no snapshot to compute statistics of",
        ));
    };
    let columns = chosen_columns(resolved.schema, options.columns.as_deref(), target.name())?;
    let sketches = sketch_columns(&table, resolved.schema, snapshot, &columns).await?;
    let mut writer = PuffinWriter::new(&format!("icefloe {}", env!("CARGO_PKG_VERSION")));
    let mut blobs = Vec::new();
    let mut report = Vec::new();
    for (field, sketch) in columns.iter().zip(sketches) {
        let estimate = ndv(&sketch);
        let blob = NewBlob {
            kind: THETA_BLOB_TYPE.to_string(),
            fields: vec![field.id],
            snapshot_id: snapshot.snapshot_id,
            sequence_number: snapshot.sequence_number,
            properties: BTreeMap::from([(NDV_PROPERTY.to_string(), estimate.to_string())]),
        };
        blobs.push(blob_metadata(&blob));
        writer.add(blob, &sketch.serialize());
        report.push((field.name.clone(), field.id, estimate));
    }
    let file = writer.finish();
    let path = format!(
        "{}/metadata/{}-{}.stats",
        metadata.location.trim_end_matches('/'),
        snapshot.snapshot_id,
        uuid::Uuid::new_v4()
    );
    let statistics = StatisticsFile {
        snapshot_id: snapshot.snapshot_id,
        statistics_path: path.clone(),
        file_size_in_bytes: i64::try_from(file.bytes.len()).unwrap_or(i64::MAX),
        file_footer_size_in_bytes: i64::try_from(file.footer_size).unwrap_or(i64::MAX),
        key_metadata: None,
        blob_metadata: blobs,
    };
    let snapshot_id = snapshot.snapshot_id;
    table.io().write(&path, Bytes::from(file.bytes)).await?;
    let committed = target
        .transaction(table.clone())
        .with_action(SetStatistics::new(statistics))
        .commit()
        .await?;
    Ok(TableStatsReport {
        snapshot_id,
        statistics_path: path,
        columns: report,
        table: committed,
    })
}

/// A blob's entry in the table metadata's `blob-metadata`.
fn blob_metadata(blob: &NewBlob) -> serde_json::Value {
    BlobMetadata {
        kind: blob.kind.clone(),
        snapshot_id: blob.snapshot_id,
        sequence_number: blob.sequence_number,
        fields: blob.fields.clone(),
        properties: blob.properties.clone(),
    }
    .to_json()
}

/// The columns named (each a top-level primitive column of `schema`), or all such columns.
fn chosen_columns(
    schema: &Schema,
    names: Option<&[String]>,
    table: &str,
) -> Result<Vec<Arc<NestedField>>> {
    // Variant, geometry, geography and unknown values have no single-value form to hash.
    let primitive =
        |f: &NestedField| matches!(&f.field_type, Type::Primitive(p) if p.has_value_bounds());
    let Some(names) = names else {
        return Ok(schema
            .columns()
            .iter()
            .filter(|f| primitive(f))
            .cloned()
            .collect());
    };
    names
        .iter()
        .map(|name| {
            let field = schema.field_by_name(name.trim()).ok_or_else(|| {
                Error::invalid(
                    format_args!("column '{name}'"),
                    format_args!("table {table} has no such top-level column"),
                )
            })?;
            match primitive(field) {
                true => Ok(Arc::clone(field)),
                false => Err(Error::invalid(
                    format_args!("column '{name}' of table {table}"),
                    "theta sketches are computed of primitive columns only (not variant, geometry, \
                     geography or unknown)",
                )),
            }
        })
        .collect()
}

/// One sketch per column of `columns` over the live rows of `snapshot`: the scan's partitions
/// sketched in parallel, then united.
async fn sketch_columns(
    table: &Table,
    schema: &Schema,
    snapshot: &Snapshot,
    columns: &[Arc<NestedField>],
) -> Result<Vec<datasketches::theta::CompactThetaSketch>> {
    let metadata = table.metadata();
    let io = table.io();
    let pruner = Pruner::new(metadata, schema, Predicate::AlwaysTrue);
    let plan = plan_scan(io, metadata, snapshot, &pruner).await?;
    let projection: Vec<usize> = columns
        .iter()
        .filter_map(|c| schema.columns().iter().position(|f| f.id == c.id))
        .collect();
    let parallelism = std::thread::available_parallelism().map_or(2, |n| n.get());
    let state = SessionStateBuilder::new()
        .with_config(SessionConfig::new().with_target_partitions(parallelism))
        .with_runtime_env(Arc::clone(io.runtime()))
        .build();
    let input = ScanInput {
        table,
        schema,
        arrow_schema: Arc::new(schema_to_arrow(schema)?),
        tasks: plan.tasks,
        stats: plan.stats,
        row_ids: false,
        distinct_counts: Vec::new(),
    };
    let exec = build_exec(&state, input, Some(&projection), &[], None).await?;
    let mut parts = tokio::task::JoinSet::new();
    let types: Arc<Vec<PrimitiveType>> = Arc::new(
        columns
            .iter()
            .filter_map(|c| c.field_type.as_primitive().cloned())
            .collect(),
    );
    for partition in 0..exec.properties().output_partitioning().partition_count() {
        let rows = exec.execute(partition, Arc::new(TaskContext::from(&state)))?;
        parts.spawn(sketch_partition(rows, Arc::clone(&types)));
    }
    let mut per_column: Vec<Vec<ColumnSketch>> = columns.iter().map(|_| Vec::new()).collect();
    while let Some(joined) = parts.join_next().await {
        let sketches = joined.map_err(|e| Error::invalid("a statistics scan", e))??;
        for (column, sketch) in per_column.iter_mut().zip(sketches) {
            column.push(sketch);
        }
    }
    per_column.iter().map(|s| ColumnSketch::union(s)).collect()
}

/// The sketches of one scan partition's rows, one per column of the projection.
async fn sketch_partition(
    mut rows: datafusion::execution::SendableRecordBatchStream,
    types: Arc<Vec<PrimitiveType>>,
) -> Result<Vec<ColumnSketch>> {
    let mut sketches = types
        .iter()
        .map(|_| ColumnSketch::new())
        .collect::<Result<Vec<_>>>()?;
    while let Some(batch) = rows.next().await {
        let batch = batch?;
        for ((sketch, ty), column) in sketches.iter_mut().zip(types.iter()).zip(batch.columns()) {
            sketch.update(column.as_ref(), ty)?;
        }
    }
    Ok(sketches)
}
