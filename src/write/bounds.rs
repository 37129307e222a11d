//! Column bounds and NaN counts taken from the Arrow arrays while a data file is written (spec:
//! "Manifests", `lower_bounds` 125, `upper_bounds` 128, `nan_value_counts` 137; "Metrics" and
//! Java's `MetricsModes.Truncate` for the truncation of string and binary bounds).
//!
//! Parquet's own statistics leave NaN out of float min/max but do not count it, and parquet-rs
//! may truncate byte-array statistics its own way, so bounds are computed here, from the arrays:
//! one min and one max per column and batch with Arrow's aggregate kernels, merged across
//! batches, and truncated once when the file closes.
//!
//! Which columns get bounds: primitive columns at the top level and inside structs (a null
//! struct makes its children null). Columns inside lists and maps get none (as Java, whose
//! `shouldStoreBounds` only follows struct fields), and no NaN count either.
//!
//! | type | bound |
//! |---|---|
//! | float, double | NaN excluded (counted in `nan_value_counts`); IEEE total order, widened so a zero bound is `-0.0` below and `+0.0` above |
//! | string | lower: the first `truncate_length` code points; upper: the same, last code point + 1 (carrying), omitted when no code point can be incremented |
//! | binary, fixed | the same in bytes (`0xFF` carries) |
//! | decimal, uuid, temporal | as stored (unscaled, 16 bytes, the column's unit) |

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, PrimitiveArray};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::kernels::aggregate as agg;
use datafusion::arrow::compute::nullif;
use datafusion::arrow::datatypes::{
    ArrowNumericType, DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type,
    Int64Type, Time64MicrosecondType, TimeUnit, TimestampMicrosecondType, TimestampNanosecondType,
};

use datafusion::error::DataFusionError;

use crate::error::{Error, Result};
use crate::spec::{Literal, NestedField, PrimitiveType, Type};

/// The running bounds and NaN counts of every column that gets them, by field id.
#[derive(Debug, Default)]
pub(crate) struct BoundsCollector {
    bounds: HashMap<i32, (Literal, Literal)>,
    nan_counts: HashMap<i32, i64>,
}

/// Bounds in their binary single-value form, ready for a `DataFile`.
#[derive(Debug, Default)]
pub(crate) struct FinishedBounds {
    pub(crate) lower: HashMap<i32, Vec<u8>>,
    pub(crate) upper: HashMap<i32, Vec<u8>>,
    pub(crate) nan_counts: HashMap<i32, i64>,
}

impl BoundsCollector {
    /// Folds one batch in: `columns` are the batch's columns, `fields` the Iceberg fields they
    /// hold, in the same order.
    pub(crate) fn update(
        &mut self,
        fields: &[Arc<NestedField>],
        columns: &[ArrayRef],
    ) -> Result<()> {
        if fields.len() != columns.len() {
            return Err(Error::invalid(
                format_args!("a batch of {} columns", columns.len()),
                format_args!("the schema has {} fields", fields.len()),
            ));
        }
        for (field, column) in fields.iter().zip(columns) {
            self.update_field(field, column)?;
        }
        Ok(())
    }

    fn update_field(&mut self, field: &NestedField, column: &ArrayRef) -> Result<()> {
        match &field.field_type {
            Type::Primitive(ty) => self.update_primitive(field, ty, column),
            Type::Struct(s) => {
                let array = column
                    .as_struct_opt()
                    .ok_or_else(|| mismatch(field, column))?;
                let children = match array.nulls() {
                    Some(nulls) => array
                        .columns()
                        .iter()
                        .map(|c| with_parent_nulls(c, nulls))
                        .collect::<Result<Vec<_>>>()?,
                    None => array.columns().to_vec(),
                };
                self.update(&s.fields, &children)
            }
            // No bounds or NaN counts inside repeated fields.
            Type::List(_) | Type::Map(_) => Ok(()),
        }
    }

    fn update_primitive(
        &mut self,
        field: &NestedField,
        ty: &PrimitiveType,
        column: &ArrayRef,
    ) -> Result<()> {
        let Some(stats) =
            array_bounds(ty, column.as_ref()).ok_or_else(|| mismatch(field, column))?
        else {
            return Ok(());
        };
        if matches!(ty, PrimitiveType::Float | PrimitiveType::Double) {
            *self.nan_counts.entry(field.id).or_insert(0) += stats.nan_count;
        }
        let Some((lower, upper)) = stats.bounds else {
            return Ok(());
        };
        match self.bounds.get_mut(&field.id) {
            None => {
                self.bounds.insert(field.id, (lower, upper));
            }
            Some((low, up)) => {
                if lower.partial_cmp_same_type(low) == Some(Ordering::Less) {
                    *low = lower;
                }
                if upper.partial_cmp_same_type(up) == Some(Ordering::Greater) {
                    *up = upper;
                }
            }
        }
        Ok(())
    }

    /// The bounds in binary form, strings and binary truncated to `truncate_length`.
    pub(crate) fn finish(self, truncate_length: usize) -> FinishedBounds {
        let mut out = FinishedBounds {
            nan_counts: self.nan_counts,
            ..FinishedBounds::default()
        };
        for (id, (lower, upper)) in self.bounds {
            out.lower
                .insert(id, truncate_lower(lower, truncate_length).to_bytes());
            if let Some(upper) = truncate_upper(upper, truncate_length) {
                out.upper.insert(id, upper.to_bytes());
            }
        }
        out
    }
}

fn mismatch(field: &NestedField, column: &ArrayRef) -> Error {
    Error::invalid(
        format_args!(
            "column '{}' (field {}) of type {}",
            field.name, field.id, field.field_type
        ),
        format_args!("cannot be written from Arrow type {}", column.data_type()),
    )
}

/// `column` with the rows where its parent struct is null made null too.
fn with_parent_nulls(column: &ArrayRef, parent: &NullBuffer) -> Result<ArrayRef> {
    let parent_is_null = BooleanArray::new(!parent.inner(), None);
    nullif(column.as_ref(), &parent_is_null).map_err(|e| Error::from(DataFusionError::from(e)))
}

/// The min and max (NaN and nulls excluded) and the NaN count of one array.
#[derive(Debug)]
struct ArrayStats {
    bounds: Option<(Literal, Literal)>,
    nan_count: i64,
}

impl ArrayStats {
    fn of(bounds: Option<(Literal, Literal)>) -> Option<Self> {
        Some(Self {
            bounds,
            nan_count: 0,
        })
    }
}

/// `None` when the Arrow type does not hold `ty`; `Some(None)` for a type that gets no bounds.
fn array_bounds(ty: &PrimitiveType, a: &dyn Array) -> Option<Option<ArrayStats>> {
    use PrimitiveType as P;
    let stats = match (ty, a.data_type()) {
        (P::Boolean, DataType::Boolean) => {
            let b = a.as_boolean();
            let pair = agg::min_boolean(b).zip(agg::max_boolean(b));
            ArrayStats::of(pair.map(|(l, u)| (Literal::Boolean(l), Literal::Boolean(u))))
        }
        (P::Int, DataType::Int32) => numeric::<Int32Type>(a, Literal::Int),
        (P::Long, DataType::Int64) => numeric::<Int64Type>(a, Literal::Long),
        (P::Date, DataType::Date32) => numeric::<Date32Type>(a, Literal::Date),
        (P::Time, DataType::Time64(TimeUnit::Microsecond)) => {
            numeric::<Time64MicrosecondType>(a, Literal::Time)
        }
        (P::Timestamp, DataType::Timestamp(TimeUnit::Microsecond, None)) => {
            numeric::<TimestampMicrosecondType>(a, Literal::Timestamp)
        }
        (P::Timestamptz, DataType::Timestamp(TimeUnit::Microsecond, Some(_))) => {
            numeric::<TimestampMicrosecondType>(a, Literal::Timestamptz)
        }
        (P::TimestampNs, DataType::Timestamp(TimeUnit::Nanosecond, None)) => {
            numeric::<TimestampNanosecondType>(a, Literal::TimestampNs)
        }
        (P::TimestamptzNs, DataType::Timestamp(TimeUnit::Nanosecond, Some(_))) => {
            numeric::<TimestampNanosecondType>(a, Literal::TimestamptzNs)
        }
        (P::Decimal { .. }, DataType::Decimal128(..)) => {
            numeric::<Decimal128Type>(a, Literal::Decimal)
        }
        (P::Float, DataType::Float32) => floats(
            a.as_primitive::<Float32Type>(),
            f32::is_nan,
            f32::total_cmp,
            Literal::Float,
        ),
        (P::Double, DataType::Float64) => floats(
            a.as_primitive::<Float64Type>(),
            f64::is_nan,
            f64::total_cmp,
            Literal::Double,
        ),
        (P::String, _) => ArrayStats::of(string_bounds(a)?),
        (P::Binary, _) => {
            let pair = binary_bounds(a)?;
            ArrayStats::of(pair.map(|(l, u)| (Literal::Binary(l), Literal::Binary(u))))
        }
        (P::Fixed(_), DataType::FixedSizeBinary(_)) => {
            let pair = binary_bounds(a)?;
            ArrayStats::of(pair.map(|(l, u)| (Literal::Fixed(l), Literal::Fixed(u))))
        }
        (P::Uuid, DataType::FixedSizeBinary(16)) => {
            let pair = binary_bounds(a)?;
            let uuid = |b: Vec<u8>| <[u8; 16]>::try_from(b).ok().map(Literal::Uuid);
            let pair = match pair {
                Some((l, u)) => Some((uuid(l)?, uuid(u)?)),
                None => None,
            };
            ArrayStats::of(pair)
        }
        // No bounds for values without an order (spec Appendix D: geometry bounds are
        // bounding-box corners, which icefloe does not compute).
        (p, _) if !p.has_value_bounds() => return Some(None),
        _ => return None,
    };
    Some(stats)
}

fn numeric<T: ArrowNumericType>(
    a: &dyn Array,
    lit: impl Fn(T::Native) -> Literal,
) -> Option<ArrayStats> {
    let p = a.as_primitive_opt::<T>()?;
    let pair = agg::min(p).zip(agg::max(p));
    ArrayStats::of(pair.map(|(l, u)| (lit(l), lit(u))))
}

/// Min and max by IEEE total order without NaN, widened so that a zero lower bound is `-0.0`
/// and a zero upper bound `+0.0`: a reader comparing by IEEE equality (`-0.0 = 0.0`) or by
/// total order (`-0.0 < 0.0`) may then prune on either without losing rows.
fn floats<T: ArrowNumericType>(
    p: &PrimitiveArray<T>,
    is_nan: fn(T::Native) -> bool,
    cmp: fn(&T::Native, &T::Native) -> Ordering,
    lit: fn(T::Native) -> Literal,
) -> Option<ArrayStats> {
    let mut nan_count = 0i64;
    let mut pair: Option<(T::Native, T::Native)> = None;
    for v in p.iter().flatten() {
        if is_nan(v) {
            nan_count += 1;
            continue;
        }
        pair = Some(match pair {
            None => (v, v),
            Some((l, u)) => (
                if cmp(&v, &l).is_lt() { v } else { l },
                if cmp(&v, &u).is_gt() { v } else { u },
            ),
        });
    }
    let bounds = pair.map(|(l, u)| (widen_zero(lit(l), true), widen_zero(lit(u), false)));
    Some(ArrayStats { bounds, nan_count })
}

fn widen_zero(v: Literal, lower: bool) -> Literal {
    let sign: f64 = if lower { -1.0 } else { 1.0 };
    match v {
        Literal::Float(f) => Literal::Float(if f == 0.0 {
            0.0f32.copysign(sign as f32)
        } else {
            f
        }),
        Literal::Double(f) => Literal::Double(if f == 0.0 { 0.0f64.copysign(sign) } else { f }),
        other => other,
    }
}

fn string_bounds(a: &dyn Array) -> Option<Option<(Literal, Literal)>> {
    let pair = match a.data_type() {
        DataType::Utf8View => {
            let s = a.as_string_view();
            byte_min_max(s, |i| s.value(i).as_bytes()).map(|(l, u)| (s.value(l), s.value(u)))
        }
        DataType::Utf8 => {
            let s = a.as_string::<i32>();
            byte_min_max(s, |i| s.value(i).as_bytes()).map(|(l, u)| (s.value(l), s.value(u)))
        }
        DataType::LargeUtf8 => {
            let s = a.as_string::<i64>();
            byte_min_max(s, |i| s.value(i).as_bytes()).map(|(l, u)| (s.value(l), s.value(u)))
        }
        _ => return None,
    };
    Some(pair.map(|(l, u)| (Literal::String(l.into()), Literal::String(u.into()))))
}

fn binary_bounds(a: &dyn Array) -> Option<Option<(Vec<u8>, Vec<u8>)>> {
    let pair = match a.data_type() {
        DataType::BinaryView => {
            let b = a.as_binary_view();
            byte_min_max(b, |i| b.value(i)).map(|(l, u)| (b.value(l), b.value(u)))
        }
        DataType::Binary => {
            let b = a.as_binary::<i32>();
            byte_min_max(b, |i| b.value(i)).map(|(l, u)| (b.value(l), b.value(u)))
        }
        DataType::LargeBinary => {
            let b = a.as_binary::<i64>();
            byte_min_max(b, |i| b.value(i)).map(|(l, u)| (b.value(l), b.value(u)))
        }
        DataType::FixedSizeBinary(_) => {
            let b = a.as_fixed_size_binary();
            byte_min_max(b, |i| b.value(i)).map(|(l, u)| (b.value(l), b.value(u)))
        }
        _ => return None,
    };
    Some(pair.map(|(l, u)| (l.to_vec(), u.to_vec())))
}

/// The least and the greatest non-null value of `a` in byte order, as indices (`bytes` gives
/// a value's bytes).
///
/// One pass, each value compared with the lower bound and only when not below it with the
/// upper one (Arrow's `min_string` and `max_string` make a pass each), and by the first 8
/// bytes as a big-endian number (zero-padded) before the slices: a data file's strings repeat
/// (categories, codes), and an equal short value then costs two integer comparisons, not two
/// calls to `memcmp`. Padding keeps the order: unequal keys order their values as the bytes
/// do; equal keys of values of at most 8 bytes leave the shorter one first.
fn byte_min_max<'a, A: Array + ?Sized>(
    a: &A,
    bytes: impl Fn(usize) -> &'a [u8],
) -> Option<(usize, usize)> {
    #[derive(Clone, Copy)]
    struct Value<'a> {
        index: usize,
        key: u64,
        bytes: &'a [u8],
    }
    let value = |index: usize| {
        let bytes = bytes(index);
        let mut key = [0u8; 8];
        let n = bytes.len().min(8);
        key[..n].copy_from_slice(&bytes[..n]);
        Value {
            index,
            key: u64::from_be_bytes(key),
            bytes,
        }
    };
    let cmp = |x: &Value<'_>, y: &Value<'_>| match x.key.cmp(&y.key) {
        Ordering::Equal if x.bytes.len() <= 8 && y.bytes.len() <= 8 => {
            x.bytes.len().cmp(&y.bytes.len())
        }
        Ordering::Equal => x.bytes.cmp(y.bytes),
        other => other,
    };
    let mut valid = (0..a.len()).filter(|&i| a.is_valid(i));
    let first = value(valid.next()?);
    let (mut min, mut max) = (first, first);
    for i in valid {
        let v = value(i);
        if cmp(&v, &min).is_lt() {
            min = v;
        } else if cmp(&v, &max).is_gt() {
            max = v;
        }
    }
    Some((min.index, max.index))
}

/// A lower bound cut to `len` code points (strings) or bytes (binary, fixed).
pub(crate) fn truncate_lower(v: Literal, len: usize) -> Literal {
    match v {
        Literal::String(s) => Literal::String(truncate_str_lower(&s, len).to_string()),
        Literal::Binary(b) => Literal::Binary(b[..b.len().min(len)].to_vec()),
        Literal::Fixed(b) => Literal::Fixed(b[..b.len().min(len)].to_vec()),
        other => other,
    }
}

/// An upper bound cut to `len` code points or bytes and incremented so it still bounds the
/// value; `None` when no prefix can be incremented (the bound is then left out).
pub(crate) fn truncate_upper(v: Literal, len: usize) -> Option<Literal> {
    Some(match v {
        Literal::String(s) => Literal::String(truncate_str_upper(&s, len)?),
        Literal::Binary(b) => Literal::Binary(truncate_bytes_upper(&b, len)?),
        Literal::Fixed(b) => Literal::Fixed(truncate_bytes_upper(&b, len)?),
        other => other,
    })
}

/// The first `len` code points of `s`.
pub(crate) fn truncate_str_lower(s: &str, len: usize) -> &str {
    match s.char_indices().nth(len) {
        Some((end, _)) => &s[..end],
        None => s,
    }
}

/// `s` itself when it has at most `len` code points; otherwise its first `len` code points with
/// the last one that can be incremented incremented and the ones after it dropped.
pub(crate) fn truncate_str_upper(s: &str, len: usize) -> Option<String> {
    let prefix = truncate_str_lower(s, len);
    if prefix.len() == s.len() {
        return Some(s.to_string());
    }
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = next_char(last) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// The next Unicode scalar value (skipping the surrogate gap), `None` after U+10FFFF.
fn next_char(c: char) -> Option<char> {
    match c as u32 {
        0xD7FF => char::from_u32(0xE000),
        n => char::from_u32(n + 1),
    }
}

/// The bytes analogue of [`truncate_str_upper`]: `0xFF` bytes carry.
pub(crate) fn truncate_bytes_upper(b: &[u8], len: usize) -> Option<Vec<u8>> {
    if b.len() <= len {
        return Some(b.to_vec());
    }
    let mut out = b[..len].to_vec();
    while let Some(last) = out.pop() {
        if last != u8::MAX {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}
