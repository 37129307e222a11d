//! [`IcebergTableProvider`]: a DataFusion `TableProvider` over one snapshot of an Iceberg table.

#[cfg(test)]
mod tests;

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::Result as DFResult;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

use crate::error::{Error, Result};
use crate::expr::Predicate;
use crate::expr::convert::{convert, convert_filters};
use crate::io::FileIO;
use crate::scan::count::{RowCountExec, live_rows_from_list};
use crate::scan::exec::{ScanInput, build_exec};
use crate::scan::plan::{Pruner, plan_scan};
use crate::scan::{
    FileScanTask, IncrementalRange, PlanStats, ScanPlan, plan_incremental_files, read_manifest_list,
};
use crate::spec::{PrimitiveType, Transform, Type};
use crate::spec::{Schema, Snapshot, SnapshotSelector};
use crate::table::{Table, TableOptions};
use crate::to_arrow::schema_to_arrow;

/// A DataFusion table over one snapshot (by default the current one) of an Iceberg table, or
/// over the rows appended between two snapshots ([`IcebergTableProvider::incremental`]).
///
/// The schema is the table's current schema when reading the current snapshot or a branch,
/// and the snapshot's own schema (`schema-id`) when reading a snapshot id, a tag or a
/// timestamp. Scans plan the snapshot's live data files from metadata and read them with
/// DataFusion's Parquet reader, matching columns by field id.
#[derive(Debug, Clone)]
pub struct IcebergTableProvider {
    table: Table,
    selector: SnapshotSelector,
    read: ReadKind,
    schema: Arc<Schema>,
    arrow_schema: SchemaRef,
}

/// What a scan plans.
#[derive(Debug, Clone)]
enum ReadKind {
    /// Every live data file of a snapshot (`None`: the table has no snapshot, reads as empty).
    Snapshot(Option<i64>),
    /// The data files the snapshots of a range appended.
    Incremental(IncrementalRange),
}

impl IcebergTableProvider {
    /// Opens the table at `location` (a metadata file or a table directory), reading objects
    /// through the stores registered in `ctx`.
    pub async fn open(ctx: &SessionContext, location: &str, options: TableOptions) -> Result<Self> {
        let io = FileIO::new(ctx.runtime_env(), options.relocation.clone());
        let table = Table::load(io, location).await?;
        Self::try_new(table, options.snapshot)
    }

    /// A provider over a loaded table, at the state `selector` names (see
    /// [`SnapshotSelector`] for which schema each kind of read uses).
    pub fn try_new(table: Table, selector: SnapshotSelector) -> Result<Self> {
        let resolved = table
            .metadata()
            .resolve(&selector)
            .map_err(|e| in_table(e, &table))?;
        let read = ReadKind::Snapshot(resolved.snapshot.map(|s| s.snapshot_id));
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
        Ok(Self {
            table,
            selector,
            read,
            schema: Arc::new(schema),
            arrow_schema,
        })
    }

    /// The same table at another state (no IO: the metadata is already loaded).
    pub fn at(&self, selector: SnapshotSelector) -> Result<Self> {
        Self::try_new(self.table.clone(), selector)
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

    /// The table this provider reads.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The snapshot this provider reads (`None`: the table has no snapshot yet); for an
    /// incremental read, the last snapshot of the range.
    pub fn snapshot_id(&self) -> Option<i64> {
        match &self.read {
            ReadKind::Snapshot(id) => *id,
            ReadKind::Incremental(range) => Some(range.to),
        }
    }

    /// The snapshots an incremental read covers (`None` for a snapshot read).
    pub fn incremental_range(&self) -> Option<&IncrementalRange> {
        match &self.read {
            ReadKind::Snapshot(_) => None,
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
        let metadata = self.table.metadata();
        let io = self.table.io();
        match &self.read {
            ReadKind::Snapshot(None) => Ok(ScanPlan::default()),
            ReadKind::Snapshot(Some(id)) => {
                let snapshot = self.snapshot(*id)?;
                let pruner = Pruner::new(metadata, &self.schema, filter);
                plan_scan(io, metadata, snapshot, &pruner).await
            }
            ReadKind::Incremental(range) => {
                let started = std::time::Instant::now();
                let all = plan_incremental_files(io, metadata, range).await?;
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

    /// The snapshot `id` of the table, or a not-found error naming the table.
    fn snapshot(&self, id: i64) -> Result<&Snapshot> {
        self.table.metadata().snapshot_by_id(id).ok_or_else(|| {
            Error::not_found(format!(
                "snapshot {id} in table {}",
                self.table.metadata_location()
            ))
        })
    }

    /// A scan of rows without columns and without filters (`SELECT count(*) FROM t`) answered
    /// from the manifest list alone, when its counts are exact (see [`live_rows_from_list`]);
    /// `None` otherwise, and for incremental reads.
    async fn count_only(&self, limit: Option<usize>) -> Result<Option<RowCountExec>> {
        let ReadKind::Snapshot(Some(id)) = &self.read else {
            return Ok(None);
        };
        let started = std::time::Instant::now();
        let manifests =
            read_manifest_list(self.table.io(), self.table.metadata(), self.snapshot(*id)?).await?;
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
        Ok(Some(RowCountExec::rows(
            rows,
            &stats,
            "counted from the manifest list",
        )))
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
        if filters.is_empty()
            && projection.is_some_and(Vec::is_empty)
            && let Some(exec) = self.count_only(limit).await?
        {
            return Ok(Arc::new(exec));
        }
        let (filter, _) = convert_filters(filters, &self.schema);
        let mut plan = self.plan(filter).await?;
        // With a limit, no filter left for DataFusion to apply and no deletes, record counts
        // are row counts: files past the limit need not be opened.
        let residual = filters.iter().any(|f| !self.decided_by_partitions(f));
        if let Some(limit) = limit.filter(|_| !residual) {
            keep_files_for_limit(&mut plan.tasks, limit);
            plan.stats.data_files_scanned = plan.tasks.len();
        }
        let input = ScanInput {
            table: &self.table,
            schema: &self.schema,
            arrow_schema: Arc::clone(&self.arrow_schema),
            tasks: plan.tasks,
            stats: plan.stats,
        };
        build_exec(state, input, projection, filters, limit).await
    }
}

impl IcebergTableProvider {
    /// Whether `filter` converts exactly and reads only columns that every partition spec of
    /// the table partitions by identity.
    fn decided_by_partitions(&self, filter: &Expr) -> bool {
        let Some(predicate) = convert(filter, &self.schema) else {
            return false;
        };
        let specs = &self.table.metadata().partition_specs;
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

/// Adds the table's metadata file to a not-found error from the spec layer.
fn in_table(err: Error, table: &Table) -> Error {
    match err {
        Error::NotFound { what, source } => Error::NotFound {
            what: format!("{what} in table {}", table.metadata_location()),
            source,
        },
        other => other,
    }
}
