//! Position delete files (spec: "Position Delete Files"): Parquet files of `(file_path, pos)`
//! rows, sorted by file path then position, one per partition of the data files they delete
//! from. Merge-on-read DELETE, UPDATE and MERGE write them for v2 tables.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringViewArray};
use roaring::RoaringTreemap;

use super::{DataFileWriter, WriterOptions};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::spec::{
    DataContentType, DataFile, Literal, NestedField, PrimitiveType, Schema, TableMetadata,
};
use crate::to_arrow::schema_to_arrow;

/// The reserved field id of `file_path` in position delete files.
pub const DELETE_FILE_PATH_FIELD_ID: i32 = 2_147_483_546;
/// The reserved field id of `pos` in position delete files.
pub const DELETE_POS_FIELD_ID: i32 = 2_147_483_545;

/// Rows per batch handed to the Parquet writer.
const BATCH_ROWS: usize = 64 * 1024;

/// The schema of a position delete file: `file_path` and `pos`, with their reserved ids.
pub fn position_delete_schema() -> Schema {
    Schema::new(
        0,
        vec![
            NestedField::required(
                DELETE_FILE_PATH_FIELD_ID,
                "file_path",
                PrimitiveType::String,
            ),
            NestedField::required(DELETE_POS_FIELD_ID, "pos", PrimitiveType::Long),
        ],
    )
}

/// Writes the deleted positions of data files sharing one partition (tuple `partition` of spec
/// `spec_id`) as one position delete file under the table's data directory, and returns its
/// [`DataFile`] (content position deletes, the partition set, `referenced_data_file` when it
/// deletes from a single data file). `deletes` maps each data file's `file_path` to its
/// deleted positions; bounds are kept whole (not truncated), so readers can tell which data
/// files the file applies to.
pub async fn write_position_deletes(
    io: &FileIO,
    metadata: &TableMetadata,
    spec_id: i32,
    partition: &[Option<Literal>],
    deletes: &BTreeMap<String, RoaringTreemap>,
) -> Result<DataFile> {
    let schema = position_delete_schema();
    let location = delete_file_location(metadata, spec_id, partition);
    let resolved = io.resolve(&location)?;
    let mut options = WriterOptions::from_properties(metadata)?;
    options.truncate_length = usize::MAX / 2;
    let mut writer = DataFileWriter::new(
        resolved.store,
        resolved.path,
        location.clone(),
        &schema,
        options,
    )?;
    let arrow_schema = Arc::new(schema_to_arrow(&schema)?);
    let mut paths: Vec<&str> = Vec::with_capacity(BATCH_ROWS);
    let mut positions: Vec<i64> = Vec::with_capacity(BATCH_ROWS);
    let mut result = Ok(());
    'files: for (path, deleted) in deletes {
        for pos in deleted {
            paths.push(path);
            positions.push(i64::try_from(pos).unwrap_or(i64::MAX));
            if paths.len() == BATCH_ROWS {
                result = flush(&mut writer, &arrow_schema, &mut paths, &mut positions).await;
                if result.is_err() {
                    break 'files;
                }
            }
        }
    }
    if result.is_ok() && !paths.is_empty() {
        result = flush(&mut writer, &arrow_schema, &mut paths, &mut positions).await;
    }
    if let Err(e) = result {
        let _ = writer.abort().await;
        return Err(e);
    }
    let mut file = match writer.close().await {
        Ok(file) => file,
        Err(e) => {
            let _ = io.delete(&location).await;
            return Err(e);
        }
    };
    file.content = DataContentType::PositionDeletes;
    file.partition = partition.to_vec();
    if deletes.len() == 1 {
        file.referenced_data_file = deletes.keys().next().cloned();
    }
    Ok(file)
}

async fn flush(
    writer: &mut DataFileWriter,
    schema: &datafusion::arrow::datatypes::SchemaRef,
    paths: &mut Vec<&str>,
    positions: &mut Vec<i64>,
) -> Result<()> {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringViewArray::from(std::mem::take(paths))),
        Arc::new(Int64Array::from(std::mem::take(positions))),
    ];
    let batch = RecordBatch::try_new(Arc::clone(schema), columns)
        .map_err(|e| Error::invalid("a batch of position deletes", e))?;
    writer.write(&batch).await
}

/// Where a new delete file of partition `partition` (spec `spec_id`) goes: the table's data
/// directory, under the partition's path when the spec and schema can name it.
pub(crate) fn delete_file_location(
    metadata: &TableMetadata,
    spec_id: i32,
    partition: &[Option<Literal>],
) -> String {
    let partition_path = metadata
        .partition_spec_by_id(spec_id)
        .filter(|spec| !spec.is_unpartitioned())
        .and_then(|spec| {
            spec.partition_path(metadata.current_schema(), partition)
                .ok()
        })
        .map(|p| format!("{p}/"))
        .unwrap_or_default();
    format!(
        "{}/data/{partition_path}{}-deletes.parquet",
        metadata.location.trim_end_matches('/'),
        uuid::Uuid::new_v4()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_uses_the_reserved_field_ids() {
        let schema = position_delete_schema();
        let ids: Vec<i32> = schema.columns().iter().map(|c| c.id).collect();
        assert_eq!(ids, [2_147_483_546, 2_147_483_545]);
        let names: Vec<&str> = schema.columns().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["file_path", "pos"]);
    }
}
