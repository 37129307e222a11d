//! Reading Iceberg's Avro files (manifest lists and manifests) one record at a time, with
//! fields found by name and, where a writer named a field differently, by the `field-id`
//! attribute of the writer schema (spec: "Avro" appendix: every field carries its Iceberg id).
//! Nullable unions are resolved while decoding, so writers that make every field a
//! `["null", T]` union (BigQuery) read like Java's.
//!
//! The container format is read here; records are decoded by [`datum`] against the writer
//! schema, compiled once per distinct schema text. Decoders here are pure: their errors are
//! [`Error::Corrupt`] with an empty path.

mod datum;

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, LazyLock, Mutex};

use apache_avro::Codec;
use apache_avro::schema::{ResolvedSchema, Schema};

pub(crate) use self::datum::Datum;
use self::datum::{Node, RecordNode, read_len, read_long, take};
use crate::error::{Error, Result};

/// An opened Avro object container file: the header is read, the records are not yet.
///
/// The writer schema is parsed and compiled once per distinct schema text and shared
/// process-wide: every manifest of a table usually carries the same schema, and parsing it
/// (JSON, name validation) costs more than decoding a one-entry manifest.
pub(crate) struct AvroFile<'b> {
    schema: Arc<Node>,
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
        let mut out = Vec::new();
        let mut input = self.blocks;
        let mut decompressed = Vec::new();
        while !input.is_empty() {
            let block = out.len();
            let block_error = |reason: String| {
                Error::corrupt("", format!("Avro block after record {block}: {reason}"))
            };
            let count = read_len(&mut input).map_err(block_error)?;
            let size = read_len(&mut input).map_err(block_error)?;
            let data = take(&mut input, size).map_err(block_error)?;
            if take(&mut input, 16).map_err(block_error)? != self.sync {
                return Err(block_error(
                    "sync marker does not match the header's".into(),
                ));
            }
            let mut records = match self.codec {
                Codec::Null => data,
                codec => {
                    decompressed.clear();
                    decompressed.extend_from_slice(data);
                    codec.decompress(&mut decompressed).map_err(|e| {
                        Error::corrupt_with(
                            "",
                            format!("cannot decompress the Avro block after record {block}"),
                            e,
                        )
                    })?;
                    decompressed.as_slice()
                }
            };
            out.reserve(count.min(records.len()));
            // A record schema's fields are decoded into one buffer reused for the block.
            let mut fields = Vec::new();
            for _ in 0..count {
                let index = out.len();
                let decode_error = |reason: String| {
                    Error::corrupt(
                        "",
                        format!("cannot decode Avro record {index} ({what}): {reason}"),
                    )
                };
                let value;
                let record = match schema {
                    Node::Record(node) => {
                        fields.clear();
                        node.decode_into(&mut records, &mut fields)
                            .map_err(decode_error)?;
                        Ok(Record::of_fields(node, &fields, what))
                    }
                    other => {
                        value = other.decode(&mut records).map_err(decode_error)?;
                        Record::new(&value, what)
                    }
                };
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

/// The compiled writer schema for this schema text, from the process-wide cache when seen
/// before. The cache holds at most [`SCHEMA_CACHE_ENTRIES`] schemas (a few KB each).
fn writer_schema(json: Vec<u8>) -> std::result::Result<Arc<Node>, String> {
    static SCHEMAS: LazyLock<Mutex<HashMap<Vec<u8>, Arc<Node>>>> = LazyLock::new(Default::default);
    if let Some(schema) = SCHEMAS.lock().unwrap_or_else(|e| e.into_inner()).get(&json) {
        return Ok(Arc::clone(schema));
    }
    let text = std::str::from_utf8(&json).map_err(|_| "avro.schema is not UTF-8".to_string())?;
    let parsed = Schema::parse_str(text).map_err(|e| format!("invalid avro.schema: {e}"))?;
    let resolved =
        ResolvedSchema::try_from(&parsed).map_err(|e| format!("invalid avro.schema: {e}"))?;
    let schema = Arc::new(Node::compile(&parsed, resolved.get_names())?);
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

/// A decoded record, read field by field.
#[derive(Clone, Copy)]
pub(crate) struct Record<'a> {
    what: &'static str,
    fields: &'a [Datum<'a>],
    schema: &'a RecordNode,
}

impl<'a> Record<'a> {
    /// A record from a record value.
    fn new(value: &'a Datum<'a>, what: &'static str) -> Result<Self> {
        match value {
            Datum::Record(schema, fields) => Ok(Self {
                what,
                fields,
                schema,
            }),
            Datum::Null => Err(Error::corrupt("", format!("{what} is null"))),
            other => Err(Error::corrupt(
                "",
                format!("{what} is an Avro {}, not a record", other.kind()),
            )),
        }
    }

    /// A record from its decoded fields.
    fn of_fields(schema: &'a RecordNode, fields: &'a [Datum<'a>], what: &'static str) -> Self {
        Self {
            what,
            fields,
            schema,
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
        self.schema.fields.iter().position(|f| f.name == name)
    }

    /// Where the field with this `field-id` attribute is, per the writer schema.
    pub(crate) fn position_of_id(&self, field_id: i32) -> Option<usize> {
        self.schema
            .fields
            .iter()
            .position(|f| f.field_id == Some(field_id))
    }

    /// The field at `index`; `None` when absent or null.
    pub(crate) fn at(&self, index: usize) -> Option<Field<'a>> {
        let value = self.fields.get(index)?;
        if matches!(value, Datum::Null) {
            return None;
        }
        Some(Field {
            what: self.what,
            name: &self.schema.fields.get(index)?.name,
            value,
        })
    }

    /// A field by name (or field id); `None` when absent or null.
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

/// One non-null field value.
#[derive(Clone, Copy)]
pub(crate) struct Field<'a> {
    what: &'static str,
    name: &'a str,
    value: &'a Datum<'a>,
}

impl<'a> Field<'a> {
    /// The value (never a union: the written branch's value).
    pub(crate) fn value(&self) -> &'a Datum<'a> {
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
                self.value.kind()
            ),
        )
    }

    /// An Avro `int`.
    pub(crate) fn int(&self) -> Result<i32> {
        match self.value {
            Datum::Int(i) => Ok(*i),
            _ => Err(self.wrong("int")),
        }
    }

    /// A field id: an Avro `int`, or a `long` that fits (some writers declare id lists as
    /// `long`, e.g. `equality_ids` written by pyarrow-based writers).
    pub(crate) fn field_id(&self) -> Result<i32> {
        self.long()
            .ok()
            .and_then(|v| i32::try_from(v).ok())
            .ok_or_else(|| self.wrong("int"))
    }

    /// An Avro `long` (an `int` is widened).
    pub(crate) fn long(&self) -> Result<i64> {
        match self.value {
            Datum::Long(l) => Ok(*l),
            Datum::Int(i) => Ok(i64::from(*i)),
            _ => Err(self.wrong("long")),
        }
    }

    /// An Avro `boolean`.
    pub(crate) fn boolean(&self) -> Result<bool> {
        match self.value {
            Datum::Boolean(b) => Ok(*b),
            _ => Err(self.wrong("boolean")),
        }
    }

    /// An Avro `string`.
    pub(crate) fn string(&self) -> Result<String> {
        match self.value {
            Datum::String(s) => Ok((*s).to_string()),
            _ => Err(self.wrong("string")),
        }
    }

    /// Avro `bytes` or `fixed`.
    pub(crate) fn bytes(&self) -> Result<Vec<u8>> {
        match self.value {
            Datum::Bytes(b) | Datum::Fixed(b) => Ok(b.to_vec()),
            _ => Err(self.wrong("bytes")),
        }
    }

    /// A record.
    pub(crate) fn record(&self, what: &'static str) -> Result<Record<'a>> {
        Record::new(self.value, what)
    }

    /// An array's items (null items are skipped).
    pub(crate) fn items(&self) -> Result<impl Iterator<Item = Field<'a>> + use<'a>> {
        let Datum::Array(items) = self.value else {
            return Err(self.wrong("array"));
        };
        let field = *self;
        Ok(items
            .iter()
            .filter(|v| !matches!(v, Datum::Null))
            .map(move |value| Field { value, ..field }))
    }

    /// An array of items converted with `convert`.
    pub(crate) fn list<T>(&self, convert: impl Fn(&Field<'a>) -> Result<T>) -> Result<Vec<T>> {
        self.items()?.map(|f| convert(&f)).collect()
    }

    /// An Iceberg `map<int, T>`: an Avro array of `{key, value}` records (Java writes them
    /// with `logicalType: map`), or an Avro map with numeric string keys. Entries with a null
    /// key or value are skipped.
    pub(crate) fn int_map<T>(
        &self,
        convert: impl Fn(&Field<'a>) -> Result<T>,
    ) -> Result<HashMap<i32, T>> {
        match self.value {
            Datum::Map(map) => map
                .iter()
                .filter(|(_, v)| !matches!(v, Datum::Null))
                .map(|(k, v)| {
                    let key = k
                        .parse::<i32>()
                        .map_err(|_| self.wrong("map with int keys"))?;
                    Ok((key, convert(&Field { value: v, ..*self })?))
                })
                .collect(),
            Datum::Array(_) => {
                let mut map = HashMap::new();
                for item in self.items()? {
                    if let Some((k, v)) = self.map_entry(&item)? {
                        map.insert(k.int()?, convert(&v)?);
                    }
                }
                Ok(map)
            }
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
    use apache_avro::types::Value;
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
