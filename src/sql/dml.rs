//! DELETE and UPDATE on Iceberg tables: [`RowLevelChanges`], the analyzer rule that plans them
//! from the statement's whole input.
//!
//! DataFusion 55 plans `DELETE` / `UPDATE` by calling the table's `delete_from` / `update` with
//! the conditions it could lift out of the statement, and drops the rest: an `IN` or `EXISTS`
//! subquery, or a condition the optimizer folded (apache/datafusion#24654), reaches the table as
//! no condition at all, which reads as "every row". So icefloe never takes those hooks (the
//! provider refuses them). Instead, before the optimizer runs, this rule rewrites each
//! DELETE or UPDATE whose target is an Iceberg table into a plan that *computes* the changed
//! rows:
//!
//! - the target's scan in the statement's input is replaced by a scan of the same table with
//!   row identities (`_file`, `_pos`; `IcebergTableProvider::with_row_ids`), on a fixed
//!   version of the table;
//! - DELETE keeps the input's filter (subqueries included: DataFusion plans them as joins,
//!   correctly) and projects `_file, _pos`; UPDATE keeps its projection of new values and
//!   appends `_file, _pos`;
//! - the statement becomes an insert into a [`RowChangeTarget`], whose `insert_into` receives
//!   the optimized, planned input and returns the [`RowChangeSink`] that applies it.
//!
//! Nothing changes while planning: the sink commits when the plan executes, so
//! `EXPLAIN DELETE ...` changes nothing. (In `EXPLAIN` the statement shows as
//! `Dml: op=[Insert Into]`; its physical plan as `DataSinkExec: sink=IcebergRowChange: ...`.)
//! A DELETE whose condition reads only identity-partition columns, with no subquery, removes
//! whole files from metadata without reading them; one with another whole condition does so
//! for the files whose column metrics prove every row matches, and reads the others.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, TableReference};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::{TableProvider, TableType, provider_as_source, source_as_provider};
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{
    DmlStatement, Expr, LogicalPlan, Projection, TableScan, TableScanBuilder, WriteOp,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;

use crate::dml::{RowChangeKind, RowChangeSink};
use crate::expr::Predicate;
use crate::expr::convert::convert;
use crate::provider::IcebergTableProvider;
use crate::scan::exec::{FILE_COLUMN, POS_COLUMN};

/// The analyzer rule planning DELETE and UPDATE on Iceberg tables (see the module docs);
/// [`super::register`] adds it.
#[derive(Debug, Default)]
pub struct RowLevelChanges;

impl RowLevelChanges {
    /// The rule's name.
    pub const NAME: &'static str = "icefloe_row_level_changes";
}

impl AnalyzerRule for RowLevelChanges {
    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> DFResult<LogicalPlan> {
        plan.transform_down(|node| match node {
            LogicalPlan::Dml(dml) if matches!(dml.op, WriteOp::MergeInto(_)) => {
                super::merge::rewrite(dml, config)
            }
            LogicalPlan::Dml(dml) => rewrite(dml),
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        Self::NAME
    }
}

fn rewrite(dml: DmlStatement) -> DFResult<Transformed<LogicalPlan>> {
    let kind = match dml.op {
        WriteOp::Delete => RowChangeKind::Delete,
        WriteOp::Update => RowChangeKind::Update,
        _ => return Ok(Transformed::no(LogicalPlan::Dml(dml))),
    };
    let Some(provider) = iceberg_provider(&dml) else {
        return Ok(Transformed::no(LogicalPlan::Dml(dml)));
    };
    let condition = whole_condition(&dml.input, kind);
    let mut scanned = provider.with_row_ids()?;
    if kind == RowChangeKind::Delete
        && let Some(predicate) = exact_predicate(condition.as_ref(), scanned.iceberg_schema())
    {
        // Files whose every row matches go without being read.
        scanned = scanned.dropping_whole_files(predicate);
    }
    let scanned = Arc::new(scanned);
    let input = with_row_ids(dml.input.as_ref().clone(), &dml.table_name, &scanned)?;
    let identity = |input: &LogicalPlan, name: &str| -> DFResult<Expr> {
        let (qualifier, field) = input.schema().qualified_field_with_unqualified_name(name)?;
        Ok(Expr::Column(Column::from((qualifier, field))))
    };
    let input = match (kind, input) {
        (RowChangeKind::Update, LogicalPlan::Projection(projection)) => {
            let mut exprs = projection.expr;
            exprs.push(identity(&projection.input, FILE_COLUMN)?);
            exprs.push(identity(&projection.input, POS_COLUMN)?);
            LogicalPlan::Projection(Projection::try_new(exprs, projection.input)?)
        }
        (RowChangeKind::Update, _) => {
            return Err(DataFusionError::Plan(
                "UPDATE of an Iceberg table: the statement's plan has an unexpected shape \
                 (no projection of new values at its top)"
                    .into(),
            ));
        }
        (_, input) => {
            let exprs = vec![
                identity(&input, FILE_COLUMN)?,
                identity(&input, POS_COLUMN)?,
            ];
            LogicalPlan::Projection(Projection::try_new(exprs, Arc::new(input))?)
        }
    };
    let target = RowChangeTarget {
        kind,
        provider: Arc::new(provider.clone()),
        scanned,
        condition,
        schema: Arc::new(input.schema().as_arrow().clone()),
    };
    Ok(Transformed::yes(LogicalPlan::Dml(DmlStatement::new(
        dml.table_name,
        provider_as_source(Arc::new(target)),
        WriteOp::Insert(InsertOp::Append),
        Arc::new(input),
    ))))
}

/// The Iceberg table a DML statement targets.
pub(super) fn iceberg_provider(dml: &DmlStatement) -> Option<IcebergTableProvider> {
    let provider = source_as_provider(&dml.target).ok()?;
    provider.downcast_ref::<IcebergTableProvider>().cloned()
}

/// The statement's condition when the plan holds it whole: a filter right above the target's
/// scan (under UPDATE's projection), without subqueries.
fn whole_condition(input: &LogicalPlan, kind: RowChangeKind) -> Option<Expr> {
    let below = match (kind, input) {
        (RowChangeKind::Update, LogicalPlan::Projection(p)) => p.input.as_ref(),
        (RowChangeKind::Update, _) => return None,
        (_, plan) => plan,
    };
    let LogicalPlan::Filter(filter) = below else {
        return None;
    };
    let scan = match filter.input.as_ref() {
        LogicalPlan::SubqueryAlias(alias) => alias.input.as_ref(),
        other => other,
    };
    if !matches!(scan, LogicalPlan::TableScan(_)) {
        return None;
    }
    let mut subquery = false;
    let _ = filter.predicate.apply(|e| {
        subquery |= matches!(
            e,
            Expr::Exists(_)
                | Expr::InSubquery(_)
                | Expr::ScalarSubquery(_)
                | Expr::SetComparison(_)
        );
        Ok(TreeNodeRecursion::Continue)
    });
    (!subquery).then(|| unqualified(filter.predicate.clone()))
}

/// `expr` with its columns unqualified (the table's own names).
fn unqualified(expr: Expr) -> Expr {
    expr.transform(|e| match e {
        Expr::Column(c) if c.relation.is_some() => Ok(Transformed::yes(Expr::Column(
            Column::new_unqualified(c.name),
        ))),
        other => Ok(Transformed::no(other)),
    })
    .map_or_else(
        |_| Expr::Literal(datafusion::common::ScalarValue::Boolean(None), None),
        |t| t.data,
    )
}

/// `plan` with the scan of `table` (the statement's own, not those inside subqueries) reading
/// `scanned` (the table with row identities); the schemas above it recomputed.
fn with_row_ids(
    plan: LogicalPlan,
    table: &TableReference,
    scanned: &Arc<IcebergTableProvider>,
) -> DFResult<LogicalPlan> {
    let mut replaced = 0;
    let plan = plan
        .transform_up(|node| match node {
            LogicalPlan::TableScan(scan) if scan.table_name.resolved_eq(table) && replaced == 0 => {
                replaced += 1;
                let TableScan {
                    table_name,
                    filters,
                    fetch,
                    ..
                } = scan;
                let source = provider_as_source(Arc::clone(scanned) as Arc<dyn TableProvider>);
                let scan = TableScanBuilder::new(table_name, source)
                    .with_filters(filters)
                    .with_fetch(fetch)
                    .build()?;
                Ok(Transformed::yes(LogicalPlan::TableScan(scan)))
            }
            other => match replaced {
                0 => Ok(Transformed::no(other)),
                _ => Ok(Transformed::yes(other.recompute_schema()?)),
            },
        })?
        .data;
    if replaced == 0 {
        return Err(DataFusionError::Plan(format!(
            "the statement's input does not scan its target table {table}"
        )));
    }
    Ok(plan)
}

/// `condition` as an Iceberg predicate over `schema` when it converts exactly (every
/// conjunct).
fn exact_predicate(condition: Option<&Expr>, schema: &crate::spec::Schema) -> Option<Predicate> {
    let parts: Option<Vec<Predicate>> = split_conjunction(condition?)
        .into_iter()
        .map(|c| convert(c, schema))
        .collect();
    parts?.into_iter().reduce(Predicate::and)
}

/// The target DataFusion inserts the changed rows of a DELETE or UPDATE into (see the module
/// docs): its `insert_into` returns the [`RowChangeSink`] over the planned input.
pub(super) struct RowChangeTarget {
    pub(super) kind: RowChangeKind,
    /// The table as the statement named it (commits move it on).
    pub(super) provider: Arc<IcebergTableProvider>,
    /// The same table with row identities, on the version the statement reads.
    pub(super) scanned: Arc<IcebergTableProvider>,
    /// The statement's condition, when the plan holds it whole.
    pub(super) condition: Option<Expr>,
    pub(super) schema: SchemaRef,
}

impl fmt::Debug for RowChangeTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowChangeTarget")
            .field("kind", &self.kind)
            .field("condition", &self.condition)
            .finish_non_exhaustive()
    }
}

impl RowChangeTarget {
    /// The condition as an Iceberg predicate when it converts exactly (every conjunct).
    fn predicate(&self) -> Option<Predicate> {
        exact_predicate(self.condition.as_ref(), self.scanned.iceberg_schema())
    }

    /// Whether every conjunct of the condition is decided by the partition tuples (then all
    /// rows of a matching file match).
    fn decided_by_partitions(&self) -> bool {
        self.condition.as_ref().is_some_and(|condition| {
            split_conjunction(condition)
                .into_iter()
                .all(|c| self.scanned.decided_by_partitions(c))
        })
    }
}

#[async_trait]
impl TableProvider for RowChangeTarget {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        Err(DataFusionError::Plan(format!(
            "the target of a {} cannot be read",
            self.kind.statement()
        )))
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        _insert_op: InsertOp,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let table = self.scanned.table();
        let mut change = self.provider.row_change(self.kind, table)?;
        change.condition = self.predicate();
        let mut input = input;
        if self.kind == RowChangeKind::Delete
            && self.decided_by_partitions()
            && let Some(predicate) = change.condition.clone()
        {
            // Every row of the files the condition matches goes: no file is read.
            change.whole_files = self.scanned.plan(predicate).await?.tasks;
            change.whole_partitions = true;
            input = Arc::new(EmptyExec::new(input.schema()));
        } else if let Some(planned) = self.scanned.planned_rows() {
            // The input's scan is planned: files it found matching whole by their metrics go
            // without being read; the others it reads are those the sink may change.
            change.whole_files = planned.whole;
            change.scanned_files = Some(Arc::new(planned.scanned));
        }
        let sink = RowChangeSink::new(change, input.schema());
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}
