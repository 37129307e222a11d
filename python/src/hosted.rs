//! icefloe's providers as they must behave inside a foreign host (datafusion-python).
//!
//! Over the FFI the host hands a provider a `ForeignSession`: the host's configuration with a
//! fresh, empty `RuntimeEnv` on every call, and at execution a task context with another fresh
//! one. icefloe registers the object stores it builds (`s3://`, `gs://`, ...) in the runtime
//! it is given and DataFusion's file scan looks its store up there when it executes, so a
//! cloud table would plan and then fail to find its store. And the host polls the futures of
//! `scan`, `insert_into` and `SchemaProvider::table` on its own executor, outside this
//! library's tokio runtime, where reqwest (the cloud stores, the REST catalog) finds no
//! reactor. Nor does the FFI carry a plan's requirements (one input partition, an ordering), so
//! the host's optimizer cannot honour an INSERT sink's. The wrappers here close these gaps:
//!
//! - [`HostedTable`] plans with a [`HostedSession`] (the host's session, icefloe's runtime
//!   environment: the table's stores and its Parquet footer cache) and returns
//!   [`OwnRuntimeExec`], which executes the scan with that environment and splits it across
//!   the host's partitions when the host asks, as DataFusion splits a native scan;
//! - an INSERT's sink ([`HostedSinkExec`]) reads every partition of whatever input the host
//!   gives it, in the table's sort order;
//! - [`HostedCatalog`] and [`HostedSchema`] hand out hosted schemas and tables;
//! - [`OnRuntime`] polls a future inside this library's runtime.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{CatalogProvider, SchemaProvider, Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Constraints, DFSchema, Statistics};
use datafusion::config::{ConfigOptions, TableOptions};
use datafusion::datasource::TableType;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::config::SessionConfig;
use datafusion::execution::context::{QueryPlanner, TaskContext};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::execution_props::ExecutionProps;
use datafusion::logical_expr::registry::ExtensionTypeRegistryRef;
use datafusion::logical_expr::{
    AggregateUDF, Expr, HigherOrderUDF, LogicalPlan, ScalarUDF, TableProviderFilterPushDown,
    WindowUDF,
};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::{EquivalenceProperties, Partitioning};
use datafusion::physical_plan::execution_plan::{
    Boundedness, ChildrenPropertiesMode, EmissionType, ReplaceChildrenOptions,
};
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
    SendableRecordBatchStream,
};

use icefloe::write::sink_input;

use crate::runtime;

/// A future polled inside this library's tokio runtime (entered on every poll), so that the
/// IO it starts registers with a reactor that runs, whichever executor polls it.
pub(crate) struct OnRuntime<F>(F);

impl<F: Future + Unpin> Future for OnRuntime<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _entered = runtime().enter();
        Pin::new(&mut self.0).poll(cx)
    }
}

/// `future` polled inside this library's runtime ([`OnRuntime`]).
pub(crate) fn on_runtime<'a, T>(
    future: Pin<Box<dyn Future<Output = T> + Send + 'a>>,
) -> OnRuntime<Pin<Box<dyn Future<Output = T> + Send + 'a>>> {
    OnRuntime(future)
}

/// The host's session with icefloe's runtime environment (see the module docs). Everything
/// else (configuration, functions, the physical planner) is the host's.
pub(crate) struct HostedSession<'a> {
    host: &'a dyn Session,
    env: Arc<RuntimeEnv>,
    table_options: TableOptions,
}

impl<'a> HostedSession<'a> {
    pub(crate) fn new(host: &'a dyn Session, env: &Arc<RuntimeEnv>) -> Self {
        Self {
            host,
            env: Arc::clone(env),
            table_options: host.table_options().clone(),
        }
    }
}

#[async_trait]
impl Session for HostedSession<'_> {
    fn session_id(&self) -> &str {
        self.host.session_id()
    }

    fn config(&self) -> &SessionConfig {
        self.host.config()
    }

    fn catalog_list(&self) -> Arc<dyn datafusion::catalog::CatalogProviderList> {
        self.host.catalog_list()
    }

    fn config_options(&self) -> &ConfigOptions {
        self.host.config_options()
    }

    fn query_planner(&self) -> Arc<dyn QueryPlanner + Send + Sync> {
        self.host.query_planner()
    }

    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        self.host.create_physical_plan(logical_plan).await
    }

    fn create_physical_expr(
        &self,
        expr: Expr,
        df_schema: &DFSchema,
    ) -> DFResult<Arc<dyn PhysicalExpr>> {
        self.host.create_physical_expr(expr, df_schema)
    }

    fn scalar_functions(&self) -> &HashMap<String, Arc<ScalarUDF>> {
        self.host.scalar_functions()
    }

    fn higher_order_functions(&self) -> &HashMap<String, Arc<HigherOrderUDF>> {
        self.host.higher_order_functions()
    }

    fn aggregate_functions(&self) -> &HashMap<String, Arc<AggregateUDF>> {
        self.host.aggregate_functions()
    }

    fn window_functions(&self) -> &HashMap<String, Arc<WindowUDF>> {
        self.host.window_functions()
    }

    fn extension_type_registry(&self) -> &ExtensionTypeRegistryRef {
        self.host.extension_type_registry()
    }

    fn runtime_env(&self) -> &Arc<RuntimeEnv> {
        &self.env
    }

    fn execution_props(&self) -> &ExecutionProps {
        self.host.execution_props()
    }

    /// The host session's: code that looks for a native `SessionState` finds none, as before.
    fn as_any(&self) -> &dyn Any {
        self.host.as_any()
    }

    fn table_options(&self) -> &TableOptions {
        &self.table_options
    }

    fn table_options_mut(&mut self) -> &mut TableOptions {
        &mut self.table_options
    }

    fn task_ctx(&self) -> Arc<TaskContext> {
        Arc::new(TaskContext::from(self as &dyn Session))
    }
}

/// An icefloe table provider that plans and scans with icefloe's runtime environment `env`
/// (the one its `FileIO` registers stores in) and runs its async work on this library's
/// runtime (see the module docs).
#[derive(Debug)]
pub(crate) struct HostedTable {
    inner: Arc<dyn TableProvider>,
    env: Arc<RuntimeEnv>,
}

impl HostedTable {
    pub(crate) fn new(inner: Arc<dyn TableProvider>, env: &Arc<RuntimeEnv>) -> Self {
        Self {
            inner,
            env: Arc::clone(env),
        }
    }
}

#[async_trait]
impl TableProvider for HostedTable {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn constraints(&self) -> Option<&Constraints> {
        self.inner.constraints()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    fn get_column_default(&self, column: &str) -> Option<&Expr> {
        self.inner.get_column_default(column)
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DFResult<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    fn statistics(&self) -> Option<Statistics> {
        self.inner.statistics()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let session = HostedSession::new(state, &self.env);
        let plan = on_runtime(self.inner.scan(&session, projection, filters, limit)).await?;
        Ok(Arc::new(OwnRuntimeExec::new(plan, &self.env)))
    }

    /// The input is the host's plan, which the host optimizes and executes: planned on this
    /// library's runtime, the write is returned as a [`HostedSinkExec`].
    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let session = HostedSession::new(state, &self.env);
        let input = merged(input);
        let sink = on_runtime(self.inner.insert_into(&session, input, insert_op)).await?;
        Ok(Arc::new(HostedSinkExec { sink }))
    }
}

/// An INSERT's sink as the host sees it. The host optimizes the sink's input after
/// `insert_into` without knowing the sink's requirements (the FFI carries none): it may put a
/// repartition between the sink and its input, and DataFusion's `DataSinkExec` reads
/// partition 0 alone. Whenever the host gives the sink a new input, it is made one partition
/// again ([`merged`]), sorted when the table has a sort order.
#[derive(Debug)]
pub(crate) struct HostedSinkExec {
    sink: Arc<dyn ExecutionPlan>,
}

impl DisplayAs for HostedSinkExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.sink.fmt_as(t, f)
    }
}

impl ExecutionPlan for HostedSinkExec {
    fn name(&self) -> &str {
        self.sink.name()
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.sink.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.sink.children()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DFResult<TreeNodeRecursion>,
    ) -> DFResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        if let Some(data_sink) = self.sink.downcast_ref::<DataSinkExec>()
            && children.len() == 1
        {
            let input = merged(children.swap_remove(0));
            // One partition now: sorting it spawns no task that polls the host's streams.
            children = vec![sink_input(input, data_sink.sort_order().as_ref())?];
        }
        let recompute = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute);
        let sink = Arc::clone(&self.sink).replace_children(children, recompute)?;
        Ok(Arc::new(Self { sink }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        self.sink.execute(partition, context)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        self.sink.metrics()
    }
}

/// An icefloe scan plan executed with icefloe's runtime environment. A leaf to the host: the
/// host's optimizer cannot reach below it and put its own operators (which would execute with
/// the host's environment) between icefloe's.
#[derive(Debug)]
pub(crate) struct OwnRuntimeExec {
    inner: Arc<dyn ExecutionPlan>,
    env: Arc<RuntimeEnv>,
}

impl OwnRuntimeExec {
    fn new(inner: Arc<dyn ExecutionPlan>, env: &Arc<RuntimeEnv>) -> Self {
        Self {
            inner,
            env: Arc::clone(env),
        }
    }
}

impl DisplayAs for OwnRuntimeExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.fmt_as(t, f)
    }
}

impl ExecutionPlan for OwnRuntimeExec {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.inner.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
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
            false => Err(DataFusionError::Internal(format!(
                "{} is a leaf, given {} children",
                self.name(),
                children.len()
            ))),
        }
    }

    /// The scan split across `target_partitions` as DataFusion's optimizer splits a native
    /// one (by files and byte ranges): the host asks, and the split plan keeps this wrapper.
    fn repartitioned(
        &self,
        target_partitions: usize,
        config: &ConfigOptions,
    ) -> DFResult<Option<Arc<dyn ExecutionPlan>>> {
        let split = self.inner.repartitioned(target_partitions, config)?;
        Ok(split.map(|inner| Arc::new(Self::new(inner, &self.env)) as _))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        let env = Arc::clone(&self.env);
        // The FFI hands each call a context of its own: take it over rather than copy the
        // host's function registry once more.
        let own = match Arc::try_unwrap(context) {
            Ok(context) => context.with_runtime(env),
            Err(shared) => TaskContext::new(
                shared.task_id(),
                shared.session_id(),
                shared.session_config().clone(),
                shared.scalar_functions().clone(),
                shared.higher_order_functions().clone(),
                shared.aggregate_functions().clone(),
                shared.window_functions().clone(),
                env,
            ),
        };
        self.inner.execute(partition, Arc::new(own))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        self.inner.metrics()
    }

    fn partition_statistics(&self, partition: Option<usize>) -> DFResult<Arc<Statistics>> {
        // DataFusion 55 still asks this (its replacement computes from children, which a
        // leaf hides).
        #[allow(deprecated)]
        self.inner.partition_statistics(partition)
    }
}

/// A catalog whose schemas are [`HostedSchema`]s.
#[derive(Debug)]
pub(crate) struct HostedCatalog {
    inner: Arc<dyn CatalogProvider>,
    env: Arc<RuntimeEnv>,
}

impl HostedCatalog {
    pub(crate) fn new(inner: Arc<dyn CatalogProvider>, env: &Arc<RuntimeEnv>) -> Self {
        Self {
            inner,
            env: Arc::clone(env),
        }
    }
}

impl CatalogProvider for HostedCatalog {
    fn schema_names(&self) -> Vec<String> {
        self.inner.schema_names()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        let schema = self.inner.schema(name)?;
        Some(Arc::new(HostedSchema {
            inner: schema,
            env: Arc::clone(&self.env),
        }))
    }

    fn register_schema(
        &self,
        name: &str,
        schema: Arc<dyn SchemaProvider>,
    ) -> DFResult<Option<Arc<dyn SchemaProvider>>> {
        self.inner.register_schema(name, schema)
    }

    fn deregister_schema(
        &self,
        name: &str,
        cascade: bool,
    ) -> DFResult<Option<Arc<dyn SchemaProvider>>> {
        self.inner.deregister_schema(name, cascade)
    }
}

/// A schema whose tables are [`HostedTable`]s.
#[derive(Debug)]
pub(crate) struct HostedSchema {
    inner: Arc<dyn SchemaProvider>,
    env: Arc<RuntimeEnv>,
}

#[async_trait]
impl SchemaProvider for HostedSchema {
    fn owner_name(&self) -> Option<&str> {
        self.inner.owner_name()
    }

    fn table_names(&self) -> Vec<String> {
        self.inner.table_names()
    }

    async fn table(&self, name: &str) -> DFResult<Option<Arc<dyn TableProvider>>> {
        let table = on_runtime(self.inner.table(name)).await?;
        Ok(table.map(|t| Arc::new(HostedTable::new(t, &self.env)) as _))
    }

    async fn table_type(&self, name: &str) -> DFResult<Option<TableType>> {
        on_runtime(self.inner.table_type(name)).await
    }

    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> DFResult<Option<Arc<dyn TableProvider>>> {
        self.inner.register_table(name, table)
    }

    fn deregister_table(&self, name: &str) -> DFResult<Option<Arc<dyn TableProvider>>> {
        self.inner.deregister_table(name)
    }

    fn table_exist(&self, name: &str) -> bool {
        self.inner.table_exist(name)
    }
}

/// `input`'s partitions as one ([`MergedExec`]); `input` itself when it has one.
fn merged(input: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    match input.output_partitioning().partition_count() {
        0 | 1 => input,
        _ => Arc::new(MergedExec::new(input)),
    }
}

/// The partitions of the host's plan `input` as one, polled in the task that polls this plan.
/// DataFusion's `CoalescePartitionsExec` would poll each partition in a task spawned on this
/// library's runtime, where the host's operators find no runtime of theirs (datafusion-python
/// links its own tokio) and panic as they spawn their own tasks; polled here, they run on the
/// host's threads, as the host polls the sink.
#[derive(Debug)]
pub(crate) struct MergedExec {
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
}

impl MergedExec {
    fn new(input: Arc<dyn ExecutionPlan>) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(input.schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Self {
            input,
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for MergedExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "MergedExec")
    }
}

impl ExecutionPlan for MergedExec {
    fn name(&self) -> &str {
        "MergedExec"
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

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        match children.len() {
            1 => Ok(Arc::new(Self::new(children.swap_remove(0)))),
            n => Err(DataFusionError::Internal(format!(
                "MergedExec takes one child, given {n}"
            ))),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "MergedExec has one partition, asked for {partition}"
            )));
        }
        let partitions = self.input.output_partitioning().partition_count();
        let streams = (0..partitions)
            .map(|i| self.input.execute(i, Arc::clone(&context)))
            .collect::<DFResult<Vec<_>>>()?;
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.input.schema(),
            futures::stream::select_all(streams),
        )))
    }
}
