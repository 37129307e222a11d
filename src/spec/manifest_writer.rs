//! Writing manifests and manifest lists (spec: "Manifests", "Manifest Lists", Appendix A
//! "Avro"), the inverse of [`super::manifest`] and [`super::manifest_list`].
//!
//! Files are Avro object containers, deflated, laid out as Java writes them: every field
//! carries its Iceberg `field-id`, optional fields are `["null", T]` unions with a `null`
//! default, `map<int, T>` columns are arrays of `k{key}_v{value}` records with
//! `logicalType: map`, lists carry their `element-id`. The field set is the one of the table's
//! format version; a value the version cannot hold (a delete file in v1, a deletion vector's
//! `content_offset` in v2, ...) is an [`Error::InvalidArgument`] rather than silently dropped.
//!
//! Writers are pure: entries in, bytes out.

use std::collections::{HashMap, HashSet};

use apache_avro::Schema as AvroSchema;
use apache_avro::types::Value;
use apache_avro::writer::datum::GenericDatumWriter;
use flate2::Compression;
use flate2::write::DeflateEncoder;
use serde_json::{Value as Json, json};
use std::io::Write as _;

use super::manifest::{DataContentType, DataFile, FileFormat, ManifestEntry};
use super::manifest_list::{FieldSummary, ManifestContent, ManifestFile};
use super::metadata::{FormatVersion, TableMetadata};
use super::partition::PartitionSpec;
use super::schema::Schema;
use super::types::{PrimitiveType, StructType, Type};
use super::values::Literal;
use crate::error::{Error, Result};

/// `block_size_in_bytes` (field 105), required in v1 and unused since: Java writes 64 MiB.
const V1_BLOCK_SIZE_IN_BYTES: i64 = 64 * 1024 * 1024;

/// The Avro bytes of a manifest (spec: "Manifests").
///
/// The header's key-value metadata holds `schema` (the table schema JSON), `schema-id`,
/// `partition-spec` (the spec's fields JSON), `partition-spec-id`, `format-version` and
/// `content` (`data` or `deletes`). The records are `manifest_entry`s with the field set of
/// `metadata`'s format version; the `partition` struct (`r102`) is `spec`'s partition type
/// over `schema`, its values written as the Avro types of Appendix A (`date` as an int,
/// timestamps as longs, `decimal(P, S)` as the smallest `fixed` that holds P digits, `uuid` as
/// `fixed[16]`, ...). Metric maps are written as Java writes them (arrays of
/// `k117_v118`-style key/value records), empty ones as null; bounds as binary.
///
/// Entries are written as given: a `None` snapshot id or sequence number is written as null
/// and inherited by readers (spec: "Sequence Number Inheritance"). v1 has no sequence numbers,
/// so those are not written; its required `snapshot_id` must be set.
///
/// Errors are [`Error::InvalidArgument`] naming the entry for values the format version
/// cannot hold or that do not fit the partition type, for a deletes manifest in v1 and for a
/// spec whose source columns are not in `schema`; [`Error::Unsupported`] for a partition
/// type icefloe cannot write (`variant`, ...).
pub fn write_manifest(
    metadata: &TableMetadata,
    schema: &Schema,
    spec: &PartitionSpec,
    content: ManifestContent,
    entries: &[ManifestEntry],
) -> Result<Vec<u8>> {
    let version = metadata.format_version;
    if version == FormatVersion::V1 && content == ManifestContent::Deletes {
        return Err(Error::invalid(
            "a deletes manifest",
            "a format version 1 table cannot have delete manifests",
        ));
    }
    let partition_type = spec.partition_type(schema)?;
    let schema_json = manifest_entry_schema(version, &partition_type)?;
    let avro_schema = parse_schema(&schema_json)?;
    let header = [
        ("schema", schema.to_json().to_string()),
        ("schema-id", schema.schema_id.to_string()),
        ("partition-spec", spec.fields_json().to_string()),
        ("partition-spec-id", spec.spec_id.to_string()),
        ("format-version", version.number().to_string()),
        ("content", content_name(content).to_string()),
    ];
    let records = entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            manifest_entry(entry, version, &partition_type)
                .map_err(|e| e.within(format_args!("manifest entry {index}")))
        })
        .collect::<Result<Vec<_>>>()?;
    write_container(&schema_json, &avro_schema, &header, &records)
}

/// The Avro bytes of the manifest list of snapshot `snapshot_id` (spec: "Manifest Lists").
///
/// The header's key-value metadata holds `snapshot-id`, `parent-snapshot-id` (`null` when
/// there is none), `format-version`, from v2 on `sequence-number`, and in v3 `first-row-id`:
/// the lowest `first_row_id` of the data manifests this snapshot added (left out when it
/// added none). The records are `manifest_file`s with the field set of `format_version`.
///
/// Errors are [`Error::InvalidArgument`] naming the manifest: a deletes manifest in v1, a
/// file or row count missing in v2 or later (they are required there), a `first_row_id`
/// before v3.
pub fn write_manifest_list(
    format_version: FormatVersion,
    snapshot_id: i64,
    parent_snapshot_id: Option<i64>,
    sequence_number: i64,
    manifests: &[ManifestFile],
) -> Result<Vec<u8>> {
    let schema_json = manifest_file_schema(format_version);
    let avro_schema = parse_schema(&schema_json)?;
    let mut header = vec![
        ("snapshot-id", snapshot_id.to_string()),
        (
            "parent-snapshot-id",
            parent_snapshot_id.map_or_else(|| "null".to_string(), |id| id.to_string()),
        ),
    ];
    if format_version >= FormatVersion::V2 {
        header.push(("sequence-number", sequence_number.to_string()));
    }
    header.push(("format-version", format_version.number().to_string()));
    if format_version >= FormatVersion::V3 {
        let first_row_id = manifests
            .iter()
            .filter(|m| m.added_snapshot_id == snapshot_id && m.content == ManifestContent::Data)
            .filter_map(|m| m.first_row_id)
            .min();
        if let Some(first_row_id) = first_row_id {
            header.push(("first-row-id", first_row_id.to_string()));
        }
    }
    let records = manifests
        .iter()
        .map(|m| {
            manifest_file(m, format_version)
                .map_err(|e| e.within(format_args!("manifest_file {}", m.manifest_path)))
        })
        .collect::<Result<Vec<_>>>()?;
    write_container(&schema_json, &avro_schema, &header, &records)
}

/// `content` as the manifest header writes it.
fn content_name(content: ManifestContent) -> &'static str {
    match content {
        ManifestContent::Data => "data",
        ManifestContent::Deletes => "deletes",
    }
}

/// Parses a schema built here; a failure is a bug in the builders or an unwritable type.
fn parse_schema(schema: &Json) -> Result<AvroSchema> {
    AvroSchema::parse(schema).map_err(|e| {
        Error::invalid(
            "the Avro schema built",
            format_args!("apache-avro refuses it: {e}"),
        )
    })
}

/// Writes an Avro object container: the header (magic, metadata, sync marker), then one
/// block of `records` validated against `schema`, deflated (see [`deflate`]).
///
/// The header's `avro.schema` is `schema_json` as built here, not apache-avro's rendering of
/// the parsed schema: that rendering drops attributes readers depend on (Iceberg's
/// `"logicalType": "map"` on the key-value arrays, without which PyIceberg and DuckDB cannot
/// read the metrics maps).
fn write_container(
    schema_json: &Json,
    schema: &AvroSchema,
    header: &[(&str, String)],
    records: &[Value],
) -> Result<Vec<u8>> {
    let failed = |e: apache_avro::Error| {
        Error::invalid(
            "the records",
            format_args!("cannot be written as Avro: {e}"),
        )
    };
    let datum = GenericDatumWriter::builder(schema)
        .build()
        .map_err(failed)?;
    let mut block = Vec::new();
    for record in records {
        datum.write_value_ref(&mut block, record).map_err(failed)?;
    }
    let block = deflate(&block)
        .map_err(|e| Error::invalid("an Avro block", format_args!("cannot be deflated: {e}")))?;
    let mut metadata: Vec<(&str, &[u8])> = vec![("avro.codec", b"deflate")];
    let schema_text = schema_json.to_string();
    metadata.push(("avro.schema", schema_text.as_bytes()));
    metadata.extend(header.iter().map(|(k, v)| (*k, v.as_bytes())));
    let sync = *uuid::Uuid::new_v4().as_bytes();
    let mut out = b"Obj\x01".to_vec();
    write_long(&mut out, metadata.len() as i64);
    for (key, value) in metadata {
        write_bytes(&mut out, key.as_bytes());
        write_bytes(&mut out, value);
    }
    write_long(&mut out, 0);
    out.extend_from_slice(&sync);
    if !records.is_empty() {
        write_long(&mut out, records.len() as i64);
        write_bytes(&mut out, &block);
        out.extend_from_slice(&sync);
    }
    Ok(out)
}

/// Raw deflate (Avro's `deflate` codec) at zlib's fastest level: a 2,000-entry manifest list
/// deflates in a tenth of the time of the default level, for a slightly larger file, and a
/// commit rewrites the list of every manifest it keeps.
fn deflate(data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = DeflateEncoder::new(Vec::new(), Compression::fast());
    encoder.write_all(data)?;
    encoder.finish()
}

/// Avro's zig-zag variable-length long.
fn write_long(out: &mut Vec<u8>, n: i64) {
    let mut z = ((n << 1) ^ (n >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Avro `bytes`/`string`: the length, then the bytes.
fn write_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    write_long(out, bytes.len() as i64);
    out.extend_from_slice(bytes);
}

// ---- schemas -----------------------------------------------------------------------------

/// A required field.
fn field(name: &str, id: i32, ty: Json) -> Json {
    json!({"name": name, "type": ty, "field-id": id})
}

/// An optional field: a `["null", T]` union with a null default.
fn opt_field(name: &str, id: i32, ty: Json) -> Json {
    json!({"name": name, "type": ["null", ty], "default": null, "field-id": id})
}

/// Java's `map<int, T>`: an array of `k{key_id}_v{value_id}` key/value records.
fn int_map(key_id: i32, value_id: i32, value: &str) -> Json {
    json!({
        "type": "array",
        "logicalType": "map",
        "items": {
            "type": "record",
            "name": format!("k{key_id}_v{value_id}"),
            "fields": [field("key", key_id, json!("int")), field("value", value_id, json!(value))],
        },
    })
}

/// A `list<T>` with its element id.
fn list(element_id: i32, items: Json) -> Json {
    json!({"type": "array", "items": items, "element-id": element_id})
}

fn record(name: &str, fields: Vec<Json>) -> Json {
    json!({"type": "record", "name": name, "fields": fields})
}

/// The `manifest_entry` schema of a format version (`data_file` is record `r2`).
fn manifest_entry_schema(version: FormatVersion, partition_type: &StructType) -> Result<Json> {
    let v1 = version == FormatVersion::V1;
    let mut fields = vec![field("status", 0, json!("int"))];
    if v1 {
        fields.push(field("snapshot_id", 1, json!("long")));
    } else {
        fields.extend([
            opt_field("snapshot_id", 1, json!("long")),
            opt_field("sequence_number", 3, json!("long")),
            opt_field("file_sequence_number", 4, json!("long")),
        ]);
    }
    fields.push(field(
        "data_file",
        2,
        record("r2", data_file_fields(version, partition_type)?),
    ));
    Ok(record("manifest_entry", fields))
}

/// The `data_file` fields of a format version, in the spec's order.
fn data_file_fields(version: FormatVersion, partition_type: &StructType) -> Result<Vec<Json>> {
    let v1 = version == FormatVersion::V1;
    let mut fields = Vec::new();
    if !v1 {
        fields.push(field("content", 134, json!("int")));
    }
    fields.extend([
        field("file_path", 100, json!("string")),
        field("file_format", 101, json!("string")),
        field("partition", 102, partition_schema(partition_type)?),
        field("record_count", 103, json!("long")),
        field("file_size_in_bytes", 104, json!("long")),
    ]);
    if v1 {
        fields.push(field("block_size_in_bytes", 105, json!("long")));
    }
    fields.extend([
        opt_field("column_sizes", 108, int_map(117, 118, "long")),
        opt_field("value_counts", 109, int_map(119, 120, "long")),
        opt_field("null_value_counts", 110, int_map(121, 122, "long")),
        opt_field("nan_value_counts", 137, int_map(138, 139, "long")),
        opt_field("lower_bounds", 125, int_map(126, 127, "bytes")),
        opt_field("upper_bounds", 128, int_map(129, 130, "bytes")),
        opt_field("key_metadata", 131, json!("bytes")),
        opt_field("split_offsets", 132, list(133, json!("long"))),
    ]);
    if !v1 {
        fields.push(opt_field("equality_ids", 135, list(136, json!("int"))));
    }
    fields.push(opt_field("sort_order_id", 140, json!("int")));
    if version >= FormatVersion::V3 {
        fields.push(opt_field("first_row_id", 142, json!("long")));
    }
    if !v1 {
        fields.push(opt_field("referenced_data_file", 143, json!("string")));
    }
    if version >= FormatVersion::V3 {
        fields.extend([
            opt_field("content_offset", 144, json!("long")),
            opt_field("content_size_in_bytes", 145, json!("long")),
        ]);
    }
    Ok(fields)
}

/// The `partition` record (`r102`): one optional field per partition field, named as Avro
/// allows and carrying the partition field id.
fn partition_schema(partition_type: &StructType) -> Result<Json> {
    let mut named = HashSet::new();
    let fields = partition_type
        .fields
        .iter()
        .map(|f| {
            let ty = primitive_of(&f.field_type, &f.name)?;
            Ok(opt_field(
                &avro_name(&f.name),
                f.id,
                primitive_schema(ty, &mut named)?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(record("r102", fields))
}

fn primitive_of<'t>(ty: &'t Type, name: &str) -> Result<&'t PrimitiveType> {
    ty.as_primitive().ok_or_else(|| {
        Error::invalid(
            format_args!("partition field {name}"),
            format_args!("has the nested type {ty}"),
        )
    })
}

/// The Avro schema of a primitive type (spec Appendix A). Named types (`fixed`) are defined
/// once and referred to by name afterwards, as Avro requires.
fn primitive_schema(ty: &PrimitiveType, named: &mut HashSet<String>) -> Result<Json> {
    use PrimitiveType as P;
    let mut fixed = |name: String, definition: Json| {
        if named.insert(name.clone()) {
            definition
        } else {
            Json::String(name)
        }
    };
    Ok(match ty {
        P::Boolean => json!("boolean"),
        P::Int => json!("int"),
        P::Long => json!("long"),
        P::Float => json!("float"),
        P::Double => json!("double"),
        P::Date => json!({"type": "int", "logicalType": "date"}),
        P::Time => json!({"type": "long", "logicalType": "time-micros"}),
        P::Timestamp | P::Timestamptz => json!({
            "type": "long",
            "logicalType": "timestamp-micros",
            "adjust-to-utc": *ty == P::Timestamptz,
        }),
        P::TimestampNs | P::TimestamptzNs => json!({
            "type": "long",
            "logicalType": "timestamp-nanos",
            "adjust-to-utc": *ty == P::TimestamptzNs,
        }),
        P::String => json!("string"),
        P::Binary => json!("bytes"),
        P::Uuid => fixed(
            "uuid_fixed".into(),
            json!({"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}),
        ),
        P::Fixed(size) => {
            let name = format!("fixed_{size}");
            fixed(
                name.clone(),
                json!({"type": "fixed", "name": name, "size": size}),
            )
        }
        P::Decimal { precision, scale } => {
            let name = format!("decimal_{precision}_{scale}");
            let size = decimal_required_bytes(*precision)?;
            fixed(
                name.clone(),
                json!({
                    "type": "fixed",
                    "name": name,
                    "size": size,
                    "logicalType": "decimal",
                    "precision": precision,
                    "scale": scale,
                }),
            )
        }
        P::Variant | P::Unknown | P::Geometry { .. } | P::Geography { .. } => {
            return Err(Error::Unsupported(format!(
                "writing partition values of type {ty}"
            )));
        }
    })
}

/// The smallest number of bytes whose two's complement holds every `decimal(P, _)` value.
fn decimal_required_bytes(precision: u32) -> Result<usize> {
    let max = 10u128.checked_pow(precision);
    (1..=16usize)
        .find(|&n| max.is_some_and(|max| max <= 1u128 << (8 * n - 1)))
        .ok_or_else(|| Error::invalid(format_args!("decimal precision {precision}"), "is above 38"))
}

/// A name Avro accepts (`[A-Za-z_][A-Za-z0-9_]*`): a leading digit gets a `_` before it,
/// any other character becomes `_x` and its hex code, as Java sanitizes names.
fn avro_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (i, c) in name.chars().enumerate() {
        match c {
            'A'..='Z' | 'a'..='z' | '_' => out.push(c),
            '0'..='9' if i > 0 => out.push(c),
            '0'..='9' => {
                out.push('_');
                out.push(c);
            }
            _ => out.push_str(&format!("_x{:X}", u32::from(c))),
        }
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// The `manifest_file` schema of a format version (`partitions` items are record `r508`).
fn manifest_file_schema(version: FormatVersion) -> Json {
    let v1 = version == FormatVersion::V1;
    let mut fields = vec![
        field("manifest_path", 500, json!("string")),
        field("manifest_length", 501, json!("long")),
        field("partition_spec_id", 502, json!("int")),
    ];
    if !v1 {
        fields.extend([
            field("content", 517, json!("int")),
            field("sequence_number", 515, json!("long")),
            field("min_sequence_number", 516, json!("long")),
        ]);
    }
    fields.push(field("added_snapshot_id", 503, json!("long")));
    let count = |name: &str, id: i32, ty: &str| {
        if v1 {
            opt_field(name, id, json!(ty))
        } else {
            field(name, id, json!(ty))
        }
    };
    fields.extend([
        count("added_files_count", 504, "int"),
        count("existing_files_count", 505, "int"),
        count("deleted_files_count", 506, "int"),
        count("added_rows_count", 512, "long"),
        count("existing_rows_count", 513, "long"),
        count("deleted_rows_count", 514, "long"),
    ]);
    let summary = record(
        "r508",
        vec![
            field("contains_null", 509, json!("boolean")),
            opt_field("contains_nan", 518, json!("boolean")),
            opt_field("lower_bound", 510, json!("bytes")),
            opt_field("upper_bound", 511, json!("bytes")),
        ],
    );
    fields.extend([
        opt_field("partitions", 507, list(508, summary)),
        opt_field("key_metadata", 519, json!("bytes")),
    ]);
    if version >= FormatVersion::V3 {
        fields.push(opt_field("first_row_id", 520, json!("long")));
    }
    record("manifest_file", fields)
}

// ---- values ------------------------------------------------------------------------------

/// The non-null branch of a `["null", T]` union.
fn some(value: Value) -> Value {
    Value::Union(1, Box::new(value))
}

/// The null branch of a `["null", T]` union.
fn null() -> Value {
    Value::Union(0, Box::new(Value::Null))
}

fn optional<T>(value: Option<T>, to_value: impl FnOnce(T) -> Value) -> Value {
    value.map_or_else(null, |v| some(to_value(v)))
}

fn record_value(fields: Vec<(&str, Value)>) -> Value {
    Value::Record(
        fields
            .into_iter()
            .map(|(name, value)| (name.to_string(), value))
            .collect(),
    )
}

/// A `map<int, T>` as key/value records in key order; an empty map is null.
fn int_map_value<T>(map: &HashMap<i32, T>, to_value: impl Fn(&T) -> Value) -> Value {
    if map.is_empty() {
        return null();
    }
    let mut keys: Vec<_> = map.keys().copied().collect();
    keys.sort_unstable();
    some(Value::Array(
        keys.into_iter()
            .filter_map(|k| map.get(&k).map(|v| (k, v)))
            .map(|(k, v)| record_value(vec![("key", Value::Int(k)), ("value", to_value(v))]))
            .collect(),
    ))
}

/// Bounds: absent stays null (not collected), an empty map stays an empty array.
fn bounds_value(bounds: Option<&HashMap<i32, Vec<u8>>>) -> Value {
    match bounds {
        None => null(),
        Some(map) if map.is_empty() => some(Value::Array(Vec::new())),
        Some(map) => int_map_value(map, |b| Value::Bytes(b.clone())),
    }
}

/// Fails when a field the format version has no place for is set.
fn absent_in(version: FormatVersion, name: &str, is_set: bool) -> Result<()> {
    if is_set {
        Err(Error::invalid(
            name,
            format_args!("cannot be written in format version {}", version.number()),
        ))
    } else {
        Ok(())
    }
}

fn manifest_entry(
    entry: &ManifestEntry,
    version: FormatVersion,
    partition_type: &StructType,
) -> Result<Value> {
    let mut fields = vec![("status", Value::Int(entry.status as i32))];
    if version == FormatVersion::V1 {
        let snapshot_id = entry
            .snapshot_id
            .ok_or_else(|| Error::invalid("snapshot_id", "is required in format version 1"))?;
        fields.push(("snapshot_id", Value::Long(snapshot_id)));
    } else {
        fields.extend([
            ("snapshot_id", optional(entry.snapshot_id, Value::Long)),
            (
                "sequence_number",
                optional(entry.sequence_number, Value::Long),
            ),
            (
                "file_sequence_number",
                optional(entry.file_sequence_number, Value::Long),
            ),
        ]);
    }
    fields.push((
        "data_file",
        data_file(&entry.data_file, version, partition_type)?,
    ));
    Ok(record_value(fields))
}

fn data_file(
    file: &DataFile,
    version: FormatVersion,
    partition_type: &StructType,
) -> Result<Value> {
    let v1 = version == FormatVersion::V1;
    let v3 = version >= FormatVersion::V3;
    let mut fields = Vec::with_capacity(24);
    if v1 {
        absent_in(
            version,
            "a delete file",
            file.content != DataContentType::Data,
        )?;
        absent_in(version, "equality_ids", file.equality_ids.is_some())?;
        absent_in(
            version,
            "referenced_data_file",
            file.referenced_data_file.is_some(),
        )?;
    } else {
        fields.push(("content", Value::Int(file.content as i32)));
    }
    if !v3 {
        absent_in(version, "first_row_id", file.first_row_id.is_some())?;
        absent_in(version, "content_offset", file.content_offset.is_some())?;
        absent_in(
            version,
            "content_size_in_bytes",
            file.content_size_in_bytes.is_some(),
        )?;
    }
    let long = |v: &i64| Value::Long(*v);
    fields.extend([
        ("file_path", Value::String(file.file_path.clone())),
        (
            "file_format",
            Value::String(file_format_name(&file.file_format)),
        ),
        (
            "partition",
            partition_value(&file.partition, partition_type)?,
        ),
        ("record_count", Value::Long(file.record_count)),
        ("file_size_in_bytes", Value::Long(file.file_size_in_bytes)),
    ]);
    if v1 {
        fields.push(("block_size_in_bytes", Value::Long(V1_BLOCK_SIZE_IN_BYTES)));
    }
    fields.extend([
        ("column_sizes", int_map_value(&file.column_sizes, long)),
        ("value_counts", int_map_value(&file.value_counts, long)),
        (
            "null_value_counts",
            int_map_value(&file.null_value_counts, long),
        ),
        (
            "nan_value_counts",
            int_map_value(&file.nan_value_counts, long),
        ),
        ("lower_bounds", bounds_value(file.lower_bounds.as_ref())),
        ("upper_bounds", bounds_value(file.upper_bounds.as_ref())),
        (
            "key_metadata",
            optional(file.key_metadata.clone(), Value::Bytes),
        ),
        (
            "split_offsets",
            optional(file.split_offsets.as_ref(), |s| {
                Value::Array(s.iter().map(long).collect())
            }),
        ),
    ]);
    if !v1 {
        fields.push((
            "equality_ids",
            optional(file.equality_ids.as_ref(), |ids| {
                Value::Array(ids.iter().map(|id| Value::Int(*id)).collect())
            }),
        ));
    }
    fields.push(("sort_order_id", optional(file.sort_order_id, Value::Int)));
    if v3 {
        fields.push(("first_row_id", optional(file.first_row_id, Value::Long)));
    }
    if !v1 {
        fields.push((
            "referenced_data_file",
            optional(file.referenced_data_file.clone(), Value::String),
        ));
    }
    if v3 {
        fields.extend([
            ("content_offset", optional(file.content_offset, Value::Long)),
            (
                "content_size_in_bytes",
                optional(file.content_size_in_bytes, Value::Long),
            ),
        ]);
    }
    Ok(record_value(fields))
}

fn file_format_name(format: &FileFormat) -> String {
    match format {
        FileFormat::Parquet => "PARQUET".into(),
        FileFormat::Avro => "AVRO".into(),
        FileFormat::Orc => "ORC".into(),
        FileFormat::Puffin => "PUFFIN".into(),
        FileFormat::Other(name) => name.clone(),
    }
}

/// The `partition` record of a tuple: one value per partition field, in order.
fn partition_value(tuple: &[Option<Literal>], partition_type: &StructType) -> Result<Value> {
    if tuple.len() != partition_type.fields.len() {
        return Err(Error::invalid(
            "the partition tuple",
            format_args!(
                "has {} values but the partition type has {} fields",
                tuple.len(),
                partition_type.fields.len()
            ),
        ));
    }
    let fields = partition_type
        .fields
        .iter()
        .zip(tuple)
        .map(|(f, value)| {
            let ty = primitive_of(&f.field_type, &f.name)?;
            let value = match value {
                None => null(),
                Some(v) => some(
                    literal_value(v, ty)
                        .map_err(|e| e.within(format_args!("partition field {}", f.name)))?,
                ),
            };
            Ok((avro_name(&f.name), value))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Value::Record(fields))
}

/// One partition value as the Avro type [`primitive_schema`] gives its type; an `int` is
/// widened to a `long` and a `float` to a `double`, other mismatches are errors.
fn literal_value(literal: &Literal, ty: &PrimitiveType) -> Result<Value> {
    use Literal as L;
    use PrimitiveType as P;
    Ok(match (ty, literal) {
        (P::Boolean, L::Boolean(b)) => Value::Boolean(*b),
        (P::Int, L::Int(i)) => Value::Int(*i),
        (P::Long, L::Long(l)) => Value::Long(*l),
        (P::Long, L::Int(i)) => Value::Long(i64::from(*i)),
        (P::Float, L::Float(x)) => Value::Float(*x),
        (P::Double, L::Double(x)) => Value::Double(*x),
        (P::Double, L::Float(x)) => Value::Double(f64::from(*x)),
        (P::Date, L::Date(d)) => Value::Date(*d),
        (P::Time, L::Time(t)) => Value::TimeMicros(*t),
        (P::Timestamp, L::Timestamp(t)) | (P::Timestamptz, L::Timestamptz(t)) => {
            Value::TimestampMicros(*t)
        }
        (P::TimestampNs, L::TimestampNs(t)) | (P::TimestamptzNs, L::TimestamptzNs(t)) => {
            Value::TimestampNanos(*t)
        }
        (P::String, L::String(s)) => Value::String(s.clone()),
        (P::Binary, L::Binary(b)) => Value::Bytes(b.clone()),
        (P::Uuid, L::Uuid(u)) => Value::Fixed(16, u.to_vec()),
        (P::Fixed(size), L::Fixed(b)) if u64::try_from(b.len()) == Ok(*size) => {
            Value::Fixed(b.len(), b.clone())
        }
        (P::Decimal { precision, .. }, L::Decimal(unscaled)) => {
            let size = decimal_required_bytes(*precision)?;
            Value::Fixed(
                size,
                sign_extended(*unscaled, size).ok_or_else(|| {
                    Error::invalid(
                        format_args!("decimal {unscaled}"),
                        format_args!("does not fit precision {precision}"),
                    )
                })?,
            )
        }
        _ => {
            return Err(Error::invalid(
                format_args!("{literal:?}"),
                format_args!("is not a {ty} value"),
            ));
        }
    })
}

/// The big-endian two's complement of `v` in exactly `size` bytes, if it fits.
fn sign_extended(v: i128, size: usize) -> Option<Vec<u8>> {
    let full = v.to_be_bytes();
    let (head, tail) = full.split_at(full.len().checked_sub(size)?);
    let sign = if v < 0 { 0xFF } else { 0 };
    let top_bit_matches = tail.first().is_some_and(|b| (b & 0x80 != 0) == (v < 0));
    (head.iter().all(|&b| b == sign) && top_bit_matches).then(|| tail.to_vec())
}

fn manifest_file(m: &ManifestFile, version: FormatVersion) -> Result<Value> {
    let v1 = version == FormatVersion::V1;
    let mut fields = vec![
        ("manifest_path", Value::String(m.manifest_path.clone())),
        ("manifest_length", Value::Long(m.manifest_length)),
        ("partition_spec_id", Value::Int(m.partition_spec_id)),
    ];
    if v1 {
        absent_in(
            version,
            "a deletes manifest",
            m.content == ManifestContent::Deletes,
        )?;
    } else {
        fields.extend([
            ("content", Value::Int(m.content as i32)),
            ("sequence_number", Value::Long(m.sequence_number)),
            ("min_sequence_number", Value::Long(m.min_sequence_number)),
        ]);
    }
    if version < FormatVersion::V3 {
        absent_in(version, "first_row_id", m.first_row_id.is_some())?;
    }
    fields.push(("added_snapshot_id", Value::Long(m.added_snapshot_id)));
    let int_count = |name: &'static str, v: Option<i32>| count(v1, name, v.map(Value::Int));
    let long_count = |name: &'static str, v: Option<i64>| count(v1, name, v.map(Value::Long));
    fields.extend([
        int_count("added_files_count", m.added_files_count)?,
        int_count("existing_files_count", m.existing_files_count)?,
        int_count("deleted_files_count", m.deleted_files_count)?,
        long_count("added_rows_count", m.added_rows_count)?,
        long_count("existing_rows_count", m.existing_rows_count)?,
        long_count("deleted_rows_count", m.deleted_rows_count)?,
        (
            "partitions",
            optional(m.partitions.as_ref(), |p| {
                Value::Array(p.iter().map(field_summary).collect())
            }),
        ),
        (
            "key_metadata",
            optional(m.key_metadata.clone(), Value::Bytes),
        ),
    ]);
    if version >= FormatVersion::V3 {
        fields.push(("first_row_id", optional(m.first_row_id, Value::Long)));
    }
    Ok(record_value(fields))
}

/// A file or row count: optional in v1, required from v2 on.
fn count(v1: bool, name: &'static str, value: Option<Value>) -> Result<(&'static str, Value)> {
    match (v1, value) {
        (true, value) => Ok((name, value.map_or_else(null, some))),
        (false, Some(value)) => Ok((name, value)),
        (false, None) => Err(Error::invalid(name, "is required from format version 2 on")),
    }
}

fn field_summary(s: &FieldSummary) -> Value {
    record_value(vec![
        ("contains_null", Value::Boolean(s.contains_null)),
        ("contains_nan", optional(s.contains_nan, Value::Boolean)),
        ("lower_bound", optional(s.lower_bound.clone(), Value::Bytes)),
        ("upper_bound", optional(s.upper_bound.clone(), Value::Bytes)),
    ])
}

#[cfg(test)]
#[path = "manifest_writer_tests.rs"]
mod tests;
