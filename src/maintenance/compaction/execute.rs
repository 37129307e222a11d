//! Rewriting one group of data files: their live rows (every delete that applies to them
//! applied) read by icefloe's scan and written again as files of about the target size in the
//! table's default spec, in as many streams as the group makes output files (at most the
//! session's parallelism). Sorted by the sort order for the `sort` strategy (one stream in
//! global order), by the table's own sort order within each stream for `binpack` on a sorted
//! table. On v3 tables the rows keep their `_row_id` and `_last_updated_sequence_number`
//! (the `dml::lineage` copy). Nothing is committed here.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use datafusion::execution::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::physical_expr::LexOrdering;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use datafusion::prelude::SessionConfig;
use futures::StreamExt;

use super::plan::Group;
use crate::dml::lineage;
use crate::error::{Error, Result};
use crate::maintenance::Progress;
use crate::scan::PlanStats;
use crate::scan::exec::{ScanInput, build_exec};
use crate::spec::{DataFile, SortOrder};
use crate::table::Table;
use crate::to_arrow::schema_to_arrow;
use crate::transaction::delete_all;
use crate::write::{AppendWriter, sort_exprs};

/// A flag that stops a compaction between batches (set it from a Ctrl-C handler); what was
/// written is then deleted and nothing is committed.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag not set yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the compaction to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    pub(crate) fn check(&self, table: &str) -> Result<()> {
        match self.is_cancelled() {
            true => Err(Error::Cancelled(format!(
                "compaction of {table}: nothing was committed and the files written were deleted"
            ))),
            false => Ok(()),
        }
    }
}

/// How the rows of a group are ordered in the files written.
#[derive(Debug, Clone)]
pub(crate) enum Order {
    /// As they are read, each stream sorted by the table's own sort order when it has one.
    AsRead(Option<SortOrder>),
    /// In one global order (the `sort` strategy).
    Sorted(SortOrder),
}

/// What rewriting a table's groups shares: the table, the rows' schema (with the lineage
/// columns on v3), the order, the target size, and the progress reported in bytes.
pub(crate) struct Rewriter<'a> {
    pub(crate) table: &'a Table,
    pub(crate) order: Order,
    pub(crate) target_size: u64,
    pub(crate) config: SessionConfig,
    /// The caller's cancellation.
    pub(crate) cancel: Cancel,
    /// Set when one group fails (without partial progress): the others stop too.
    pub(crate) stop: Cancel,
    pub(crate) progress: Progress,
    pub(crate) progress_total: u64,
    pub(crate) progress_done: Arc<AtomicU64>,
}

impl Rewriter<'_> {
    /// The files `group`'s rows are written to (deleted again when anything fails).
    pub(crate) async fn rewrite(&self, group: &Group) -> Result<Vec<(i32, DataFile)>> {
        let metadata = self.table.metadata();
        let lineage =
            lineage::carries_lineage(metadata).then(|| lineage::Inherited::new(&group.tasks));
        let schema = match lineage {
            Some(_) => lineage::with_lineage_columns(metadata.current_schema()),
            None => metadata.current_schema().clone(),
        };
        let streams = match self.order {
            Order::Sorted(_) => 1,
            Order::AsRead(_) => group
                .output_files
                .clamp(1, self.config.target_partitions().max(1)),
        };
        let state = SessionStateBuilder::new()
            .with_config(self.config.clone().with_target_partitions(streams))
            .build();
        let input = ScanInput {
            table: self.table,
            schema: &schema,
            arrow_schema: Arc::new(schema_to_arrow(&schema)?),
            tasks: group.tasks.clone(),
            stats: PlanStats::default(),
            row_ids: lineage.is_some(),
            distinct_counts: Vec::new(),
        };
        let scan = build_exec(&state, input, None, &[], None).await?;
        let (plan, order_id) = self.ordered(&state, scan)?;
        let mut copies = tokio::task::JoinSet::new();
        let rows: i64 = group.tasks.iter().map(|t| t.data_file.record_count).sum();
        let bytes_per_row = group.bytes as f64 / rows.max(1) as f64;
        for partition in 0..plan.output_partitioning().partition_count() {
            let stream = plan.execute(partition, state.task_ctx())?;
            let writer = AppendWriter::new(self.table.io(), metadata, &schema)?
                .with_target_file_size(self.target_size)
                .with_sort_order_id(order_id);
            let copy = Copy {
                lineage: lineage.clone(),
                cancel: [self.cancel.clone(), self.stop.clone()],
                table: metadata.location.clone(),
                progress: self.progress.clone(),
                total: self.progress_total,
                done: Arc::clone(&self.progress_done),
                bytes_per_row,
            };
            copies.spawn(copy.run(stream, writer));
        }
        let mut files = Vec::new();
        let mut failure = None;
        while let Some(joined) = copies.join_next().await {
            match joined {
                Ok(Ok(written)) => files.extend(written),
                Ok(Err(e)) => failure = failure.or(Some(e)),
                Err(e) => failure = failure.or(Some(Error::invalid("a compaction stream", e))),
            }
        }
        if let Some(e) = failure {
            let paths: Vec<String> = files.iter().map(|(_, f)| f.file_path.clone()).collect();
            delete_all(self.table.io(), &paths).await;
            return Err(e);
        }
        Ok(files)
    }

    /// `scan` in the order of [`Self::order`], and the sort order id the files then record.
    fn ordered(
        &self,
        state: &SessionState,
        scan: Arc<dyn ExecutionPlan>,
    ) -> Result<(Arc<dyn ExecutionPlan>, Option<i32>)> {
        let metadata = self.table.metadata();
        let (order, global) = match &self.order {
            Order::Sorted(order) => (order, true),
            Order::AsRead(Some(order)) => (order, false),
            Order::AsRead(None) => return Ok((scan, None)),
        };
        let exprs = sort_exprs(state, metadata, order, &scan.schema())?;
        let Some(ordering) = LexOrdering::new(exprs) else {
            return Ok((scan, None));
        };
        let sorted = SortExec::new(ordering.clone(), scan).with_preserve_partitioning(true);
        let plan: Arc<dyn ExecutionPlan> = match global {
            true => Arc::new(SortPreservingMergeExec::new(ordering, Arc::new(sorted))),
            false => Arc::new(sorted),
        };
        // Files claim only orders the table has (as Java's sort rewriter): another order
        // sorts them all the same but is not recorded.
        let recorded = metadata
            .sort_orders
            .iter()
            .find(|o| o.fields == order.fields)
            .map(|o| o.order_id);
        Ok((plan, recorded))
    }
}

/// One stream of a group's rows into one writer.
struct Copy {
    lineage: Option<Arc<lineage::Inherited>>,
    cancel: [Cancel; 2],
    table: String,
    progress: Progress,
    total: u64,
    done: Arc<AtomicU64>,
    bytes_per_row: f64,
}

impl Copy {
    async fn run(
        self,
        mut rows: datafusion::execution::SendableRecordBatchStream,
        mut writer: AppendWriter,
    ) -> Result<Vec<(i32, DataFile)>> {
        let copied = async {
            while let Some(batch) = rows.next().await {
                for cancel in &self.cancel {
                    cancel.check(&self.table)?;
                }
                let batch = match &self.lineage {
                    // The lineage columns resolved, the row identity (`_file`, `_pos`) dropped.
                    Some(lineage) => {
                        let resolved = lineage.resolve(batch?)?;
                        let width = resolved.num_columns() - 2;
                        resolved
                            .project(&(0..width).collect::<Vec<_>>())
                            .map_err(|e| Error::invalid("a compaction batch", e))?
                    }
                    None => batch?,
                };
                writer.write(&batch).await?;
                let bytes = (batch.num_rows() as f64 * self.bytes_per_row) as u64;
                let done = self.done.fetch_add(bytes, Ordering::SeqCst) + bytes;
                self.progress.report(
                    usize::try_from(done.min(self.total)).unwrap_or(usize::MAX),
                    usize::try_from(self.total).unwrap_or(usize::MAX),
                );
            }
            Ok::<_, Error>(())
        }
        .await;
        match copied {
            Ok(()) => writer.finish().await,
            Err(e) => {
                writer.abort().await;
                Err(e)
            }
        }
    }
}
