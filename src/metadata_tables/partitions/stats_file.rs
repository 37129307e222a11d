//! Partition statistics files (spec: "Partition Statistics File"): Parquet, one row per spec
//! id and partition tuple of a snapshot, sorted by `partition` (ascending, nulls first), with
//! the schema of [`partition_statistics_schema`] for the table's unified partition type (every
//! partition field of every spec, by ascending field id).
//!
//! [`compute`] makes the file of a snapshot as Java's `PartitionStatsHandler` computes it (a
//! full compute over the snapshot's manifests, DELETED entries moving `last_updated`);
//! [`answer`] reads it back as the rows of `"t$partitions"`, or declines.

use std::cmp::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int32Array, Int64Array, RecordBatch, StructArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields, Int64Type};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::arrow::arrow_writer::ArrowWriterOptions;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::properties::WriterProperties;

use super::super::MetadataContext;
use super::super::files::arrow_error;
use super::super::files::entry_filter::EntryFilter;
use super::super::files::file_rows::{self, ReadPlan, Scope};
use super::super::files::partition_struct::{UnifiedPartition, column};
use super::counts::{self, Grouping, PartitionCounts};
use crate::error::{Error, Result};
use crate::spec::statistics::{partition_statistics_schema, partition_stats_fields as f};
use crate::spec::{Literal, Schema, Snapshot, TableMetadata};
use crate::table::Table;
use crate::to_arrow::{FIELD_ID_KEY, schema_to_arrow};
use crate::write::{literal_at, parquet_schema};

mod answer;

pub(crate) use answer::answer;

/// A partition statistics file, encoded.
#[derive(Debug, Clone)]
pub(crate) struct EncodedPartitionStats {
    /// The Parquet file.
    pub(crate) bytes: Bytes,
    /// Its rows: the partitions (per spec) of the snapshot.
    pub(crate) partitions: usize,
}

/// The partition statistics file of `snapshot` (of `table`): every entry of the snapshot's
/// manifests, live or DELETED, grouped by spec id and tuple ([`Grouping::BySpec`]), sorted.
/// `None` when the snapshot's manifests hold no entry (Java writes no file then).
///
/// Errors: a table with no partition field in any spec ([`Error::InvalidArgument`], as Java
/// refuses), and those of reading the manifests.
pub(crate) async fn compute(
    table: &Table,
    snapshot: &Snapshot,
) -> Result<Option<EncodedPartitionStats>> {
    let metadata = table.metadata();
    let partition = UnifiedPartition::new(metadata)?;
    if partition.is_empty() {
        return Err(Error::invalid(
            format_args!("table {}", metadata.location),
            "it is not partitioned: partition statistics describe the partitions of a \
             partitioned table",
        ));
    }
    let ctx = MetadataContext {
        table,
        snapshot: Some(snapshot),
        schema: metadata.current_schema(),
    };
    let filter = EntryFilter::default();
    let plan = ReadPlan {
        scope: Scope::Selected,
        content: None,
        keep_deleted: true,
        filter: &filter,
        limit: None,
    };
    let entries = file_rows::read_entries(&ctx, plan).await?;
    let mut rows = counts::group(&entries, metadata, Grouping::BySpec);
    if rows.is_empty() {
        return Ok(None);
    }
    sort(&mut rows, &partition);
    let bytes = encode(metadata, &partition, &rows)?;
    Ok(Some(EncodedPartitionStats {
        bytes,
        partitions: rows.len(),
    }))
}

/// Sorts rows by their unified partition tuple (fields by ascending id, nulls first), then by
/// spec id.
fn sort(rows: &mut [PartitionCounts], partition: &UnifiedPartition) {
    let order = partition.by_field_id();
    rows.sort_by(|a, b| {
        let a_values = partition.unify(a.spec_id, &a.tuple);
        let b_values = partition.unify(b.spec_id, &b.tuple);
        order
            .iter()
            .map(|at| nulls_first(a_values[*at], b_values[*at]))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
            .then(a.spec_id.cmp(&b.spec_id))
    });
}

fn nulls_first(a: Option<&Literal>, b: Option<&Literal>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => a.partial_cmp_same_type(b).unwrap_or(Ordering::Equal),
    }
}

/// The rows as a Parquet file of the spec's schema (field ids in the Parquet schema, no
/// Arrow schema in the footer, as Java writes; zstd as Java's default codec).
fn encode(
    metadata: &TableMetadata,
    partition: &UnifiedPartition,
    rows: &[PartitionCounts],
) -> Result<Bytes> {
    let schema = partition_statistics_schema(partition.struct_type(), metadata.format_version);
    let arrow = Arc::new(schema_to_arrow(&schema)?);
    let columns = schema
        .columns()
        .iter()
        .zip(arrow.fields())
        .map(|(field, arrow_field)| encode_column(field.id, arrow_field, partition, rows))
        .collect::<Result<Vec<_>>>()?;
    let batch = RecordBatch::try_new(Arc::clone(&arrow), columns).map_err(arrow_error)?;
    write_parquet(&batch, &schema).map_err(|e| {
        Error::invalid(
            "a partition statistics file",
            format_args!("cannot be written: {e}"),
        )
    })
}

fn write_parquet(batch: &RecordBatch, schema: &Schema) -> std::result::Result<Bytes, ParquetError> {
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let options = ArrowWriterOptions::new()
        .with_skip_arrow_metadata(true)
        .with_properties(properties)
        .with_parquet_schema(parquet_schema(batch.schema().as_ref(), schema)?);
    let mut writer = ArrowWriter::try_new_with_options(Vec::new(), batch.schema(), options)?;
    writer.write(batch)?;
    Ok(Bytes::from(writer.into_inner()?))
}

/// The column of field `id` of the partition statistics schema.
fn encode_column(
    id: i32,
    field: &Field,
    partition: &UnifiedPartition,
    rows: &[PartitionCounts],
) -> Result<ArrayRef> {
    let long = |g: fn(&PartitionCounts) -> Option<i64>| -> ArrayRef {
        Arc::new(rows.iter().map(g).collect::<Int64Array>())
    };
    let int = |g: fn(&PartitionCounts) -> i32| -> ArrayRef {
        Arc::new(rows.iter().map(g).collect::<Int32Array>())
    };
    Ok(match id {
        f::PARTITION => encode_partition(field, partition, rows)?,
        f::SPEC_ID => int(|r| r.spec_id),
        f::DATA_RECORD_COUNT => long(|r| Some(r.data_record_count)),
        f::DATA_FILE_COUNT => int(|r| r.data_file_count),
        f::TOTAL_DATA_FILE_SIZE_IN_BYTES => long(|r| Some(r.total_data_file_size_in_bytes)),
        f::POSITION_DELETE_RECORD_COUNT => long(|r| Some(r.position_delete_record_count)),
        f::POSITION_DELETE_FILE_COUNT => int(|r| r.position_delete_file_count),
        f::DV_COUNT => int(|r| r.dv_count),
        f::EQUALITY_DELETE_RECORD_COUNT => long(|r| Some(r.equality_delete_record_count)),
        f::EQUALITY_DELETE_FILE_COUNT => int(|r| r.equality_delete_file_count),
        f::TOTAL_RECORD_COUNT => long(PartitionCounts::total_record_count),
        f::LAST_UPDATED_AT => long(|r| r.last_updated.map(|(at, _)| at)),
        f::LAST_UPDATED_SNAPSHOT_ID => long(|r| r.last_updated.map(|(_, id)| id)),
        other => {
            return Err(Error::invalid(
                format_args!("partition statistics field {other}"),
                "is not a field of the spec's partition statistics schema",
            ));
        }
    })
}

/// The `partition` column: each row's tuple in the unified type (fields by ascending id).
fn encode_partition(
    field: &Field,
    partition: &UnifiedPartition,
    rows: &[PartitionCounts],
) -> Result<ArrayRef> {
    let DataType::Struct(children) = field.data_type() else {
        return Err(Error::invalid("the partition column", "is not a struct"));
    };
    let unified: Vec<_> = rows
        .iter()
        .map(|r| partition.unify(r.spec_id, &r.tuple))
        .collect();
    let columns = partition
        .by_field_id()
        .into_iter()
        .zip(children.iter())
        .map(|(at, child)| {
            let (_, ty) = partition.field_type(at).ok_or_else(|| {
                Error::invalid("the partition column", "has a field the table does not")
            })?;
            column(unified.iter().map(|u| u[at]), ty, child.data_type())
        })
        .collect::<Result<Vec<_>>>()?;
    let array = StructArray::try_new(children.clone(), columns, None).map_err(arrow_error)?;
    Ok(Arc::new(array))
}

/// The rows of a partition statistics file, by field id (written by icefloe or another
/// engine); a v1/v2 file's null delete counts read as 0. Errors are [`Error::Corrupt`] naming
/// `path`.
pub(crate) fn decode(
    path: &str,
    bytes: Bytes,
    partition: &UnifiedPartition,
) -> Result<Vec<PartitionCounts>> {
    let corrupt = |e: &dyn std::fmt::Display| Error::corrupt(path, e.to_string());
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .and_then(|b| b.build())
        .map_err(|e| corrupt(&e))?;
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| corrupt(&e))?;
        rows.extend(decode_batch(&batch, partition).map_err(|e| corrupt(&e))?);
    }
    Ok(rows)
}

/// The index of the field with Parquet field id `id`.
fn field_index(fields: &Fields, id: i32) -> Option<usize> {
    let id = id.to_string();
    fields
        .iter()
        .position(|f| f.metadata().get(FIELD_ID_KEY) == Some(&id))
}

fn decode_batch(batch: &RecordBatch, partition: &UnifiedPartition) -> Result<Vec<PartitionCounts>> {
    let schema = batch.schema();
    let missing = |id: i32| Error::invalid(format_args!("field {id}"), "is missing");
    // Every count as an Int64 column (absent: a `dv_count` before v3).
    let long = |id: i32| -> Result<Option<ArrayRef>> {
        match field_index(schema.fields(), id) {
            Some(at) => Ok(Some(
                cast(batch.column(at), &DataType::Int64).map_err(arrow_error)?,
            )),
            None => Ok(None),
        }
    };
    let required = |id: i32| long(id)?.ok_or_else(|| missing(id));
    let partition_column = field_index(schema.fields(), f::PARTITION)
        .map(|at| batch.column(at))
        .ok_or_else(|| missing(f::PARTITION))?;
    let partition_column = partition_column
        .as_struct_opt()
        .ok_or_else(|| Error::invalid("the partition column", "is not a struct"))?;
    let spec_ids = required(f::SPEC_ID)?;
    let columns = Counts {
        data_record_count: Some(required(f::DATA_RECORD_COUNT)?),
        data_file_count: Some(required(f::DATA_FILE_COUNT)?),
        total_data_file_size_in_bytes: Some(required(f::TOTAL_DATA_FILE_SIZE_IN_BYTES)?),
        position_delete_record_count: long(f::POSITION_DELETE_RECORD_COUNT)?,
        position_delete_file_count: long(f::POSITION_DELETE_FILE_COUNT)?,
        dv_count: long(f::DV_COUNT)?,
        equality_delete_record_count: long(f::EQUALITY_DELETE_RECORD_COUNT)?,
        equality_delete_file_count: long(f::EQUALITY_DELETE_FILE_COUNT)?,
        last_updated_at: long(f::LAST_UPDATED_AT)?,
        last_updated_snapshot_id: long(f::LAST_UPDATED_SNAPSHOT_ID)?,
    };
    (0..batch.num_rows())
        .map(|row| {
            let spec_id = value(Some(&spec_ids), row)
                .and_then(|v| i32::try_from(v).ok())
                .ok_or_else(|| missing(f::SPEC_ID))?;
            let tuple = decode_tuple(partition_column, partition, spec_id, row)?;
            columns.row(PartitionCounts::new(spec_id, tuple), row)
        })
        .collect()
}

/// A spec's tuple from the unified `partition` struct, each field found by its field id.
fn decode_tuple(
    column: &StructArray,
    partition: &UnifiedPartition,
    spec_id: i32,
    row: usize,
) -> Result<Vec<Option<Literal>>> {
    let positions = partition.spec_positions(spec_id).ok_or_else(|| {
        Error::invalid(
            format_args!("partition spec {spec_id}"),
            "is not in the table",
        )
    })?;
    positions
        .iter()
        .map(|at| {
            let (id, ty) = partition
                .field_type(*at)
                .ok_or_else(|| Error::invalid("the partition type", "is incomplete"))?;
            let child = field_index(column.fields(), id).ok_or_else(|| {
                Error::invalid(format_args!("partition field {id}"), "is missing")
            })?;
            match column.is_null(row) {
                true => Ok(None),
                false => literal_at(column.column(child).as_ref(), ty, row),
            }
        })
        .collect()
}

/// A count column's value at `row` (`None`: null or no column).
fn value(column: Option<&ArrayRef>, row: usize) -> Option<i64> {
    let column = column?.as_primitive::<Int64Type>();
    column.is_valid(row).then(|| column.value(row))
}

/// The count columns of a batch, as Int64 (`None`: not in the file).
struct Counts {
    data_record_count: Option<ArrayRef>,
    data_file_count: Option<ArrayRef>,
    total_data_file_size_in_bytes: Option<ArrayRef>,
    position_delete_record_count: Option<ArrayRef>,
    position_delete_file_count: Option<ArrayRef>,
    dv_count: Option<ArrayRef>,
    equality_delete_record_count: Option<ArrayRef>,
    equality_delete_file_count: Option<ArrayRef>,
    last_updated_at: Option<ArrayRef>,
    last_updated_snapshot_id: Option<ArrayRef>,
}

impl Counts {
    /// `counts` with row `row`'s values.
    fn row(&self, mut counts: PartitionCounts, row: usize) -> Result<PartitionCounts> {
        let long = |c: &Option<ArrayRef>| value(c.as_ref(), row).unwrap_or(0);
        let int = |c: &Option<ArrayRef>| {
            i32::try_from(long(c)).map_err(|_| Error::invalid("a file count", "is out of range"))
        };
        counts.data_record_count = long(&self.data_record_count);
        counts.data_file_count = int(&self.data_file_count)?;
        counts.total_data_file_size_in_bytes = long(&self.total_data_file_size_in_bytes);
        counts.position_delete_record_count = long(&self.position_delete_record_count);
        counts.position_delete_file_count = int(&self.position_delete_file_count)?;
        counts.dv_count = int(&self.dv_count)?;
        counts.equality_delete_record_count = long(&self.equality_delete_record_count);
        counts.equality_delete_file_count = int(&self.equality_delete_file_count)?;
        let at = value(self.last_updated_at.as_ref(), row);
        let id = value(self.last_updated_snapshot_id.as_ref(), row);
        counts.last_updated = at.zip(id);
        Ok(counts)
    }
}
