//! Manifests (spec: "Manifests", "Manifest Entry Fields", "Data File Fields",
//! "Sequence Number Inheritance"): one Avro file listing data or delete files with their
//! partition tuples and column metrics.
//!
//! Each Avro record is converted straight into the structs below (one decode). Fields are found
//! by name, else by their `field-id` attribute, never by position; nullable unions and
//! map encodings of every writer seen (Java's arrays of `{key, value}` records, Avro maps) are
//! accepted.

use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;

use super::avro::{AvroFile, DEFAULT_MAX_DECODED_BYTES, Datum, Field, Record};
use super::manifest_list::{ManifestContent, ManifestFile};
use super::types::{PrimitiveType, StructType};
use super::values::Literal;
use crate::error::{Error, Result};

/// `status` (field 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ManifestStatus {
    /// 0
    Existing = 0,
    /// 1
    Added = 1,
    /// 2
    Deleted = 2,
}

/// `content` (field 134) of a data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataContentType {
    /// 0: data.
    Data = 0,
    /// 1: position deletes (or a deletion vector in v3).
    PositionDeletes = 1,
    /// 2: equality deletes.
    EqualityDeletes = 2,
}

/// `file_format` (field 101).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FileFormat {
    /// `PARQUET`
    Parquet,
    /// `AVRO`
    Avro,
    /// `ORC`
    Orc,
    /// `PUFFIN`
    Puffin,
    /// Anything else, verbatim.
    Other(String),
}

/// `data_file` (field 2): a data or delete file with its partition tuple and metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct DataFile {
    /// 134 `content` (v1: data).
    pub content: DataContentType,
    /// 100 `file_path`.
    pub file_path: String,
    /// 101 `file_format`.
    pub file_format: FileFormat,
    /// 102 `partition`: one value per field of the manifest's partition type, in order.
    pub partition: Vec<Option<Literal>>,
    /// 103 `record_count`.
    pub record_count: i64,
    /// 104 `file_size_in_bytes`.
    pub file_size_in_bytes: i64,
    /// 108 `column_sizes`.
    pub column_sizes: HashMap<i32, i64>,
    /// 109 `value_counts`.
    pub value_counts: HashMap<i32, i64>,
    /// 110 `null_value_counts`.
    pub null_value_counts: HashMap<i32, i64>,
    /// 137 `nan_value_counts`.
    pub nan_value_counts: HashMap<i32, i64>,
    /// 125 `lower_bounds`, binary single-value form (decode with [`DataFile::lower_bound`]).
    pub lower_bounds: Option<HashMap<i32, Vec<u8>>>,
    /// 128 `upper_bounds`, binary single-value form.
    pub upper_bounds: Option<HashMap<i32, Vec<u8>>>,
    /// 131 `key_metadata`.
    pub key_metadata: Option<Vec<u8>>,
    /// 132 `split_offsets`.
    pub split_offsets: Option<Vec<i64>>,
    /// 135 `equality_ids`.
    pub equality_ids: Option<Vec<i32>>,
    /// 140 `sort_order_id`.
    pub sort_order_id: Option<i32>,
    /// 142 `first_row_id` (v3; after inheritance: set on the data files of manifests with a
    /// `first_row_id`, see [`inherit_first_row_ids`]).
    pub first_row_id: Option<i64>,
    /// 143 `referenced_data_file` (v2 position deletes, v3 deletion vectors).
    pub referenced_data_file: Option<String>,
    /// 144 `content_offset` (v3 deletion vectors).
    pub content_offset: Option<i64>,
    /// 145 `content_size_in_bytes` (v3 deletion vectors).
    pub content_size_in_bytes: Option<i64>,
}

impl DataFile {
    /// A file with only the required facts: no partition values, no metrics, no optional
    /// fields (writers and tests fill in the rest).
    pub fn new(
        content: DataContentType,
        file_path: impl Into<String>,
        file_format: FileFormat,
        record_count: i64,
        file_size_in_bytes: i64,
    ) -> Self {
        Self {
            content,
            file_path: file_path.into(),
            file_format,
            partition: Vec::new(),
            record_count,
            file_size_in_bytes,
            column_sizes: HashMap::new(),
            value_counts: HashMap::new(),
            null_value_counts: HashMap::new(),
            nan_value_counts: HashMap::new(),
            lower_bounds: None,
            upper_bounds: None,
            key_metadata: None,
            split_offsets: None,
            equality_ids: None,
            sort_order_id: None,
            first_row_id: None,
            referenced_data_file: None,
            content_offset: None,
            content_size_in_bytes: None,
        }
    }

    /// The decoded lower bound of a column, given the column's type.
    pub fn lower_bound(&self, field_id: i32, ty: &PrimitiveType) -> Result<Option<Literal>> {
        decode_bound(self.lower_bounds.as_ref(), field_id, ty, "lower")
    }

    /// The decoded upper bound of a column, given the column's type.
    pub fn upper_bound(&self, field_id: i32, ty: &PrimitiveType) -> Result<Option<Literal>> {
        decode_bound(self.upper_bounds.as_ref(), field_id, ty, "upper")
    }
}

fn decode_bound(
    bounds: Option<&HashMap<i32, Vec<u8>>>,
    field_id: i32,
    ty: &PrimitiveType,
    which: &str,
) -> Result<Option<Literal>> {
    let Some(bytes) = bounds.and_then(|b| b.get(&field_id)) else {
        return Ok(None);
    };
    Literal::from_bytes(ty, bytes)
        .map(Some)
        .map_err(|e| Error::from(e).within(format_args!("{which} bound of field {field_id}")))
}

/// `manifest_entry`: one tracked file.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestEntry {
    /// 0 `status`.
    pub status: ManifestStatus,
    /// 1 `snapshot_id` (after inheritance: always set).
    pub snapshot_id: Option<i64>,
    /// 3 `sequence_number`: the data sequence number (after inheritance: set in v2+).
    pub sequence_number: Option<i64>,
    /// 4 `file_sequence_number` (after inheritance: set in v2+).
    pub file_sequence_number: Option<i64>,
    /// 2 `data_file`.
    pub data_file: DataFile,
}

impl ManifestEntry {
    /// Whether the entry is live (EXISTING or ADDED); DELETED entries never reach a scan.
    pub fn is_alive(&self) -> bool {
        !matches!(self.status, ManifestStatus::Deleted)
    }
}

/// The manifest's Avro key-value metadata.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ManifestMetadata {
    /// `schema`: the table schema JSON when the manifest was written.
    pub schema: Option<String>,
    /// `schema-id`.
    pub schema_id: Option<i32>,
    /// `partition-spec`: the partition fields JSON.
    pub partition_spec: Option<String>,
    /// `partition-spec-id`.
    pub partition_spec_id: Option<i32>,
    /// `format-version`.
    pub format_version: Option<u8>,
    /// `content` (`data` or `deletes`).
    pub content: Option<ManifestContent>,
    /// Every other key (writer-specific), as UTF-8 where it is.
    pub other: BTreeMap<String, String>,
}

impl ManifestMetadata {
    /// What the manifest tracks: its `content` key, data when the writer left it out (v1).
    pub fn content_type(&self) -> ManifestContent {
        self.content.unwrap_or(ManifestContent::Data)
    }

    fn from_avro(map: &HashMap<String, Vec<u8>>) -> Result<Self> {
        let mut md = Self::default();
        for (key, raw) in map {
            let text = String::from_utf8_lossy(raw).into_owned();
            match key.as_str() {
                "schema" => md.schema = Some(text),
                "schema-id" => md.schema_id = Some(number(key, &text)?),
                "partition-spec" => md.partition_spec = Some(text),
                "partition-spec-id" => md.partition_spec_id = Some(number(key, &text)?),
                "format-version" => md.format_version = Some(number(key, &text)?),
                "content" => md.content = Some(content(&text)?),
                _ => {
                    md.other.insert(key.clone(), text);
                }
            }
        }
        Ok(md)
    }
}

fn number<T: FromStr>(key: &str, text: &str) -> Result<T> {
    text.trim().parse().map_err(|_| {
        Error::corrupt(
            "",
            format!("manifest metadata {key} '{text}' is not a valid number"),
        )
    })
}

fn content(text: &str) -> Result<ManifestContent> {
    match text.trim() {
        "data" => Ok(ManifestContent::Data),
        "deletes" => Ok(ManifestContent::Deletes),
        other => Err(Error::corrupt(
            "",
            format!("manifest metadata content '{other}' is not data or deletes"),
        )),
    }
}

/// A decoded manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The Avro key-value metadata.
    pub metadata: ManifestMetadata,
    /// Every entry, DELETED ones included, in file order, with inheritance applied.
    pub entries: Vec<ManifestEntry>,
}

/// Reads only the Avro header's key-value metadata of a manifest (no entries are decoded).
/// Errors are [`crate::Error::Corrupt`] with an empty path.
pub fn parse_manifest_metadata(bytes: &[u8]) -> Result<ManifestMetadata> {
    ManifestMetadata::from_avro(AvroFile::open(bytes)?.metadata())
}

/// Decodes a manifest file and applies the inheritance rules of `manifest_file` (its entry in
/// the manifest list): ADDED entries without snapshot id / sequence numbers take the
/// manifest's `added_snapshot_id` / `sequence_number`; v1 manifests (no sequence numbers) read
/// as sequence 0; data files of a v3 data manifest inherit `first_row_id` as
/// [`inherit_first_row_ids`] says. `partition_type` is the manifest's partition struct (from its spec).
/// Fields are found by name or field id, not position. Errors are [`crate::Error::Corrupt`]
/// with an empty path (the caller adds it).
///
/// Inheritance in detail (spec: "Manifest Entry Fields", "Sequence Number Inheritance"), for
/// a field that is null or absent (a written value is always kept):
///
/// | entry field            | v1 manifest         | ADDED entry                  | EXISTING / DELETED  |
/// |------------------------|---------------------|------------------------------|---------------------|
/// | `snapshot_id`          | `added_snapshot_id` | `added_snapshot_id`          | `added_snapshot_id` |
/// | `sequence_number`      | `Some(0)`           | the list's `sequence_number` | `None`              |
/// | `file_sequence_number` | `Some(0)`           | the list's `sequence_number` | `None`              |
///
/// A v1 manifest is one whose `format-version` key is `1`, or which has neither that key nor
/// a `sequence_number` field (writers that predate sequence numbers). The spec requires
/// EXISTING and DELETED entries of later versions to carry both sequence numbers; one that
/// does not is kept as `None` rather than rejected, and planning decides what to do with it.
pub fn parse_manifest(
    bytes: &[u8],
    manifest_file: &ManifestFile,
    partition_type: &StructType,
) -> Result<Manifest> {
    parse_manifest_within(
        bytes,
        manifest_file,
        partition_type,
        DEFAULT_MAX_DECODED_BYTES,
    )
}

/// [`parse_manifest`] within a memory bound: the manifest's inflated blocks and decoded
/// entries may take at most `max_decoded_bytes` (`ReadLimits::decoded_bytes`); past it the
/// manifest is [`crate::Error::Corrupt`].
pub fn parse_manifest_within(
    bytes: &[u8],
    manifest_file: &ManifestFile,
    partition_type: &StructType,
    max_decoded_bytes: u64,
) -> Result<Manifest> {
    let file = AvroFile::open(bytes)?.with_max_decoded(max_decoded_bytes);
    let metadata = ManifestMetadata::from_avro(file.metadata())?;
    let inherit = Inherit {
        snapshot_id: manifest_file.added_snapshot_id,
        sequence_number: manifest_file.sequence_number,
        format_version: metadata.format_version,
    };
    let mut entries = file.map_records("manifest_entry", |r| {
        manifest_entry(&r, &inherit, partition_type)
    })?;
    if manifest_file.content == ManifestContent::Data {
        inherit_first_row_ids(&mut entries, manifest_file.first_row_id)?;
    }
    Ok(Manifest { metadata, entries })
}

/// v3 row lineage (spec: "First Row ID Inheritance"): each data file of a data manifest whose
/// `first_row_id` is null gets the manifest's `first_row_id` (520, from the manifest list)
/// plus the `record_count` of every data file before it in the manifest that also had a null
/// `first_row_id`, whatever the entries' status (EXISTING and DELETED entries count too: the
/// spec sums "all data files that preceded the file"). Written values are kept; with no
/// manifest `first_row_id` (a v1/v2 list, or a snapshot from before an upgrade to v3) nothing
/// is assigned. Delete files never get one.
///
/// | entry | `record_count` | written `first_row_id` | after inheritance (manifest: 1000) |
/// |-------|----------------|------------------------|------------------------------------|
/// | 1     | 25             | 800                    | 800                                |
/// | 2     | 50             | null                   | 1000                               |
/// | 3     | 50             | null                   | 1050                               |
///
/// An id past `i64::MAX` or a negative `record_count` among them is [`Error::Corrupt`] with
/// an empty path.
pub fn inherit_first_row_ids(
    entries: &mut [ManifestEntry],
    first_row_id: Option<i64>,
) -> Result<()> {
    let Some(mut next) = first_row_id else {
        return Ok(());
    };
    for entry in entries {
        let file = &mut entry.data_file;
        if file.content != DataContentType::Data || file.first_row_id.is_some() {
            continue;
        }
        if file.record_count < 0 {
            return Err(Error::corrupt(
                "",
                format!(
                    "data file {} has a negative record_count ({}): no row ids can be inherited",
                    file.file_path, file.record_count
                ),
            ));
        }
        file.first_row_id = Some(next);
        next = next.checked_add(file.record_count).ok_or_else(|| {
            Error::corrupt(
                "",
                format!(
                    "the row ids inherited by data file {} pass the largest long",
                    file.file_path
                ),
            )
        })?;
    }
    Ok(())
}

/// What entries inherit from their manifest-list entry.
struct Inherit {
    snapshot_id: i64,
    sequence_number: i64,
    format_version: Option<u8>,
}

impl Inherit {
    /// A data or file sequence number after inheritance (see [`parse_manifest`]).
    fn sequence(
        &self,
        r: &Record<'_>,
        status: ManifestStatus,
        name: &str,
        field_id: i32,
    ) -> Result<Option<i64>> {
        if let Some(written) = r.opt(name, field_id, Field::long)? {
            return Ok(Some(written));
        }
        let v1 = match self.format_version {
            Some(version) => version == 1,
            None => !r.has("sequence_number", 3),
        };
        Ok(if v1 {
            Some(0)
        } else if status == ManifestStatus::Added {
            Some(self.sequence_number)
        } else {
            None
        })
    }
}

fn manifest_entry(
    r: &Record<'_>,
    inherit: &Inherit,
    partition_type: &StructType,
) -> Result<ManifestEntry> {
    let status = match r.req("status", 0, Field::int)? {
        0 => ManifestStatus::Existing,
        1 => ManifestStatus::Added,
        2 => ManifestStatus::Deleted,
        other => return Err(invalid("manifest_entry.status", other)),
    };
    let data_file = r.req("data_file", 2, |f| f.record("data_file"))?;
    Ok(ManifestEntry {
        status,
        snapshot_id: Some(
            r.opt("snapshot_id", 1, Field::long)?
                .unwrap_or(inherit.snapshot_id),
        ),
        sequence_number: inherit.sequence(r, status, "sequence_number", 3)?,
        file_sequence_number: inherit.sequence(r, status, "file_sequence_number", 4)?,
        data_file: data_file_from(&data_file, partition_type)?,
    })
}

fn invalid(field: &str, value: i32) -> Error {
    Error::corrupt("", format!("{field} {value} is not a valid value"))
}

fn data_file_from(r: &Record<'_>, partition_type: &StructType) -> Result<DataFile> {
    let int_long_map = |name: &str, id: i32| -> Result<HashMap<i32, i64>> {
        Ok(r.opt(name, id, |f| f.int_map(Field::long))?
            .unwrap_or_default())
    };
    // Absent (not collected) and empty bound maps differ: keep `None` for absent.
    let int_bytes_map = |name: &str, id: i32| -> Result<Option<HashMap<i32, Vec<u8>>>> {
        r.opt(name, id, |f| f.int_map(Field::bytes))
    };
    Ok(DataFile {
        content: match r.opt("content", 134, Field::int)?.unwrap_or(0) {
            0 => DataContentType::Data,
            1 => DataContentType::PositionDeletes,
            2 => DataContentType::EqualityDeletes,
            other => return Err(invalid("data_file.content", other)),
        },
        file_path: r.req("file_path", 100, Field::string)?,
        file_format: file_format(r.req("file_format", 101, Field::string)?),
        partition: partition_tuple(r, partition_type)?,
        record_count: r.req("record_count", 103, Field::long)?,
        file_size_in_bytes: r.req("file_size_in_bytes", 104, Field::long)?,
        column_sizes: int_long_map("column_sizes", 108)?,
        value_counts: int_long_map("value_counts", 109)?,
        null_value_counts: int_long_map("null_value_counts", 110)?,
        nan_value_counts: int_long_map("nan_value_counts", 137)?,
        lower_bounds: int_bytes_map("lower_bounds", 125)?,
        upper_bounds: int_bytes_map("upper_bounds", 128)?,
        key_metadata: r.opt("key_metadata", 131, Field::bytes)?,
        split_offsets: r.opt("split_offsets", 132, |f| f.list(Field::long))?,
        equality_ids: r.opt("equality_ids", 135, |f| f.list(Field::field_id))?,
        sort_order_id: r.opt("sort_order_id", 140, Field::int)?,
        first_row_id: r.opt("first_row_id", 142, Field::long)?,
        referenced_data_file: r.opt("referenced_data_file", 143, Field::string)?,
        content_offset: r.opt("content_offset", 144, Field::long)?,
        content_size_in_bytes: r.opt("content_size_in_bytes", 145, Field::long)?,
    })
}

fn file_format(name: String) -> FileFormat {
    match name.to_ascii_uppercase().as_str() {
        "PARQUET" => FileFormat::Parquet,
        "AVRO" => FileFormat::Avro,
        "ORC" => FileFormat::Orc,
        "PUFFIN" => FileFormat::Puffin,
        _ => FileFormat::Other(name),
    }
}

/// The `partition` tuple (field 102), one value per field of `partition_type`. Avro fields
/// are matched to partition fields by `field-id` attribute, else by name, else by position.
/// A null or empty `partition` record reads as all nulls.
fn partition_tuple(r: &Record<'_>, partition_type: &StructType) -> Result<Vec<Option<Literal>>> {
    let Some(partition) = r.get("partition", 102) else {
        return Ok(vec![None; partition_type.fields.len()]);
    };
    let record = partition.record("partition")?;
    let mut tuple = Vec::with_capacity(partition_type.fields.len());
    for (index, field) in partition_type.fields.iter().enumerate() {
        let position = record
            .position_of_id(field.id)
            .or_else(|| record.position_of_name(&field.name))
            .or_else(|| (index < record.len()).then_some(index));
        let Some(value) = position.and_then(|p| record.at(p)) else {
            tuple.push(None);
            continue;
        };
        let Some(ty) = field.field_type.as_primitive() else {
            return Err(Error::corrupt(
                "",
                format!("partition field {} has a nested type", field.name),
            ));
        };
        tuple.push(Some(partition_value(&value, ty)?));
    }
    Ok(tuple)
}

/// Converts one partition value of Avro kind to the partition field's type; a kind that does
/// not fit the type is an error. Logical types arrive as their physical kind (a `decimal` as its
/// bytes), but a `date` only fits a date field; millisecond times never fit.
fn partition_value(f: &Field<'_>, ty: &PrimitiveType) -> Result<Literal> {
    use Datum as D;
    use PrimitiveType as P;
    let from_bytes = |bytes: &[u8]| {
        Literal::from_bytes(ty, bytes).map_err(|e| Error::from(e).within("partition value"))
    };
    Ok(match (ty, f.value()) {
        (P::Boolean, D::Boolean(b)) => Literal::Boolean(*b),
        (P::Int, D::Int(i)) => Literal::Int(*i),
        (P::Long, D::Long(l)) => Literal::Long(*l),
        (P::Long, D::Int(i)) => Literal::Long(i64::from(*i)),
        (P::Float, D::Float(x)) => Literal::Float(*x),
        (P::Double, D::Double(x)) => Literal::Double(*x),
        (P::Double, D::Float(x)) => Literal::Double(f64::from(*x)),
        (P::Date, D::Date(d) | D::Int(d)) => Literal::Date(*d),
        (P::Time, D::Long(t)) => Literal::Time(*t),
        (P::Timestamp, D::Long(t)) => Literal::Timestamp(*t),
        (P::Timestamptz, D::Long(t)) => Literal::Timestamptz(*t),
        (P::TimestampNs, D::Long(t)) => Literal::TimestampNs(*t),
        (P::TimestamptzNs, D::Long(t)) => Literal::TimestamptzNs(*t),
        (P::String, D::String(s)) => Literal::String((*s).to_string()),
        (P::Uuid, D::String(s)) => match uuid::Uuid::parse_str(s) {
            Ok(u) => Literal::Uuid(*u.as_bytes()),
            Err(_) => return Err(f.wrong("a uuid string")),
        },
        (P::Decimal { .. } | P::Uuid | P::Fixed(_) | P::Binary, D::Bytes(b) | D::Fixed(b)) => {
            from_bytes(b)?
        }
        _ => return Err(f.wrong(&format!("a {ty} partition value"))),
    })
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;
