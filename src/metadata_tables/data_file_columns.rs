//! The `data_file` columns (spec: "Data File Fields") shared by `files` (top-level columns)
//! and `entries` (the `data_file` struct), with PyIceberg's names, order and Arrow types.
//! Metric maps are Arrow maps with `int32` keys, in key order.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryArray, DictionaryArray, Int8Array, Int32Array, Int64Array, ListArray, MapArray,
    StringArray, StructArray,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Int32Type, Int64Type};

use super::arrow_error;
use super::partition_struct::UnifiedPartition;
use crate::error::{Error, Result};
use crate::spec::{DataFile, FileFormat};

/// Where the columns go: `files` has `spec_id` after `file_format` and a dictionary-encoded
/// `file_format`; `entries`' `data_file` struct has neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// The `files` relations.
    Files,
    /// The `data_file` struct of the `entries` relations.
    Entries,
}

/// One data or delete file with the spec it was written under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FileRow<'a> {
    /// The partition spec id (the manifest's).
    pub(crate) spec_id: i32,
    /// The file.
    pub(crate) file: &'a DataFile,
}

/// The Arrow fields of the data-file columns.
pub(crate) fn fields(layout: Layout, partition: &UnifiedPartition) -> Vec<Field> {
    let long_map = map_type(DataType::Int64);
    let bytes_map = map_type(DataType::Binary);
    let format = match layout {
        Layout::Files => DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
        Layout::Entries => DataType::Utf8,
    };
    let mut fields = vec![
        Field::new("content", DataType::Int8, false),
        Field::new("file_path", DataType::Utf8, false),
        Field::new("file_format", format, false),
    ];
    if layout == Layout::Files {
        fields.push(Field::new("spec_id", DataType::Int32, false));
    }
    fields.extend([
        Field::new("partition", partition.data_type(), false),
        Field::new("record_count", DataType::Int64, false),
        Field::new("file_size_in_bytes", DataType::Int64, false),
        Field::new("column_sizes", long_map.clone(), true),
        Field::new("value_counts", long_map.clone(), true),
        Field::new("null_value_counts", long_map.clone(), true),
        Field::new("nan_value_counts", long_map, true),
        Field::new("lower_bounds", bytes_map.clone(), true),
        Field::new("upper_bounds", bytes_map, true),
        Field::new("key_metadata", DataType::Binary, true),
        Field::new("split_offsets", list_type(DataType::Int64), true),
        Field::new("equality_ids", list_type(DataType::Int32), true),
        Field::new("sort_order_id", DataType::Int32, true),
    ]);
    fields
}

/// The data-file columns of these rows, in the order of [`fields`].
pub(crate) fn arrays(
    layout: Layout,
    partition: &UnifiedPartition,
    rows: &[FileRow<'_>],
) -> Result<Vec<ArrayRef>> {
    let files: Vec<&DataFile> = rows.iter().map(|r| r.file).collect();
    let format_names = files.iter().map(|f| format_name(&f.file_format));
    let file_format: ArrayRef = match layout {
        Layout::Files => Arc::new(format_names.collect::<DictionaryArray<Int32Type>>()),
        Layout::Entries => Arc::new(format_names.map(Some).collect::<StringArray>()),
    };
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(files.iter().map(|f| f.content as i8).collect::<Int8Array>()),
        Arc::new(
            files
                .iter()
                .map(|f| Some(f.file_path.as_str()))
                .collect::<StringArray>(),
        ),
        file_format,
    ];
    if layout == Layout::Files {
        columns.push(Arc::new(
            rows.iter().map(|r| r.spec_id).collect::<Int32Array>(),
        ));
    }
    let partition_rows = rows
        .iter()
        .map(|r| (r.spec_id, r.file.partition.as_slice()));
    columns.push(partition.array(partition_rows)?);
    columns.push(Arc::new(
        files.iter().map(|f| f.record_count).collect::<Int64Array>(),
    ));
    columns.push(Arc::new(
        files
            .iter()
            .map(|f| f.file_size_in_bytes)
            .collect::<Int64Array>(),
    ));
    columns.push(long_map(files.iter().map(|f| &f.column_sizes))?);
    columns.push(long_map(files.iter().map(|f| &f.value_counts))?);
    columns.push(long_map(files.iter().map(|f| &f.null_value_counts))?);
    columns.push(long_map(files.iter().map(|f| &f.nan_value_counts))?);
    columns.push(bytes_map(files.iter().map(|f| f.lower_bounds.as_ref()))?);
    columns.push(bytes_map(files.iter().map(|f| f.upper_bounds.as_ref()))?);
    columns.extend(optional_columns(&files));
    Ok(columns)
}

/// `key_metadata`, `split_offsets`, `equality_ids`, `sort_order_id`.
fn optional_columns(files: &[&DataFile]) -> [ArrayRef; 4] {
    let key_metadata: BinaryArray = files.iter().map(|f| f.key_metadata.as_deref()).collect();
    let splits = files.iter().map(|f| {
        f.split_offsets
            .as_ref()
            .map(|s| s.iter().map(|v| Some(*v)).collect::<Vec<_>>())
    });
    let equality = files.iter().map(|f| {
        f.equality_ids
            .as_ref()
            .map(|s| s.iter().map(|v| Some(*v)).collect::<Vec<_>>())
    });
    [
        Arc::new(key_metadata),
        Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(splits)),
        Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(equality)),
        Arc::new(
            files
                .iter()
                .map(|f| f.sort_order_id)
                .collect::<Int32Array>(),
        ),
    ]
}

/// The name PyIceberg shows for a file format (`PARQUET`, `AVRO`, ...).
fn format_name(format: &FileFormat) -> &str {
    match format {
        FileFormat::Parquet => "PARQUET",
        FileFormat::Avro => "AVRO",
        FileFormat::Orc => "ORC",
        FileFormat::Puffin => "PUFFIN",
        FileFormat::Other(name) => name,
    }
}

fn list_type(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", item, true)))
}

fn entry_fields(value: DataType) -> Fields {
    Fields::from(vec![
        Field::new("key", DataType::Int32, false),
        Field::new("value", value, true),
    ])
}

fn map_field(value: DataType) -> FieldRef {
    Arc::new(Field::new(
        "entries",
        DataType::Struct(entry_fields(value)),
        false,
    ))
}

fn map_type(value: DataType) -> DataType {
    DataType::Map(map_field(value), false)
}

fn long_map<'a>(maps: impl Iterator<Item = &'a HashMap<i32, i64>>) -> Result<ArrayRef> {
    map_array(maps.map(Some), DataType::Int64, |values| {
        Arc::new(values.into_iter().copied().collect::<Int64Array>())
    })
}

fn bytes_map<'a>(
    maps: impl Iterator<Item = Option<&'a HashMap<i32, Vec<u8>>>>,
) -> Result<ArrayRef> {
    map_array(maps, DataType::Binary, |values| {
        Arc::new(
            values
                .into_iter()
                .map(|v| Some(v.as_slice()))
                .collect::<BinaryArray>(),
        )
    })
}

/// An Arrow map column (`int32` keys, in key order) of one map per row (`None`: a null map,
/// for a map the manifest does not have).
fn map_array<'a, V: 'a>(
    maps: impl Iterator<Item = Option<&'a HashMap<i32, V>>>,
    value_type: DataType,
    values: impl FnOnce(Vec<&'a V>) -> ArrayRef,
) -> Result<ArrayRef> {
    let (mut keys, mut vals, mut offsets) = (Vec::new(), Vec::new(), vec![0_i32]);
    let mut valid = Vec::new();
    for map in maps {
        valid.push(map.is_some());
        let mut pairs: Vec<_> = map.into_iter().flatten().collect();
        pairs.sort_by_key(|(k, _)| **k);
        for (k, v) in pairs {
            keys.push(*k);
            vals.push(v);
        }
        let end = i32::try_from(keys.len())
            .map_err(|_| Error::Unsupported("more than 2^31 metric entries".into()))?;
        offsets.push(end);
    }
    let key_array: ArrayRef = Arc::new(Int32Array::from(keys));
    let entries = StructArray::try_new(
        entry_fields(value_type.clone()),
        vec![key_array, values(vals)],
        None,
    )
    .map_err(arrow_error)?;
    let offsets = OffsetBuffer::new(offsets.into());
    let nulls = valid.iter().any(|v| !v).then(|| NullBuffer::from(valid));
    let map = MapArray::try_new(map_field(value_type), offsets, entries, nulls, false)
        .map_err(arrow_error)?;
    Ok(Arc::new(map))
}
