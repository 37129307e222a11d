//! `manifests` (the manifest list of one snapshot) and `all_manifests` (every snapshot's, one
//! row per (snapshot, manifest)), as PyIceberg's `inspect.manifests()` and
//! `inspect.all_manifests()`.
//!
//! File counts are split by the manifest's `content`: a data manifest's counts fill the
//! `*_data_files_count` columns and 0 the `*_delete_files_count` ones, and the other way round.
//! Partition summary bounds are rendered as text by the partition field's transform (`day`:
//! `2024-01-01`), from the transform's result type. An empty stored bound (the empty string)
//! reads as `''`, where PyIceberg 0.12 shows null (it tests the bytes for truthiness).

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Int8Array, Int32Array, Int64Array, ListArray, RecordBatch,
    StringArray, StructArray,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use futures::{StreamExt, TryStreamExt};

use super::arrow_util::{arrow_error, batch};
use super::pushdown::int64_values;
use super::{ScanRequest, walk};
use crate::error::{Error, Result};
use crate::scan::{partition_type, read_manifest_list};
use crate::spec::{
    FieldSummary, Literal, ManifestContent, ManifestFile, Snapshot, TableMetadata, Type,
};
use crate::table::Table;

/// The fields of one `partition_summaries` element.
fn summary_fields() -> Fields {
    Fields::from(vec![
        Field::new("contains_null", DataType::Boolean, false),
        Field::new("contains_nan", DataType::Boolean, true),
        Field::new("lower_bound", DataType::Utf8, true),
        Field::new("upper_bound", DataType::Utf8, true),
    ])
}

fn summaries_item() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Struct(summary_fields()), true))
}

/// The columns of `manifests`; `all_manifests` adds `reference_snapshot_id` and `key_metadata`.
pub(super) fn schema(all: bool) -> SchemaRef {
    let count = |name: &str| Field::new(name, DataType::Int32, true);
    let mut fields = vec![
        Field::new("content", DataType::Int8, false),
        Field::new("path", DataType::Utf8, false),
        Field::new("length", DataType::Int64, false),
        Field::new("partition_spec_id", DataType::Int32, false),
        Field::new("added_snapshot_id", DataType::Int64, false),
        count("added_data_files_count"),
        count("existing_data_files_count"),
        count("deleted_data_files_count"),
        count("added_delete_files_count"),
        count("existing_delete_files_count"),
        count("deleted_delete_files_count"),
        Field::new(
            "partition_summaries",
            DataType::List(summaries_item()),
            false,
        ),
    ];
    if all {
        fields.push(Field::new("reference_snapshot_id", DataType::Int64, false));
        fields.push(Field::new("key_metadata", DataType::Binary, true));
    }
    Arc::new(Schema::new(fields))
}

/// The manifests of `snapshot` (none for a table without snapshots), in manifest-list order.
pub(super) async fn manifests(table: &Table, snapshot: Option<&Snapshot>) -> Result<RecordBatch> {
    let metadata = table.metadata();
    let listed = match snapshot {
        Some(snapshot) => read_manifest_list(table.io(), metadata, snapshot).await?,
        None => Arc::default(),
    };
    let rows: Vec<(i64, ManifestFile)> = listed.iter().map(|m| (0, m.clone())).collect();
    build(metadata, &rows, false)
}

/// Every snapshot's manifests, snapshots in metadata order. Manifest lists are read
/// concurrently, each once; filters pinning `reference_snapshot_id` (`=`, `IN`) skip the other
/// snapshots' lists, and with a `limit` no more lists are read once it is reached.
pub(super) async fn all_manifests(table: &Table, request: ScanRequest<'_>) -> Result<RecordBatch> {
    let metadata = table.metadata();
    let wanted = int64_values(request.filters, "reference_snapshot_id");
    let snapshots: Vec<Snapshot> = metadata
        .snapshots
        .iter()
        .filter(|s| {
            wanted
                .as_ref()
                .is_none_or(|ids| ids.contains(&s.snapshot_id))
        })
        .cloned()
        .collect();
    let mut lists = walk::manifest_lists(table.io(), metadata, snapshots)
        .map(|(snapshot, listed)| listed.map(|listed| (snapshot.snapshot_id, listed)));
    let mut rows = Vec::new();
    while let Some((reference, listed)) = lists.try_next().await? {
        rows.extend(listed.iter().map(|m| (reference, m.clone())));
        if request.limit.is_some_and(|limit| rows.len() >= limit) {
            break;
        }
    }
    build(metadata, &rows, true)
}

/// The batch of `(reference snapshot id, manifest)` rows.
fn build(metadata: &TableMetadata, rows: &[(i64, ManifestFile)], all: bool) -> Result<RecordBatch> {
    let manifests = || rows.iter().map(|(_, m)| m);
    let counts = |content: ManifestContent, count: fn(&ManifestFile) -> Option<i32>| {
        let split = move |m: &ManifestFile| {
            if m.content == content {
                count(m)
            } else {
                Some(0)
            }
        };
        Arc::new(Int32Array::from_iter(manifests().map(split))) as ArrayRef
    };
    let (data, deletes) = (ManifestContent::Data, ManifestContent::Deletes);
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(Int8Array::from_iter_values(
            manifests().map(|m| m.content as i8),
        )),
        Arc::new(StringArray::from_iter_values(
            manifests().map(|m| &m.manifest_path),
        )),
        Arc::new(Int64Array::from_iter_values(
            manifests().map(|m| m.manifest_length),
        )),
        Arc::new(Int32Array::from_iter_values(
            manifests().map(|m| m.partition_spec_id),
        )),
        Arc::new(Int64Array::from_iter_values(
            manifests().map(|m| m.added_snapshot_id),
        )),
        counts(data, |m| m.added_files_count),
        counts(data, |m| m.existing_files_count),
        counts(data, |m| m.deleted_files_count),
        counts(deletes, |m| m.added_files_count),
        counts(deletes, |m| m.existing_files_count),
        counts(deletes, |m| m.deleted_files_count),
        partition_summaries(metadata, manifests())?,
    ];
    if all {
        columns.push(Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|(r, _)| *r),
        )));
        columns.push(Arc::new(BinaryArray::from_iter(
            manifests().map(|m| m.key_metadata.as_deref()),
        )));
    }
    let name = if all { "all_manifests" } else { "manifests" };
    batch(&schema(all), columns, name)
}

/// One summary with its bounds as text.
struct Rendered {
    contains_null: bool,
    contains_nan: Option<bool>,
    lower_bound: Option<String>,
    upper_bound: Option<String>,
}

/// The `partition_summaries` column: a list per manifest.
fn partition_summaries<'a>(
    metadata: &TableMetadata,
    manifests: impl Iterator<Item = &'a ManifestFile>,
) -> Result<ArrayRef> {
    let mut lengths = Vec::new();
    let mut all = Vec::new();
    for manifest in manifests {
        let rendered = render(metadata, manifest)?;
        lengths.push(rendered.len());
        all.extend(rendered);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(BooleanArray::from_iter(
            all.iter().map(|s| Some(s.contains_null)),
        )),
        Arc::new(BooleanArray::from_iter(all.iter().map(|s| s.contains_nan))),
        Arc::new(StringArray::from_iter(
            all.iter().map(|s| s.lower_bound.as_deref()),
        )),
        Arc::new(StringArray::from_iter(
            all.iter().map(|s| s.upper_bound.as_deref()),
        )),
    ];
    let values = StructArray::try_new(summary_fields(), columns, None).map_err(arrow_error)?;
    let offsets = OffsetBuffer::from_lengths(lengths);
    let list = ListArray::try_new(summaries_item(), offsets, Arc::new(values), None)
        .map_err(arrow_error)?;
    Ok(Arc::new(list))
}

/// A manifest's field summaries, each bound decoded with its partition field's result type and
/// written as that field's transform writes values.
fn render(metadata: &TableMetadata, manifest: &ManifestFile) -> Result<Vec<Rendered>> {
    let Some(summaries) = manifest.partitions.as_deref() else {
        return Ok(Vec::new());
    };
    let path = &manifest.manifest_path;
    let spec = metadata
        .partition_spec_by_id(manifest.partition_spec_id)
        .ok_or_else(|| {
            let id = manifest.partition_spec_id;
            Error::corrupt(
                path.clone(),
                format!("partition spec {id} is not in the metadata"),
            )
        })?;
    let partition = partition_type(metadata, spec).map_err(|e| e.in_file(path))?;
    let fields = spec.fields.iter().zip(&partition.fields);
    summaries
        .iter()
        .zip(fields)
        .map(|(summary, (field, result))| {
            let human = |bytes: Option<&Vec<u8>>| -> Result<Option<String>> {
                let (Some(bytes), Type::Primitive(ty)) = (bytes, &result.field_type) else {
                    return Ok(None);
                };
                let value = Literal::from_bytes(ty, bytes).map_err(|e| {
                    Error::from(e)
                        .within(format_args!("bound of '{}'", field.name))
                        .in_file(path)
                })?;
                Ok(Some(field.transform.to_human_string(ty, Some(&value))))
            };
            Ok(rendered(
                summary,
                human(summary.lower_bound.as_ref())?,
                human(summary.upper_bound.as_ref())?,
            ))
        })
        .collect()
}

fn rendered(summary: &FieldSummary, lower: Option<String>, upper: Option<String>) -> Rendered {
    Rendered {
        contains_null: summary.contains_null,
        contains_nan: summary.contains_nan,
        lower_bound: lower,
        upper_bound: upper,
    }
}
