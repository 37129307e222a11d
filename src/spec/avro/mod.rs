//! Reading Iceberg's Avro files (manifest lists and manifests) one record at a time, with
//! fields found by name and, where a writer named a field differently, by the `field-id`
//! attribute of the writer schema (spec: "Avro" appendix: every field carries its Iceberg id).
//! Nullable unions are resolved while decoding, so writers that make every field a
//! `["null", T]` union (BigQuery) read like Java's.
//!
//! The container format is read here; records are decoded by [`datum`] against the writer
//! schema, compiled once per distinct schema text. Decoders here are pure: their errors are
//! [`Error::Corrupt`] with an empty path, whose source is the [`AvroError`] saying what is
//! wrong.

mod codec;
mod datum;
mod error;

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, LazyLock, Mutex};

use apache_avro::Codec;
use apache_avro::schema::{ResolvedSchema, Schema};

pub(crate) use self::datum::Datum;
use self::datum::{Node, RecordNode, read_len, read_long, take};
pub(crate) use self::error::AvroError;
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
    /// See [`AvroFile::with_max_decoded`].
    max_decoded: u64,
}

impl<'b> AvroFile<'b> {
    /// Reads the header (magic, key-value metadata, writer schema, sync marker).
    pub(crate) fn open(bytes: &'b [u8]) -> Result<Self> {
        let header_error = |e: AvroError| e.corrupt("invalid Avro header");
        let rest = bytes
            .strip_prefix(b"Obj\x01")
            .ok_or_else(|| header_error(AvroError::BadMagic))?;
        let mut input = rest;
        let mut metadata = read_metadata_map(&mut input).map_err(header_error)?;
        let mut sync = [0u8; 16];
        sync.copy_from_slice(take(&mut input, 16).map_err(header_error)?);
        let schema_json = metadata
            .remove("avro.schema")
            .ok_or_else(|| header_error(AvroError::NoSchema))?;
        let schema = writer_schema(schema_json).map_err(header_error)?;
        let codec = match metadata.remove("avro.codec") {
            None => Codec::Null,
            Some(name) => {
                let name = String::from_utf8_lossy(&name).into_owned();
                Codec::from_str(&name)
                    .map_err(|_| header_error(AvroError::UnsupportedCodec(name)))?
            }
        };
        metadata.retain(|key, _| !key.starts_with("avro."));
        Ok(Self {
            schema,
            metadata,
            codec,
            sync,
            blocks: input,
            max_decoded: DEFAULT_MAX_DECODED_BYTES,
        })
    }

    /// The header's key-value metadata, without Avro's own `avro.*` keys.
    pub(crate) fn metadata(&self) -> &HashMap<String, Vec<u8>> {
        &self.metadata
    }

    /// The same file, decoded within another memory bound: its blocks inflated and its
    /// records decoded (each counted at its inline size) may take at most `max_bytes` in
    /// all. [`AvroFile::open`] sets [`DEFAULT_MAX_DECODED_BYTES`].
    pub(crate) fn with_max_decoded(mut self, max_bytes: u64) -> Self {
        self.max_decoded = max_bytes;
        self
    }

    /// Decodes every record and converts it with `convert`, in file order. `what` names the
    /// record (`manifest_entry`) in error messages.
    ///
    /// Blocks are inflated one at a time into one reused buffer; the bytes they inflate to
    /// and the records decoded from them are counted against the bound of
    /// [`AvroFile::with_max_decoded`], so no input makes decoding take more memory than that.
    pub(crate) fn map_records<T>(
        self,
        what: &'static str,
        mut convert: impl FnMut(Record<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let record_size = std::mem::size_of::<T>().max(1) as u64;
        let mut budget = self.max_decoded;
        let mut out = Vec::new();
        let mut input = self.blocks;
        let mut inflated = Vec::new();
        while !input.is_empty() {
            let first = out.len();
            let block_error =
                |e: AvroError| e.corrupt(format_args!("Avro block after record {first}"));
            let (count, data) = self.next_block(&mut input).map_err(block_error)?;
            // The records are counted first: a block claiming millions is refused unread.
            let records = count_within(count, record_size, &mut budget).map_err(block_error)?;
            codec::inflate(self.codec, data, &mut inflated, budget).map_err(block_error)?;
            budget -= inflated.len() as u64;
            self.decode_block(&inflated, records, what, &mut convert, &mut out)?;
        }
        Ok(out)
    }

    /// The record count and the (still compressed) bytes of the next block; checks the sync
    /// marker that ends it.
    fn next_block<'i>(&self, input: &mut &'i [u8]) -> Result<(u64, &'i [u8]), AvroError> {
        let count = read_len(input)? as u64;
        let size = read_len(input)?;
        let data = take(input, size)?;
        if take(input, 16)? != self.sync {
            return Err(AvroError::SyncMismatch);
        }
        Ok((count, data))
    }

    /// Decodes `count` records from an inflated block, appending what `convert` makes of them.
    fn decode_block<'s, T>(
        &'s self,
        mut records: &'s [u8],
        count: u64,
        what: &'static str,
        convert: &mut impl FnMut(Record<'_>) -> Result<T>,
        out: &mut Vec<T>,
    ) -> Result<()> {
        let schema = self.schema.as_ref();
        // Bounded: the budget allowed `count` records.
        out.reserve(usize::try_from(count).unwrap_or(0).min(records.len()));
        // A record schema's fields are decoded into one buffer reused for the block.
        let mut fields = Vec::new();
        for _ in 0..count {
            let index = out.len();
            let decode_error = |e: AvroError| {
                e.corrupt(format_args!("cannot decode Avro record {index} ({what})"))
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
                    .and_then(&mut *convert)
                    .map_err(|e| e.within(format_args!("record {index}")))?,
            );
        }
        Ok(())
    }
}

/// The default bound of [`AvroFile::with_max_decoded`]: 1 GiB.
pub(crate) const DEFAULT_MAX_DECODED_BYTES: u64 = 1 << 30;

/// Takes the memory of `count` decoded records of `record_size` bytes from `budget`.
fn count_within(count: u64, record_size: u64, budget: &mut u64) -> Result<u64, AvroError> {
    match count.checked_mul(record_size) {
        Some(bytes) if bytes <= *budget => {
            *budget -= bytes;
            Ok(count)
        }
        _ => Err(AvroError::TooManyRecords {
            count,
            record_size,
            budget: *budget,
        }),
    }
}

/// The compiled writer schema for this schema text, from the process-wide cache when seen
/// before. The cache holds at most [`SCHEMA_CACHE_ENTRIES`] schemas (a few KB each).
fn writer_schema(json: Vec<u8>) -> Result<Arc<Node>, AvroError> {
    static SCHEMAS: LazyLock<Mutex<HashMap<Vec<u8>, Arc<Node>>>> = LazyLock::new(Default::default);
    if let Some(schema) = SCHEMAS.lock().unwrap_or_else(|e| e.into_inner()).get(&json) {
        return Ok(Arc::clone(schema));
    }
    let text = std::str::from_utf8(&json).map_err(|_| AvroError::NotUtf8("avro.schema"))?;
    let parsed = Schema::parse_str(text).map_err(AvroError::InvalidSchema)?;
    let resolved = ResolvedSchema::try_from(&parsed).map_err(AvroError::InvalidSchema)?;
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
fn read_metadata_map(input: &mut &[u8]) -> Result<HashMap<String, Vec<u8>>, AvroError> {
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
                .map_err(|_| AvroError::NotUtf8("a metadata key"))?;
            let value_len = read_len(input)?;
            map.insert(key, take(input, value_len)?.to_vec());
        }
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
pub(crate) mod test_util;

#[cfg(test)]
mod tests;
