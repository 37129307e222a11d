//! `readable_metrics`: a data file's column metrics per top-level column of the read schema,
//! with the lower and upper bounds decoded from the binary single-value form (spec Appendix D)
//! into the column's type, as PyIceberg's `inspect` shows them.
//!
//! PyIceberg lists every top-level column; a struct, list or map column has no metrics of its
//! own (only its leaves do), so its row is all nulls, typed with the nested column's type. A
//! bound that does not decode reads as null. An empty bound is the empty string (or binary)
//! where the type allows one; PyIceberg shows it as null (it tests the bytes for truth).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, StructArray, new_null_array};
use datafusion::arrow::datatypes::{DataType, Field, Fields};

use super::arrow_error;
use super::partition_struct::column as typed_column;
use crate::error::Result;
use crate::spec::{DataFile, Literal, NestedField, Schema, Type};
use crate::to_arrow::{primitive_to_arrow, type_to_arrow};

/// The names of the per-column struct's fields, in order.
const METRICS: [&str; 6] = [
    "column_size",
    "value_count",
    "null_value_count",
    "nan_value_count",
    "lower_bound",
    "upper_bound",
];

/// The Arrow type of the `readable_metrics` column for a read schema.
pub(crate) fn data_type(schema: &Schema) -> Result<DataType> {
    let fields = schema
        .columns()
        .iter()
        .map(|c| {
            Ok(Field::new(
                &c.name,
                DataType::Struct(metric_fields(c)?),
                false,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(DataType::Struct(Fields::from(fields)))
}

/// The `readable_metrics` column for these files.
pub(crate) fn array(schema: &Schema, files: &[&DataFile]) -> Result<ArrayRef> {
    let DataType::Struct(fields) = data_type(schema)? else {
        return Ok(new_null_array(&DataType::Null, files.len()));
    };
    if fields.is_empty() {
        return Ok(Arc::new(StructArray::new_empty_fields(files.len(), None)));
    }
    let columns = schema
        .columns()
        .iter()
        .map(|c| column_metrics(c, files))
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(
        StructArray::try_new(fields, columns, None).map_err(arrow_error)?,
    ))
}

/// The Arrow type of a column's bounds: the primitive type (nested form: `Utf8`, `Binary`), the
/// nested type for struct, list and map columns, `Binary` for types whose bounds are not
/// values (`variant`, `unknown`, `geometry`, `geography`: always null here).
fn bound_type(column: &NestedField) -> Result<DataType> {
    let path = column.name.as_str();
    match &column.field_type {
        Type::Primitive(p) if !p.has_value_bounds() => Ok(DataType::Binary),
        Type::Primitive(p) => primitive_to_arrow(p, false, path),
        nested => type_to_arrow(nested, false, path),
    }
}

fn metric_fields(column: &NestedField) -> Result<Fields> {
    let bound = bound_type(column)?;
    Ok(METRICS
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let ty = if i < 4 {
                DataType::Int64
            } else {
                bound.clone()
            };
            Field::new(*name, ty, true)
        })
        .collect())
}

fn column_metrics(column: &NestedField, files: &[&DataFile]) -> Result<ArrayRef> {
    let id = column.id;
    let count = |pick: fn(&DataFile) -> &std::collections::HashMap<i32, i64>| -> ArrayRef {
        Arc::new(Int64Array::from_iter(
            files.iter().map(|f| pick(f).get(&id).copied()),
        ))
    };
    let (lower, upper) = bounds(column, files)?;
    let columns = vec![
        count(|f| &f.column_sizes),
        count(|f| &f.value_counts),
        count(|f| &f.null_value_counts),
        count(|f| &f.nan_value_counts),
        lower,
        upper,
    ];
    let array = StructArray::try_new(metric_fields(column)?, columns, None).map_err(arrow_error)?;
    Ok(Arc::new(array))
}

/// The decoded lower and upper bounds of a column (all null for nested or unreadable types).
fn bounds(column: &NestedField, files: &[&DataFile]) -> Result<(ArrayRef, ArrayRef)> {
    let data_type = bound_type(column)?;
    let ty = match &column.field_type {
        Type::Primitive(p) if !p.has_value_bounds() => {
            let nulls = new_null_array(&data_type, files.len());
            return Ok((Arc::clone(&nulls), nulls));
        }
        Type::Struct(_) | Type::List(_) | Type::Map(_) => {
            let nulls = new_null_array(&data_type, files.len());
            return Ok((Arc::clone(&nulls), nulls));
        }
        Type::Primitive(p) => p,
    };
    let decode = |raw: Option<&Vec<u8>>| -> Option<Literal> {
        raw.and_then(|b| Literal::from_bytes(ty, b).ok())
    };
    let lower: Vec<_> = files
        .iter()
        .map(|f| decode(f.lower_bounds.as_ref().and_then(|m| m.get(&column.id))))
        .collect();
    let upper: Vec<_> = files
        .iter()
        .map(|f| decode(f.upper_bounds.as_ref().and_then(|m| m.get(&column.id))))
        .collect();
    Ok((
        typed_column(lower.iter().map(Option::as_ref), ty, &data_type)?,
        typed_column(upper.iter().map(Option::as_ref), ty, &data_type)?,
    ))
}
