//! Reading Iceberg's Avro files (manifest lists and manifests) as apache-avro [`Value`]s, one
//! record at a time, with fields found by name and, where a writer named a field differently,
//! by the `field-id` attribute of the writer schema (spec: "Avro" appendix: every field carries
//! its Iceberg id). Nullable unions are unwrapped generically, so writers that make every field
//! a `["null", T]` union (BigQuery) read like Java's.
//!
//! Decoders here are pure: their errors are [`Error::Corrupt`] with an empty path.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, LazyLock, Mutex};

use apache_avro::Codec;
use apache_avro::reader::datum::GenericDatumReader;
use apache_avro::schema::{NamesRef, RecordSchema, ResolvedSchema, Schema};
use apache_avro::types::Value;

use crate::error::{Error, Result};

/// An opened Avro object container file: the header is read, the records are not yet.
///
/// The container format is read here (it is small: magic, a metadata map, a sync marker, then
/// blocks of records); apache-avro decodes the records. The writer schema is parsed once per
/// distinct schema text and shared process-wide: every manifest of a table usually carries
/// the same schema, and parsing it (JSON, name validation) costs more than decoding a
/// one-entry manifest.
pub(crate) struct AvroFile<'b> {
    schema: Arc<Schema>,
    metadata: HashMap<String, Vec<u8>>,
    codec: Codec,
    sync: [u8; 16],
    /// The blocks, after the header.
    blocks: &'b [u8],
}

impl<'b> AvroFile<'b> {
    /// Reads the header (magic, key-value metadata, writer schema, sync marker).
    pub(crate) fn open(bytes: &'b [u8]) -> Result<Self> {
        let header_error =
            |reason: String| Error::corrupt("", format!("invalid Avro header: {reason}"));
        let rest = bytes
            .strip_prefix(b"Obj\x01")
            .ok_or_else(|| header_error("not an Avro object container file (bad magic)".into()))?;
        let mut input = rest;
        let mut metadata = read_metadata_map(&mut input).map_err(header_error)?;
        let mut sync = [0u8; 16];
        sync.copy_from_slice(take(&mut input, 16).map_err(header_error)?);
        let schema_json = metadata
            .remove("avro.schema")
            .ok_or_else(|| header_error("no avro.schema".into()))?;
        let schema = writer_schema(schema_json).map_err(header_error)?;
        let codec = match metadata.remove("avro.codec") {
            None => Codec::Null,
            Some(name) => {
                let name = String::from_utf8_lossy(&name).into_owned();
                Codec::from_str(&name)
                    .map_err(|_| header_error(format!("unsupported codec '{name}'")))?
            }
        };
        metadata.retain(|key, _| !key.starts_with("avro."));
        Ok(Self {
            schema,
            metadata,
            codec,
            sync,
            blocks: input,
        })
    }

    /// The header's key-value metadata, without Avro's own `avro.*` keys.
    pub(crate) fn metadata(&self) -> &HashMap<String, Vec<u8>> {
        &self.metadata
    }

    /// Decodes every record and converts it with `convert`, in file order. `what` names the
    /// record (`manifest_entry`) in error messages.
    pub(crate) fn map_records<T>(
        self,
        what: &'static str,
        mut convert: impl FnMut(Record<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let schema = self.schema.as_ref();
        let resolved = ResolvedSchema::try_from(schema)
            .map_err(|e| Error::corrupt_with("", "invalid Avro writer schema", e))?;
        let ctx = SchemaCtx {
            names: Some(resolved.get_names()),
        };
        let reader = GenericDatumReader::builder(schema)
            .resolved_writer_schemata(resolved.clone())
            .build()
            .map_err(|e| Error::corrupt_with("", "invalid Avro writer schema", e))?;
        let mut out = Vec::new();
        let mut input = self.blocks;
        while !input.is_empty() {
            let block = out.len();
            let block_error = |reason: String| {
                Error::corrupt("", format!("Avro block after record {block}: {reason}"))
            };
            let count = read_len(&mut input).map_err(block_error)?;
            let size = read_len(&mut input).map_err(block_error)?;
            let mut data = take(&mut input, size).map_err(block_error)?.to_vec();
            if take(&mut input, 16).map_err(block_error)? != self.sync {
                return Err(block_error(
                    "sync marker does not match the header's".into(),
                ));
            }
            self.codec.decompress(&mut data).map_err(|e| {
                Error::corrupt_with(
                    "",
                    format!("cannot decompress the Avro block after record {block}"),
                    e,
                )
            })?;
            let mut records = data.as_slice();
            for _ in 0..count {
                let index = out.len();
                let value = reader.read_value(&mut records).map_err(|e| {
                    Error::corrupt_with(
                        "",
                        format!("cannot decode Avro record {index} ({what})"),
                        e,
                    )
                })?;
                let record = Record::new(&value, Some(schema), ctx, what);
                out.push(
                    record
                        .and_then(&mut convert)
                        .map_err(|e| at_record(e, index))?,
                );
            }
        }
        Ok(out)
    }
}

/// The parsed writer schema for this schema text, from the process-wide cache when seen
/// before. The cache holds at most [`SCHEMA_CACHE_ENTRIES`] schemas (a few KB each).
fn writer_schema(json: Vec<u8>) -> std::result::Result<Arc<Schema>, String> {
    static SCHEMAS: LazyLock<Mutex<HashMap<Vec<u8>, Arc<Schema>>>> =
        LazyLock::new(Default::default);
    if let Some(schema) = SCHEMAS.lock().unwrap_or_else(|e| e.into_inner()).get(&json) {
        return Ok(Arc::clone(schema));
    }
    let text = std::str::from_utf8(&json).map_err(|_| "avro.schema is not UTF-8".to_string())?;
    let schema =
        Arc::new(Schema::parse_str(text).map_err(|e| format!("invalid avro.schema: {e}"))?);
    let mut cache = SCHEMAS.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= SCHEMA_CACHE_ENTRIES {
        cache.clear();
    }
    cache.insert(json, Arc::clone(&schema));
    Ok(schema)
}

/// How many distinct writer schemas [`writer_schema`] keeps.
const SCHEMA_CACHE_ENTRIES: usize = 256;

/// The header's metadata map (Avro `map<bytes>`: blocks of entries, a zero count last; a
/// negative count is followed by the block's size in bytes).
fn read_metadata_map(input: &mut &[u8]) -> std::result::Result<HashMap<String, Vec<u8>>, String> {
    let mut map = HashMap::new();
    loop {
        let count = read_long(input)?;
        if count == 0 {
            return Ok(map);
        }
        if count < 0 {
            read_long(input)?;
        }
        for _ in 0..count.unsigned_abs() {
            let key_len = read_len(input)?;
            let key = String::from_utf8(take(input, key_len)?.to_vec())
                .map_err(|_| "a metadata key is not UTF-8".to_string())?;
            let value_len = read_len(input)?;
            map.insert(key, take(input, value_len)?.to_vec());
        }
    }
}

/// Avro's zig-zag variable-length long.
fn read_long(input: &mut &[u8]) -> std::result::Result<i64, String> {
    let mut value: u64 = 0;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = input
            .split_first()
            .ok_or_else(|| "truncated (in a variable-length integer)".to_string())?;
        *input = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
        }
    }
    Err("a variable-length integer is longer than 10 bytes".into())
}

/// A non-negative long used as a length or count.
fn read_len(input: &mut &[u8]) -> std::result::Result<usize, String> {
    let n = read_long(input)?;
    usize::try_from(n).map_err(|_| format!("negative length {n}"))
}

/// The next `n` bytes.
fn take<'a>(input: &mut &'a [u8], n: usize) -> std::result::Result<&'a [u8], String> {
    if input.len() < n {
        return Err(format!(
            "truncated: {n} bytes expected, {} left",
            input.len()
        ));
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Ok(head)
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

#[cfg(test)]
mod tests {
    use super::*;
    use apache_avro::{DeflateSettings, Writer, ZstandardSettings};

    fn schema() -> Schema {
        Schema::parse_str(
            r#"{"type": "record", "name": "r", "fields": [
                {"name": "id", "type": "long", "field-id": 1},
                {"name": "name", "type": ["null", "string"], "field-id": 2}]}"#,
        )
        .unwrap()
    }

    /// Three blocks of records written with `codec` (a flush ends a block).
    fn file(codec: Codec) -> Vec<u8> {
        let schema = schema();
        let mut writer = Writer::with_codec(&schema, Vec::new(), codec).unwrap();
        writer.add_user_metadata("k".into(), "v").unwrap();
        for block in 0..3_i64 {
            for i in 0..4 {
                let id = block * 10 + i;
                let name = if i % 2 == 0 {
                    Value::Union(1, Box::new(Value::String(format!("n{id}"))))
                } else {
                    Value::Union(0, Box::new(Value::Null))
                };
                let record =
                    Value::Record(vec![("id".into(), Value::Long(id)), ("name".into(), name)]);
                writer.append_value_ref(&record).unwrap();
            }
            writer.flush().unwrap();
        }
        writer.into_inner().unwrap()
    }

    fn read(bytes: &[u8]) -> Result<Vec<(i64, Option<String>)>> {
        AvroFile::open(bytes)?.map_records("r", |r| {
            Ok((
                r.req("id", 1, Field::long)?,
                r.opt("name", 2, Field::string)?,
            ))
        })
    }

    #[test]
    fn every_codec_and_block_reads_in_order() {
        let expected: Vec<(i64, Option<String>)> = [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23]
            .into_iter()
            .map(|id| (id, (id % 2 == 0).then(|| format!("n{id}"))))
            .collect();
        for codec in [
            Codec::Null,
            Codec::Deflate(DeflateSettings::default()),
            Codec::Snappy,
            Codec::Zstandard(ZstandardSettings::default()),
        ] {
            let bytes = file(codec);
            assert_eq!(read(&bytes).unwrap(), expected, "{codec:?}");
            let file = AvroFile::open(&bytes).unwrap();
            assert_eq!(
                file.metadata().len(),
                1,
                "only user keys: {:?}",
                file.metadata().keys()
            );
            assert_eq!(file.metadata()["k"], b"v");
        }
    }

    #[test]
    fn the_writer_schema_is_parsed_once_per_text() {
        let a = file(Codec::Null);
        let b = file(Codec::Deflate(DeflateSettings::default()));
        let (a, b) = (AvroFile::open(&a).unwrap(), AvroFile::open(&b).unwrap());
        assert!(Arc::ptr_eq(&a.schema, &b.schema));
    }

    #[test]
    fn every_truncation_and_a_wrong_sync_marker_are_corrupt_not_panics() {
        let bytes = file(Codec::Deflate(DeflateSettings::default()));
        for cut in 0..bytes.len() {
            // A cut exactly between blocks is a shorter valid file.
            if let Err(e) = read(&bytes[..cut]) {
                assert!(matches!(e, Error::Corrupt { .. }), "cut {cut}: {e}");
            }
        }
        assert!(read(&bytes[..bytes.len() - 1]).is_err());
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 0xff;
        let err = read(&flipped).unwrap_err().to_string();
        assert!(err.contains("sync marker"), "{err}");
        let err = read(b"Obj\x02rest").unwrap_err().to_string();
        assert!(err.contains("bad magic"), "{err}");
    }

    #[test]
    fn unknown_codecs_are_named() {
        let mut bytes = file(Codec::Deflate(DeflateSettings::default()));
        let key = bytes.windows(10).position(|w| w == b"avro.codec").unwrap();
        let at = key + 11; // the key, then the value's length (one byte)
        assert_eq!(&bytes[at..at + 7], b"deflate");
        bytes[at..at + 7].copy_from_slice(b"lz4flat");
        let err = AvroFile::open(&bytes).err().unwrap().to_string();
        assert!(err.contains("unsupported codec 'lz4flat'"), "{err}");
    }
}
