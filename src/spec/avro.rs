//! Reading Iceberg's Avro files (manifest lists and manifests) as apache-avro [`Value`]s, one
//! record at a time, with fields found by name and, where a writer named a field differently,
//! by the `field-id` attribute of the writer schema (spec: "Avro" appendix: every field carries
//! its Iceberg id). Nullable unions are unwrapped generically, so writers that make every field
//! a `["null", T]` union (BigQuery) read like Java's.
//!
//! Decoders here are pure: their errors are [`Error::Corrupt`] with an empty path.

use std::collections::HashMap;

use apache_avro::Reader;
use apache_avro::schema::{NamesRef, RecordSchema, ResolvedSchema, Schema};
use apache_avro::types::Value;

use crate::error::{Error, Result};

/// An opened Avro object container file: the header is read, the records are not yet.
pub(crate) struct AvroFile<'b> {
    reader: Reader<'static, &'b [u8]>,
    schema: Schema,
}

impl<'b> AvroFile<'b> {
    /// Reads the header (magic, key-value metadata, writer schema, sync marker).
    pub(crate) fn open(bytes: &'b [u8]) -> Result<Self> {
        let reader =
            Reader::new(bytes).map_err(|e| Error::corrupt_with("", "invalid Avro header", e))?;
        let schema = reader.writer_schema().clone();
        Ok(Self { reader, schema })
    }

    /// The header's key-value metadata, without Avro's own `avro.*` keys.
    pub(crate) fn metadata(&self) -> &HashMap<String, Vec<u8>> {
        self.reader.user_metadata()
    }

    /// Decodes every record and converts it with `convert`, in file order. `what` names the
    /// record (`manifest_entry`) in error messages.
    pub(crate) fn map_records<T>(
        self,
        what: &'static str,
        mut convert: impl FnMut(Record<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let Self { reader, schema } = self;
        let resolved = ResolvedSchema::try_from(&schema).ok();
        let names = resolved.as_ref().map(ResolvedSchema::get_names);
        let ctx = SchemaCtx { names };
        let mut out = Vec::new();
        for (index, value) in reader.enumerate() {
            let value = value.map_err(|e| {
                Error::corrupt_with("", format!("cannot decode Avro record {index} ({what})"), e)
            })?;
            let record = Record::new(&value, Some(&schema), ctx, what);
            out.push(
                record
                    .and_then(&mut convert)
                    .map_err(|e| at_record(e, index))?,
            );
        }
        Ok(out)
    }
}

/// Prefixes a conversion error with the index of the record it is about.
fn at_record(err: Error, index: usize) -> Error {
    match err {
        Error::Corrupt {
            path,
            reason,
            source,
        } => Error::Corrupt {
            path,
            reason: format!("record {index}: {reason}"),
            source,
        },
        other => other,
    }
}

/// Named types of the writer schema, to follow `Schema::Ref`s.
#[derive(Clone, Copy)]
pub(crate) struct SchemaCtx<'a> {
    names: Option<&'a NamesRef<'a>>,
}

impl<'a> SchemaCtx<'a> {
    /// Follows a reference to a named type, if it is one.
    fn resolve(self, schema: &'a Schema) -> &'a Schema {
        match (schema, self.names) {
            (Schema::Ref { name }, Some(names)) => names.get(name).copied().unwrap_or(schema),
            _ => schema,
        }
    }

    /// Strips union wrappers from a value, following the writer schema along (the union
    /// index picks the variant). `None` for null.
    fn unwrap(
        self,
        mut value: &'a Value,
        mut schema: Option<&'a Schema>,
    ) -> Option<(&'a Value, Option<&'a Schema>)> {
        loop {
            match value {
                Value::Null => return None,
                Value::Union(index, inner) => {
                    schema = match schema.map(|s| self.resolve(s)) {
                        Some(Schema::Union(u)) => u.variants().get(*index as usize),
                        _ => None,
                    };
                    value = inner;
                }
                _ => return Some((value, schema.map(|s| self.resolve(s)))),
            }
        }
    }
}

/// A record value with its writer schema (when known), read field by field.
#[derive(Clone, Copy)]
pub(crate) struct Record<'a> {
    what: &'static str,
    fields: &'a [(String, Value)],
    schema: Option<&'a RecordSchema>,
    ctx: SchemaCtx<'a>,
}

impl<'a> Record<'a> {
    /// A record from a (possibly union-wrapped) record value.
    pub(crate) fn new(
        value: &'a Value,
        schema: Option<&'a Schema>,
        ctx: SchemaCtx<'a>,
        what: &'static str,
    ) -> Result<Self> {
        match ctx.unwrap(value, schema) {
            Some((Value::Record(fields), schema)) => Ok(Self {
                what,
                fields,
                schema: match schema {
                    Some(Schema::Record(r)) => Some(r),
                    _ => None,
                },
                ctx,
            }),
            Some((other, _)) => Err(Error::corrupt(
                "",
                format!("{what} is an Avro {}, not a record", kind(other)),
            )),
            None => Err(Error::corrupt("", format!("{what} is null"))),
        }
    }

    /// The number of fields.
    pub(crate) fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether the writer wrote a field of this name or field id (null or not).
    pub(crate) fn has(&self, name: &str, field_id: i32) -> bool {
        self.position(name, Some(field_id)).is_some()
    }

    /// Where a field is: by name, else by the schema's `field-id` attribute.
    fn position(&self, name: &str, field_id: Option<i32>) -> Option<usize> {
        self.position_of_name(name)
            .or_else(|| field_id.and_then(|id| self.position_of_id(id)))
    }

    /// Where the field of this name is.
    pub(crate) fn position_of_name(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|(n, _)| n == name)
    }

    /// Where the field with this `field-id` attribute is, per the writer schema.
    pub(crate) fn position_of_id(&self, field_id: i32) -> Option<usize> {
        let schema = self.schema?;
        schema
            .fields
            .iter()
            .position(|f| attribute_id(&f.custom_attributes, "field-id") == Some(field_id))
            .filter(|&i| i < self.fields.len())
    }

    /// The field at `index`, unwrapped; `None` when absent or null.
    pub(crate) fn at(&self, index: usize) -> Option<Field<'a>> {
        let (name, value) = self.fields.get(index)?;
        let schema = self
            .schema
            .and_then(|s| s.fields.get(index))
            .map(|f| &f.schema);
        let (value, schema) = self.ctx.unwrap(value, schema)?;
        Some(Field {
            what: self.what,
            name,
            value,
            schema,
            ctx: self.ctx,
        })
    }

    /// A field by name (or field id), unwrapped; `None` when absent or null.
    pub(crate) fn get(&self, name: &str, field_id: i32) -> Option<Field<'a>> {
        self.at(self.position(name, Some(field_id))?)
    }

    /// A field that must be present and non-null.
    pub(crate) fn require(&self, name: &str, field_id: i32) -> Result<Field<'a>> {
        self.get(name, field_id).ok_or_else(|| {
            Error::corrupt(
                "",
                format!(
                    "{}: required field {name} ({field_id}) is missing or null",
                    self.what
                ),
            )
        })
    }

    /// An optional field converted with `convert` (see [`Field::int`] and friends).
    pub(crate) fn opt<T>(
        &self,
        name: &str,
        field_id: i32,
        convert: impl FnOnce(&Field<'a>) -> Result<T>,
    ) -> Result<Option<T>> {
        self.get(name, field_id).map(|f| convert(&f)).transpose()
    }

    /// A required field converted with `convert`.
    pub(crate) fn req<T>(
        &self,
        name: &str,
        field_id: i32,
        convert: impl FnOnce(&Field<'a>) -> Result<T>,
    ) -> Result<T> {
        convert(&self.require(name, field_id)?)
    }
}

/// One non-null field value with its writer schema (when known).
#[derive(Clone, Copy)]
pub(crate) struct Field<'a> {
    what: &'static str,
    name: &'a str,
    value: &'a Value,
    schema: Option<&'a Schema>,
    ctx: SchemaCtx<'a>,
}

impl<'a> Field<'a> {
    /// The value, union wrappers removed.
    pub(crate) fn value(&self) -> &'a Value {
        self.value
    }

    /// A wrong-type error naming this field.
    pub(crate) fn wrong(&self, expected: &str) -> Error {
        Error::corrupt(
            "",
            format!(
                "{}.{} is an Avro {}, expected {expected}",
                self.what,
                self.name,
                kind(self.value)
            ),
        )
    }

    /// An Avro `int`.
    pub(crate) fn int(&self) -> Result<i32> {
        as_int(self.value).ok_or_else(|| self.wrong("int"))
    }

    /// A field id: an Avro `int`, or a `long` that fits (some writers declare id lists as
    /// `long`, e.g. `equality_ids` written by pyarrow-based writers).
    pub(crate) fn field_id(&self) -> Result<i32> {
        as_long(self.value)
            .and_then(|v| i32::try_from(v).ok())
            .ok_or_else(|| self.wrong("int"))
    }

    /// An Avro `long` (an `int` is widened).
    pub(crate) fn long(&self) -> Result<i64> {
        as_long(self.value).ok_or_else(|| self.wrong("long"))
    }

    /// An Avro `boolean`.
    pub(crate) fn boolean(&self) -> Result<bool> {
        match self.value {
            Value::Boolean(b) => Ok(*b),
            _ => Err(self.wrong("boolean")),
        }
    }

    /// An Avro `string`.
    pub(crate) fn string(&self) -> Result<String> {
        match self.value {
            Value::String(s) => Ok(s.clone()),
            _ => Err(self.wrong("string")),
        }
    }

    /// Avro `bytes` or `fixed`.
    pub(crate) fn bytes(&self) -> Result<Vec<u8>> {
        as_bytes(self.value)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| self.wrong("bytes"))
    }

    /// A record.
    pub(crate) fn record(&self, what: &'static str) -> Result<Record<'a>> {
        Record::new(self.value, self.schema, self.ctx, what)
    }

    /// An array, its items unwrapped (null items are skipped) with their schema.
    pub(crate) fn items(&self) -> Result<Vec<Field<'a>>> {
        let Value::Array(items) = self.value else {
            return Err(self.wrong("array"));
        };
        let item_schema = match self.schema {
            Some(Schema::Array(a)) => Some(a.items.as_ref()),
            _ => None,
        };
        Ok(items
            .iter()
            .filter_map(|v| self.ctx.unwrap(v, item_schema))
            .map(|(value, schema)| Field {
                value,
                schema,
                ..*self
            })
            .collect())
    }

    /// An array of items converted with `convert`.
    pub(crate) fn list<T>(&self, convert: impl Fn(&Field<'a>) -> Result<T>) -> Result<Vec<T>> {
        self.items()?.iter().map(convert).collect()
    }

    /// An Iceberg `map<int, T>`: an Avro array of `{key, value}` records (Java writes them
    /// with `logicalType: map`), or an Avro map with numeric string keys. Entries with a null
    /// key or value are skipped.
    pub(crate) fn int_map<T>(
        &self,
        convert: impl Fn(&Field<'a>) -> Result<T>,
    ) -> Result<HashMap<i32, T>> {
        match self.value {
            Value::Map(map) => map
                .iter()
                .filter_map(|(k, v)| Some((k, self.ctx.unwrap(v, None)?.0)))
                .map(|(k, v)| {
                    let key = k
                        .parse::<i32>()
                        .map_err(|_| self.wrong("map with int keys"))?;
                    Ok((
                        key,
                        convert(&Field {
                            value: v,
                            schema: None,
                            ..*self
                        })?,
                    ))
                })
                .collect(),
            Value::Array(_) => self
                .items()?
                .iter()
                .filter_map(|item| self.map_entry(item).transpose())
                .map(|kv| kv.and_then(|(k, v)| Ok((k.int()?, convert(&v)?))))
                .collect(),
            _ => Err(self.wrong("map")),
        }
    }

    /// The `key` and `value` of one map entry record (by name, else by position).
    fn map_entry(&self, item: &Field<'a>) -> Result<Option<(Field<'a>, Field<'a>)>> {
        let entry = item.record(self.what)?;
        let pick = |name: &str, index: usize| {
            entry
                .position_of_name(name)
                .or((entry.len() == 2).then_some(index))
                .and_then(|i| entry.at(i))
        };
        Ok(pick("key", 0).zip(pick("value", 1)).map(|(k, v)| {
            let named = |f: Field<'a>| Field {
                name: self.name,
                ..f
            };
            (named(k), named(v))
        }))
    }
}

/// Reads an integer attribute (`field-id`, `element-id`, ...) of a schema element.
fn attribute_id(
    attributes: &std::collections::BTreeMap<String, serde_json::Value>,
    key: &str,
) -> Option<i32> {
    let v = attributes.get(key)?;
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .and_then(|i| i32::try_from(i).ok())
}

/// An Avro `int`.
pub(crate) fn as_int(value: &Value) -> Option<i32> {
    match value {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

/// An Avro `long`, or an `int` widened.
pub(crate) fn as_long(value: &Value) -> Option<i64> {
    match value {
        Value::Long(l) => Some(*l),
        Value::Int(i) => Some(i64::from(*i)),
        _ => None,
    }
}

/// Avro `bytes` or `fixed`.
pub(crate) fn as_bytes(value: &Value) -> Option<&[u8]> {
    match value {
        Value::Bytes(b) | Value::Fixed(_, b) => Some(b),
        _ => None,
    }
}

/// The Avro kind of a value, for error messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Boolean(_) => "boolean",
        Value::Int(_) => "int",
        Value::Long(_) => "long",
        Value::Float(_) => "float",
        Value::Double(_) => "double",
        Value::Bytes(_) => "bytes",
        Value::String(_) => "string",
        Value::Fixed(..) => "fixed",
        Value::Enum(..) => "enum",
        Value::Union(..) => "union",
        Value::Array(_) => "array",
        Value::Map(_) => "map",
        Value::Record(_) => "record",
        Value::Date(_) => "date",
        Value::Decimal(_) | Value::BigDecimal(_) => "decimal",
        Value::TimeMillis(_) | Value::TimeMicros(_) => "time",
        Value::TimestampMillis(_)
        | Value::TimestampMicros(_)
        | Value::TimestampNanos(_)
        | Value::LocalTimestampMillis(_)
        | Value::LocalTimestampMicros(_)
        | Value::LocalTimestampNanos(_) => "timestamp",
        Value::Duration(_) => "duration",
        Value::Uuid(_) => "uuid",
    }
}

/// Helpers for tests that write Iceberg-style Avro files with apache-avro's writer.
#[cfg(test)]
pub(crate) mod test_util {
    use apache_avro::types::Value;
    use apache_avro::{Codec, DeflateSettings, Schema, Writer};

    /// Writes `records` (validated against `schema`) with the given header metadata, deflated.
    pub(crate) fn write_avro(
        schema: &serde_json::Value,
        metadata: &[(&str, &str)],
        records: &[Value],
    ) -> Vec<u8> {
        let schema = Schema::parse(schema).unwrap();
        let codec = Codec::Deflate(DeflateSettings::default());
        let mut writer = Writer::with_codec(&schema, Vec::new(), codec).unwrap();
        for (k, v) in metadata {
            writer.add_user_metadata((*k).to_string(), v).unwrap();
        }
        for r in records {
            writer.append_value_ref(r).unwrap();
        }
        writer.into_inner().unwrap()
    }

    /// A record value.
    pub(crate) fn record(fields: Vec<(&str, Value)>) -> Value {
        Value::Record(
            fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }

    /// The non-null branch of a `["null", T]` union.
    pub(crate) fn some(v: impl Into<Value>) -> Value {
        Value::Union(1, Box::new(v.into()))
    }

    /// The null branch of a `["null", T]` union.
    pub(crate) fn null() -> Value {
        Value::Union(0, Box::new(Value::Null))
    }

    /// A Java-style `map<int, T>`: an array of `{key, value}` records.
    pub(crate) fn kv_array<T: Into<Value> + Clone>(entries: &[(i32, T)]) -> Value {
        Value::Array(
            entries
                .iter()
                .map(|(k, v)| record(vec![("key", Value::Int(*k)), ("value", v.clone().into())]))
                .collect(),
        )
    }

    /// `["null", T]` as a schema.
    pub(crate) fn nullable(t: serde_json::Value) -> serde_json::Value {
        serde_json::json!(["null", t])
    }

    /// A record field with a `field-id` attribute.
    pub(crate) fn field(name: &str, id: i32, t: serde_json::Value) -> serde_json::Value {
        serde_json::json!({"name": name, "type": t, "field-id": id})
    }

    /// A nullable record field (Java writes `default: null`).
    pub(crate) fn opt_field(name: &str, id: i32, t: serde_json::Value) -> serde_json::Value {
        serde_json::json!({"name": name, "type": nullable(t), "default": null, "field-id": id})
    }

    /// Java's `map<int, T>` schema: an array of `k{key_id}_v{value_id}` records.
    pub(crate) fn java_map(key_id: i32, value_id: i32, value: &str) -> serde_json::Value {
        serde_json::json!({
            "type": "array",
            "logicalType": "map",
            "items": {
                "type": "record",
                "name": format!("k{key_id}_v{value_id}"),
                "fields": [
                    {"name": "key", "type": "int", "field-id": key_id},
                    {"name": "value", "type": value, "field-id": value_id}
                ]
            }
        })
    }
}
