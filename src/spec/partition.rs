//! Partition specs and transforms (spec: "Partitioning", "Partition Transforms",
//! "Bucket Transform Details", "Truncate Transform Details").
//!
//! A partition spec turns a row into a partition tuple: each [`PartitionField`] applies a
//! [`Transform`] to one source column. The tuple's struct type is
//! [`PartitionSpec::partition_type`]; its directory form is [`PartitionSpec::partition_path`].

mod path;
#[cfg(test)]
mod tests;
mod transform;

use std::fmt;

use serde_json::{Value as JsonValue, json};

use super::metadata::json::{self as j, Object};
use super::schema::Schema;
use super::types::{NestedField, PrimitiveType, StructType, Type};
use super::values::Literal;
use crate::error::{Error, Result};

/// The first partition field id; v1 specs written without field ids number their fields from
/// here.
pub const PARTITION_DATA_ID_START: i32 = 1000;

/// A partition transform.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Transform {
    /// `identity`: the source value.
    Identity,
    /// `bucket[N]`: 32-bit murmur3 hash of the value, mod N.
    Bucket(u32),
    /// `truncate[W]`: the value truncated to width W.
    Truncate(u32),
    /// `year`: years since 1970.
    Year,
    /// `month`: months since 1970-01.
    Month,
    /// `day`: days since 1970-01-01.
    Day,
    /// `hour`: hours since 1970-01-01 00:00.
    Hour,
    /// `void`: always null.
    Void,
    /// A transform this version of icefloe does not know (kept verbatim).
    Unknown(String),
}

impl Transform {
    /// Parses the spec's string form (`bucket[16]`, `truncate[4]`, `day`, ...).
    ///
    /// Names are matched case-insensitively (as Java does); a string that names no known
    /// transform is [`Transform::Unknown`], not an error. A zero or out-of-range bucket count or
    /// width is [`Error::InvalidArgument`].
    pub fn parse(s: &str) -> Result<Self> {
        let lower = s.trim().to_ascii_lowercase();
        let simple = match lower.as_str() {
            "identity" => Some(Self::Identity),
            "year" => Some(Self::Year),
            "month" => Some(Self::Month),
            "day" => Some(Self::Day),
            "hour" => Some(Self::Hour),
            "void" => Some(Self::Void),
            _ => None,
        };
        if let Some(t) = simple {
            return Ok(t);
        }
        let Some((name, arg)) = lower
            .strip_suffix(']')
            .and_then(|rest| rest.split_once('['))
            .filter(|(_, arg)| !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_digit()))
        else {
            return Ok(Self::Unknown(s.to_string()));
        };
        let width = || -> Result<u32> {
            match arg.parse::<i32>() {
                Ok(n) if n > 0 => Ok(n.unsigned_abs()),
                _ => Err(Error::invalid(
                    format_args!("transform '{s}'"),
                    "the argument must be a positive int",
                )),
            }
        };
        match name {
            "bucket" => Ok(Self::Bucket(width()?)),
            "truncate" => Ok(Self::Truncate(width()?)),
            _ => Ok(Self::Unknown(s.to_string())),
        }
    }

    /// Whether the spec allows this transform on a source of type `source`.
    pub fn can_transform(&self, source: &PrimitiveType) -> bool {
        use PrimitiveType as P;
        let temporal_ts = matches!(
            source,
            P::Timestamp | P::Timestamptz | P::TimestampNs | P::TimestamptzNs
        );
        match self {
            // Spec: "Any except for geometry, geography, and variant"; icefloe refuses
            // `unknown` too (a partition field of nulls only, with no Avro type to write).
            Self::Identity => source.has_value_bounds(),
            Self::Bucket(_) => {
                temporal_ts
                    || matches!(
                        source,
                        P::Int
                            | P::Long
                            | P::Decimal { .. }
                            | P::Date
                            | P::Time
                            | P::String
                            | P::Uuid
                            | P::Fixed(_)
                            | P::Binary
                    )
            }
            Self::Truncate(_) => matches!(
                source,
                P::Int | P::Long | P::Decimal { .. } | P::String | P::Binary
            ),
            Self::Year | Self::Month | Self::Day => temporal_ts || *source == P::Date,
            Self::Hour => temporal_ts,
            Self::Void | Self::Unknown(_) => true,
        }
    }

    /// The type of the transform's result for a source of type `source`; an error when the
    /// transform does not apply to that type.
    ///
    /// `year`, `month`, `hour` and `bucket` give `int`, `day` gives `date`, the others the source
    /// type. An unknown transform gives `string`, as Java and PyIceberg do, so metadata using it
    /// stays readable.
    pub fn result_type(&self, source: &PrimitiveType) -> Result<PrimitiveType> {
        if !self.can_transform(source) {
            return Err(Error::invalid(
                format_args!("transform {self}"),
                format_args!("cannot be applied to type {source}"),
            ));
        }
        Ok(match self {
            Self::Identity | Self::Truncate(_) | Self::Void => source.clone(),
            Self::Bucket(_) | Self::Year | Self::Month | Self::Hour => PrimitiveType::Int,
            Self::Day => PrimitiveType::Date,
            Self::Unknown(_) => PrimitiveType::String,
        })
    }

    /// Applies the transform to one value (`None` for a null input gives `None`).
    ///
    /// Results follow [`Transform::result_type`]: `Literal::Int` for bucket, year, month and
    /// hour, `Literal::Date` for day. Temporal transforms count from 1970 and round down, so
    /// `1969-12-31` is year -1, month -1 and day -1. Integer truncation wraps at the type's
    /// minimum exactly as Java's does.
    pub fn apply(
        &self,
        source: &PrimitiveType,
        value: Option<&Literal>,
    ) -> Result<Option<Literal>> {
        self.result_type(source)?;
        match value {
            None => Ok(None),
            Some(v) => transform::apply(self, v),
        }
    }

    /// The spec's 32-bit murmur3 hash of a value, before `& i32::MAX` and the modulo of
    /// `bucket[N]` (spec Appendix B); `None` for types that cannot be bucketed.
    pub fn bucket_hash(value: &Literal) -> Option<i32> {
        transform::hash(value)
    }

    /// The human-readable form Java uses in partition paths and the `partitions` metadata
    /// table: `null`, `2024-01-01` for day, `2024-01` for month, `2024-01-01-13` for hour, the
    /// value's own text for identity, bucket and truncate (binary as base64).
    /// `result_type` is the transform's result type (it supplies a decimal's scale).
    pub fn to_human_string(&self, result_type: &PrimitiveType, value: Option<&Literal>) -> String {
        path::human_string(self, result_type, value)
    }
}

impl fmt::Display for Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Identity => f.write_str("identity"),
            Self::Bucket(n) => write!(f, "bucket[{n}]"),
            Self::Truncate(w) => write!(f, "truncate[{w}]"),
            Self::Year => f.write_str("year"),
            Self::Month => f.write_str("month"),
            Self::Day => f.write_str("day"),
            Self::Hour => f.write_str("hour"),
            Self::Void => f.write_str("void"),
            Self::Unknown(s) => f.write_str(s),
        }
    }
}

/// One field of a partition spec.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionField {
    /// `source-id`: the field id of the source column.
    pub source_id: i32,
    /// `field-id`: the partition field's own id (1000 and up).
    pub field_id: i32,
    /// `name`: the partition field's name.
    pub name: String,
    /// `transform`.
    pub transform: Transform,
}

impl PartitionField {
    /// Parses one entry of a spec's `fields`; `position` numbers a v1 field without `field-id`.
    fn from_json(v: &JsonValue, position: usize) -> Result<Self> {
        const WHAT: &str = "partition field";
        let o = j::object(v, WHAT)?;
        let name = j::req_str(o, "name", WHAT)?.to_string();
        let what = format!("partition field '{name}'");
        let source_id = source_id(o, &what)?;
        let field_id = match j::opt_i32(o, "field-id", &what)? {
            Some(id) => id,
            None => i32::try_from(position)
                .ok()
                .and_then(|p| PARTITION_DATA_ID_START.checked_add(p))
                .ok_or_else(|| j::missing(&what, "field-id"))?,
        };
        let transform = Transform::parse(j::req_str(o, "transform", &what)?)
            .map_err(|e| e.into_corrupt(&what))?;
        Ok(Self {
            source_id,
            field_id,
            name,
            transform,
        })
    }

    fn to_json(&self) -> JsonValue {
        json!({
            "name": self.name,
            "transform": self.transform.to_string(),
            "source-id": self.source_id,
            "field-id": self.field_id,
        })
    }

    /// The partition tuple field of this partition field, given the source column's type
    /// (`None` when the column is not in the schema).
    fn result_field(&self, source: Option<&Type>) -> Result<NestedField> {
        let result = match (source, &self.transform) {
            (Some(Type::Primitive(p)), t) => t
                .result_type(p)
                .map_err(|_| self.error(format!("cannot be applied to source type {p}")))?,
            (_, Transform::Void) => PrimitiveType::Int,
            (Some(nested), _) => {
                return Err(self.error(format!("source column has nested type {nested}")));
            }
            (None, _) => {
                return Err(self.error(format!(
                    "source column id {} is not in the schema",
                    self.source_id
                )));
            }
        };
        Ok(NestedField::optional(self.field_id, &self.name, result))
    }

    fn error(&self, reason: impl fmt::Display) -> Error {
        Error::invalid(
            format_args!("partition field '{}' ({})", self.name, self.transform),
            reason,
        )
    }
}

/// `source-id`, or the first of v3's multi-argument `source-ids`.
fn source_id(o: &Object, what: &str) -> Result<i32> {
    if let Some(id) = j::opt_i32(o, "source-id", what)? {
        return Ok(id);
    }
    let ids = j::opt_array(o, "source-ids", what)?;
    let first = ids.first().ok_or_else(|| j::missing(what, "source-id"))?;
    j::exact_i64(first)
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| Error::corrupt("", format!("{what}: invalid source id {first}")))
}

/// A partition spec.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionSpec {
    /// `spec-id`.
    pub spec_id: i32,
    /// The fields, in order.
    pub fields: Vec<PartitionField>,
}

impl PartitionSpec {
    /// The unpartitioned spec with id 0.
    pub fn unpartitioned() -> Self {
        Self {
            spec_id: 0,
            fields: Vec::new(),
        }
    }

    /// Whether no field partitions anything (no fields, or only `void` ones).
    pub fn is_unpartitioned(&self) -> bool {
        self.fields.iter().all(|f| f.transform == Transform::Void)
    }

    /// The highest partition field id, if the spec has fields.
    pub fn highest_field_id(&self) -> Option<i32> {
        self.fields.iter().map(|f| f.field_id).max()
    }

    /// The struct type of this spec's partition tuples: one optional field per partition field,
    /// with the partition field's id and name and the transform's result type.
    ///
    /// A field whose source column is missing from `schema` (or has a type its transform does
    /// not accept) is an [`Error::InvalidArgument`] naming the field, except for `void` fields,
    /// which keep the source type when there is one and are `int` otherwise.
    pub fn partition_type(&self, schema: &Schema) -> Result<StructType> {
        let fields = self
            .fields
            .iter()
            .map(|f| {
                let source = schema.field_by_id(f.source_id).map(|s| &s.field_type);
                f.result_field(source)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(StructType::new(fields))
    }

    /// The partition path (`a=1/b_bucket=3`, values escaped for use in a path) of a tuple.
    ///
    /// The layout is Java's `PartitionSpec.partitionToPath`: `name=value` per field joined by
    /// `/`, values in [`Transform::to_human_string`] form, names and values URL-encoded (form
    /// encoding: space as `+`). `values` holds one entry per field, in order.
    pub fn partition_path(&self, schema: &Schema, values: &[Option<Literal>]) -> Result<String> {
        if values.len() != self.fields.len() {
            return Err(Error::invalid(
                format_args!("partition spec {}", self.spec_id),
                format_args!(
                    "has {} fields but the tuple has {} values",
                    self.fields.len(),
                    values.len()
                ),
            ));
        }
        let partition_type = self.partition_type(schema)?;
        let parts: Vec<String> = self
            .fields
            .iter()
            .zip(&partition_type.fields)
            .zip(values)
            .map(|((field, tuple_field), value)| {
                let ty = tuple_field
                    .field_type
                    .as_primitive()
                    .unwrap_or(&PrimitiveType::Int);
                let text = field.transform.to_human_string(ty, value.as_ref());
                format!(
                    "{}={}",
                    path::url_escape(&field.name),
                    path::url_escape(&text)
                )
            })
            .collect();
        Ok(parts.join("/"))
    }

    /// Parses the JSON form of a spec (`{"spec-id": 0, "fields": [...]}`).
    pub fn from_json(v: &JsonValue) -> Result<Self> {
        const WHAT: &str = "partition spec";
        let o = j::object(v, WHAT)?;
        let spec_id = j::req_i32(o, "spec-id", WHAT)?;
        let fields = o.get("fields").ok_or_else(|| j::missing(WHAT, "fields"))?;
        Self::from_fields_json(spec_id, fields)
    }

    /// Parses only a fields array (v1 `partition-spec`, and the manifests' `partition-spec`
    /// Avro metadata), giving it the id `spec_id`.
    ///
    /// Fields without a `field-id` (old v1 writers) are numbered 1000, 1001, ... in order.
    pub fn from_fields_json(spec_id: i32, fields: &JsonValue) -> Result<Self> {
        let fields = fields.as_array().ok_or_else(|| {
            Error::corrupt(
                "",
                format!("partition spec {spec_id}: 'fields' must be an array, found {fields}"),
            )
        })?;
        let fields = fields
            .iter()
            .enumerate()
            .map(|(i, f)| PartitionField::from_json(f, i))
            .collect::<Result<Vec<_>>>()
            .map_err(|e| e.within(format_args!("partition spec {spec_id}")))?;
        Ok(Self { spec_id, fields })
    }

    /// The JSON form (`{"spec-id": .., "fields": [..]}`).
    pub fn to_json(&self) -> JsonValue {
        json!({
            "spec-id": self.spec_id,
            "fields": self.fields_json(),
        })
    }

    /// Only the fields array (the v1 `partition-spec` form).
    pub fn fields_json(&self) -> JsonValue {
        JsonValue::Array(self.fields.iter().map(PartitionField::to_json).collect())
    }
}
