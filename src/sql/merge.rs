//! `MERGE INTO` an Iceberg table, planned as a join (see [`super::dml`] for the approach).
//!
//! ```text
//! MERGE INTO t USING s ON <on>
//!   WHEN MATCHED [AND p1] THEN UPDATE SET ... | DELETE
//!   WHEN NOT MATCHED [AND p2] THEN INSERT ...
//!   WHEN NOT MATCHED BY SOURCE [AND p3] THEN UPDATE SET ... | DELETE
//! ```
//!
//! becomes: the target's scan with row identities (`_file`, `_pos`) joined with the source
//! (marked by a constant column) on `<on>` (inner, left, right or full, as the clauses need);
//! for each joined row the first clause whose kind and condition hold (a `CASE` in clause
//! order: first-matching-clause semantics); rows no clause takes are dropped; then each
//! table column's new value under that clause, the target row's identity and the action
//! (update, delete, insert). [`crate::dml::RowChangeSink`] deletes the identified rows and
//! writes the new ones; a target row acted on by more than one source row is an error.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, JoinType, ScalarValue};
use datafusion::datasource::{TableProvider, provider_as_source};
use datafusion::error::Result as DFResult;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::expr::Case;
use datafusion::logical_expr::{
    DmlStatement, Expr, LogicalPlan, LogicalPlanBuilder, MergeIntoAction, MergeIntoClause,
    MergeIntoClauseKind, WriteOp, cast, lit,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::optimizer::analyzer::type_coercion::TypeCoercion;

use super::dml::{RowChangeTarget, iceberg_provider};
use crate::dml::{ACTION_DELETE, ACTION_INSERT, ACTION_UPDATE, RowChangeKind};
use crate::scan::{FILE_COLUMN, POS_COLUMN};

/// The source's presence marker: TRUE on every source row, NULL where the join found none.
const SOURCE_MARKER: &str = "__icefloe_source_row";
/// The index of the clause that takes a joined row.
const CLAUSE: &str = "__icefloe_clause";
/// The action column the sink reads (see [`crate::dml::ACTION_UPDATE`] and the others).
pub(crate) const ACTION: &str = "__icefloe_action";

/// Rewrites a MERGE into an Iceberg table (other targets are left to DataFusion).
pub(super) fn rewrite(
    dml: DmlStatement,
    config: &ConfigOptions,
) -> DFResult<Transformed<LogicalPlan>> {
    let WriteOp::MergeInto(op) = &dml.op else {
        return Ok(Transformed::no(LogicalPlan::Dml(dml)));
    };
    let Some(provider) = iceberg_provider(&dml) else {
        return Ok(Transformed::no(LogicalPlan::Dml(dml)));
    };
    let scanned = Arc::new(provider.with_row_ids()?);
    let table = dml.table_name.clone();
    let target = LogicalPlanBuilder::scan(
        table.clone(),
        provider_as_source(Arc::clone(&scanned) as _),
        None,
    )?
    .build()?;
    let target_column = |name: &str| Expr::Column(Column::new(Some(table.clone()), name));
    // The source, with its marker.
    let source = dml.input.as_ref().clone();
    let mut source_columns: Vec<Expr> = source
        .schema()
        .iter()
        .map(|(qualifier, field)| Expr::Column(Column::from((qualifier, field))))
        .collect();
    source_columns.push(lit(true).alias(SOURCE_MARKER));
    let source = LogicalPlanBuilder::from(source)
        .project(source_columns)?
        .build()?;
    let clauses = &op.clauses;
    let by_target = clauses.iter().any(|c| c.kind.is_not_matched_by_target());
    let by_source = clauses
        .iter()
        .any(|c| c.kind == MergeIntoClauseKind::NotMatchedBySource);
    let join_type = match (by_target, by_source) {
        (true, true) => JoinType::Full,
        (true, false) => JoinType::Right,
        (false, true) => JoinType::Left,
        (false, false) => JoinType::Inner,
    };
    let joined = LogicalPlanBuilder::from(target)
        .join_on(source, join_type, vec![op.on.clone()])?
        .build()?;
    // The first clause whose kind and condition hold.
    let target_present = target_column(POS_COLUMN).is_not_null();
    let target_absent = target_column(POS_COLUMN).is_null();
    let marker = || Expr::Column(Column::new_unqualified(SOURCE_MARKER));
    let source_present = marker().is_not_null();
    let source_absent = marker().is_null();
    let when_then = clauses
        .iter()
        .enumerate()
        .map(|(i, clause)| {
            let kind = match clause.kind {
                MergeIntoClauseKind::Matched => target_present.clone().and(source_present.clone()),
                MergeIntoClauseKind::NotMatchedBySource => {
                    target_present.clone().and(source_absent.clone())
                }
                _ => source_present.clone().and(target_absent.clone()),
            };
            let condition = match &clause.predicate {
                Some(p) => kind.and(p.clone()),
                None => kind,
            };
            (Box::new(condition), Box::new(lit(i as i32)))
        })
        .collect();
    let chosen = Expr::Case(Case::new(None, when_then, None)).alias(CLAUSE);
    let mut with_clause: Vec<Expr> = joined
        .schema()
        .iter()
        .map(|(qualifier, field)| Expr::Column(Column::from((qualifier, field))))
        .collect();
    with_clause.push(chosen);
    let clause_column = || Expr::Column(Column::new_unqualified(CLAUSE));
    let taken = LogicalPlanBuilder::from(joined)
        .project(with_clause)?
        .filter(clause_column().is_not_null())?
        .build()?;
    // Each table column's value under the chosen clause, the identity, the action.
    let table_schema = provider.schema();
    let table_columns: Vec<String> = table_schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let mut values = Vec::with_capacity(table_schema.fields().len() + 3);
    for field in table_schema.fields() {
        let mut when_then = Vec::new();
        for (i, clause) in clauses.iter().enumerate() {
            let Some(value) = clause_value(clause, field.name(), &table_columns, &target_column)
            else {
                continue;
            };
            when_then.push((
                Box::new(lit(i as i32)),
                Box::new(cast(value, field.data_type().clone())),
            ));
        }
        let value = match when_then.is_empty() {
            true => cast(lit(ScalarValue::Null), field.data_type().clone()),
            false => Expr::Case(Case::new(Some(Box::new(clause_column())), when_then, None)),
        };
        values.push(value.alias(field.name()));
    }
    values.push(target_column(FILE_COLUMN).alias(FILE_COLUMN));
    values.push(target_column(POS_COLUMN).alias(POS_COLUMN));
    let actions = clauses
        .iter()
        .enumerate()
        .map(|(i, clause)| {
            let action = match clause.action {
                MergeIntoAction::Update(_) => ACTION_UPDATE,
                MergeIntoAction::Delete => ACTION_DELETE,
                MergeIntoAction::Insert { .. } => ACTION_INSERT,
            };
            (Box::new(lit(i as i32)), Box::new(lit(action)))
        })
        .collect();
    values
        .push(Expr::Case(Case::new(Some(Box::new(clause_column())), actions, None)).alias(ACTION));
    let input = LogicalPlanBuilder::from(taken).project(values)?.build()?;
    // The expressions built here are typed as DataFusion's analyzer would type them.
    let input = TypeCoercion::new().analyze(input, config)?;
    let schema = Arc::new(input.schema().as_arrow().clone());
    let target = RowChangeTarget {
        kind: RowChangeKind::Merge,
        provider: Arc::new(provider),
        scanned,
        condition: None,
        schema,
    };
    Ok(Transformed::yes(LogicalPlan::Dml(DmlStatement::new(
        dml.table_name,
        provider_as_source(Arc::new(target)),
        WriteOp::Insert(InsertOp::Append),
        Arc::new(input),
    ))))
}

/// The value a clause gives column `name`: an UPDATE's assignment (the target's own value
/// when unassigned), an INSERT's value (NULL when the column is not listed); `None` for
/// DELETE.
fn clause_value(
    clause: &MergeIntoClause,
    name: &str,
    table_columns: &[String],
    target_column: &dyn Fn(&str) -> Expr,
) -> Option<Expr> {
    match &clause.action {
        MergeIntoAction::Delete => None,
        MergeIntoAction::Update(assignments) => Some(
            assignments
                .iter()
                .find(|(column, _)| column == name)
                .map_or_else(|| target_column(name), |(_, value)| value.clone()),
        ),
        MergeIntoAction::Insert { columns, values } => {
            // Without a column list the values are the table's columns, in order.
            let position = match columns.is_empty() {
                true => table_columns.iter().position(|c| c == name),
                false => columns.iter().position(|c| c == name),
            };
            Some(match position.and_then(|p| values.get(p)) {
                Some(value) => value.clone(),
                None => lit(ScalarValue::Null),
            })
        }
    }
}
