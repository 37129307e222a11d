//! The plan nodes of a statement that writes across processes: [`WriterExec`], one writer per
//! partition of the statement's rows (it travels: INSERT's and DML's writers), [`CommitExec`],
//! which gathers what the writers wrote and commits it once where the statement was planned,
//! and [`CommittedExec`], the root that answers with the commit.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::sink::DataSink;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::StreamExt;
use futures::future::BoxFuture;

use crate::dml::RowChangeSink;
use crate::error::Result;
use crate::write::IcebergSink;

/// What a statement's writers do with each partition of its rows.
pub(super) trait Writer: fmt::Debug + Send + Sync + 'static {
    /// The node's name in plans.
    const NAME: &'static str;

    /// The schema of the rows the node returns.
    fn schema() -> SchemaRef;

    /// The statement, for plans.
    fn statement(&self) -> &str;

    /// Writes partition `partition` of the statement's rows (`input`); returns what it wrote,
    /// for the commit node. A writer that fails leaves no file.
    fn write(
        self: Arc<Self>,
        partition: usize,
        input: SendableRecordBatchStream,
        context: Arc<TaskContext>,
    ) -> BoxFuture<'static, Result<RecordBatch>>;
}

/// Runs a [`Writer`] over each partition of its input; one batch per partition.
#[derive(Debug)]
pub(super) struct WriterExec<W> {
    input: Arc<dyn ExecutionPlan>,
    writer: Arc<W>,
    properties: Arc<PlanProperties>,
}

impl<W: Writer> WriterExec<W> {
    pub(super) fn new(input: Arc<dyn ExecutionPlan>, writer: Arc<W>) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(W::schema()),
            input.properties().partitioning.clone(),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            input,
            writer,
            properties,
        }
    }

    pub(super) fn writer(&self) -> &W {
        &self.writer
    }
}

impl<W: Writer> DisplayAs for WriterExec<W> {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", W::NAME, self.writer.statement())
    }
}

impl<W: Writer> ExecutionPlan for WriterExec<W> {
    fn name(&self) -> &str {
        W::NAME
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
            Ok([input]) => Ok(Arc::new(Self::new(input, Arc::clone(&self.writer)))),
            Err(_) => Err(DataFusionError::Internal(format!(
                "{} has one child",
                W::NAME
            ))),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        let input = self.input.execute(partition, Arc::clone(&context))?;
        let written = Arc::clone(&self.writer).write(partition, input, context);
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            W::schema(),
            futures::stream::once(async move { Ok(written.await?) }),
        )))
    }
}

/// What commits a statement's writes: its sink (whose display and metrics the commit node
/// shows).
pub(super) trait Committer: DataSink + 'static {
    /// The commit node's name in plans.
    const NAME: &'static str;

    /// Gathers what the writers report (`input`) and commits it once; returns the statement's
    /// answer. When it fails nothing is committed and no file of the statement is left: those
    /// reported, and those named from `token` (a writer that died cannot report its files).
    fn commit_reports(
        self: Arc<Self>,
        input: SendableRecordBatchStream,
        token: String,
        context: Arc<TaskContext>,
    ) -> BoxFuture<'static, Result<u64>>;
}

/// Whether a statement's commit happened, and its answer (the rows written or changed):
/// shared by its commit node and the root that reports it ([`CommittedExec`]).
pub(super) type Committed = Arc<std::sync::OnceLock<u64>>;

/// The one commit of a statement, over its writers' reports; answers `count`, as DataFusion's
/// sinks do.
#[derive(Debug)]
pub(super) struct CommitExec<C> {
    input: Arc<dyn ExecutionPlan>,
    committer: Arc<C>,
    /// What the names of the statement's files start with.
    token: String,
    /// Set to the answer once the commit happened.
    committed: Committed,
    properties: Arc<PlanProperties>,
}

fn count_schema() -> SchemaRef {
    Arc::new(ArrowSchema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]))
}

/// The answer of a statement: one row, `count`.
fn count_batch(count: u64) -> DFResult<RecordBatch> {
    RecordBatch::try_new(
        count_schema(),
        vec![Arc::new(UInt64Array::from(vec![count])) as ArrayRef],
    )
    .map_err(DataFusionError::from)
}

impl<C: Committer> CommitExec<C> {
    pub(super) fn new(input: Arc<dyn ExecutionPlan>, committer: Arc<C>, token: String) -> Self {
        Self::with_cell(input, committer, token, Committed::default())
    }

    fn with_cell(
        input: Arc<dyn ExecutionPlan>,
        committer: Arc<C>,
        token: String,
        committed: Committed,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(count_schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            input,
            committer,
            token,
            committed,
            properties,
        }
    }
}

impl<C: Committer> DisplayAs for CommitExec<C> {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", C::NAME)?;
        self.committer.fmt_as(DisplayFormatType::Default, f)
    }
}

impl<C: Committer> ExecutionPlan for CommitExec<C> {
    fn name(&self) -> &str {
        C::NAME
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
            Ok([input]) => Ok(Arc::new(Self::with_cell(
                input,
                Arc::clone(&self.committer),
                self.token.clone(),
                Arc::clone(&self.committed),
            ))),
            Err(_) => Err(DataFusionError::Internal(format!(
                "{} has one child",
                C::NAME
            ))),
        }
    }

    fn metrics(&self) -> Option<MetricsSet> {
        DataSink::metrics(self.committer.as_ref())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "{} has one partition, not partition {partition}",
                C::NAME
            )));
        }
        let input = self.input.execute(0, Arc::clone(&context))?;
        let commit = Arc::clone(&self.committer).commit_reports(input, self.token.clone(), context);
        let committed = Arc::clone(&self.committed);
        let answer = async move {
            let count = commit.await?;
            let _ = committed.set(count);
            count_batch(count)
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            count_schema(),
            futures::stream::once(answer),
        )))
    }
}

/// The commit cell of the commit node in `plan`, if it has one.
pub(super) fn committed_of(plan: &Arc<dyn ExecutionPlan>) -> Option<Committed> {
    if let Some(commit) = plan.downcast_ref::<CommitExec<IcebergSink>>() {
        return Some(Arc::clone(&commit.committed));
    }
    if let Some(commit) = plan.downcast_ref::<CommitExec<RowChangeSink>>() {
        return Some(Arc::clone(&commit.committed));
    }
    plan.children().into_iter().find_map(committed_of)
}

/// The root of a statement that commits on a cluster: its answer, and once the commit has
/// happened, no error the runtime reports after it. datafusion-distributed collects the
/// workers' metrics after the answer is out, and a worker lost then fails that collection:
/// the statement must not be reported failed (and retried, writing its rows twice) when its
/// commit stands. Such an error is counted in the metric `errors_after_commit`.
#[derive(Debug)]
pub(super) struct CommittedExec {
    input: Arc<dyn ExecutionPlan>,
    committed: Committed,
    metrics: ExecutionPlanMetricsSet,
}

impl CommittedExec {
    /// Whether `plan` answers as a commit node does (one `count` column).
    pub(super) fn answers_like(plan: &Arc<dyn ExecutionPlan>) -> bool {
        plan.schema().fields() == count_schema().fields()
    }

    pub(super) fn new(input: Arc<dyn ExecutionPlan>, committed: Committed) -> Self {
        Self {
            input,
            committed,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for CommittedExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IcebergCommittedExec")
    }
}

impl ExecutionPlan for CommittedExec {
    fn name(&self) -> &str {
        "IcebergCommittedExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
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

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        match <[_; 1]>::try_from(children) {
            Ok([input]) => Ok(Arc::new(Self {
                input,
                committed: Arc::clone(&self.committed),
                metrics: self.metrics.clone(),
            })),
            Err(_) => Err(DataFusionError::Internal(
                "IcebergCommittedExec has one child".into(),
            )),
        }
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let late = MetricBuilder::new(&self.metrics).global_counter("errors_after_commit");
        Ok(answered_by_commit(input, Arc::clone(&self.committed), late))
    }
}

/// `input` (a statement's answer) ending at its first error once `committed` is set, with the
/// commit's answer when `input` had not given it yet; `late` counts those errors.
pub(super) fn answered_by_commit(
    input: SendableRecordBatchStream,
    committed: Committed,
    late: Count,
) -> SendableRecordBatchStream {
    let schema = input.schema();
    // (input, whether a row was answered); `None` once ended.
    let state = Some((input, false));
    let rows = futures::stream::unfold(state, move |state| {
        let (committed, late) = (Arc::clone(&committed), late.clone());
        async move {
            let (mut input, answered) = state?;
            match input.next().await {
                Some(Ok(batch)) => {
                    let answered = answered || batch.num_rows() > 0;
                    Some((Ok(batch), Some((input, answered))))
                }
                Some(Err(e)) => match committed.get() {
                    None => Some((Err(e), None)),
                    Some(count) => {
                        late.add(1);
                        match answered {
                            true => None,
                            false => Some((count_batch(*count), None)),
                        }
                    }
                },
                None => None,
            }
        }
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, rows))
}
