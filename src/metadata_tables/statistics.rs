//! `statistics`: the table's statistics files (spec: "Table Statistics", "Partition
//! Statistics") as rows: one per blob of each Puffin statistics file (a file without blobs
//! gets one row with null blob columns) and one per partition statistics file. No file is
//! read: everything comes from the table metadata.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Int32Builder, Int64Array, ListBuilder, MapBuilder, RecordBatch, StringArray,
    StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use super::arrow_util::{batch, string_map, string_map_builder};
use crate::error::Result;
use crate::spec::TableMetadata;
use crate::spec::statistics::BlobMetadata;

/// `snapshot_id`, `kind` (`table` or `partition`), `statistics_path`, `file_size_in_bytes`,
/// `file_footer_size_in_bytes`, then the blob's `blob_type`, `blob_snapshot_id`,
/// `blob_sequence_number`, `fields` (field ids), `ndv` and `properties`.
pub(super) fn schema() -> SchemaRef {
    let fields = DataType::List(Arc::new(Field::new("item", DataType::Int32, true)));
    Arc::new(Schema::new(vec![
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("kind", DataType::Utf8, false),
        Field::new("statistics_path", DataType::Utf8, false),
        Field::new("file_size_in_bytes", DataType::Int64, false),
        Field::new("file_footer_size_in_bytes", DataType::Int64, true),
        Field::new("blob_type", DataType::Utf8, true),
        Field::new("blob_snapshot_id", DataType::Int64, true),
        Field::new("blob_sequence_number", DataType::Int64, true),
        Field::new("fields", fields, true),
        Field::new("ndv", DataType::Int64, true),
        Field::new("properties", string_map(), true),
    ]))
}

/// One row of the relation.
struct Row<'a> {
    snapshot_id: i64,
    kind: &'static str,
    path: &'a str,
    size: i64,
    footer: Option<i64>,
    blob: Option<BlobMetadata>,
}

/// The rows: statistics files (blob by blob), then partition statistics files.
pub(super) fn batches(metadata: &TableMetadata) -> Result<RecordBatch> {
    let mut rows = Vec::new();
    for file in &metadata.statistics {
        let row = |blob| Row {
            snapshot_id: file.snapshot_id,
            kind: "table",
            path: &file.statistics_path,
            size: file.file_size_in_bytes,
            footer: Some(file.file_footer_size_in_bytes),
            blob,
        };
        let blobs = file.blobs();
        match blobs.is_empty() {
            true => rows.push(row(None)),
            false => rows.extend(blobs.into_iter().map(|b| row(Some(b)))),
        }
    }
    rows.extend(metadata.partition_statistics.iter().map(|file| Row {
        snapshot_id: file.snapshot_id,
        kind: "partition",
        path: &file.statistics_path,
        size: file.file_size_in_bytes,
        footer: None,
        blob: None,
    }));
    batch(&schema(), columns(&rows), "statistics")
}

fn columns(rows: &[Row<'_>]) -> Vec<ArrayRef> {
    let blobs = || rows.iter().map(|r| r.blob.as_ref());
    let mut fields = ListBuilder::new(Int32Builder::new());
    let mut properties: MapBuilder<StringBuilder, StringBuilder> = string_map_builder();
    for blob in blobs() {
        match blob {
            Some(b) => {
                fields.values().append_slice(&b.fields);
                fields.append(true);
                for (k, v) in &b.properties {
                    properties.keys().append_value(k);
                    properties.values().append_value(v);
                }
                let _ = properties.append(true);
            }
            None => {
                fields.append(false);
                let _ = properties.append(false);
            }
        }
    }
    vec![
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|r| r.snapshot_id),
        )),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.kind))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.path))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.size))),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.footer))),
        Arc::new(StringArray::from_iter(
            blobs().map(|b| b.map(|b| b.kind.clone())),
        )),
        Arc::new(Int64Array::from_iter(
            blobs().map(|b| b.map(|b| b.snapshot_id)),
        )),
        Arc::new(Int64Array::from_iter(
            blobs().map(|b| b.map(|b| b.sequence_number)),
        )),
        Arc::new(fields.finish()),
        Arc::new(Int64Array::from_iter(blobs().map(|b| {
            b.and_then(|b| b.ndv())
                .and_then(|(_, n)| i64::try_from(n).ok())
        }))),
        Arc::new(properties.finish()),
    ]
}
