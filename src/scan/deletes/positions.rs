//! Position deletes and deletion vectors: read once per scan, gathered into one bitmap of
//! deleted positions per data file, and turned into the row selection DataFusion's Parquet
//! reader applies (positions are file-global, across row groups).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, Schema as ArrowSchema};
use datafusion::arrow::error::ArrowError;
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::arrow::arrow_reader::{
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use datafusion::parquet::errors::ParquetError;
use futures::{StreamExt, TryStreamExt, stream};
use roaring::RoaringTreemap;

use super::DeleteFileTask;
use super::index::{FILE_PATH_FIELD_ID, location_key};
use super::puffin::decode_deletion_vector;
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::scan::FileScanTask;
use crate::scan::file_types::check_delete_column;
use crate::scan::guard::catch_decoder;
use crate::scan::reader::check_column_chunks;
use crate::spec::DataContentType;
use crate::to_arrow::FIELD_ID_KEY;

/// The reserved field id of a position delete file's `pos` column.
const POS_FIELD_ID: i32 = 2_147_483_545;

/// How many delete files are read at once.
const CONCURRENCY: usize = 8;

/// A delete file and the location keys of the data files it applies to.
type Targets = (Arc<DeleteFileTask>, HashSet<String>);

/// Deleted positions per data file, by the data file's location key.
pub(crate) type DeletedPositions = HashMap<String, RoaringTreemap>;

/// Reads every position delete file and deletion vector that applies to `tasks` (each once,
/// however many data files it applies to) and returns the deleted positions of each data file.
pub(crate) async fn load(io: &FileIO, tasks: &[FileScanTask]) -> Result<DeletedPositions> {
    // Which data files each delete file applies to.
    // Keyed by path and blob offset: one Puffin file holds the vectors of many data files.
    let mut targets: HashMap<(&str, Option<i64>), Targets> = HashMap::new();
    for task in tasks {
        let mut key = None;
        for delete in &task.deletes {
            if delete.file.content != DataContentType::PositionDeletes {
                continue;
            }
            if key.is_none() {
                key = Some(location_key(io, &task.data_file.file_path));
            }
            let key = key.clone().unwrap_or_default();
            targets
                .entry((delete.file.file_path.as_str(), delete.file.content_offset))
                .or_insert_with(|| (Arc::clone(delete), HashSet::new()))
                .1
                .insert(key);
        }
    }
    let reads = targets.into_values().map(|(delete, keys)| async move {
        let deleted = if delete.is_deletion_vector() {
            read_vector(io, &delete).await?
        } else {
            read_position_file(io, &delete, &keys).await?
        };
        Ok::<_, Error>((keys, deleted))
    });
    let mut per_file = stream::iter(reads).buffer_unordered(CONCURRENCY);
    let mut positions = DeletedPositions::new();
    while let Some((keys, deleted)) = per_file.try_next().await? {
        for (key, bitmap) in deleted {
            if keys.contains(&key) {
                *positions.entry(key).or_default() |= bitmap;
            }
        }
    }
    Ok(positions)
}

/// A deletion vector: one ranged read of its blob, applied to its referenced data file.
async fn read_vector(io: &FileIO, delete: &DeleteFileTask) -> Result<DeletedPositions> {
    let file = &delete.file;
    let path = &file.file_path;
    let missing =
        |what: &str| Error::corrupt(path.clone(), format!("deletion vector without {what}"));
    let target = file
        .referenced_data_file
        .as_deref()
        .ok_or_else(|| missing("referenced_data_file"))?;
    let offset = file
        .content_offset
        .ok_or_else(|| missing("content_offset"))?;
    let size = file
        .content_size_in_bytes
        .ok_or_else(|| missing("content_size_in_bytes"))?;
    let (Ok(start), Ok(len)) = (u64::try_from(offset), u64::try_from(size)) else {
        return Err(Error::corrupt(
            path.clone(),
            format!("deletion vector at offset {offset} with size {size}"),
        ));
    };
    let blob = io.read_range(path, start..start + len).await?;
    let bitmap = catch_decoder(path, || decode_deletion_vector(&blob, path))?;
    Ok(HashMap::from([(location_key(io, target), bitmap)]))
}

/// A Parquet position delete file: `(file_path, pos)` rows, kept for the data files in `keys`.
async fn read_position_file(
    io: &FileIO,
    delete: &DeleteFileTask,
    keys: &HashSet<String>,
) -> Result<DeletedPositions> {
    let path = &delete.file.file_path;
    // The whole file at once: delete files are small, and some writers record wrong sizes.
    let bytes = io
        .read_bounded(path, io.read_limits().delete_file_bytes)
        .await?;
    catch_decoder(path, || decode_position_file(io, path, bytes, keys))
}

/// The rows of a position delete file's bytes, kept for the data files in `keys`.
fn decode_position_file(
    io: &FileIO,
    path: &str,
    bytes: Bytes,
    keys: &HashSet<String>,
) -> Result<DeletedPositions> {
    let unreadable = |e: ParquetError| Error::corrupt_with(path, e.to_string(), e);
    let size = bytes.len() as u64;
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(unreadable)?;
    check_column_chunks(builder.metadata(), size).map_err(unreadable)?;
    let schema = Arc::clone(builder.schema());
    let file_path = column(&schema, FILE_PATH_FIELD_ID, "file_path")
        .ok_or_else(|| Error::corrupt(path, "position delete file without a file_path column"))?;
    let pos = column(&schema, POS_FIELD_ID, "pos")
        .ok_or_else(|| Error::corrupt(path, "position delete file without a pos column"))?;
    let expected = [
        (file_path, DataType::Utf8, FILE_PATH_FIELD_ID),
        (pos, DataType::Int64, POS_FIELD_ID),
    ];
    for (index, ty, id) in expected {
        check_delete_column(schema.field(index), &ty, id)
            .map_err(|r| Error::corrupt_with(path, r.to_string(), r))?;
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), [file_path, pos]);
    // The projection keeps the file's column order, whichever comes first.
    let (path_column, pos_column) = if file_path < pos { (0, 1) } else { (1, 0) };
    let reader = builder.with_projection(mask).build().map_err(unreadable)?;
    let mut rows = PositionRows {
        io,
        keys,
        deleted: DeletedPositions::new(),
        last: None,
    };
    for batch in reader {
        let batch: RecordBatch = batch.map_err(|e| Error::corrupt_with(path, e.to_string(), e))?;
        rows.add(&batch, path_column, pos_column)
            .map_err(|e| e.in_file(path))?;
    }
    Ok(rows.deleted)
}

/// The deleted positions of one position delete file, gathered batch by batch.
struct PositionRows<'a> {
    io: &'a FileIO,
    /// The data files whose positions are kept.
    keys: &'a HashSet<String>,
    deleted: DeletedPositions,
    /// The last `file_path` seen, and its key when it is kept.
    last: Option<(String, Option<String>)>,
}

impl PositionRows<'_> {
    /// Adds the rows of `batch`; the error is an [`Error::Corrupt`] without a path, saying
    /// what is wrong with them.
    fn add(&mut self, batch: &RecordBatch, path_column: usize, pos_column: usize) -> Result<()> {
        let unreadable = |e: ArrowError| Error::corrupt_with("", e.to_string(), e);
        let paths = cast(batch.column(path_column), &DataType::Utf8).map_err(unreadable)?;
        let positions = cast(batch.column(pos_column), &DataType::Int64).map_err(unreadable)?;
        let paths = paths.as_string::<i32>();
        let positions = positions.as_primitive::<Int64Type>();
        for row in 0..batch.num_rows() {
            if paths.is_null(row) || positions.is_null(row) {
                return Err(Error::corrupt(
                    "",
                    format!("null file_path or pos in row {row}"),
                ));
            }
            let raw = paths.value(row);
            // Rows are sorted by path: resolve each distinct path once.
            if self.last.as_ref().is_none_or(|(prev, _)| prev != raw) {
                let key = location_key(self.io, raw);
                self.last = Some((raw.to_string(), self.keys.contains(&key).then_some(key)));
            }
            let Some((_, Some(key))) = &self.last else {
                continue;
            };
            let position = u64::try_from(positions.value(row))
                .map_err(|_| Error::corrupt("", format!("negative position in row {row}")))?;
            self.deleted
                .entry(key.clone())
                .or_default()
                .insert(position);
        }
        Ok(())
    }
}

/// The top-level column with field id `id` (or, in files without ids, named `name`).
fn column(schema: &ArrowSchema, id: i32, name: &str) -> Option<usize> {
    let by_id = schema.fields().iter().position(|f| {
        f.metadata()
            .get(FIELD_ID_KEY)
            .is_some_and(|v| v.parse::<i32>() == Ok(id))
    });
    by_id.or_else(|| schema.fields().iter().position(|f| f.name() == name))
}

/// The rows of a file of `row_count` rows that survive `deleted`: `None` when every row does
/// (no selection needed). Positions at or past the end are ignored.
pub(crate) fn surviving_rows(deleted: &RoaringTreemap, row_count: u64) -> Option<RowSelection> {
    let mut selectors = Vec::new();
    let mut next = 0u64;
    for position in deleted.iter().take_while(|p| *p < row_count) {
        if position > next {
            selectors.push(RowSelector::select(to_usize(position - next)));
        }
        match selectors.last_mut() {
            Some(last) if last.skip && position == next => last.row_count += 1,
            _ => selectors.push(RowSelector::skip(1)),
        }
        next = position + 1;
    }
    if selectors.is_empty() {
        return None;
    }
    if next < row_count {
        selectors.push(RowSelector::select(to_usize(row_count - next)));
    }
    Some(RowSelection::from(selectors))
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selectors(deleted: &[u64], rows: u64) -> Vec<(bool, usize)> {
        let bitmap: RoaringTreemap = deleted.iter().copied().collect();
        surviving_rows(&bitmap, rows)
            .map(|s| {
                let v: Vec<RowSelector> = s.into();
                v.into_iter().map(|r| (r.skip, r.row_count)).collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn runs_of_deleted_positions_become_skips() {
        assert_eq!(
            selectors(&[0, 1, 5, 9], 10),
            [(true, 2), (false, 3), (true, 1), (false, 3), (true, 1)]
        );
        assert_eq!(selectors(&[3], 5), [(false, 3), (true, 1), (false, 1)]);
    }

    #[tokio::test]
    async fn reads_position_files_by_column_identity_not_order() {
        use datafusion::arrow::array::{Int64Array, StringArray};
        use datafusion::arrow::datatypes::Field;
        use datafusion::parquet::arrow::ArrowWriter;
        use std::collections::HashMap as Map;

        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("d.parquet").display().to_string();
        let other = dir.path().join("other.parquet").display().to_string();
        let with_id = |name: &str, ty: DataType, id: i32| {
            Field::new(name, ty, false)
                .with_metadata(Map::from([(FIELD_ID_KEY.to_string(), id.to_string())]))
        };
        // `pos` first: the spec orders them the other way, but a reader must not depend on it.
        let schema = Arc::new(ArrowSchema::new(vec![
            with_id("pos", DataType::Int64, POS_FIELD_ID),
            with_id("file_path", DataType::Utf8, FILE_PATH_FIELD_ID),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from(vec![3, 7, 1])),
                Arc::new(StringArray::from(vec![
                    data.as_str(),
                    data.as_str(),
                    other.as_str(),
                ])),
            ],
        )
        .unwrap();
        let path = dir.path().join("deletes.parquet");
        let mut writer =
            ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();

        let io = FileIO::default();
        let mut file = super::super::index::tests_support::file(path.display().to_string());
        file.content = DataContentType::PositionDeletes;
        let delete = DeleteFileTask {
            file,
            partition_spec_id: 0,
            data_sequence_number: 1,
        };
        let keys = HashSet::from([location_key(&io, &data)]);
        let deleted = read_position_file(&io, &delete, &keys).await.unwrap();
        let positions: Vec<u64> = deleted[&location_key(&io, &data)].iter().collect();
        assert_eq!(positions, [3, 7]);
        assert_eq!(deleted.len(), 1, "rows for other data files are not kept");
    }

    /// Writes a position delete file whose `pos` column holds `positions`; its task.
    fn delete_file_with_positions(
        dir: &std::path::Path,
        data: &str,
        positions: datafusion::arrow::array::ArrayRef,
    ) -> DeleteFileTask {
        use datafusion::arrow::array::StringArray;
        use datafusion::arrow::datatypes::Field;
        use datafusion::parquet::arrow::ArrowWriter;

        let with_id = |name: &str, ty: DataType, id: i32| {
            Field::new(name, ty, false)
                .with_metadata([(FIELD_ID_KEY.to_string(), id.to_string())].into())
        };
        let schema = Arc::new(ArrowSchema::new(vec![
            with_id("file_path", DataType::Utf8, FILE_PATH_FIELD_ID),
            with_id("pos", positions.data_type().clone(), POS_FIELD_ID),
        ]));
        let paths = Arc::new(StringArray::from(vec![data; positions.len()]));
        let batch = RecordBatch::try_new(Arc::clone(&schema), vec![paths, positions]).unwrap();
        let path = dir.join("deletes.parquet");
        let mut writer =
            ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let mut file = super::super::index::tests_support::file(path.display().to_string());
        file.content = DataContentType::PositionDeletes;
        DeleteFileTask {
            file,
            partition_spec_id: 0,
            data_sequence_number: 1,
        }
    }

    #[tokio::test]
    async fn positions_stored_as_another_type_are_refused() {
        use datafusion::arrow::array::{Float64Array, Int32Array, StringArray};

        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("d.parquet").display().to_string();
        let io = FileIO::default();
        let keys = HashSet::from([location_key(&io, &data)]);
        // Narrower integers are positions; strings and floats (which casts would turn into
        // positions) are not.
        let narrow = Arc::new(Int32Array::from(vec![1, 4]));
        let delete = delete_file_with_positions(dir.path(), &data, narrow);
        let deleted = read_position_file(&io, &delete, &keys).await.unwrap();
        assert_eq!(deleted[&location_key(&io, &data)].len(), 2);
        for positions in [
            Arc::new(StringArray::from(vec!["1", "4"])) as _,
            Arc::new(Float64Array::from(vec![1.0, 4.7])) as _,
        ] {
            let delete = delete_file_with_positions(dir.path(), &data, positions);
            let err = read_position_file(&io, &delete, &keys)
                .await
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("deletes.parquet") && err.contains("column 'pos'"),
                "{err}"
            );
        }
    }

    #[test]
    fn nothing_deleted_needs_no_selection_and_positions_past_the_end_are_ignored() {
        assert!(selectors(&[], 10).is_empty());
        assert!(selectors(&[10, 11], 10).is_empty());
        assert_eq!(selectors(&[0, 1, 2], 3), [(true, 3)]);
    }
}
