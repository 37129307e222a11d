//! SQL functions over `variant` columns (Arrow form: [`crate::to_arrow::variant`]), decoded by
//! arrow-rs' `parquet-variant` crates:
//!
//! | function | result |
//! |---|---|
//! | `variant_to_json(v)` | the variant as JSON text (`null` for a variant null; SQL NULL for SQL NULL) |
//! | `variant_get(v, path)` | the variant at `path` (`$.a.b[0]`, `a.b[0]`, `$['a b']`), NULL when absent |
//! | `variant_get(v, path, type)` | the value at `path` as the Iceberg primitive `type` (`'int'`, `'string'`, ...), NULL when absent or not convertible |
//! | `parse_json(text)` | the variant of a JSON text (an error for text that is not JSON) |
//!
//! `variant_get` with a type is Spark's `try_variant_get`: numbers convert to any numeric type
//! they fit (arrow-rs' `Variant::as_*`), strings only to `string`. Every value is validated
//! before it is read, so a malformed variant is an error naming the row, never a panic.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, BooleanBuilder, Date32Builder, Float32Builder,
    Float64Builder, Int32Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, TimeUnit};
use datafusion::common::{ScalarValue, exec_datafusion_err, plan_err};
use datafusion::error::Result as DFResult;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use parquet_variant::{Variant, VariantBuilder, VariantPath};
use parquet_variant_json::{JsonToVariant, VariantToJson};

use crate::error::Error;
use crate::spec::PrimitiveType;
use crate::to_arrow::variant::{VariantColumn, VariantColumnBuilder, variant_data_type};
use crate::to_arrow::{UTC, extension_metadata};

/// Registers `variant_to_json`, `variant_get` and `parse_json` (see the module docs).
pub(super) fn register_functions(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(VariantToJsonUdf::new()));
    ctx.register_udf(ScalarUDF::from(VariantGetUdf::new()));
    ctx.register_udf(ScalarUDF::from(ParseJsonUdf::new()));
}

/// The result field of a function returning variants: nullable, with the variant extension.
fn variant_field(name: &str) -> FieldRef {
    let metadata = extension_metadata(&PrimitiveType::Variant)
        .into_iter()
        .collect();
    Arc::new(Field::new(name, variant_data_type(), true).with_metadata(metadata))
}

/// Refuses a first argument that cannot be a variant (planning: no struct at all).
fn expect_variant(function: &str, arg: &DataType) -> DFResult<()> {
    match arg {
        DataType::Struct(_) | DataType::Null => Ok(()),
        other => plan_err!("{function} takes a variant, not {other}"),
    }
}

/// The variants of the first argument, as an array of the batch's length.
fn variants_of(value: &ColumnarValue, rows: usize) -> DFResult<ArrayRef> {
    value.to_array(rows)
}

/// A decoding failure of row values, as DataFusion reports it.
fn row_error(function: &str, e: Error) -> datafusion::error::DataFusionError {
    exec_datafusion_err!("{function}: {e}")
}

/// `variant_to_json(v)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct VariantToJsonUdf {
    signature: Signature,
}

impl VariantToJsonUdf {
    fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for VariantToJsonUdf {
    fn name(&self) -> &str {
        "variant_to_json"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> DFResult<DataType> {
        expect_variant(self.name(), &arg_types[0])?;
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DFResult<ColumnarValue> {
        let array = variants_of(&args.args[0], args.number_rows)?;
        let mut out = StringBuilder::new();
        if array.data_type() == &DataType::Null {
            out.extend(std::iter::repeat_n(None::<&str>, array.len()));
            return Ok(ColumnarValue::Array(Arc::new(out.finish())));
        }
        let column = VariantColumn::try_new(array.as_ref(), "argument of variant_to_json")?;
        for row in 0..column.len() {
            let variant = column.get(row).map_err(|e| row_error(self.name(), e))?;
            match variant {
                Some(v) => out.append_value(v.to_json_string()?),
                None => out.append_null(),
            }
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

/// `parse_json(text)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ParseJsonUdf {
    signature: Signature,
}

impl ParseJsonUdf {
    fn new() -> Self {
        Self {
            signature: Signature::string(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ParseJsonUdf {
    fn name(&self) -> &str {
        "parse_json"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DFResult<DataType> {
        Ok(variant_data_type())
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> DFResult<FieldRef> {
        Ok(variant_field(self.name()))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DFResult<ColumnarValue> {
        let text = cast(&args.args[0].to_array(args.number_rows)?, &DataType::Utf8)?;
        let text = text.as_string::<i32>();
        let mut out = VariantColumnBuilder::default();
        for row in 0..text.len() {
            if text.is_null(row) {
                out.append(None)?;
                continue;
            }
            let mut builder = VariantBuilder::new();
            builder
                .append_json(text.value(row))
                .map_err(|e| exec_datafusion_err!("parse_json: row {row} is not JSON text: {e}"))?;
            let (metadata, value) = builder.try_finish()?;
            out.append_encoded(&metadata, &value);
        }
        Ok(ColumnarValue::Array(out.finish()?))
    }
}

/// `variant_get(v, path [, type])`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct VariantGetUdf {
    signature: Signature,
}

impl VariantGetUdf {
    fn new() -> Self {
        Self {
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }
}

/// The Iceberg type named by `variant_get`'s third argument; `None` for `'variant'`.
fn requested_type(args: &ReturnFieldArgs) -> DFResult<Option<PrimitiveType>> {
    let Some(arg) = args.scalar_arguments.get(2) else {
        return Ok(None);
    };
    let name = match arg {
        Some(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s))) => s.to_lowercase(),
        _ => return plan_err!("variant_get: the type (third argument) must be a string literal"),
    };
    if name == "variant" {
        return Ok(None);
    }
    match PrimitiveType::parse(&name) {
        Ok(p) if target_type(&p).is_some() => Ok(Some(p)),
        _ => plan_err!(
            "variant_get: cannot extract as '{name}' (boolean, int, long, float, double, string, \
             binary, date, timestamp, timestamptz or variant)"
        ),
    }
}

/// The Arrow type `variant_get` returns for an Iceberg type, if it can extract it.
fn target_type(p: &PrimitiveType) -> Option<DataType> {
    Some(match p {
        PrimitiveType::Boolean => DataType::Boolean,
        PrimitiveType::Int => DataType::Int32,
        PrimitiveType::Long => DataType::Int64,
        PrimitiveType::Float => DataType::Float32,
        PrimitiveType::Double => DataType::Float64,
        PrimitiveType::String => DataType::Utf8,
        PrimitiveType::Binary => DataType::Binary,
        PrimitiveType::Date => DataType::Date32,
        PrimitiveType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        PrimitiveType::Timestamptz => DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into())),
        _ => return None,
    })
}

impl ScalarUDFImpl for VariantGetUdf {
    fn name(&self) -> &str {
        "variant_get"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DFResult<DataType> {
        plan_err!("variant_get's type comes from its arguments")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DFResult<FieldRef> {
        let types: Vec<&DataType> = args.arg_fields.iter().map(|f| f.data_type()).collect();
        if !(2..=3).contains(&types.len()) {
            return plan_err!("variant_get takes (variant, path) or (variant, path, type)");
        }
        expect_variant(self.name(), types[0])?;
        if !matches!(
            types[1],
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
        ) {
            return plan_err!("variant_get: the path must be a string, not {}", types[1]);
        }
        match requested_type(&args)?.as_ref().and_then(target_type) {
            Some(t) => Ok(Arc::new(Field::new(self.name(), t, true))),
            None => Ok(variant_field(self.name())),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DFResult<ColumnarValue> {
        let rows = args.number_rows;
        let array = variants_of(&args.args[0], rows)?;
        let paths = cast(&args.args[1].to_array(rows)?, &DataType::Utf8)?;
        let paths = paths.as_string::<i32>();
        let target = args.return_field.data_type().clone();
        let mut out = Extracted::new(&target, rows)?;
        if array.data_type() == &DataType::Null {
            (0..rows).try_for_each(|_| out.push(None))?;
            return Ok(ColumnarValue::Array(out.finish()?));
        }
        let column = VariantColumn::try_new(array.as_ref(), "argument of variant_get")?;
        for row in 0..rows {
            let variant = column.get(row).map_err(|e| row_error(self.name(), e))?;
            let (Some(variant), false) = (variant, paths.is_null(row)) else {
                out.push(None)?;
                continue;
            };
            let path = parse_path(paths.value(row))?;
            out.push(variant.get_path(&path))?;
        }
        Ok(ColumnarValue::Array(out.finish()?))
    }
}

/// A path in `variant_get`'s syntax: JSONPath-like, the leading `$` optional.
fn parse_path(text: &str) -> DFResult<VariantPath<'_>> {
    let trimmed = text.trim();
    let body = trimmed.strip_prefix('$').unwrap_or(trimmed);
    let body = body.strip_prefix('.').unwrap_or(body);
    VariantPath::try_from(body)
        .map_err(|e| exec_datafusion_err!("variant_get: malformed path '{text}': {e}"))
}

/// The output column of `variant_get`, of the type the call asked for.
enum Extracted {
    Variant(VariantColumnBuilder),
    Boolean(BooleanBuilder),
    Int(Int32Builder),
    Long(Int64Builder),
    Float(Float32Builder),
    Double(Float64Builder),
    String(StringBuilder),
    Binary(BinaryBuilder),
    Date(Date32Builder),
    Timestamp(TimestampMicrosecondBuilder, Option<Arc<str>>),
}

impl Extracted {
    fn new(target: &DataType, rows: usize) -> DFResult<Self> {
        Ok(match target {
            DataType::Struct(_) => Self::Variant(VariantColumnBuilder::default()),
            DataType::Boolean => Self::Boolean(BooleanBuilder::with_capacity(rows)),
            DataType::Int32 => Self::Int(Int32Builder::with_capacity(rows)),
            DataType::Int64 => Self::Long(Int64Builder::with_capacity(rows)),
            DataType::Float32 => Self::Float(Float32Builder::with_capacity(rows)),
            DataType::Float64 => Self::Double(Float64Builder::with_capacity(rows)),
            DataType::Utf8 => Self::String(StringBuilder::new()),
            DataType::Binary => Self::Binary(BinaryBuilder::new()),
            DataType::Date32 => Self::Date(Date32Builder::with_capacity(rows)),
            DataType::Timestamp(TimeUnit::Microsecond, zone) => Self::Timestamp(
                TimestampMicrosecondBuilder::with_capacity(rows),
                zone.clone(),
            ),
            other => return plan_err!("variant_get cannot return {other}"),
        })
    }

    /// Appends the value found (or NULL), converted as the module docs say.
    fn push(&mut self, found: Option<Variant<'_, '_>>) -> DFResult<()> {
        let Some(v) = found else {
            return self.push_null();
        };
        match self {
            Self::Variant(b) => b.append(Some(v))?,
            Self::Boolean(b) => b.append_option(v.as_boolean()),
            Self::Int(b) => b.append_option(v.as_int32()),
            Self::Long(b) => b.append_option(v.as_int64()),
            Self::Float(b) => b.append_option(v.as_f32()),
            Self::Double(b) => b.append_option(v.as_f64()),
            Self::String(b) => b.append_option(v.as_string()),
            Self::Binary(b) => b.append_option(v.as_u8_slice()),
            Self::Date(b) => b.append_option(v.as_naive_date().and_then(days_since_epoch)),
            Self::Timestamp(b, zone) => b.append_option(match zone {
                Some(_) => v.as_timestamp_micros().map(|t| t.timestamp_micros()),
                None => v
                    .as_timestamp_ntz_micros()
                    .map(|t| t.and_utc().timestamp_micros()),
            }),
        }
        Ok(())
    }

    fn push_null(&mut self) -> DFResult<()> {
        match self {
            Self::Variant(b) => b.append(None)?,
            Self::Boolean(b) => b.append_null(),
            Self::Int(b) => b.append_null(),
            Self::Long(b) => b.append_null(),
            Self::Float(b) => b.append_null(),
            Self::Double(b) => b.append_null(),
            Self::String(b) => b.append_null(),
            Self::Binary(b) => b.append_null(),
            Self::Date(b) => b.append_null(),
            Self::Timestamp(b, _) => b.append_null(),
        }
        Ok(())
    }

    fn finish(self) -> DFResult<ArrayRef> {
        Ok(match self {
            Self::Variant(b) => b.finish()?,
            Self::Boolean(mut b) => Arc::new(b.finish()),
            Self::Int(mut b) => Arc::new(b.finish()),
            Self::Long(mut b) => Arc::new(b.finish()),
            Self::Float(mut b) => Arc::new(b.finish()),
            Self::Double(mut b) => Arc::new(b.finish()),
            Self::String(mut b) => Arc::new(b.finish()),
            Self::Binary(mut b) => Arc::new(b.finish()),
            Self::Date(mut b) => Arc::new(b.finish()),
            Self::Timestamp(mut b, zone) => Arc::new(b.finish().with_timezone_opt(zone)),
        })
    }
}

fn days_since_epoch(date: chrono::NaiveDate) -> Option<i32> {
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
    i32::try_from((date - epoch).num_days()).ok()
}

#[cfg(test)]
#[path = "variant_tests.rs"]
mod tests;
