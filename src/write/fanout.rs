//! Splitting rows by partition tuple (spec: "Partitioning"): the fan-out step before one data
//! file is written per partition.
//!
//! Run at a time: Arrow's `partition` kernel finds the runs of consecutive rows with equal
//! source values, and the first value of each run becomes a [`Literal`] and goes through
//! [`Transform::apply`], so the transforms have one implementation (the spec's). Clustered
//! input (a rewrite of one file, rows sorted by partition, an unpartitioned table) costs a
//! few tuples a batch; rows in no order cost one tuple each, as before.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::{nullif, partition, take_record_batch};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Fields, Float32Type, Float64Type, Int32Type, Int64Type,
    Time64MicrosecondType, TimeUnit, TimestampMicrosecondType, TimestampNanosecondType,
};

use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;

use crate::error::{Error, Result};
use crate::spec::{
    Literal, PartitionField, PartitionSpec, PrimitiveType, Schema, StructType, Transform, Type,
};
use crate::to_arrow::FIELD_ID_KEY;

/// Splits a batch by the partition tuple of `spec`: transforms are applied per row to the
/// source columns, found by field id in the batch schema (`PARQUET:field_id` metadata, inside
/// structs too), else by their position in `schema` when the batch has its columns in schema
/// order but no field ids. Returns one (partition values in spec order, sub-batch) per distinct tuple, in
/// first-seen order; rows keep their order within each sub-batch.
///
/// `void` fields are always null. A source column missing from the batch, or one whose
/// transform does not apply to its type, is an [`Error::InvalidArgument`].
pub fn split_by_partition(
    batch: &RecordBatch,
    spec: &PartitionSpec,
    schema: &Schema,
) -> Result<Vec<(Vec<Option<Literal>>, RecordBatch)>> {
    let sources = spec
        .fields
        .iter()
        .map(|f| source_column(batch, f, schema))
        .collect::<Result<Vec<_>>>()?;
    let mut groups: Vec<(Vec<Option<Literal>>, Vec<u32>)> = Vec::new();
    // The binary single-value form identifies a value of a given type (-0.0 and 0.0 differ, as
    // in Java's partition tuples).
    let mut index: HashMap<Vec<Option<Vec<u8>>>, usize> = HashMap::new();
    let too_large = || Error::invalid("a batch of more than 2^32 rows", "is too large to split");
    for run in runs_of_equal_keys(batch.num_rows(), &spec.fields, &sources) {
        // Rows with equal source values have equal partition values: one tuple per run.
        let tuple = spec
            .fields
            .iter()
            .zip(&sources)
            .map(|(f, source)| partition_value(f, source.as_ref(), run.start))
            .collect::<Result<Vec<_>>>()?;
        let key = tuple
            .iter()
            .map(|v| v.as_ref().map(Literal::to_bytes))
            .collect();
        let start = u32::try_from(run.start).map_err(|_| too_large())?;
        let end = u32::try_from(run.end).map_err(|_| too_large())?;
        match index.get(&key) {
            Some(&i) => groups[i].1.extend(start..end),
            None => {
                index.insert(key, groups.len());
                groups.push((tuple, (start..end).collect()));
            }
        }
    }
    if let [(tuple, _)] = groups.as_slice() {
        return Ok(vec![(tuple.clone(), batch.clone())]);
    }
    groups
        .into_iter()
        .map(|(tuple, rows)| {
            Ok((
                tuple,
                take_record_batch(batch, &UInt32Array::from(rows)).map_err(arrow)?,
            ))
        })
        .collect()
}

/// The runs of consecutive rows (of `rows`) whose partition fields' run keys ([`run_key`]) hold
/// equal values (Arrow's `partition` kernel: equal bits, NULL equal to NULL), so that each run
/// has one partition tuple; every row on its own when the columns cannot be compared.
fn runs_of_equal_keys(
    rows: usize,
    fields: &[PartitionField],
    sources: &[Option<(ArrayRef, PrimitiveType)>],
) -> Vec<std::ops::Range<usize>> {
    let columns: Vec<ArrayRef> = fields
        .iter()
        .zip(sources)
        .filter_map(|(field, source)| source.as_ref().map(|(column, _)| run_key(field, column)))
        .collect();
    if rows == 0 {
        return Vec::new();
    }
    if columns.is_empty() {
        return std::iter::once(0..rows).collect();
    }
    match partition(&columns) {
        Ok(runs) => runs.ranges(),
        Err(_) => (0..rows).map(|row| row..row + 1).collect(),
    }
}

/// What rows of one run must share for `field`: the source value, or for time transforms of
/// timestamps the day (`year`, `month`, `day`) or hour (`hour`) it falls in, floored (before
/// 1970 too), so that the rows of one day are one run however their times differ. Equal keys
/// mean equal partition values; the tuple itself comes from the transform (the spec's).
fn run_key(field: &PartitionField, column: &ArrayRef) -> ArrayRef {
    const HOUR_MICROS: i64 = 3_600_000_000;
    const DAY_MICROS: i64 = 24 * HOUR_MICROS;
    let unit = match field.transform {
        Transform::Year | Transform::Month | Transform::Day => DAY_MICROS,
        Transform::Hour => HOUR_MICROS,
        _ => return Arc::clone(column),
    };
    let keyed: Option<ArrayRef> = match column.data_type() {
        DataType::Timestamp(TimeUnit::Microsecond, _) => column
            .as_primitive_opt::<TimestampMicrosecondType>()
            .map(|a| Arc::new(a.unary::<_, Int64Type>(|v| v.div_euclid(unit))) as ArrayRef),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            let step = unit.saturating_mul(1_000);
            column
                .as_primitive_opt::<TimestampNanosecondType>()
                .map(|a| Arc::new(a.unary::<_, Int64Type>(|v| v.div_euclid(step))) as ArrayRef)
        }
        _ => None,
    };
    keyed.unwrap_or_else(|| Arc::clone(column))
}

/// A partition field's source column and type; `None` for a `void` field (always null).
fn source_column(
    batch: &RecordBatch,
    field: &PartitionField,
    schema: &Schema,
) -> Result<Option<(ArrayRef, PrimitiveType)>> {
    if field.transform == Transform::Void {
        return Ok(None);
    }
    let error = |reason: String| {
        Error::invalid(
            format_args!("partition field '{}' ({})", field.name, field.transform),
            reason,
        )
    };
    let ty = schema
        .field_by_id(field.source_id)
        .and_then(|f| f.field_type.as_primitive())
        .ok_or_else(|| {
            error(format!(
                "source {} is not a primitive column",
                field.source_id
            ))
        })?;
    field.transform.result_type(ty)?;
    let by_id = find_column(batch.schema().fields(), batch.columns(), field.source_id)?;
    let by_position = || match position_path(&schema.fields, field.source_id) {
        Some(path) if batch.num_columns() == schema.columns().len() => {
            column_at(batch.columns(), &path)
        }
        _ => Ok(None),
    };
    let column = match by_id {
        Some(c) => Some(c),
        None => by_position()?,
    }
    .ok_or_else(|| {
        error(format!(
            "source column {} is not in the batch",
            field.source_id
        ))
    })?;
    Ok(Some((column, ty.clone())))
}

/// The column with field id `id` (at any struct depth; a null struct makes its children null).
fn find_column(fields: &Fields, columns: &[ArrayRef], id: i32) -> Result<Option<ArrayRef>> {
    let id_text = id.to_string();
    for (field, column) in fields.iter().zip(columns) {
        if field.metadata().get(FIELD_ID_KEY) == Some(&id_text) {
            return Ok(Some(Arc::clone(column)));
        }
        let (DataType::Struct(children), Some(s)) = (field.data_type(), column.as_struct_opt())
        else {
            continue;
        };
        let Some(found) = find_column(children, s.columns(), id)? else {
            continue;
        };
        return Ok(Some(match s.nulls() {
            Some(nulls) => {
                nullif(found.as_ref(), &BooleanArray::new(!nulls.inner(), None)).map_err(arrow)?
            }
            None => found,
        }));
    }
    Ok(None)
}

/// The positions leading to field `id` through structs, for batches without field ids (columns
/// in schema order, as [`super::DataFileWriter`] takes them).
fn position_path(s: &StructType, id: i32) -> Option<Vec<usize>> {
    s.fields.iter().enumerate().find_map(|(i, f)| {
        if f.id == id {
            return Some(vec![i]);
        }
        let Type::Struct(inner) = &f.field_type else {
            return None;
        };
        let mut path = position_path(inner, id)?;
        path.insert(0, i);
        Some(path)
    })
}

fn column_at(columns: &[ArrayRef], path: &[usize]) -> Result<Option<ArrayRef>> {
    let Some((first, rest)) = path.split_first() else {
        return Ok(None);
    };
    let Some(column) = columns.get(*first) else {
        return Ok(None);
    };
    if rest.is_empty() {
        return Ok(Some(Arc::clone(column)));
    }
    let Some(s) = column.as_struct_opt() else {
        return Ok(None);
    };
    let Some(found) = column_at(s.columns(), rest)? else {
        return Ok(None);
    };
    Ok(Some(match s.nulls() {
        Some(nulls) => {
            nullif(found.as_ref(), &BooleanArray::new(!nulls.inner(), None)).map_err(arrow)?
        }
        None => found,
    }))
}

fn partition_value(
    field: &PartitionField,
    source: Option<&(ArrayRef, PrimitiveType)>,
    row: usize,
) -> Result<Option<Literal>> {
    let Some((column, ty)) = source else {
        return Ok(None);
    };
    let value = literal_at(column.as_ref(), ty, row)?;
    field.transform.apply(ty, value.as_ref())
}

/// The value at `row` as a [`Literal`] of type `ty` (`None` for null), for the Arrow types
/// [`crate::to_arrow`] gives (plain Utf8/Binary and their large forms too).
pub(crate) fn literal_at(a: &dyn Array, ty: &PrimitiveType, row: usize) -> Result<Option<Literal>> {
    use PrimitiveType as P;
    if a.is_null(row) {
        return Ok(None);
    }
    let mismatch = || {
        Error::invalid(
            format_args!("Arrow type {}", a.data_type()),
            format_args!("does not hold {ty} values"),
        )
    };
    let v = match (ty, a.data_type()) {
        (P::Boolean, DataType::Boolean) => Literal::Boolean(a.as_boolean().value(row)),
        (P::Int, DataType::Int32) => Literal::Int(a.as_primitive::<Int32Type>().value(row)),
        (P::Long, DataType::Int64) => Literal::Long(a.as_primitive::<Int64Type>().value(row)),
        (P::Float, DataType::Float32) => Literal::Float(a.as_primitive::<Float32Type>().value(row)),
        (P::Double, DataType::Float64) => {
            Literal::Double(a.as_primitive::<Float64Type>().value(row))
        }
        (P::Decimal { .. }, DataType::Decimal128(..)) => {
            Literal::Decimal(a.as_primitive::<Decimal128Type>().value(row))
        }
        (P::Date, DataType::Date32) => Literal::Date(a.as_primitive::<Date32Type>().value(row)),
        (P::Time, DataType::Time64(TimeUnit::Microsecond)) => {
            Literal::Time(a.as_primitive::<Time64MicrosecondType>().value(row))
        }
        (P::Timestamp | P::Timestamptz, DataType::Timestamp(TimeUnit::Microsecond, _)) => {
            let v = a.as_primitive::<TimestampMicrosecondType>().value(row);
            if *ty == P::Timestamp {
                Literal::Timestamp(v)
            } else {
                Literal::Timestamptz(v)
            }
        }
        (P::TimestampNs | P::TimestamptzNs, DataType::Timestamp(TimeUnit::Nanosecond, _)) => {
            let v = a.as_primitive::<TimestampNanosecondType>().value(row);
            if *ty == P::TimestampNs {
                Literal::TimestampNs(v)
            } else {
                Literal::TimestamptzNs(v)
            }
        }
        (P::String, DataType::Utf8View) => Literal::String(a.as_string_view().value(row).into()),
        (P::String, DataType::Utf8) => Literal::String(a.as_string::<i32>().value(row).into()),
        (P::String, DataType::LargeUtf8) => Literal::String(a.as_string::<i64>().value(row).into()),
        (P::Binary, DataType::BinaryView) => Literal::Binary(a.as_binary_view().value(row).into()),
        (P::Binary, DataType::Binary) => Literal::Binary(a.as_binary::<i32>().value(row).into()),
        (P::Binary, DataType::LargeBinary) => {
            Literal::Binary(a.as_binary::<i64>().value(row).into())
        }
        (P::Fixed(_), DataType::FixedSizeBinary(_)) => {
            Literal::Fixed(a.as_fixed_size_binary().value(row).into())
        }
        (P::Uuid, DataType::FixedSizeBinary(16)) => Literal::Uuid(
            a.as_fixed_size_binary()
                .value(row)
                .try_into()
                .map_err(|_| mismatch())?,
        ),
        _ => return Err(mismatch()),
    };
    Ok(Some(v))
}

fn arrow(e: ArrowError) -> Error {
    Error::from(DataFusionError::from(e))
}
