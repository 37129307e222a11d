//! Conversion of Iceberg schemas and values to Arrow.
//!
//! Every Arrow field carries its Iceberg field id in the field metadata under
//! [`FIELD_ID_KEY`] (`PARQUET:field_id`, the key the Parquet reader uses), so columns can be
//! matched by id rather than by name.
//!
//! | Iceberg | Arrow |
//! |---|---|
//! | boolean, int, long, float, double | Boolean, Int32, Int64, Float32, Float64 |
//! | decimal(P,S) | Decimal128(P,S) |
//! | date, time | Date32, Time64(µs) |
//! | timestamp / timestamptz | Timestamp(µs, None) / Timestamp(µs, "+00:00") |
//! | timestamp_ns / timestamptz_ns | Timestamp(ns, None) / Timestamp(ns, "+00:00") |
//! | string, binary | Utf8View, BinaryView at the top level (as DataFusion reads Parquet); Utf8, Binary nested |
//! | uuid | FixedSizeBinary(16) with the `arrow.uuid` extension name |
//! | fixed[L] | FixedSizeBinary(L) |
//! | struct, list, map | Struct, List, Map (field ids on every child) |

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Fields, Schema as ArrowSchema, TimeUnit};
use datafusion::common::ScalarValue;

use crate::error::{Error, Result};
use crate::spec::{Literal, NestedField, PrimitiveType, Schema, Type};

/// The Arrow field metadata key holding the Iceberg field id.
pub const FIELD_ID_KEY: &str = "PARQUET:field_id";
/// The Arrow extension-name metadata key.
pub const EXTENSION_NAME_KEY: &str = "ARROW:extension:name";
/// The timezone Iceberg's UTC-adjusted timestamps get in Arrow.
pub const UTC: &str = "+00:00";

/// The Arrow schema of an Iceberg schema; an error names the first column whose type Arrow
/// reading does not support yet (`variant`, `geometry`, ...).
pub fn schema_to_arrow(schema: &Schema) -> Result<ArrowSchema> {
    let fields = schema
        .columns()
        .iter()
        .map(|f| field_to_arrow(f, true, f.name.as_str()))
        .collect::<Result<Vec<_>>>()?;
    Ok(ArrowSchema::new(fields))
}

/// The Arrow field of an Iceberg field; `top_level` picks view types for strings and binary.
pub fn field_to_arrow(field: &NestedField, top_level: bool, path: &str) -> Result<Field> {
    let data_type = type_to_arrow(&field.field_type, top_level, path)?;
    let mut metadata = HashMap::from([(FIELD_ID_KEY.to_string(), field.id.to_string())]);
    if matches!(field.field_type, Type::Primitive(PrimitiveType::Uuid)) {
        metadata.insert(EXTENSION_NAME_KEY.to_string(), "arrow.uuid".to_string());
    }
    Ok(Field::new(&field.name, data_type, !field.required).with_metadata(metadata))
}

/// The Arrow type of an Iceberg type (`path` names the column in errors).
pub fn type_to_arrow(ty: &Type, top_level: bool, path: &str) -> Result<DataType> {
    Ok(match ty {
        Type::Primitive(p) => primitive_to_arrow(p, top_level, path)?,
        Type::Struct(s) => {
            let fields = s
                .fields
                .iter()
                .map(|f| field_to_arrow(f, false, &format!("{path}.{}", f.name)))
                .collect::<Result<Vec<_>>>()?;
            DataType::Struct(Fields::from(fields))
        }
        Type::List(l) => {
            let element = field_to_arrow(&l.element_field, false, &format!("{path}.element"))?;
            DataType::List(Arc::new(element))
        }
        Type::Map(m) => {
            let key = field_to_arrow(&m.key_field, false, &format!("{path}.key"))?;
            let value = field_to_arrow(&m.value_field, false, &format!("{path}.value"))?;
            let entries = Field::new(
                "key_value",
                DataType::Struct(Fields::from(vec![key, value])),
                false,
            );
            DataType::Map(Arc::new(entries), false)
        }
    })
}

/// The Arrow type of a primitive Iceberg type.
pub fn primitive_to_arrow(p: &PrimitiveType, top_level: bool, path: &str) -> Result<DataType> {
    use PrimitiveType as P;
    Ok(match p {
        P::Boolean => DataType::Boolean,
        P::Int => DataType::Int32,
        P::Long => DataType::Int64,
        P::Float => DataType::Float32,
        P::Double => DataType::Float64,
        P::Decimal { precision, scale } => {
            let (precision, scale) = (u8::try_from(*precision), i8::try_from(*scale));
            match (precision, scale) {
                (Ok(p), Ok(s)) => DataType::Decimal128(p, s),
                _ => {
                    return Err(Error::Unsupported(format!(
                        "column {path}: decimal out of range"
                    )));
                }
            }
        }
        P::Date => DataType::Date32,
        P::Time => DataType::Time64(TimeUnit::Microsecond),
        P::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        P::Timestamptz => DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into())),
        P::TimestampNs => DataType::Timestamp(TimeUnit::Nanosecond, None),
        P::TimestamptzNs => DataType::Timestamp(TimeUnit::Nanosecond, Some(UTC.into())),
        P::String if top_level => DataType::Utf8View,
        P::String => DataType::Utf8,
        P::Binary if top_level => DataType::BinaryView,
        P::Binary => DataType::Binary,
        P::Uuid => DataType::FixedSizeBinary(16),
        P::Fixed(len) => {
            DataType::FixedSizeBinary(i32::try_from(*len).map_err(|_| {
                Error::Unsupported(format!("column {path}: fixed[{len}] is too long"))
            })?)
        }
        P::Unsupported(name) => {
            return Err(Error::Unsupported(format!(
                "column '{path}' has type {name}, which icefloe cannot read yet"
            )));
        }
    })
}

/// A typed Arrow scalar for an Iceberg value of type `ty` (`None` gives a typed NULL), with the
/// Arrow type [`primitive_to_arrow`] gives at the top level.
pub fn literal_to_scalar(value: Option<&Literal>, ty: &PrimitiveType) -> Result<ScalarValue> {
    let data_type = primitive_to_arrow(ty, true, "value")?;
    let Some(value) = value else {
        return ScalarValue::try_from(&data_type).map_err(Error::from);
    };
    let tz = || Some(Arc::from(UTC));
    let scalar = match (value, ty) {
        (Literal::Boolean(b), _) => ScalarValue::Boolean(Some(*b)),
        (Literal::Int(v), PrimitiveType::Long) => ScalarValue::Int64(Some(i64::from(*v))),
        (Literal::Int(v), _) => ScalarValue::Int32(Some(*v)),
        (Literal::Long(v), _) => ScalarValue::Int64(Some(*v)),
        (Literal::Float(v), PrimitiveType::Double) => ScalarValue::Float64(Some(f64::from(*v))),
        (Literal::Float(v), _) => ScalarValue::Float32(Some(*v)),
        (Literal::Double(v), _) => ScalarValue::Float64(Some(*v)),
        (Literal::Decimal(v), PrimitiveType::Decimal { .. }) => {
            let DataType::Decimal128(p, s) = data_type else {
                return Err(Error::Unsupported(format!("decimal type {ty}")));
            };
            ScalarValue::Decimal128(Some(*v), p, s)
        }
        (Literal::Date(d), _) => ScalarValue::Date32(Some(*d)),
        (Literal::Time(t), _) => ScalarValue::Time64Microsecond(Some(*t)),
        (Literal::Timestamp(t), _) => ScalarValue::TimestampMicrosecond(Some(*t), None),
        (Literal::Timestamptz(t), _) => ScalarValue::TimestampMicrosecond(Some(*t), tz()),
        (Literal::TimestampNs(t), _) => ScalarValue::TimestampNanosecond(Some(*t), None),
        (Literal::TimestamptzNs(t), _) => ScalarValue::TimestampNanosecond(Some(*t), tz()),
        (Literal::String(s), _) => ScalarValue::Utf8View(Some(s.clone())),
        (Literal::Uuid(u), _) => ScalarValue::FixedSizeBinary(16, Some(u.to_vec())),
        (Literal::Fixed(b), _) => {
            let len = i32::try_from(b.len()).map_err(|_| Error::Unsupported("fixed".into()))?;
            ScalarValue::FixedSizeBinary(len, Some(b.clone()))
        }
        (Literal::Binary(b), _) => ScalarValue::BinaryView(Some(b.clone())),
        (other, _) => {
            return Err(Error::invalid(
                format_args!("value {other:?}"),
                format_args!("does not fit type {ty}"),
            ));
        }
    };
    // Values written for a narrower type (int for a long column, say) are widened above; a
    // date partition value under a promoted timestamp column needs a cast.
    if scalar.data_type() != data_type {
        return scalar.cast_to(&data_type).map_err(Error::from);
    }
    Ok(scalar)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_ids_ride_in_field_metadata() {
        let schema = Schema::from_json(&json!({
            "type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "id", "required": true, "type": "long"},
                {"id": 2, "name": "tags", "required": false,
                 "type": {"type": "list", "element-id": 3, "element": "string", "element-required": true}},
                {"id": 4, "name": "m", "required": false,
                 "type": {"type": "map", "key-id": 5, "key": "string", "value-id": 6, "value": "double", "value-required": false}},
                {"id": 7, "name": "u", "required": false, "type": "uuid"},
                {"id": 8, "name": "ts", "required": false, "type": "timestamptz"}
            ]}))
        .unwrap();
        let arrow = schema_to_arrow(&schema).unwrap();
        assert_eq!(arrow.field(0).metadata()[FIELD_ID_KEY], "1");
        assert!(!arrow.field(0).is_nullable());
        let DataType::List(element) = arrow.field(1).data_type() else {
            panic!()
        };
        assert_eq!(element.metadata()[FIELD_ID_KEY], "3");
        assert_eq!(element.data_type(), &DataType::Utf8);
        let DataType::Map(entries, _) = arrow.field(2).data_type() else {
            panic!()
        };
        let DataType::Struct(kv) = entries.data_type() else {
            panic!()
        };
        assert_eq!(kv[1].metadata()[FIELD_ID_KEY], "6");
        assert_eq!(arrow.field(3).metadata()[EXTENSION_NAME_KEY], "arrow.uuid");
        assert_eq!(
            arrow.field(4).data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into()))
        );
    }

    #[test]
    fn unsupported_types_name_the_column() {
        let schema = Schema::from_json(&json!({
            "type": "struct", "fields": [{"id": 1, "name": "v", "required": false, "type": "variant"}]
        }))
        .unwrap();
        let err = schema_to_arrow(&schema).unwrap_err().to_string();
        assert!(err.contains("'v'") && err.contains("variant"), "{err}");
    }

    #[test]
    fn literals_become_typed_scalars() {
        let dec = PrimitiveType::Decimal {
            precision: 8,
            scale: 3,
        };
        assert_eq!(
            literal_to_scalar(Some(&Literal::Decimal(1500)), &dec).unwrap(),
            ScalarValue::Decimal128(Some(1500), 8, 3)
        );
        assert_eq!(
            literal_to_scalar(Some(&Literal::Int(3)), &PrimitiveType::Long).unwrap(),
            ScalarValue::Int64(Some(3))
        );
        assert_eq!(
            literal_to_scalar(None, &PrimitiveType::String).unwrap(),
            ScalarValue::Utf8View(None)
        );
    }
}
