//! [`ValuesTypes`]: `INSERT INTO t VALUES (...)` with nested columns.
//!
//! DataFusion 55 types the columns of a `VALUES` list in an `INSERT` by the target table's
//! schema, metadata of nested fields included (an Iceberg table's list elements, map keys and
//! values and struct fields carry their field ids as `PARQUET:field_id`), while the values it
//! computes are plain Arrow arrays without that metadata. Building the `VALUES` batch then fails
//! (`column types must match schema types, expected List(Utf8, field: 'element', metadata:
//! {"PARQUET:field_id": "5"}) but found List(Utf8, field: 'element')`) although the types are
//! the same. The values lose the metadata when the optimizer folds their casts into literals,
//! so this is an optimizer rule, run after DataFusion's own: it gives each `VALUES` column the type of its values when the two
//! differ only in the metadata of nested fields; the insert sink writes the rows with the table's
//! own schema (field ids included) as it does for every other input.
//!
//! Likewise DataFusion declares a `VALUES` column holding a `NULL` non-nullable when the table's
//! column is required, and then fails building the batch with a message naming `column1`. The
//! rule declares such a column nullable, so that the insert sink refuses the row with the
//! column's own name (`column id is required, but 1 inserted row(s) have NULL there`).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::tree_node::{Transformed, TreeNodeRecursion};
use datafusion::common::{DFSchema, ExprSchema};
use datafusion::error::Result as DFResult;
use datafusion::logical_expr::{Cast, Expr, ExprSchemable, LogicalPlan, Values};
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// The optimizer rule (see the module docs); [`super::register`] adds it to a session.
#[derive(Debug, Default, Clone, Copy)]
pub struct ValuesTypes;

impl ValuesTypes {
    /// The rule's name.
    pub const NAME: &'static str = "icefloe_values_types";
}

impl OptimizerRule for ValuesTypes {
    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> DFResult<Transformed<LogicalPlan>> {
        let mut any = false;
        plan.apply_with_subqueries(|node| {
            if let LogicalPlan::Values(values) = node {
                any |= retyped(values)?.is_some();
            }
            Ok(match any {
                true => TreeNodeRecursion::Stop,
                false => TreeNodeRecursion::Continue,
            })
        })?;
        if !any {
            return Ok(Transformed::no(plan));
        }
        // Every node above a retyped VALUES states its schema again from its inputs.
        plan.transform_up_with_subqueries(|node| match &node {
            LogicalPlan::Values(values) => Ok(match retyped(values)? {
                Some(values) => Transformed::yes(LogicalPlan::Values(values)),
                None => Transformed::no(node),
            }),
            _ => Ok(Transformed::yes(node.recompute_schema()?)),
        })
    }

    fn name(&self) -> &str {
        Self::NAME
    }
}

/// `values` with each column whose values' types differ from its declared type only in the
/// metadata of nested fields declared without that metadata, and every value cast to it (rows
/// may disagree: the optimizer keeps the metadata on a folded `NULL`, not on a folded list);
/// `None` when no column needs it.
fn retyped(values: &Values) -> DFResult<Option<Values>> {
    let schema = values.schema.as_ref();
    let mut rows = values.values.clone();
    let mut changed = false;
    let mut fields = Vec::with_capacity(schema.fields().len());
    for (i, (qualifier, field)) in schema.iter().enumerate() {
        let declared = field.data_type();
        let plain = without_nested_metadata(declared);
        let mut types = Vec::with_capacity(rows.len());
        for row in &rows {
            types.push(match row.get(i) {
                Some(expr) => Some(expr.get_type(schema as &dyn ExprSchema)?),
                None => None,
            });
        }
        let differs_in_metadata_only = types
            .iter()
            .flatten()
            .any(|t| t != declared && without_nested_metadata(t) == plain);
        let holds_null = !field.is_nullable()
            && rows.iter().any(|row| {
                row.get(i)
                    .is_some_and(|e| e.nullable(schema as &dyn ExprSchema).unwrap_or(true))
            });
        if holds_null && !differs_in_metadata_only {
            changed = true;
            let nullable = field.as_ref().clone().with_nullable(true);
            fields.push((qualifier.cloned(), Arc::new(nullable)));
            continue;
        }
        if !differs_in_metadata_only {
            fields.push((qualifier.cloned(), Arc::clone(field)));
            continue;
        }
        changed = true;
        for (row, data_type) in rows.iter_mut().zip(types) {
            if let (Some(cell), Some(data_type)) = (row.get_mut(i), data_type)
                && data_type != plain
                && without_nested_metadata(&data_type) == plain
            {
                *cell = Expr::Cast(Cast::new(Box::new(cell.clone().unalias()), plain.clone()));
            }
        }
        let retyped = field.as_ref().clone().with_data_type(plain);
        fields.push((
            qualifier.cloned(),
            Arc::new(retyped.with_nullable(field.is_nullable() || holds_null)),
        ));
    }
    if !changed {
        return Ok(None);
    }
    let schema = DFSchema::new_with_metadata(fields, schema.metadata().clone())?;
    Ok(Some(Values {
        schema: Arc::new(schema),
        values: rows,
    }))
}

/// `data_type` with the metadata of every nested field removed.
fn without_nested_metadata(data_type: &DataType) -> DataType {
    let field = |f: &Field| -> Arc<Field> {
        Arc::new(
            f.clone()
                .with_metadata(HashMap::new())
                .with_data_type(without_nested_metadata(f.data_type())),
        )
    };
    match data_type {
        DataType::List(f) => DataType::List(field(f)),
        DataType::LargeList(f) => DataType::LargeList(field(f)),
        DataType::ListView(f) => DataType::ListView(field(f)),
        DataType::LargeListView(f) => DataType::LargeListView(field(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(field(f), *n),
        DataType::Map(f, sorted) => DataType::Map(field(f), *sorted),
        DataType::Struct(fields) => {
            DataType::Struct(fields.iter().map(|f| field(f)).collect::<Fields>())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_metadata_is_removed_at_every_depth() {
        let id = |n: &str| HashMap::from([("PARQUET:field_id".to_string(), n.to_string())]);
        let inner = Field::new("element", DataType::Utf8, true).with_metadata(id("3"));
        let nested =
            Field::new("element", DataType::List(Arc::new(inner)), true).with_metadata(id("2"));
        let with_ids = DataType::Struct(Fields::from(vec![
            Field::new("tags", DataType::List(Arc::new(nested)), true).with_metadata(id("1")),
        ]));
        let plain = DataType::Struct(Fields::from(vec![Field::new(
            "tags",
            DataType::List(Arc::new(Field::new(
                "element",
                DataType::List(Arc::new(Field::new("element", DataType::Utf8, true))),
                true,
            ))),
            true,
        )]));
        assert_ne!(with_ids, plain);
        assert_eq!(without_nested_metadata(&with_ids), plain);
    }
}
