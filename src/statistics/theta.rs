//! Theta sketches of column values (Puffin spec, `apache-datasketches-theta-v1`): "a
//! serialized form of a compact Theta sketch produced by the Apache DataSketches library,
//! ... fed with individual distinct values converted to bytes using Iceberg's single-value
//! serialization", with the default seed (9001).
//!
//! Values are hashed as Java's `UpdateSketch.update(ByteBuffer)` hashes
//! `Conversions.toByteBuffer(type, value)`: MurmurHash3 x64-128 of the bytes with the seed,
//! the first half shifted right by one. Nulls are not values, and empty strings and binaries
//! are skipped as Java skips empty buffers, so Java, Trino and Spark count what we count.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Float32Type, Float64Type, Int32Type, Int64Type, Time64MicrosecondType,
    TimeUnit, TimestampMicrosecondType, TimestampNanosecondType,
};
use datasketches::hash::value::raw_bytes;
use datasketches::theta::{CompactThetaSketch, ThetaSketch, ThetaSketchBuilder, ThetaUnionBuilder};

use crate::error::{Error, Result};
use crate::spec::PrimitiveType;
use crate::write::literal_at;

/// The running theta sketch of one column.
#[derive(Debug)]
pub(crate) struct ColumnSketch {
    sketch: ThetaSketch,
}

impl ColumnSketch {
    /// An empty sketch with the library's defaults (lg k 12, seed 9001), as Java's.
    pub(crate) fn new() -> Result<Self> {
        let sketch = ThetaSketchBuilder::default()
            .build()
            .map_err(|e| Error::invalid("a theta sketch", e))?;
        Ok(Self { sketch })
    }

    /// Feeds the non-null values of `array`, a column of `ty` values.
    pub(crate) fn update(&mut self, array: &dyn Array, ty: &PrimitiveType) -> Result<()> {
        let s = &mut self.sketch;
        macro_rules! numbers {
            ($t:ty) => {{
                let a = array.as_primitive::<$t>();
                for v in a.iter().flatten() {
                    s.update(raw_bytes::from_slice(&v.to_le_bytes()));
                }
            }};
        }
        macro_rules! bytes {
            ($a:expr) => {{
                for v in $a.iter().flatten() {
                    let v: &[u8] = v.as_ref();
                    if !v.is_empty() {
                        s.update(raw_bytes::from_slice(v));
                    }
                }
            }};
        }
        use PrimitiveType as P;
        match (ty, array.data_type()) {
            (P::Int, DataType::Int32) => numbers!(Int32Type),
            (P::Date, DataType::Date32) => numbers!(Date32Type),
            (P::Long, DataType::Int64) => numbers!(Int64Type),
            (P::Float, DataType::Float32) => numbers!(Float32Type),
            (P::Double, DataType::Float64) => numbers!(Float64Type),
            (P::Time, DataType::Time64(TimeUnit::Microsecond)) => numbers!(Time64MicrosecondType),
            (P::Timestamp | P::Timestamptz, DataType::Timestamp(TimeUnit::Microsecond, _)) => {
                numbers!(TimestampMicrosecondType)
            }
            (P::TimestampNs | P::TimestamptzNs, DataType::Timestamp(TimeUnit::Nanosecond, _)) => {
                numbers!(TimestampNanosecondType)
            }
            (P::String, DataType::Utf8) => bytes!(array.as_string::<i32>()),
            (P::String, DataType::LargeUtf8) => bytes!(array.as_string::<i64>()),
            (P::String, DataType::Utf8View) => bytes!(array.as_string_view()),
            (P::Binary, DataType::Binary) => bytes!(array.as_binary::<i32>()),
            (P::Binary, DataType::LargeBinary) => bytes!(array.as_binary::<i64>()),
            (P::Binary, DataType::BinaryView) => bytes!(array.as_binary_view()),
            _ => {
                for row in 0..array.len() {
                    if let Some(value) = literal_at(array, ty, row)? {
                        let bytes = value.to_bytes();
                        if !bytes.is_empty() {
                            s.update(raw_bytes::from_slice(&bytes));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The union of `sketches` (of one column over parts of the rows), ordered and compact.
    pub(crate) fn union(sketches: &[ColumnSketch]) -> Result<CompactThetaSketch> {
        let mut union = ThetaUnionBuilder::default()
            .build()
            .map_err(|e| Error::invalid("a theta union", e))?;
        for s in sketches {
            union
                .update(&s.sketch)
                .map_err(|e| Error::invalid("a theta union", e))?;
        }
        Ok(union.to_sketch(true))
    }
}

/// The number of distinct values a sketch estimates, rounded as Java's writers round it
/// (`Math.round(sketch.getEstimate())`) for the `ndv` property.
pub(crate) fn ndv(sketch: &CompactThetaSketch) -> u64 {
    let estimate = sketch.estimate();
    if estimate.is_finite() && estimate > 0.0 {
        estimate.round() as u64
    } else {
        0
    }
}

/// The estimate of a serialized compact sketch (a theta blob's content).
pub(crate) fn ndv_of_blob(bytes: &[u8]) -> Result<u64> {
    let sketch = CompactThetaSketch::deserialize(bytes)
        .map_err(|e| Error::corrupt_with("", "a theta sketch blob", e))?;
    Ok(ndv(&sketch))
}

#[cfg(test)]
mod tests;
