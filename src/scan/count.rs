//! Scans answered by metadata alone: [`RowCountExec`] yields rows without columns, as many
//! as the manifest list proves the snapshot holds (an unfiltered `count(*)` never reads a
//! manifest), or no rows at all when planning pruned every file.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::{Schema as ArrowSchema, SchemaRef};
use datafusion::common::Statistics;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::statistics::StatisticsArgs;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use futures::stream;

use super::exec::report_planning;
use super::plan::PlanStats;
use crate::spec::{ManifestContent, ManifestFile};

/// The live row count of a snapshot from its manifest list alone: the added plus existing
/// rows of every data manifest. `None` when that is not exact or not known: a delete manifest
/// that still tracks files (deleted rows would be counted), or a manifest whose list entry
/// lacks a count (optional in v1).
pub(crate) fn live_rows_from_list(manifests: &[ManifestFile]) -> Option<(u64, usize)> {
    let (mut rows, mut files) = (0u64, 0usize);
    for m in manifests {
        let live_files = usize::try_from(m.added_files_count?).ok()?
            + usize::try_from(m.existing_files_count?).ok()?;
        match m.content {
            ManifestContent::Data => {
                rows += u64::try_from(m.added_rows_count?).ok()?
                    + u64::try_from(m.existing_rows_count?).ok()?;
                files += live_files;
            }
            ManifestContent::Deletes if live_files == 0 => {}
            ManifestContent::Deletes => return None,
        }
    }
    Some((rows, files))
}

/// What a [`RowCountExec`]'s count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CountSource {
    /// The snapshot's manifest list (an unfiltered `count(*)`).
    ManifestList,
    /// Planning, which left no file to read.
    Pruned,
}

impl fmt::Display for CountSource {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            Self::ManifestList => "counted from the manifest list",
            Self::Pruned => "no file left after pruning",
        })
    }
}

/// A leaf that yields `rows` rows of an empty schema (or, with `rows == 0`, nothing of any
/// schema), with exact row-count statistics, so DataFusion answers `count(*)` from them, and
/// with the planning metrics of the scan it stands for.
#[derive(Debug)]
pub(crate) struct RowCountExec {
    rows: usize,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
    /// The planning of the scan it stands for (reported as its metrics).
    stats: PlanStats,
    /// What the row count came from, for EXPLAIN.
    source: CountSource,
}

impl RowCountExec {
    /// `rows` rows without columns, counted from the manifest list.
    pub(crate) fn rows(rows: usize, stats: &PlanStats) -> Self {
        Self::new(
            Arc::new(ArrowSchema::empty()),
            rows,
            stats,
            CountSource::ManifestList,
        )
    }

    /// No rows, of `schema`: planning left no file to read.
    pub(crate) fn empty(schema: SchemaRef, stats: &PlanStats) -> Self {
        Self::new(schema, 0, stats, CountSource::Pruned)
    }

    /// The node as its parts (for the distributed codec): the rows, the schema, the planning
    /// statistics and the count's source.
    #[cfg_attr(not(feature = "distributed"), allow(dead_code))]
    pub(crate) fn parts(&self) -> (usize, &SchemaRef, &PlanStats, CountSource) {
        (self.rows, &self.schema, &self.stats, self.source)
    }

    /// The node [`RowCountExec::parts`] took apart.
    pub(crate) fn new(
        schema: SchemaRef,
        rows: usize,
        stats: &PlanStats,
        source: CountSource,
    ) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        let metrics = ExecutionPlanMetricsSet::new();
        report_planning(&metrics, stats);
        // No Parquet scan reports the bytes read here: none are.
        MetricBuilder::new(&metrics).global_counter("bytes_scanned");
        Self {
            rows,
            schema,
            properties: Arc::new(properties),
            metrics,
            stats: stats.clone(),
            source,
        }
    }
}

impl DisplayAs for RowCountExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "IcebergRowCountExec: rows={} ({})",
            self.rows, self.source
        )
    }
}

impl ExecutionPlan for RowCountExec {
    fn name(&self) -> &str {
        "IcebergRowCountExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
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
        match children.is_empty() {
            true => Ok(self),
            false => Err(DataFusionError::Internal(
                "IcebergRowCountExec has no children".into(),
            )),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "IcebergRowCountExec has one partition, not {partition}"
            )));
        }
        let batch_size = context.session_config().batch_size().max(1);
        let (rows, schema) = (self.rows, Arc::clone(&self.schema));
        let batches = stream::iter((0..rows).step_by(batch_size).map(move |start| {
            let options =
                RecordBatchOptions::new().with_row_count(Some(batch_size.min(rows - start)));
            Ok(RecordBatch::try_new_with_options(
                Arc::clone(&schema),
                vec![],
                &options,
            )?)
        }));
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            batches,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> DFResult<Arc<Statistics>> {
        let mut statistics = Statistics::new_unknown(&self.schema);
        statistics.num_rows = Precision::Exact(self.rows);
        if self.rows == 0 {
            statistics.total_byte_size = Precision::Exact(0);
            for column in &mut statistics.column_statistics {
                column.null_count = Precision::Exact(0);
            }
        }
        Ok(Arc::new(statistics))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(content: ManifestContent, files: [i32; 2], rows: [i64; 2]) -> ManifestFile {
        let mut m = ManifestFile::new("m.avro", 100, 0, content, 1);
        m.added_files_count = Some(files[0]);
        m.existing_files_count = Some(files[1]);
        m.deleted_files_count = Some(3);
        m.added_rows_count = Some(rows[0]);
        m.existing_rows_count = Some(rows[1]);
        m.deleted_rows_count = Some(300);
        m
    }

    #[test]
    fn live_rows_are_added_plus_existing_of_data_manifests() {
        let list = [
            manifest(ManifestContent::Data, [1, 2], [10, 20]),
            manifest(ManifestContent::Data, [0, 4], [0, 40]),
        ];
        assert_eq!(live_rows_from_list(&list), Some((70, 7)));
        assert_eq!(live_rows_from_list(&[]), Some((0, 0)));
    }

    #[test]
    fn live_deletes_or_missing_counts_make_the_count_unknown() {
        let data = manifest(ManifestContent::Data, [1, 0], [10, 0]);
        // A delete manifest whose files were all removed deletes nothing.
        let spent = manifest(ManifestContent::Deletes, [0, 0], [0, 0]);
        assert_eq!(live_rows_from_list(&[data.clone(), spent]), Some((10, 1)));
        for live in [[1, 0], [0, 1]] {
            let deletes = manifest(ManifestContent::Deletes, live, [5, 5]);
            assert_eq!(live_rows_from_list(&[data.clone(), deletes]), None);
        }
        // v1 lists may leave counts out.
        for blank in 0..4 {
            let mut m = data.clone();
            match blank {
                0 => m.added_files_count = None,
                1 => m.existing_files_count = None,
                2 => m.added_rows_count = None,
                _ => m.existing_rows_count = None,
            }
            assert_eq!(live_rows_from_list(&[m]), None, "count {blank} missing");
        }
        let mut negative = data;
        negative.added_rows_count = Some(-1);
        assert_eq!(live_rows_from_list(&[negative]), None);
    }
}
