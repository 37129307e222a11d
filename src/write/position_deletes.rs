//! Position delete files (spec: "Position Delete Files"): Parquet files of `(file_path, pos)`
//! rows, sorted by file path then position, one per partition of the data files they delete
//! from. Merge-on-read DELETE, UPDATE and MERGE write them for v2 tables.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringViewArray};
use roaring::RoaringTreemap;

use super::data_file::ColumnLayout;
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
    write_position_deletes_named(io, metadata, spec_id, partition, deletes, "").await
}

/// [`write_position_deletes`] into a file whose name starts with `file_prefix`.
pub(crate) async fn write_position_deletes_named(
    io: &FileIO,
    metadata: &TableMetadata,
    spec_id: i32,
    partition: &[Option<Literal>],
    deletes: &BTreeMap<String, RoaringTreemap>,
    file_prefix: &str,
) -> Result<DataFile> {
    let schema = position_delete_schema();
    let location = delete_file_location(metadata, spec_id, partition, file_prefix);
    let resolved = io.resolve(&location)?;
    let mut options = WriterOptions::from_properties(metadata)?;
    options.truncate_length = usize::MAX / 2;
    // Positions ascend within each data file: delta-encoded, a few bits each (a dictionary
    // would be as large as the column); the bounds are known here.
    let layout = ColumnLayout {
        ascending: vec!["pos"],
        caller_bounds: true,
        fixed: true,
    };
    let mut writer = DataFileWriter::with_layout(
        resolved.store,
        resolved.path,
        location.clone(),
        &schema,
        options,
        layout,
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
    (file.lower_bounds, file.upper_bounds) = bounds(deletes);
    if deletes.len() == 1 {
        file.referenced_data_file = deletes.keys().next().cloned();
    }
    Ok(file)
}

/// Lower or upper bounds of a delete file, by field id.
type Bounds = Option<HashMap<i32, Vec<u8>>>;

/// The bounds of the rows of `deletes`, whole: paths in byte order (as `deletes` keeps them),
/// positions.
fn bounds(deletes: &BTreeMap<String, RoaringTreemap>) -> (Bounds, Bounds) {
    let mut paths = deletes
        .iter()
        .filter(|(_, positions)| !positions.is_empty())
        .map(|(path, _)| path);
    let (Some(first), Some(last)) = (paths.clone().next(), paths.next_back()) else {
        return (None, None);
    };
    let position = |p: u64| Literal::Long(i64::try_from(p).unwrap_or(i64::MAX)).to_bytes();
    let lowest = deletes.values().filter_map(RoaringTreemap::min).min();
    let highest = deletes.values().filter_map(RoaringTreemap::max).max();
    let bound = |path: &str, pos: Option<u64>| {
        let mut map = HashMap::from([(
            DELETE_FILE_PATH_FIELD_ID,
            Literal::String(path.to_string()).to_bytes(),
        )]);
        map.extend(pos.map(|p| (DELETE_POS_FIELD_ID, position(p))));
        Some(map)
    };
    (bound(first, lowest), bound(last, highest))
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
    file_prefix: &str,
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
        "{}/data/{partition_path}{file_prefix}{}-deletes.parquet",
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

    #[tokio::test]
    async fn a_file_holds_the_sorted_rows_with_delta_encoded_positions_and_whole_bounds() {
        use datafusion::arrow::array::AsArray;
        use datafusion::arrow::datatypes::Int64Type;
        use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        use datafusion::parquet::basic::Encoding;

        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().display().to_string();
        let json = crate::catalog::test_support::metadata_json(&location);
        let metadata = TableMetadata::parse(json.as_bytes()).unwrap();
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        // An absolute path sorts before `a.parquet` (`/` is below `a`): bounds go by bytes.
        let long = format!("{}/data/b-{}.parquet", dir.path().display(), "x".repeat(40));
        let deletes = BTreeMap::from([
            (
                long.clone(),
                (0u64..70_000).step_by(7).collect::<RoaringTreemap>(),
            ),
            (
                "a.parquet".to_string(),
                [3u64, 5, 1 << 33].into_iter().collect(),
            ),
        ]);
        let file = write_position_deletes(&FileIO::default(), &metadata, 0, &[], &deletes)
            .await
            .unwrap();
        assert_eq!(file.record_count, 10_003);
        assert_eq!(file.referenced_data_file, None);
        let bound =
            |bounds: &Option<HashMap<i32, Vec<u8>>>, id| bounds.as_ref().unwrap()[&id].clone();
        assert_eq!(
            bound(&file.lower_bounds, DELETE_FILE_PATH_FIELD_ID),
            long.as_bytes()
        );
        assert_eq!(
            bound(&file.upper_bounds, DELETE_FILE_PATH_FIELD_ID),
            b"a.parquet"
        );
        assert_eq!(
            bound(&file.lower_bounds, DELETE_POS_FIELD_ID),
            0i64.to_le_bytes()
        );
        assert_eq!(
            bound(&file.upper_bounds, DELETE_POS_FIELD_ID),
            (1i64 << 33).to_le_bytes()
        );

        let bytes = bytes::Bytes::from(std::fs::read(&file.file_path).unwrap());
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
        let pos = reader.metadata().row_group(0).column(1);
        assert!(pos.encodings().any(|e| e == Encoding::DELTA_BINARY_PACKED));
        assert!(!pos.encodings().any(|e| e == Encoding::RLE_DICTIONARY));
        let mut rows: Vec<(String, i64)> = Vec::new();
        for batch in reader.build().unwrap() {
            let batch = batch.unwrap();
            let paths = datafusion::arrow::compute::cast(
                batch.column(0),
                &datafusion::arrow::datatypes::DataType::Utf8,
            )
            .unwrap();
            let positions = batch.column(1).as_primitive::<Int64Type>();
            for (path, pos) in paths.as_string::<i32>().iter().zip(positions.iter()) {
                rows.push((path.unwrap().to_string(), pos.unwrap()));
            }
        }
        let expected: Vec<(String, i64)> = deletes
            .iter()
            .flat_map(|(path, positions)| positions.iter().map(|p| (path.clone(), p as i64)))
            .collect();
        assert_eq!(rows, expected);
    }
}
