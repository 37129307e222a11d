//! The order rows are written in (spec: "Sorting"): when a table has a default sort order,
//! an INSERT sorts its rows by the default spec's partition fields, then by the sort order's
//! fields (Java's `SortOrderUtil.buildSortOrder`), so that each partition's rows arrive
//! together and every data file holds its rows in the sort order; the files then record the
//! order's id as their `sort_order_id`. Tables without a sort order are written as the rows
//! come (streamed, not buffered for a sort).
//!
//! The sort is DataFusion's: [`write_ordering`] states it as the sink's required input
//! ordering, and [`sink_input`] sorts (in parallel, spilling under a memory limit) and merges.
//! Transforms other than identity are sorted by their value, computed by [`TransformFn`].

use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::Result as DFResult;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::physical_expr::{LexOrdering, LexRequirement, PhysicalSortExpr};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use datafusion::prelude::{Column, get_field};

use super::fanout::literal_at;
use crate::error::{Error, Result};
use crate::spec::sort::{NullOrder, SortDirection};
use crate::spec::{Literal, PrimitiveType, Schema, SortOrder, TableMetadata, Transform, Type};
use crate::to_arrow::{literal_to_scalar, primitive_to_arrow};

/// One key of the write order: a transform of a source column.
#[derive(Debug, Clone, PartialEq)]
struct Key {
    source_id: i32,
    transform: Transform,
    options: SortOptions,
}

/// The order an INSERT into the table `metadata` describes writes its rows in, as a required
/// ordering of `input` (the table's columns by name), with the id of the sort order it gives
/// the files; `None` when the default sort order is unsorted.
pub fn write_ordering(
    session: &dyn Session,
    metadata: &TableMetadata,
    input: &SchemaRef,
) -> Result<Option<(LexRequirement, i32)>> {
    let Some(order) = metadata.default_sort_order().filter(|o| !o.is_unsorted()) else {
        return Ok(None);
    };
    let ordering = LexOrdering::new(sort_exprs(session, metadata, order, input)?);
    Ok(ordering.map(|o| (LexRequirement::from(o), order.order_id)))
}

/// `input` as an INSERT's sink must read it: one partition (DataFusion's `DataSinkExec`
/// executes partition 0 alone) and, for a table with a sort order, sorted by `ordering`
/// ([`write_ordering`]). DataFusion's optimizer arranges both from the sink's requirements, but
/// a host that does not see them (datafusion-python over the FFI, which carries no requirement
/// of a foreign plan) would write partition 0 and drop the other partitions' rows, or write
/// unsorted files that claim the order. Arranged here, an optimizer finds them met.
pub fn sink_input(
    input: Arc<dyn ExecutionPlan>,
    ordering: Option<&LexRequirement>,
) -> DFResult<Arc<dyn ExecutionPlan>> {
    let partitions = input.output_partitioning().partition_count();
    let Some(requirement) = ordering else {
        return Ok(match partitions {
            0 | 1 => input,
            _ => Arc::new(CoalescePartitionsExec::new(input)),
        });
    };
    let sorted = input
        .equivalence_properties()
        .ordering_satisfy_requirement(requirement.iter().cloned())?;
    if sorted && partitions <= 1 {
        return Ok(input);
    }
    let ordering = LexOrdering::from(requirement.clone());
    let input = match sorted {
        true => input,
        false => Arc::new(SortExec::new(ordering.clone(), input).with_preserve_partitioning(true)),
    };
    Ok(match partitions {
        0 | 1 => input,
        _ => Arc::new(SortPreservingMergeExec::new(ordering, input)),
    })
}

/// The sort expressions over `input` (the table's columns by name) that put rows in the
/// order writes of `metadata`'s table use with the sort order `order`: the default spec's
/// partition fields, then `order`'s fields (those not already among them).
pub(crate) fn sort_exprs(
    session: &dyn Session,
    metadata: &TableMetadata,
    order: &SortOrder,
    input: &SchemaRef,
) -> Result<Vec<PhysicalSortExpr>> {
    let spec = metadata.default_partition_spec().ok_or_else(|| {
        Error::corrupt(
            metadata.location.clone(),
            "the default partition spec is missing",
        )
    })?;
    let ascending = SortOptions {
        descending: false,
        nulls_first: true,
    };
    let mut keys: Vec<Key> = spec
        .fields
        .iter()
        .filter(|f| f.transform != Transform::Void)
        .map(|f| Key {
            source_id: f.source_id,
            transform: f.transform.clone(),
            options: ascending,
        })
        .collect();
    for field in &order.fields {
        if keys
            .iter()
            .any(|k| k.source_id == field.source_id && k.transform == field.transform)
        {
            continue;
        }
        keys.push(Key {
            source_id: field.source_id,
            transform: field.transform.clone(),
            options: SortOptions {
                descending: field.direction == SortDirection::Descending,
                nulls_first: field.null_order == NullOrder::First,
            },
        });
    }
    let schema = metadata.current_schema();
    let df_schema = DFSchema::try_from(Arc::clone(input))?;
    let mut exprs = Vec::with_capacity(keys.len());
    for key in keys {
        let expr = key_expr(schema, &key)?;
        let physical = session.create_physical_expr(expr, &df_schema)?;
        exprs.push(PhysicalSortExpr::new(physical, key.options));
    }
    Ok(exprs)
}

/// The key's value as an expression over the table's columns.
fn key_expr(schema: &Schema, key: &Key) -> Result<Expr> {
    let path = schema
        .path_to(key.source_id)
        .filter(|path| {
            let parents = &path[..path.len().saturating_sub(1)];
            parents
                .iter()
                .all(|f| matches!(f.field_type, Type::Struct(_)))
        })
        .ok_or_else(|| {
            Error::invalid(
                format_args!("sort source field {}", key.source_id),
                "is not a column of the current schema outside lists and maps",
            )
        })?;
    let (first, rest) = path.split_first().ok_or_else(|| {
        Error::invalid(
            format_args!("sort source field {}", key.source_id),
            "has no path",
        )
    })?;
    let mut column = Expr::Column(Column::new_unqualified(first.name.clone()));
    for field in rest {
        column = get_field(column, field.name.as_str());
    }
    let source = path
        .last()
        .and_then(|f| f.field_type.as_primitive())
        .cloned()
        .ok_or_else(|| {
            Error::invalid(
                format_args!("sort source field {}", key.source_id),
                "is not a primitive column",
            )
        })?;
    if key.transform == Transform::Identity {
        return Ok(column);
    }
    let function = TransformFn::new(key.transform.clone(), source)?;
    Ok(ScalarUDF::from(function).call(vec![column]))
}

/// A partition transform as a DataFusion function of its source column, for sorting by it:
/// `bucket`, `year`, `month`, `day`, `hour` give their `int` result, `truncate` a value of the
/// source type. Computed a value at a time through the spec's [`Transform::apply`].
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TransformFn {
    name: String,
    transform: Transform,
    source: PrimitiveType,
    output: DataType,
    signature: Signature,
}

impl TransformFn {
    /// `transform` of a `source` column.
    pub fn new(transform: Transform, source: PrimitiveType) -> Result<Self> {
        let output = match transform {
            Transform::Truncate(_) | Transform::Identity => {
                primitive_to_arrow(&source, true, "sort key")?
            }
            _ => DataType::Int32,
        };
        transform.result_type(&source)?;
        Ok(Self {
            name: format!("iceberg_{}", transform.to_string().replace(['[', ']'], "_")),
            transform,
            source,
            output,
            signature: Signature::any(1, Volatility::Immutable),
        })
    }

    fn transformed(&self, column: &ArrayRef) -> Result<ArrayRef> {
        let values = (0..column.len())
            .map(|row| {
                let value = literal_at(column.as_ref(), &self.source, row)?;
                let result = self.transform.apply(&self.source, value.as_ref())?;
                self.scalar(result)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ScalarValue::iter_to_array(values)?)
    }

    fn scalar(&self, value: Option<Literal>) -> Result<ScalarValue> {
        if self.output != DataType::Int32 {
            return literal_to_scalar(value.as_ref(), &self.source);
        }
        Ok(ScalarValue::Int32(match value {
            None => None,
            Some(Literal::Int(v) | Literal::Date(v)) => Some(v),
            Some(other) => {
                return Err(Error::invalid(
                    format_args!("{} of a {}", self.transform, self.source),
                    format_args!("gave {other:?}, not an int"),
                ));
            }
        }))
    }
}

impl ScalarUDFImpl for TransformFn {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DFResult<DataType> {
        Ok(self.output.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DFResult<ColumnarValue> {
        let rows = args.number_rows;
        let [arg] = args.args.as_slice() else {
            return Err(Error::invalid(&self.name, "takes one argument").into());
        };
        let column = arg.to_array(rows)?;
        Ok(ColumnarValue::Array(self.transformed(&column)?))
    }
}
