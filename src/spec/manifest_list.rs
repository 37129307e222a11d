//! Manifest lists (spec: "Manifest Lists"): one Avro file per snapshot listing its manifests,
//! with partition summaries used for stage-1 pruning.
//!
//! Java writers name some fields differently from the spec (`added_data_files_count` for 504,
//! ...): every field is found by name, else by its `field-id` attribute.

use super::avro::{AvroFile, DEFAULT_MAX_DECODED_BYTES, Field, Record};
use super::metadata::FormatVersion;
use crate::error::{Error, Result};

/// `content` (field 517): what a manifest tracks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ManifestContent {
    /// 0: data files.
    Data = 0,
    /// 1: delete files.
    Deletes = 1,
}

/// `field_summary` (field 508): value summary of one partition field across a manifest.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldSummary {
    /// 509 `contains_null`.
    pub contains_null: bool,
    /// 518 `contains_nan`.
    pub contains_nan: Option<bool>,
    /// 510 `lower_bound`, binary single-value form.
    pub lower_bound: Option<Vec<u8>>,
    /// 511 `upper_bound`, binary single-value form.
    pub upper_bound: Option<Vec<u8>>,
}

/// `manifest_file`: one entry of a manifest list.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestFile {
    /// 500 `manifest_path`.
    pub manifest_path: String,
    /// 501 `manifest_length`.
    pub manifest_length: i64,
    /// 502 `partition_spec_id`.
    pub partition_spec_id: i32,
    /// 517 `content` (v1: always data).
    pub content: ManifestContent,
    /// 515 `sequence_number` (v1: 0).
    pub sequence_number: i64,
    /// 516 `min_sequence_number` (v1: 0).
    pub min_sequence_number: i64,
    /// 503 `added_snapshot_id`.
    pub added_snapshot_id: i64,
    /// 504 `added_files_count`.
    pub added_files_count: Option<i32>,
    /// 505 `existing_files_count`.
    pub existing_files_count: Option<i32>,
    /// 506 `deleted_files_count`.
    pub deleted_files_count: Option<i32>,
    /// 512 `added_rows_count`.
    pub added_rows_count: Option<i64>,
    /// 513 `existing_rows_count`.
    pub existing_rows_count: Option<i64>,
    /// 514 `deleted_rows_count`.
    pub deleted_rows_count: Option<i64>,
    /// 507 `partitions`.
    pub partitions: Option<Vec<FieldSummary>>,
    /// 519 `key_metadata`.
    pub key_metadata: Option<Vec<u8>>,
    /// 520 `first_row_id` (v3).
    pub first_row_id: Option<i64>,
}

impl ManifestFile {
    /// A manifest-list entry with only the required facts: sequence numbers 0 (v1 / not yet
    /// assigned), counts, summaries and keys absent. Used for v1 snapshots that embed their
    /// manifest paths, and for writers filling the rest in.
    pub fn new(
        manifest_path: impl Into<String>,
        manifest_length: i64,
        partition_spec_id: i32,
        content: ManifestContent,
        added_snapshot_id: i64,
    ) -> Self {
        Self {
            manifest_path: manifest_path.into(),
            manifest_length,
            partition_spec_id,
            content,
            sequence_number: 0,
            min_sequence_number: 0,
            added_snapshot_id,
            added_files_count: None,
            existing_files_count: None,
            deleted_files_count: None,
            added_rows_count: None,
            existing_rows_count: None,
            deleted_rows_count: None,
            partitions: None,
            key_metadata: None,
            first_row_id: None,
        }
    }
}

/// Decodes a manifest list file. Fields are found by name (so writers whose fields are all
/// nullable unions are read); v1 lists get content = data and sequence numbers 0.
/// Errors are [`crate::Error::Corrupt`] with an empty path (the caller adds it).
///
/// In v2 and later, `content`, `sequence_number` and `min_sequence_number` are required; a
/// missing one is an error naming the field.
pub fn parse_manifest_list(
    bytes: &[u8],
    format_version: FormatVersion,
) -> Result<Vec<ManifestFile>> {
    parse_manifest_list_within(bytes, format_version, DEFAULT_MAX_DECODED_BYTES)
}

/// [`parse_manifest_list`] within a memory bound: the list's inflated blocks and decoded
/// entries may take at most `max_decoded_bytes` (`ReadLimits::decoded_bytes`); past it the
/// list is [`crate::Error::Corrupt`].
pub fn parse_manifest_list_within(
    bytes: &[u8],
    format_version: FormatVersion,
    max_decoded_bytes: u64,
) -> Result<Vec<ManifestFile>> {
    AvroFile::open(bytes)?
        .with_max_decoded(max_decoded_bytes)
        .map_records("manifest_file", |r| manifest_file(&r, format_version))
}

fn manifest_file(r: &Record<'_>, format_version: FormatVersion) -> Result<ManifestFile> {
    let v1 = format_version == FormatVersion::V1;
    // Required from v2 on; v1 lists have no such field and read as the default.
    let v2_long = |name: &str, id: i32| match r.opt(name, id, Field::long)? {
        Some(v) => Ok(v),
        None if v1 => Ok(0),
        None => r.req(name, id, Field::long),
    };
    let content = match r.opt("content", 517, Field::int)? {
        Some(c) => manifest_content(c)?,
        None if v1 => ManifestContent::Data,
        None => manifest_content(r.req("content", 517, Field::int)?)?,
    };
    Ok(ManifestFile {
        manifest_path: r.req("manifest_path", 500, Field::string)?,
        manifest_length: r.req("manifest_length", 501, Field::long)?,
        partition_spec_id: r.req("partition_spec_id", 502, Field::int)?,
        content,
        sequence_number: v2_long("sequence_number", 515)?,
        min_sequence_number: v2_long("min_sequence_number", 516)?,
        added_snapshot_id: r.req("added_snapshot_id", 503, Field::long)?,
        added_files_count: r.opt("added_files_count", 504, Field::int)?,
        existing_files_count: r.opt("existing_files_count", 505, Field::int)?,
        deleted_files_count: r.opt("deleted_files_count", 506, Field::int)?,
        added_rows_count: r.opt("added_rows_count", 512, Field::long)?,
        existing_rows_count: r.opt("existing_rows_count", 513, Field::long)?,
        deleted_rows_count: r.opt("deleted_rows_count", 514, Field::long)?,
        partitions: r.opt("partitions", 507, |f| f.list(field_summary))?,
        key_metadata: r.opt("key_metadata", 519, Field::bytes)?,
        first_row_id: r.opt("first_row_id", 520, Field::long)?,
    })
}

fn manifest_content(c: i32) -> Result<ManifestContent> {
    match c {
        0 => Ok(ManifestContent::Data),
        1 => Ok(ManifestContent::Deletes),
        other => Err(Error::corrupt(
            "",
            format!("manifest_file.content {other} is not 0 (data) or 1 (deletes)"),
        )),
    }
}

fn field_summary(f: &Field<'_>) -> Result<FieldSummary> {
    let r = f.record("field_summary")?;
    Ok(FieldSummary {
        contains_null: r.req("contains_null", 509, Field::boolean)?,
        contains_nan: r.opt("contains_nan", 518, Field::boolean)?,
        lower_bound: r.opt("lower_bound", 510, Field::bytes)?,
        upper_bound: r.opt("upper_bound", 511, Field::bytes)?,
    })
}

#[cfg(test)]
#[path = "manifest_list_tests.rs"]
mod tests;
