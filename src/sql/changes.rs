//! Row-level changes from Rust, for embedders who do not write SQL: the statements of
//! [`super::dml`] built from DataFusion expressions and planned the same way.
//!
//! ```no_run
//! # async fn example(ctx: datafusion::prelude::SessionContext) -> datafusion::error::Result<()> {
//! use datafusion::prelude::{col, lit};
//! use icefloe::sql::TableChanges;
//!
//! let orders = TableChanges::of(&ctx, "db.orders").await?;
//! let deleted = orders.delete().filter(col("amount").lt(lit(0))).execute().await?;
//! let updated = orders
//!     .update()
//!     .set("status", lit("late"))
//!     .filter(col("days").gt(lit(30)))
//!     .execute()
//!     .await?;
//! let source = ctx.table("staging.orders").await?;
//! let merged = orders
//!     .merge(source)
//!     .on(col("target.order_id").eq(col("source.order_id")))
//!     .when_matched_update([("amount", col("source.amount"))])
//!     .when_not_matched_insert([
//!         ("order_id", col("source.order_id")),
//!         ("amount", col("source.amount")),
//!     ])
//!     .execute()
//!     .await?;
//! println!("{} deleted, {} updated, {} merged", deleted.rows_deleted, updated.rows_updated,
//!          merged.rows_inserted + merged.rows_updated);
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DataFusionError, TableReference};
use datafusion::dataframe::DataFrame;
use datafusion::datasource::{MemTable, provider_as_source};
use datafusion::error::Result as DFResult;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{
    DmlStatement, Expr, LogicalPlan, LogicalPlanBuilder, MergeIntoAction, MergeIntoClause,
    MergeIntoClauseKind, MergeIntoOp, WriteOp, cast,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::physical_plan::{ExecutionPlan, collect};
use datafusion::prelude::SessionContext;

use super::RowLevelChanges;
use crate::provider::IcebergTableProvider;
use crate::scan::plan_metric;

/// What a row-level change did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChangeMetrics {
    /// Rows deleted.
    pub rows_deleted: u64,
    /// Rows updated.
    pub rows_updated: u64,
    /// Rows inserted (MERGE, overwrite).
    pub rows_inserted: u64,
    /// Data files written (new rows and copy-on-write rewrites).
    pub data_files_added: u64,
    /// Data files removed.
    pub data_files_removed: u64,
    /// Delete files written (merge-on-read).
    pub delete_files_added: u64,
    /// Bytes of the data files written.
    pub bytes_written: u64,
}

/// Row-level changes of one Iceberg table of a session (see the module docs).
#[derive(Clone)]
pub struct TableChanges {
    ctx: SessionContext,
    name: TableReference,
    provider: Arc<dyn TableProvider>,
}

impl std::fmt::Debug for TableChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableChanges")
            .field("table", &self.name)
            .finish_non_exhaustive()
    }
}

impl TableChanges {
    /// The changes of the table `table` (as SQL names it: `db.orders`, `orders.branch_dev`)
    /// of `ctx`. Errors: an unknown table, or one that is not an Iceberg table.
    pub async fn of(ctx: &SessionContext, table: &str) -> DFResult<Self> {
        let name = TableReference::from(table);
        let provider = ctx.table_provider(name.clone()).await?;
        if provider.downcast_ref::<IcebergTableProvider>().is_none() {
            return Err(DataFusionError::Plan(format!(
                "{table} is not an Iceberg table"
            )));
        }
        Ok(Self {
            ctx: ctx.clone(),
            name,
            provider,
        })
    }

    /// A DELETE (of every row, without a filter).
    pub fn delete(&self) -> Delete<'_> {
        Delete {
            changes: self,
            filter: None,
        }
    }

    /// An UPDATE.
    pub fn update(&self) -> Update<'_> {
        Update {
            changes: self,
            assignments: Vec::new(),
            filter: None,
        }
    }

    /// A MERGE of `source` into the table: in its expressions, `target.<column>` is the table's
    /// row and `source.<column>` the source's.
    pub fn merge(&self, source: DataFrame) -> Merge<'_> {
        Merge {
            changes: self,
            source,
            on: None,
            clauses: Vec::new(),
        }
    }

    /// Replaces every row of the table (its branch) by `batches`, in one commit (static
    /// `INSERT OVERWRITE`; the session's `icefloe.overwrite_mode = 'dynamic'` replaces only
    /// the partitions written).
    pub async fn overwrite(&self, batches: Vec<RecordBatch>) -> DFResult<ChangeMetrics> {
        let schema = self.provider.schema();
        let rows = MemTable::try_new(Arc::clone(&schema), vec![batches])?;
        let input =
            LogicalPlanBuilder::scan("rows", provider_as_source(Arc::new(rows)), None)?.build()?;
        let plan = LogicalPlan::Dml(DmlStatement::new(
            self.name.clone(),
            provider_as_source(Arc::clone(&self.provider)),
            WriteOp::Insert(InsertOp::Overwrite),
            Arc::new(input),
        ));
        self.execute(plan).await
    }

    /// Removes every row (TRUNCATE), from metadata alone.
    pub async fn truncate(&self) -> DFResult<ChangeMetrics> {
        let input = LogicalPlanBuilder::empty(false).build()?;
        let plan = LogicalPlan::Dml(DmlStatement::new(
            self.name.clone(),
            provider_as_source(Arc::clone(&self.provider)),
            WriteOp::Truncate,
            Arc::new(input),
        ));
        self.execute(plan).await
    }

    fn scan(&self) -> DFResult<LogicalPlanBuilder> {
        LogicalPlanBuilder::scan(
            self.name.clone(),
            provider_as_source(Arc::clone(&self.provider)),
            None,
        )
    }

    fn dml(&self, op: WriteOp, input: LogicalPlan) -> LogicalPlan {
        LogicalPlan::Dml(DmlStatement::new(
            self.name.clone(),
            provider_as_source(Arc::clone(&self.provider)),
            op,
            Arc::new(input),
        ))
    }

    /// Plans `plan` as SQL would (the row-level rule applied whether or not the session has
    /// it), runs it, and reads what it did from the plan's metrics.
    async fn execute(&self, plan: LogicalPlan) -> DFResult<ChangeMetrics> {
        let state = self.ctx.state();
        let plan = RowLevelChanges.analyze(plan, state.config_options())?;
        let physical = state.create_physical_plan(&plan).await?;
        collect(Arc::clone(&physical), self.ctx.task_ctx()).await?;
        Ok(metrics_of(&physical))
    }
}

/// `earlier AND filter` (`filter` alone when there is no earlier one).
fn and(earlier: Option<Expr>, filter: Expr) -> Expr {
    match earlier {
        Some(f) => f.and(filter),
        None => filter,
    }
}

fn metrics_of(plan: &Arc<dyn ExecutionPlan>) -> ChangeMetrics {
    let get = |name: &str| plan_metric(plan, name).unwrap_or(0) as u64;
    ChangeMetrics {
        rows_deleted: get("rows_deleted"),
        rows_updated: get("rows_updated"),
        rows_inserted: get("rows_inserted"),
        data_files_added: get("data_files_written"),
        data_files_removed: get("data_files_removed"),
        delete_files_added: get("delete_files_written"),
        bytes_written: get("bytes_written"),
    }
}

/// A DELETE being built ([`TableChanges::delete`]).
#[derive(Debug)]
pub struct Delete<'a> {
    changes: &'a TableChanges,
    filter: Option<Expr>,
}

impl Delete<'_> {
    /// Deletes only the rows `filter` holds for (ANDed with earlier filters).
    pub fn filter(mut self, filter: Expr) -> Self {
        self.filter = Some(and(self.filter.take(), filter));
        self
    }

    /// Commits the DELETE.
    pub async fn execute(self) -> DFResult<ChangeMetrics> {
        let mut scan = self.changes.scan()?;
        if let Some(filter) = self.filter {
            scan = scan.filter(filter)?;
        }
        let plan = self.changes.dml(WriteOp::Delete, scan.build()?);
        self.changes.execute(plan).await
    }
}

/// An UPDATE being built ([`TableChanges::update`]).
#[derive(Debug)]
pub struct Update<'a> {
    changes: &'a TableChanges,
    assignments: Vec<(String, Expr)>,
    filter: Option<Expr>,
}

impl Update<'_> {
    /// Sets `column` to `value` (an expression over the row's columns).
    pub fn set(mut self, column: impl Into<String>, value: Expr) -> Self {
        self.assignments.push((column.into(), value));
        self
    }

    /// Updates only the rows `filter` holds for (ANDed with earlier filters).
    pub fn filter(mut self, filter: Expr) -> Self {
        self.filter = Some(and(self.filter.take(), filter));
        self
    }

    /// Commits the UPDATE. Errors: a column the table does not have.
    pub async fn execute(self) -> DFResult<ChangeMetrics> {
        let schema = self.changes.provider.schema();
        for (column, _) in &self.assignments {
            schema.field_with_name(column)?;
        }
        let mut scan = self.changes.scan()?;
        if let Some(filter) = self.filter {
            scan = scan.filter(filter)?;
        }
        let values: Vec<Expr> = schema
            .fields()
            .iter()
            .map(|field| {
                let value = self
                    .assignments
                    .iter()
                    .rev()
                    .find(|(column, _)| column == field.name())
                    .map(|(_, value)| cast(value.clone(), field.data_type().clone()))
                    .unwrap_or_else(|| {
                        Expr::Column(Column::new(Some(self.changes.name.clone()), field.name()))
                    });
                value.alias(field.name())
            })
            .collect();
        let input = scan.project(values)?.build()?;
        let plan = self.changes.dml(WriteOp::Update, input);
        self.changes.execute(plan).await
    }
}

/// A MERGE being built ([`TableChanges::merge`]): clauses are tried in the order added, the
/// first whose kind and condition hold acts.
#[derive(Debug)]
pub struct Merge<'a> {
    changes: &'a TableChanges,
    source: DataFrame,
    on: Option<Expr>,
    clauses: Vec<MergeIntoClause>,
}

impl Merge<'_> {
    /// The join condition (required).
    pub fn on(mut self, on: Expr) -> Self {
        self.on = Some(on);
        self
    }

    fn clause(
        mut self,
        kind: MergeIntoClauseKind,
        predicate: Option<Expr>,
        action: MergeIntoAction,
    ) -> Self {
        self.clauses.push(MergeIntoClause {
            kind,
            predicate,
            action,
        });
        self
    }

    fn assignments<S: Into<String>>(
        values: impl IntoIterator<Item = (S, Expr)>,
    ) -> Vec<(String, Expr)> {
        values.into_iter().map(|(c, e)| (c.into(), e)).collect()
    }

    /// `WHEN MATCHED THEN UPDATE SET ...`.
    pub fn when_matched_update<S: Into<String>>(
        self,
        set: impl IntoIterator<Item = (S, Expr)>,
    ) -> Self {
        let action = MergeIntoAction::Update(Self::assignments(set));
        self.clause(MergeIntoClauseKind::Matched, None, action)
    }

    /// `WHEN MATCHED AND condition THEN UPDATE SET ...`.
    pub fn when_matched_and_update<S: Into<String>>(
        self,
        condition: Expr,
        set: impl IntoIterator<Item = (S, Expr)>,
    ) -> Self {
        let action = MergeIntoAction::Update(Self::assignments(set));
        self.clause(MergeIntoClauseKind::Matched, Some(condition), action)
    }

    /// `WHEN MATCHED [AND condition] THEN DELETE`.
    pub fn when_matched_delete(self, condition: Option<Expr>) -> Self {
        self.clause(
            MergeIntoClauseKind::Matched,
            condition,
            MergeIntoAction::Delete,
        )
    }

    /// `WHEN NOT MATCHED THEN INSERT (columns) VALUES (values)`.
    pub fn when_not_matched_insert<S: Into<String>>(
        self,
        values: impl IntoIterator<Item = (S, Expr)>,
    ) -> Self {
        let (columns, values) = Self::assignments(values).into_iter().unzip();
        let action = MergeIntoAction::Insert { columns, values };
        self.clause(MergeIntoClauseKind::NotMatched, None, action)
    }

    /// `WHEN NOT MATCHED BY SOURCE [AND condition] THEN UPDATE SET ...`.
    pub fn when_not_matched_by_source_update<S: Into<String>>(
        self,
        condition: Option<Expr>,
        set: impl IntoIterator<Item = (S, Expr)>,
    ) -> Self {
        let action = MergeIntoAction::Update(Self::assignments(set));
        self.clause(MergeIntoClauseKind::NotMatchedBySource, condition, action)
    }

    /// `WHEN NOT MATCHED BY SOURCE [AND condition] THEN DELETE`.
    pub fn when_not_matched_by_source_delete(self, condition: Option<Expr>) -> Self {
        let kind = MergeIntoClauseKind::NotMatchedBySource;
        self.clause(kind, condition, MergeIntoAction::Delete)
    }

    /// Commits the MERGE. Errors: no `on` condition or no clause.
    pub async fn execute(self) -> DFResult<ChangeMetrics> {
        let Some(on) = self.on else {
            return Err(DataFusionError::Plan("MERGE needs an ON condition".into()));
        };
        if self.clauses.is_empty() {
            return Err(DataFusionError::Plan(
                "MERGE needs at least one clause".into(),
            ));
        }
        let table = self.changes.name.clone();
        let target = |e: Expr| -> DFResult<Expr> {
            e.transform(|e| match e {
                Expr::Column(c) if c.relation.as_ref().is_some_and(|r| r.table() == "target") => {
                    Ok(Transformed::yes(Expr::Column(Column::new(
                        Some(table.clone()),
                        c.name,
                    ))))
                }
                other => Ok(Transformed::no(other)),
            })
            .map(|t| t.data)
        };
        let mut clauses = Vec::with_capacity(self.clauses.len());
        for clause in self.clauses {
            let predicate = clause.predicate.map(&target).transpose()?;
            let action = match clause.action {
                MergeIntoAction::Update(set) => MergeIntoAction::Update(
                    set.into_iter()
                        .map(|(c, e)| Ok((c, target(e)?)))
                        .collect::<DFResult<_>>()?,
                ),
                MergeIntoAction::Insert { columns, values } => MergeIntoAction::Insert {
                    columns,
                    values: values.into_iter().map(&target).collect::<DFResult<_>>()?,
                },
                MergeIntoAction::Delete => MergeIntoAction::Delete,
            };
            clauses.push(MergeIntoClause {
                kind: clause.kind,
                predicate,
                action,
            });
        }
        let source = LogicalPlanBuilder::from(self.source.into_unoptimized_plan())
            .alias("source")?
            .build()?;
        let op = MergeIntoOp {
            on: target(on)?,
            clauses,
        };
        let plan = self.changes.dml(WriteOp::MergeInto(Box::new(op)), source);
        self.changes.execute(plan).await
    }
}

#[cfg(test)]
#[path = "changes_tests.rs"]
mod tests;
