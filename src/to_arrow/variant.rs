//! The Arrow form of Iceberg's `variant` (spec: "Semi-structured Types"; the encoding is
//! Parquet's "Variant Binary Encoding"): a struct of two byte strings, `metadata` (the field-name
//! dictionary) and `value`, tagged with the canonical extension name `arrow.parquet.variant`,
//! as arrow-rs' `parquet-variant-compute` represents an unshredded variant.
//!
//! [`VariantColumn`] reads such a column row by row as validated [`Variant`]s (arrow-rs'
//! decoder, `parquet-variant`): a malformed value is an error, never a panic, so callers may
//! hand it bytes straight from a file. [`VariantColumnBuilder`] makes one.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BinaryBuilder, BinaryViewArray, LargeBinaryArray,
    StructArray,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::error::DataFusionError;
use parquet_variant::{Variant, VariantBuilder};

use crate::error::{Error, Result};

/// The canonical Arrow extension name of Parquet variants.
pub const VARIANT_EXTENSION: &str = "arrow.parquet.variant";

/// The Arrow type of an (unshredded) variant: `Struct<metadata: Binary, value: Binary>`, both
/// children non-null, as Parquet's unshredded variant group has them `required`.
pub fn variant_data_type() -> DataType {
    DataType::Struct(variant_fields())
}

fn variant_fields() -> Fields {
    Fields::from(vec![
        Field::new("metadata", DataType::Binary, false),
        Field::new("value", DataType::Binary, false),
    ])
}

/// Whether an Arrow field is a variant: it carries the variant extension name.
pub fn is_variant(field: &Field) -> bool {
    field.extension_type_name() == Some(VARIANT_EXTENSION)
}

/// One of the byte-string layouts Arrow may hold a variant's `metadata` or `value` in.
#[derive(Debug, Clone, Copy)]
enum Bytes<'a> {
    Binary(&'a BinaryArray),
    Large(&'a LargeBinaryArray),
    View(&'a BinaryViewArray),
}

impl<'a> Bytes<'a> {
    fn of(array: &'a dyn Array) -> Option<Self> {
        if let Some(a) = array.as_binary_opt::<i32>() {
            return Some(Self::Binary(a));
        }
        if let Some(a) = array.as_binary_opt::<i64>() {
            return Some(Self::Large(a));
        }
        array.as_binary_view_opt().map(Self::View)
    }

    fn get(self, row: usize) -> Option<&'a [u8]> {
        match self {
            Self::Binary(a) => a.is_valid(row).then(|| a.value(row)),
            Self::Large(a) => a.is_valid(row).then(|| a.value(row)),
            Self::View(a) => a.is_valid(row).then(|| a.value(row)),
        }
    }
}

/// A column of unshredded variants, read row by row.
#[derive(Debug, Clone, Copy)]
pub struct VariantColumn<'a> {
    nulls: Option<&'a NullBuffer>,
    metadata: Bytes<'a>,
    value: Bytes<'a>,
    len: usize,
}

impl<'a> VariantColumn<'a> {
    /// The variants of `array`: a struct with byte-string children `metadata` and `value`
    /// (Binary, LargeBinary or BinaryView). A shredded variant (a `typed_value` child) or any
    /// other shape is [`Error::Unsupported`] naming `column`.
    pub fn try_new(array: &'a dyn Array, column: &str) -> Result<Self> {
        let refuse = |what: &str| {
            Error::Unsupported(format!(
                "column '{column}': {what} is not a variant icefloe reads (a struct of binary \
                 `metadata` and `value`; shredded variants are not read yet)"
            ))
        };
        let Some(parts) = array.as_struct_opt() else {
            return Err(refuse(&format!("a column of type {}", array.data_type())));
        };
        let bytes = |name: &str| {
            parts
                .column_by_name(name)
                .and_then(|c| Bytes::of(c.as_ref()))
        };
        let (Some(metadata), Some(value)) = (bytes("metadata"), bytes("value")) else {
            return Err(refuse(&format!("a struct {}", array.data_type())));
        };
        if parts.num_columns() != 2 {
            return Err(refuse(&format!("a struct {}", array.data_type())));
        }
        Ok(Self {
            nulls: parts.nulls(),
            metadata,
            value,
            len: parts.len(),
        })
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The variant of row `row` (`None` for SQL NULL), fully validated: bytes that are not a
    /// variant are [`Error::Corrupt`] naming the row.
    pub fn get(&self, row: usize) -> Result<Option<Variant<'a, 'a>>> {
        if row >= self.len || self.nulls.is_some_and(|n| n.is_null(row)) {
            return Ok(None);
        }
        let (Some(metadata), Some(value)) = (self.metadata.get(row), self.value.get(row)) else {
            return Err(Error::corrupt(
                "",
                format!("variant at row {row} has a null metadata or value"),
            ));
        };
        Variant::try_new(metadata, value)
            .map(Some)
            .map_err(|e| Error::corrupt_with("", format!("invalid variant at row {row}: {e}"), e))
    }
}

/// Builds a column of [`variant_data_type`] from variants (copied, each with a metadata
/// dictionary of its own field names).
#[derive(Debug, Default)]
pub struct VariantColumnBuilder {
    metadata: BinaryBuilder,
    value: BinaryBuilder,
    validity: Vec<bool>,
}

impl VariantColumnBuilder {
    /// Appends a row: a variant, or SQL NULL.
    pub fn append(&mut self, variant: Option<Variant<'_, '_>>) -> Result<()> {
        let Some(variant) = variant else {
            self.metadata.append_value([]);
            self.value.append_value([]);
            self.validity.push(false);
            return Ok(());
        };
        let mut builder = VariantBuilder::new();
        let encoded = builder
            .try_append_value(variant)
            .and_then(|()| builder.try_finish());
        let (metadata, value) =
            encoded.map_err(|e| Error::invalid("a variant value", format_args!("{e}")))?;
        self.metadata.append_value(metadata);
        self.value.append_value(value);
        self.validity.push(true);
        Ok(())
    }

    /// Appends an already encoded variant (its `metadata` and `value` bytes).
    pub fn append_encoded(&mut self, metadata: &[u8], value: &[u8]) {
        self.metadata.append_value(metadata);
        self.value.append_value(value);
        self.validity.push(true);
    }

    /// The column built.
    pub fn finish(mut self) -> Result<ArrayRef> {
        let nulls = NullBuffer::from(std::mem::take(&mut self.validity));
        let children: Vec<ArrayRef> = vec![
            Arc::new(self.metadata.finish()),
            Arc::new(self.value.finish()),
        ];
        let nulls = (nulls.null_count() > 0).then_some(nulls);
        let array = StructArray::try_new(variant_fields(), children, nulls)
            .map_err(|e| Error::from(DataFusionError::from(e)))?;
        Ok(Arc::new(array))
    }
}

#[cfg(test)]
#[path = "variant_tests.rs"]
mod tests;
