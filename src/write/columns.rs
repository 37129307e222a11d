//! Which of a table's columns a data file holds, and which values of the v3 types icefloe
//! writes (spec: "Primitive Types", "Semi-structured Types"; "Parquet" in "File Formats"):
//!
//! | type | in the data file |
//! |---|---|
//! | `unknown` | no column (spec: "unknown" has no file column); the values are null by type |
//! | `variant` | an unshredded Parquet `VARIANT` group; every value is validated first (arrow-rs' decoder) and a malformed one is refused |
//! | `geometry`, `geography` | a `GEOMETRY` / `GEOGRAPHY` binary column; every value must be one ISO WKB geometry ([`crate::spec::wkb::validate`]); no bounds (spec: geometry bounds are bounding boxes, which icefloe does not compute) |
//!
//! These types are written at the top level only: nested in a struct, list or map they are
//! refused when the writer is made. [`parquet_schema`] gives the file its Parquet logical types.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Schema as ArrowSchema};
use datafusion::parquet::arrow::ArrowSchemaConverter;
use datafusion::parquet::basic::{EdgeInterpolationAlgorithm, LogicalType};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::schema::types::{SchemaDescriptor, Type as ParquetType};

use crate::error::{Error, Result};
use crate::spec::types::{DEFAULT_CRS, EdgeAlgorithm};
use crate::spec::wkb;
use crate::spec::{NestedField, PrimitiveType, Schema, Type};
use crate::to_arrow::variant::VariantColumn;

/// The columns of a table's Arrow batches a data file holds, and the checks their values pass.
#[derive(Debug, Clone, Default)]
pub(crate) struct FileColumns {
    /// The indexes of the top-level columns written (all but `unknown` ones), in order.
    pub(crate) kept: Vec<usize>,
    /// Top-level variant columns (index, name), whose values are validated.
    variants: Vec<(usize, String)>,
    /// Top-level geometry / geography columns (index, name), whose values must be WKB.
    geo: Vec<(usize, String)>,
}

impl FileColumns {
    /// The file columns of `schema`; a v3 type nested in a struct, list or map is
    /// [`Error::Unsupported`] naming the column.
    pub(crate) fn of(schema: &Schema) -> Result<Self> {
        let mut columns = Self::default();
        for (index, field) in schema.columns().iter().enumerate() {
            let name = field.name.clone();
            match &field.field_type {
                Type::Primitive(PrimitiveType::Unknown) => continue,
                Type::Primitive(PrimitiveType::Variant) => columns.variants.push((index, name)),
                Type::Primitive(
                    PrimitiveType::Geometry { .. } | PrimitiveType::Geography { .. },
                ) => columns.geo.push((index, name)),
                Type::Primitive(_) => {}
                nested => refuse_nested(nested, &field.name)?,
            }
            columns.kept.push(index);
        }
        Ok(columns)
    }

    /// The names of the variant columns: their Parquet leaves (`metadata`, `value`) carry no
    /// field ids, and no metrics are kept for them.
    pub(crate) fn variant_names(&self) -> impl Iterator<Item = &str> {
        self.variants.iter().map(|(_, name)| name.as_str())
    }

    /// Checks a batch of the table's Arrow schema before it is written: every variant decodes,
    /// every geometry and geography value is WKB.
    pub(crate) fn check(&self, batch: &RecordBatch) -> Result<()> {
        for (index, name) in &self.variants {
            let column = VariantColumn::try_new(batch.column(*index).as_ref(), name)?;
            for row in 0..column.len() {
                column.get(row).map_err(|e| {
                    Error::invalid(
                        format_args!("a value of the variant column '{name}'"),
                        format_args!("is not a valid variant: {e}"),
                    )
                })?;
            }
        }
        for (index, name) in &self.geo {
            check_wkb(batch.column(*index).as_ref(), name)?;
        }
        Ok(())
    }
}

/// Checks that every value of a geometry or geography column (binary in any Arrow layout) is
/// one WKB geometry.
fn check_wkb(column: &dyn Array, name: &str) -> Result<()> {
    let values: Box<dyn Iterator<Item = Option<&[u8]>>> = match column.data_type() {
        DataType::BinaryView => Box::new(column.as_binary_view().iter()),
        DataType::Binary => Box::new(column.as_binary::<i32>().iter()),
        DataType::LargeBinary => Box::new(column.as_binary::<i64>().iter()),
        other => {
            return Err(Error::invalid(
                format_args!("the geometry column '{name}'"),
                format_args!("holds {other}, not WKB bytes"),
            ));
        }
    };
    for (row, value) in values.enumerate() {
        if let Some(Err(e)) = value.map(wkb::validate) {
            return Err(Error::invalid(
                format_args!("the value of the geometry column '{name}' in row {row}"),
                e,
            ));
        }
    }
    Ok(())
}

/// Refuses a v3 type (`variant`, `unknown`, `geometry`, `geography`) anywhere inside a
/// nested column `path`.
fn refuse_nested(ty: &Type, path: &str) -> Result<()> {
    let children: Vec<&NestedField> = match ty {
        Type::Primitive(p) if p.is_v3() && !p.has_value_bounds() => {
            return Err(Error::Unsupported(format!(
                "writing column '{path}' of type {p} inside a struct, list or map"
            )));
        }
        Type::Primitive(_) => return Ok(()),
        Type::Struct(s) => s.fields.iter().map(AsRef::as_ref).collect(),
        Type::List(l) => vec![l.element_field.as_ref()],
        Type::Map(m) => vec![m.key_field.as_ref(), m.value_field.as_ref()],
    };
    children
        .into_iter()
        .try_for_each(|f| refuse_nested(&f.field_type, &format!("{path}.{}", f.name)))
}

/// The Parquet schema parquet-rs derives from the Arrow schema (field ids included), with the
/// logical types the spec asks for that parquet-rs only adds with cargo features DataFusion does
/// not enable: `UUID` on uuid columns, `VARIANT` on variant groups, `GEOMETRY(crs)` and
/// `GEOGRAPHY(crs, algorithm)` on geometry / geography columns (the default CRS and the
/// spherical algorithm left implicit, as Parquet's defaults are the spec's).
pub(crate) fn parquet_schema(
    arrow: &ArrowSchema,
    schema: &Schema,
) -> std::result::Result<SchemaDescriptor, ParquetError> {
    let converted = ArrowSchemaConverter::new().convert(arrow)?;
    let root = with_logical_types(converted.root_schema(), schema)?;
    Ok(SchemaDescriptor::new(Arc::new(root)))
}

fn with_logical_types(
    t: &ParquetType,
    schema: &Schema,
) -> std::result::Result<ParquetType, ParquetError> {
    let info = t.get_basic_info();
    let iceberg = match info.has_id() {
        true => schema
            .field_by_id(info.id())
            .and_then(|f| f.field_type.as_primitive()),
        false => None,
    };
    match t {
        ParquetType::GroupType { basic_info, fields } => {
            let fields = fields
                .iter()
                .map(|f| with_logical_types(f, schema).map(Arc::new))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            if iceberg != Some(&PrimitiveType::Variant) {
                return Ok(ParquetType::GroupType {
                    basic_info: basic_info.clone(),
                    fields,
                });
            }
            ParquetType::group_type_builder(basic_info.name())
                .with_repetition(basic_info.repetition())
                .with_logical_type(Some(LogicalType::variant(None)))
                .with_id(Some(basic_info.id()))
                .with_fields(fields)
                .build()
        }
        ParquetType::PrimitiveType {
            basic_info,
            physical_type,
            type_length,
            ..
        } => match iceberg.and_then(parquet_logical_type) {
            Some(logical) => ParquetType::primitive_type_builder(basic_info.name(), *physical_type)
                .with_repetition(basic_info.repetition())
                .with_length(*type_length)
                .with_logical_type(Some(logical))
                .with_id(Some(basic_info.id()))
                .build(),
            None => Ok(t.clone()),
        },
    }
}

/// The Parquet logical type of a primitive column that parquet-rs does not set itself.
fn parquet_logical_type(p: &PrimitiveType) -> Option<LogicalType> {
    let crs = |crs: &Option<String>| crs.clone().filter(|c| c != DEFAULT_CRS);
    Some(match p {
        PrimitiveType::Uuid => LogicalType::Uuid,
        PrimitiveType::Geometry { crs: c } => LogicalType::geometry(crs(c)),
        PrimitiveType::Geography { crs: c, algorithm } => {
            let algorithm = algorithm.and_then(|a| match a {
                EdgeAlgorithm::Spherical => None,
                EdgeAlgorithm::Vincenty => Some(EdgeInterpolationAlgorithm::VINCENTY),
                EdgeAlgorithm::Thomas => Some(EdgeInterpolationAlgorithm::THOMAS),
                EdgeAlgorithm::Andoyer => Some(EdgeInterpolationAlgorithm::ANDOYER),
                EdgeAlgorithm::Karney => Some(EdgeInterpolationAlgorithm::KARNEY),
            });
            LogicalType::geography(crs(c), algorithm)
        }
        _ => return None,
    })
}

#[cfg(test)]
#[path = "columns_tests.rs"]
mod tests;
