//! Iceberg data types (spec: "Schemas and Data Types") and their JSON form
//! (spec Appendix C: "JSON serialization").
//!
//! Types are identified structurally; fields are identified by their field id, never by name.

use std::fmt;
use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value as JsonValue, json};

use crate::error::{Error, Result};

mod geo;
pub use geo::{DEFAULT_CRS, EdgeAlgorithm};

/// Precision of the widest decimal Iceberg supports.
pub const MAX_DECIMAL_PRECISION: u32 = 38;

/// A primitive (non-nested) Iceberg type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PrimitiveType {
    /// `boolean`
    Boolean,
    /// `int`: 32-bit signed integer.
    Int,
    /// `long`: 64-bit signed integer.
    Long,
    /// `float`: 32-bit IEEE 754.
    Float,
    /// `double`: 64-bit IEEE 754.
    Double,
    /// `decimal(P,S)`: fixed-point decimal.
    Decimal {
        /// Total digits, at most 38.
        precision: u32,
        /// Digits after the point.
        scale: u32,
    },
    /// `date`: calendar date without zone (days since 1970-01-01).
    Date,
    /// `time`: time of day, microseconds, no date or zone.
    Time,
    /// `timestamp`: microseconds since epoch, no zone.
    Timestamp,
    /// `timestamptz`: microseconds since epoch, stored as UTC.
    Timestamptz,
    /// `timestamp_ns` (v3): nanoseconds since epoch, no zone.
    TimestampNs,
    /// `timestamptz_ns` (v3): nanoseconds since epoch, stored as UTC.
    TimestamptzNs,
    /// `string`: UTF-8 text.
    String,
    /// `uuid`: 16-byte universally unique identifier.
    Uuid,
    /// `fixed[L]`: fixed-length byte array.
    Fixed(u64),
    /// `binary`: variable-length bytes.
    Binary,
    /// `variant` (v3): semi-structured values in the Parquet variant binary encoding (a
    /// `metadata` and a `value` byte string; spec "Semi-structured Types").
    Variant,
    /// `unknown` (v3): a column of nulls only, for a type not known yet. It must be optional,
    /// has no column in data files and takes no default but null.
    Unknown,
    /// `geometry(C)` (v3): OGC simple features as WKB, with planar edges, in the coordinate
    /// reference system C (`None`: written without one, [`DEFAULT_CRS`]).
    Geometry {
        /// The CRS as written in the type (`srid:4326`, `projjson:key`, ...).
        crs: Option<String>,
    },
    /// `geography(C, A)` (v3): OGC simple features as WKB on the earth's surface, in the CRS C,
    /// edges interpolated by algorithm A (`None`: written without one; [`DEFAULT_CRS`],
    /// [`EdgeAlgorithm::Spherical`]).
    Geography {
        /// The CRS as written in the type.
        crs: Option<String>,
        /// The edge-interpolation algorithm as written in the type.
        algorithm: Option<EdgeAlgorithm>,
    },
}

impl PrimitiveType {
    /// Parses the JSON string form (`"decimal(9, 2)"`, `"fixed[16]"`, `"long"`, ...); anything
    /// else is an [`Error::Corrupt`] without a path.
    pub fn parse(s: &str) -> Result<Self> {
        let t = s.trim();
        let simple = match t {
            "boolean" => Some(Self::Boolean),
            "int" => Some(Self::Int),
            "long" => Some(Self::Long),
            "float" => Some(Self::Float),
            "double" => Some(Self::Double),
            "date" => Some(Self::Date),
            "time" => Some(Self::Time),
            "timestamp" => Some(Self::Timestamp),
            "timestamptz" => Some(Self::Timestamptz),
            "timestamp_ns" => Some(Self::TimestampNs),
            "timestamptz_ns" => Some(Self::TimestamptzNs),
            "string" => Some(Self::String),
            "uuid" => Some(Self::Uuid),
            "binary" => Some(Self::Binary),
            "variant" => Some(Self::Variant),
            "unknown" => Some(Self::Unknown),
            _ => None,
        };
        if let Some(p) = simple {
            return Ok(p);
        }
        if let Some(args) = t.strip_prefix("decimal(").and_then(|r| r.strip_suffix(')')) {
            let (p, s) = args
                .split_once(',')
                .ok_or_else(|| corrupt(format!("malformed decimal type '{t}'")))?;
            let precision: u32 = p
                .trim()
                .parse()
                .map_err(|_| corrupt(format!("malformed decimal precision in '{t}'")))?;
            let scale: u32 = s
                .trim()
                .parse()
                .map_err(|_| corrupt(format!("malformed decimal scale in '{t}'")))?;
            if precision == 0 || precision > MAX_DECIMAL_PRECISION || scale > precision {
                return Err(corrupt(format!("decimal type '{t}' is out of range")));
            }
            return Ok(Self::Decimal { precision, scale });
        }
        if let Some(len) = t.strip_prefix("fixed[").and_then(|r| r.strip_suffix(']')) {
            let len: u64 = len
                .trim()
                .parse()
                .map_err(|_| corrupt(format!("malformed fixed length in '{t}'")))?;
            return Ok(Self::Fixed(len));
        }
        if let Some(p) = geo::parse(t)? {
            return Ok(p);
        }
        Err(corrupt(format!("unknown type '{t}'")))
    }

    /// Whether only format version 3 has this type (`timestamp_ns`, `timestamptz_ns`,
    /// `variant`, `unknown`, `geometry`, `geography`; spec "Version 3").
    pub fn is_v3(&self) -> bool {
        matches!(
            self,
            Self::TimestampNs
                | Self::TimestamptzNs
                | Self::Variant
                | Self::Unknown
                | Self::Geometry { .. }
                | Self::Geography { .. }
        )
    }

    /// Whether the binary single-value form (spec Appendix D) orders this type's values, so
    /// that `lower_bounds` / `upper_bounds` may prune: not for `variant` (no order), `unknown`
    /// (no values) nor `geometry` / `geography`, whose bounds are bounding-box corners
    /// (`x:y:z:m`), not values.
    pub fn has_value_bounds(&self) -> bool {
        !matches!(
            self,
            Self::Variant | Self::Unknown | Self::Geometry { .. } | Self::Geography { .. }
        )
    }

    /// The CRS of a `geometry` or `geography` ([`DEFAULT_CRS`] when the type names none).
    pub fn crs(&self) -> Option<&str> {
        match self {
            Self::Geometry { crs } | Self::Geography { crs, .. } => {
                Some(crs.as_deref().unwrap_or(DEFAULT_CRS))
            }
            _ => None,
        }
    }

    /// The edge-interpolation algorithm of a `geography` (`spherical` when the type names
    /// none).
    pub fn edge_algorithm(&self) -> Option<EdgeAlgorithm> {
        match self {
            Self::Geography { algorithm, .. } => {
                Some(algorithm.unwrap_or(EdgeAlgorithm::Spherical))
            }
            _ => None,
        }
    }

    /// Whether a value of type `self` may be read as `to` (spec: "Schema Evolution",
    /// allowed type promotions; v3 adds date -> timestamp/timestamp_ns and `unknown` -> any).
    pub fn can_promote_to(&self, to: &PrimitiveType) -> bool {
        use PrimitiveType::*;
        if self == to {
            return true;
        }
        match (self, to) {
            (Unknown, _) => true,
            (Int, Long) | (Float, Double) => true,
            (Date, Timestamp | TimestampNs) => true,
            (
                Decimal {
                    precision: p1,
                    scale: s1,
                },
                Decimal {
                    precision: p2,
                    scale: s2,
                },
            ) => s1 == s2 && p2 >= p1,
            _ => false,
        }
    }
}

impl fmt::Display for PrimitiveType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Boolean => f.write_str("boolean"),
            Self::Int => f.write_str("int"),
            Self::Long => f.write_str("long"),
            Self::Float => f.write_str("float"),
            Self::Double => f.write_str("double"),
            Self::Decimal { precision, scale } => write!(f, "decimal({precision}, {scale})"),
            Self::Date => f.write_str("date"),
            Self::Time => f.write_str("time"),
            Self::Timestamp => f.write_str("timestamp"),
            Self::Timestamptz => f.write_str("timestamptz"),
            Self::TimestampNs => f.write_str("timestamp_ns"),
            Self::TimestamptzNs => f.write_str("timestamptz_ns"),
            Self::String => f.write_str("string"),
            Self::Uuid => f.write_str("uuid"),
            Self::Fixed(len) => write!(f, "fixed[{len}]"),
            Self::Binary => f.write_str("binary"),
            Self::Variant => f.write_str("variant"),
            Self::Unknown => f.write_str("unknown"),
            Self::Geometry { crs } => geo::fmt_geometry(f, crs.as_deref()),
            Self::Geography { crs, algorithm } => geo::fmt_geography(f, crs.as_deref(), *algorithm),
        }
    }
}

/// Any Iceberg type: a primitive or one of the three nested types.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    /// A primitive type.
    Primitive(PrimitiveType),
    /// A struct: an ordered list of named fields, each with a field id.
    Struct(StructType),
    /// A list whose element has its own field id.
    List(ListType),
    /// A map whose key and value have their own field ids.
    Map(MapType),
}

impl Type {
    /// The primitive type, if this is one.
    pub fn as_primitive(&self) -> Option<&PrimitiveType> {
        match self {
            Type::Primitive(p) => Some(p),
            _ => None,
        }
    }

    /// Whether this is a struct, list or map.
    pub fn is_nested(&self) -> bool {
        !matches!(self, Type::Primitive(_))
    }
}

impl From<PrimitiveType> for Type {
    fn from(p: PrimitiveType) -> Self {
        Type::Primitive(p)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Primitive(p) => p.fmt(f),
            Type::Struct(s) => {
                f.write_str("struct<")?;
                for (i, field) in s.fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {}", field.name, field.field_type)?;
                }
                f.write_str(">")
            }
            Type::List(l) => write!(f, "list<{}>", l.element_field.field_type),
            Type::Map(m) => write!(
                f,
                "map<{}, {}>",
                m.key_field.field_type, m.value_field.field_type
            ),
        }
    }
}

/// A field of a struct (or the element of a list, the key or value of a map).
#[derive(Debug, Clone, PartialEq)]
pub struct NestedField {
    /// The field id: the identity of the column across renames and reorders.
    pub id: i32,
    /// The current name.
    pub name: String,
    /// Whether a value must be present.
    pub required: bool,
    /// The type.
    pub field_type: Type,
    /// Documentation, if any.
    pub doc: Option<String>,
    /// v3 `initial-default`: the value of this field in rows written before it existed,
    /// in the JSON single-value form (spec Appendix D).
    pub initial_default: Option<JsonValue>,
    /// v3 `write-default`: the value writers use when none is given.
    pub write_default: Option<JsonValue>,
}

impl NestedField {
    /// An optional field.
    pub fn optional(id: i32, name: impl Into<String>, field_type: impl Into<Type>) -> Self {
        Self {
            id,
            name: name.into(),
            required: false,
            field_type: field_type.into(),
            doc: None,
            initial_default: None,
            write_default: None,
        }
    }

    /// A required field.
    pub fn required(id: i32, name: impl Into<String>, field_type: impl Into<Type>) -> Self {
        Self {
            required: true,
            ..Self::optional(id, name, field_type)
        }
    }

    /// Sets the v3 `initial-default` (JSON single-value form).
    pub fn with_initial_default(mut self, value: JsonValue) -> Self {
        self.initial_default = Some(value);
        self
    }

    fn to_json(&self) -> JsonValue {
        let mut m = Map::new();
        m.insert("id".into(), json!(self.id));
        m.insert("name".into(), json!(self.name));
        m.insert("required".into(), json!(self.required));
        m.insert("type".into(), self.field_type.to_json());
        if let Some(doc) = &self.doc {
            m.insert("doc".into(), json!(doc));
        }
        if let Some(v) = &self.initial_default {
            m.insert("initial-default".into(), v.clone());
        }
        if let Some(v) = &self.write_default {
            m.insert("write-default".into(), v.clone());
        }
        JsonValue::Object(m)
    }

    fn from_json(v: &JsonValue) -> Result<Self> {
        let obj = v
            .as_object()
            .ok_or_else(|| corrupt("a struct field must be a JSON object"))?;
        let id = json_i32(obj, "id")?;
        let name = obj
            .get("name")
            .and_then(JsonValue::as_str)
            .ok_or_else(|| corrupt(format!("field {id} has no name")))?
            .to_string();
        let required = obj
            .get("required")
            .and_then(JsonValue::as_bool)
            .ok_or_else(|| corrupt(format!("field '{name}' has no 'required' flag")))?;
        let field_type = Type::from_json(
            obj.get("type")
                .ok_or_else(|| corrupt(format!("field '{name}' has no type")))?,
        )
        .map_err(|e| e.within(format_args!("field '{name}'")))?;
        Ok(Self {
            id,
            name,
            required,
            field_type,
            doc: obj
                .get("doc")
                .and_then(JsonValue::as_str)
                .map(str::to_string),
            initial_default: obj.get("initial-default").cloned(),
            write_default: obj.get("write-default").cloned(),
        })
    }
}

/// A struct type: fields in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StructType {
    /// The fields, in declaration order.
    pub fields: Vec<Arc<NestedField>>,
}

impl StructType {
    /// A struct of the given fields.
    pub fn new(fields: Vec<NestedField>) -> Self {
        Self {
            fields: fields.into_iter().map(Arc::new).collect(),
        }
    }

    /// The direct child with this field id.
    pub fn field_by_id(&self, id: i32) -> Option<&Arc<NestedField>> {
        self.fields.iter().find(|f| f.id == id)
    }

    /// The direct child with this name (case-sensitive).
    pub fn field_by_name(&self, name: &str) -> Option<&Arc<NestedField>> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// A list type.
#[derive(Debug, Clone, PartialEq)]
pub struct ListType {
    /// The element, as a field named `element`.
    pub element_field: Arc<NestedField>,
}

/// A map type.
#[derive(Debug, Clone, PartialEq)]
pub struct MapType {
    /// The key, as a required field named `key`.
    pub key_field: Arc<NestedField>,
    /// The value, as a field named `value`.
    pub value_field: Arc<NestedField>,
}

impl Type {
    /// The spec's JSON form of this type.
    pub fn to_json(&self) -> JsonValue {
        match self {
            Type::Primitive(p) => JsonValue::String(p.to_string()),
            Type::Struct(s) => json!({
                "type": "struct",
                "fields": s.fields.iter().map(|f| f.to_json()).collect::<Vec<_>>(),
            }),
            Type::List(l) => json!({
                "type": "list",
                "element-id": l.element_field.id,
                "element": l.element_field.field_type.to_json(),
                "element-required": l.element_field.required,
            }),
            Type::Map(m) => json!({
                "type": "map",
                "key-id": m.key_field.id,
                "key": m.key_field.field_type.to_json(),
                "value-id": m.value_field.id,
                "value": m.value_field.field_type.to_json(),
                "value-required": m.value_field.required,
            }),
        }
    }

    /// Parses the spec's JSON form of a type; errors are [`Error::Corrupt`] without a path,
    /// naming the field.
    pub fn from_json(v: &JsonValue) -> Result<Self> {
        match v {
            JsonValue::String(s) => Ok(Type::Primitive(PrimitiveType::parse(s)?)),
            JsonValue::Object(obj) => {
                let kind = obj
                    .get("type")
                    .and_then(JsonValue::as_str)
                    .ok_or_else(|| corrupt("nested type without a 'type' tag"))?;
                match kind {
                    "struct" => {
                        let fields = obj
                            .get("fields")
                            .and_then(JsonValue::as_array)
                            .ok_or_else(|| corrupt("struct type without 'fields'"))?;
                        let fields = fields
                            .iter()
                            .map(NestedField::from_json)
                            .collect::<Result<Vec<_>, _>>()?;
                        Ok(Type::Struct(StructType::new(fields)))
                    }
                    "list" => {
                        let id = json_i32(obj, "element-id")?;
                        let element = Type::from_json(
                            obj.get("element")
                                .ok_or_else(|| corrupt("list type without 'element'"))?,
                        )?;
                        let required = obj
                            .get("element-required")
                            .and_then(JsonValue::as_bool)
                            .unwrap_or(false);
                        let field = NestedField {
                            required,
                            ..NestedField::optional(id, "element", element)
                        };
                        Ok(Type::List(ListType {
                            element_field: Arc::new(field),
                        }))
                    }
                    "map" => {
                        let key_id = json_i32(obj, "key-id")?;
                        let value_id = json_i32(obj, "value-id")?;
                        let key = Type::from_json(
                            obj.get("key")
                                .ok_or_else(|| corrupt("map type without 'key'"))?,
                        )?;
                        let value = Type::from_json(
                            obj.get("value")
                                .ok_or_else(|| corrupt("map type without 'value'"))?,
                        )?;
                        let value_required = obj
                            .get("value-required")
                            .and_then(JsonValue::as_bool)
                            .unwrap_or(false);
                        Ok(Type::Map(MapType {
                            key_field: Arc::new(NestedField::required(key_id, "key", key)),
                            value_field: Arc::new(NestedField {
                                required: value_required,
                                ..NestedField::optional(value_id, "value", value)
                            }),
                        }))
                    }
                    other => Err(corrupt(format!("unknown nested type '{other}'"))),
                }
            }
            other => Err(corrupt(format!(
                "a type must be a string or an object, found {other}"
            ))),
        }
    }
}

/// A [`Error::Corrupt`] without a path: the JSON a type was parsed from is not valid.
fn corrupt(reason: impl Into<String>) -> Error {
    Error::corrupt("", reason)
}

fn json_i32(obj: &Map<String, JsonValue>, key: &str) -> Result<i32> {
    obj.get(key)
        .and_then(JsonValue::as_i64)
        .and_then(|v| i32::try_from(v).ok())
        .ok_or_else(|| corrupt(format!("missing or invalid integer '{key}'")))
}

impl Serialize for Type {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Type {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let v = JsonValue::deserialize(deserializer)?;
        Type::from_json(&v).map_err(D::Error::custom)
    }
}

impl Serialize for NestedField {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for NestedField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let v = JsonValue::deserialize(deserializer)?;
        NestedField::from_json(&v).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests;
