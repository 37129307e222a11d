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
//! | variant | Struct of non-null Binary `metadata` and `value`, extension `arrow.parquet.variant` ([`variant`]) |
//! | geometry(C), geography(C, A) | WKB as BinaryView (Binary nested), extension `geoarrow.wkb` with metadata `{"crs": C}` (and `"edges": A`) |
//! | unknown | Null (always nullable); never a column of a data file |

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Fields, Schema as ArrowSchema, TimeUnit};
use datafusion::common::ScalarValue;

use crate::error::{Error, Result};
use crate::spec::{Literal, NestedField, PrimitiveType, Schema, Type};

pub mod variant;

/// The Arrow field metadata key holding the Iceberg field id.
pub const FIELD_ID_KEY: &str = "PARQUET:field_id";
/// The Arrow extension-name metadata key.
pub const EXTENSION_NAME_KEY: &str = "ARROW:extension:name";
/// The Arrow extension-metadata key.
pub const EXTENSION_METADATA_KEY: &str = "ARROW:extension:metadata";
/// The GeoArrow extension name of WKB geometries, which `geometry` and `geography` columns
/// carry with their CRS (and edges) as extension metadata.
pub const WKB_EXTENSION: &str = "geoarrow.wkb";
/// The timezone Iceberg's UTC-adjusted timestamps get in Arrow.
pub const UTC: &str = "+00:00";

/// The Arrow schema of an Iceberg schema; an error names the first column whose type has no
/// Arrow form (a decimal or fixed length out of Arrow's range).
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
    let nullable = match &field.field_type {
        Type::Primitive(p) => {
            metadata.extend(extension_metadata(p));
            // `unknown` holds nulls only, whatever the metadata says (spec: it must be optional).
            !field.required || *p == PrimitiveType::Unknown
        }
        _ => !field.required,
    };
    Ok(Field::new(&field.name, data_type, nullable).with_metadata(metadata))
}

/// The Arrow extension type (name and metadata) a primitive type's fields carry: `arrow.uuid`,
/// `arrow.parquet.variant`, or `geoarrow.wkb` with the CRS (and the edge algorithm of a
/// geography) as GeoArrow writes them, `{"crs":"OGC:CRS84","edges":"spherical"}`.
pub fn extension_metadata(p: &PrimitiveType) -> Vec<(String, String)> {
    let pair = |name: &str, metadata: Option<String>| {
        let mut pairs = vec![(EXTENSION_NAME_KEY.to_string(), name.to_string())];
        pairs.extend(metadata.map(|m| (EXTENSION_METADATA_KEY.to_string(), m)));
        pairs
    };
    match p {
        PrimitiveType::Uuid => pair("arrow.uuid", None),
        PrimitiveType::Variant => pair(variant::VARIANT_EXTENSION, Some(String::new())),
        PrimitiveType::Geometry { .. } | PrimitiveType::Geography { .. } => {
            let mut geo = serde_json::Map::new();
            geo.insert(
                "crs".into(),
                p.crs().unwrap_or(crate::spec::types::DEFAULT_CRS).into(),
            );
            if let Some(edges) = p.edge_algorithm() {
                geo.insert("edges".into(), edges.name().into());
            }
            pair(
                WKB_EXTENSION,
                Some(serde_json::Value::Object(geo).to_string()),
            )
        }
        _ => Vec::new(),
    }
}

/// The geometry or geography type of a `geoarrow.wkb` field (the inverse of
/// [`extension_metadata`]): a geography when its extension
/// metadata names `"edges"`, the CRS from `"crs"` (a string; the default CRS left implicit).
pub fn geo_type(field: &Field, path: &str) -> Result<PrimitiveType> {
    let metadata = field.metadata().get(EXTENSION_METADATA_KEY);
    let json: serde_json::Value = match metadata.map(String::as_str) {
        None | Some("") => serde_json::Value::Null,
        Some(text) => serde_json::from_str(text).map_err(|e| {
            Error::invalid(
                format_args!("column '{path}'"),
                format_args!("its geoarrow.wkb metadata is not JSON: {e}"),
            )
        })?,
    };
    let crs = match &json["crs"] {
        serde_json::Value::String(crs) if crs != crate::spec::types::DEFAULT_CRS => {
            Some(crs.clone())
        }
        serde_json::Value::String(_) | serde_json::Value::Null => None,
        other => {
            return Err(Error::Unsupported(format!(
                "column '{path}': a CRS given as {other} (only CRS strings have an Iceberg form)"
            )));
        }
    };
    let Some(edges) = json["edges"].as_str() else {
        return Ok(PrimitiveType::Geometry { crs });
    };
    let algorithm = crate::spec::types::EdgeAlgorithm::from_name(edges).ok_or_else(|| {
        Error::Unsupported(format!(
            "column '{path}': edges '{edges}' have no Iceberg form"
        ))
    })?;
    let algorithm =
        (algorithm != crate::spec::types::EdgeAlgorithm::Spherical).then_some(algorithm);
    Ok(PrimitiveType::Geography { crs, algorithm })
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
        P::Binary | P::Geometry { .. } | P::Geography { .. } if top_level => DataType::BinaryView,
        P::Binary | P::Geometry { .. } | P::Geography { .. } => DataType::Binary,
        P::Uuid => DataType::FixedSizeBinary(16),
        P::Fixed(len) => {
            DataType::FixedSizeBinary(i32::try_from(*len).map_err(|_| {
                Error::Unsupported(format!("column {path}: fixed[{len}] is too long"))
            })?)
        }
        P::Variant => variant::variant_data_type(),
        P::Unknown => DataType::Null,
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
    fn v3_types_have_their_arrow_forms() {
        let schema = Schema::from_json(&json!({
        "type": "struct", "fields": [
            {"id": 1, "name": "v", "required": false, "type": "variant"},
            {"id": 2, "name": "g", "required": true, "type": "geometry"},
            {"id": 3, "name": "h", "required": false, "type": "geography(srid:4269, karney)"},
            {"id": 4, "name": "u", "required": true, "type": "unknown"}
        ]}))
        .unwrap();
        let arrow = schema_to_arrow(&schema).unwrap();
        let v = arrow.field(0);
        assert_eq!(v.metadata()[EXTENSION_NAME_KEY], "arrow.parquet.variant");
        let DataType::Struct(parts) = v.data_type() else {
            panic!("{v:?}")
        };
        let parts: Vec<_> = parts
            .iter()
            .map(|f| (f.name().as_str(), f.data_type(), f.is_nullable()))
            .collect();
        assert_eq!(
            parts,
            [
                ("metadata", &DataType::Binary, false),
                ("value", &DataType::Binary, false)
            ]
        );
        let (g, h) = (arrow.field(1), arrow.field(2));
        assert_eq!(g.data_type(), &DataType::BinaryView);
        assert_eq!(g.metadata()[EXTENSION_NAME_KEY], "geoarrow.wkb");
        assert_eq!(
            g.metadata()[EXTENSION_METADATA_KEY],
            r#"{"crs":"OGC:CRS84"}"#
        );
        assert_eq!(
            h.metadata()[EXTENSION_METADATA_KEY],
            r#"{"crs":"srid:4269","edges":"karney"}"#
        );
        let u = arrow.field(3);
        assert_eq!(u.data_type(), &DataType::Null);
        assert!(u.is_nullable(), "unknown holds nulls only");
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

    #[test]
    fn geo_types_round_trip_through_their_extension_metadata() {
        for text in [
            "geometry",
            "geometry(srid:3857)",
            "geography",
            "geography(srid:4269)",
            "geography(OGC:CRS84, vincenty)",
        ] {
            let p = PrimitiveType::parse(text).unwrap();
            let metadata = extension_metadata(&p).into_iter().collect();
            let field = Field::new("g", DataType::Binary, true).with_metadata(metadata);
            let back = geo_type(&field, "g").unwrap();
            // The default CRS and algorithm come back implicit, as the same types.
            assert_eq!(back.crs(), p.crs(), "{text}");
            assert_eq!(back.edge_algorithm(), p.edge_algorithm(), "{text}");
        }
        let odd = Field::new("g", DataType::Binary, true).with_metadata(HashMap::from([
            (EXTENSION_NAME_KEY.to_string(), WKB_EXTENSION.to_string()),
            (
                EXTENSION_METADATA_KEY.to_string(),
                r#"{"crs":{"id":1}}"#.to_string(),
            ),
        ]));
        let err = geo_type(&odd, "g").unwrap_err().to_string();
        assert!(err.contains("column 'g'"), "{err}");
    }
}
