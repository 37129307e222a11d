//! Writing one Parquet data file with Iceberg field ids and collecting its `data_file` metrics
//! (spec: "Manifests" / "Data File Fields", "Metrics"; "Parquet" in "File Formats").
//!
//! Where each metric comes from:
//!
//! | metric | source |
//! |---|---|
//! | `record_count`, `file_size_in_bytes` | the Parquet writer (rows in the footer, bytes written) |
//! | `column_sizes` (108) | footer: compressed size of each leaf column chunk, summed over row groups |
//! | `value_counts` (109) | footer: `num_values` of each leaf chunk (nulls and NaN included; for list and map leaves every level entry, as Java) |
//! | `null_value_counts` (110) | footer: the chunk statistics' null count |
//! | `nan_value_counts` (137) | the Arrow arrays (float and double columns outside lists and maps) |
//! | `lower_bounds` / `upper_bounds` (125, 128) | the Arrow arrays, see [`super::bounds`] |
//! | `split_offsets` (132) | footer: the start of each row group (its first column chunk) |
//!
//! Leaf columns are matched to Iceberg fields by the field ids the Parquet schema carries (the
//! Arrow schema's `PARQUET:field_id` metadata becomes the Parquet field id). The v3 types are
//! written as [`super::columns`] says (no `unknown` column; `variant` groups without metrics).

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayData, ArrayRef, RecordBatch, make_array};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::parquet::arrow::AsyncArrowWriter;
use datafusion::parquet::arrow::arrow_writer::ArrowWriterOptions;
use datafusion::parquet::basic::Encoding;
use datafusion::parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::{KeyValue, ParquetMetaData};
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::parquet::schema::types::{ColumnPath, SchemaDescriptor};
use object_store::ObjectStore;
use object_store::buffered::BufWriter;
use object_store::path::Path;

use super::bounds::BoundsCollector;
use super::columns::{FileColumns, parquet_schema};
use crate::error::{Error, Result};
use crate::spec::properties::{
    DEFAULT_WRITE_METRICS_MODE, MetricsMode, PARQUET_COMPRESSION, PARQUET_COMPRESSION_LEVEL,
    PARQUET_PAGE_SIZE_BYTES, PARQUET_ROW_GROUP_SIZE_BYTES, ParquetCodec, PropertySource,
};
use crate::spec::{DataContentType, DataFile, FileFormat, Schema};
use crate::to_arrow::schema_to_arrow;

/// How a data file is written; [`WriterOptions::from_properties`] reads the table properties
/// ([`crate::spec::properties`]).
#[derive(Debug, Clone, PartialEq)]
pub struct WriterOptions {
    /// `write.parquet.compression-codec` (and `-level`); zstd (level 3, as Java's writer) by default.
    pub compression: Compression,
    /// `write.parquet.row-group-size-bytes`: 128 MiB by default.
    pub row_group_size_bytes: usize,
    /// The most rows in one row group (no Iceberg property; parquet's default, 1 Mi rows).
    pub row_group_rows: usize,
    /// `write.parquet.page-size-bytes`: 1 MiB by default.
    pub page_size_bytes: usize,
    /// The length bounds of strings (code points) and binary (bytes) are cut to:
    /// `write.metadata.metrics.default` = `truncate(16)` by default; `full` is `usize::MAX`.
    pub truncate_length: usize,
}

impl Default for WriterOptions {
    fn default() -> Self {
        Self {
            compression: ZstdLevel::try_new(3)
                .map(Compression::ZSTD)
                .unwrap_or(Compression::UNCOMPRESSED),
            row_group_size_bytes: bytes(PARQUET_ROW_GROUP_SIZE_BYTES.default_value()),
            row_group_rows: 1024 * 1024,
            page_size_bytes: bytes(PARQUET_PAGE_SIZE_BYTES.default_value()),
            truncate_length: 16,
        }
    }
}

impl WriterOptions {
    /// The options a table's properties ask for. A value that does not parse, or a level the
    /// codec does not have, is [`Error::InvalidArgument`] naming the property; the metrics
    /// modes `none` and `counts` are [`Error::Unsupported`].
    pub fn from_properties(props: &impl PropertySource) -> Result<Self> {
        Ok(Self {
            compression: compression(props)?,
            row_group_size_bytes: bytes(PARQUET_ROW_GROUP_SIZE_BYTES.get(props)?),
            row_group_rows: Self::default().row_group_rows,
            page_size_bytes: bytes(PARQUET_PAGE_SIZE_BYTES.get(props)?),
            truncate_length: truncate_length(DEFAULT_WRITE_METRICS_MODE.get(props)?)?,
        })
    }

    fn writer_properties(&self, layout: &ColumnLayout, chosen: &[Chosen]) -> WriterProperties {
        let mut builder = WriterProperties::builder()
            .set_compression(self.compression)
            .set_max_row_group_bytes(Some(self.row_group_size_bytes.max(1)))
            .set_max_row_group_row_count(Some(self.row_group_rows.max(1)))
            .set_data_page_size_limit(self.page_size_bytes.max(1));
        let ascending = layout.ascending.iter().map(|name| Chosen {
            column: name.to_string(),
            encoding: Encoding::DELTA_BINARY_PACKED,
        });
        for choice in chosen.iter().cloned().chain(ascending) {
            let column = ColumnPath::from(choice.column.as_str());
            builder = builder.set_column_dictionary_enabled(column.clone(), false);
            if choice.encoding != Encoding::PLAIN {
                builder = builder.set_column_encoding(column, choice.encoding);
            }
        }
        builder.build()
    }
}

/// Choices for particular files made inside the crate (position delete files): how some
/// columns are encoded, and who knows the bounds.
#[derive(Debug, Clone, Default)]
pub(crate) struct ColumnLayout {
    /// Top-level integer columns whose values ascend (a delete file's `pos`): delta-encoded,
    /// a few bits a value, instead of a dictionary as large as the column.
    pub(crate) ascending: Vec<&'static str>,
    /// Whether the caller sets the file's bounds itself: none are collected from the batches.
    pub(crate) caller_bounds: bool,
    /// Whether the encodings are this layout's alone: none are chosen from the file's first
    /// rows ([`choose_encodings`]).
    pub(crate) fixed: bool,
}

/// A byte size as a `usize` (saturating where `usize` is narrower).
fn bytes(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// The codec and level the properties set; levels default to each codec's own (zstd 3, gzip 6,
/// brotli 1, as Java's Parquet writer).
fn compression(props: &impl PropertySource) -> Result<Compression> {
    let level = PARQUET_COMPRESSION_LEVEL.get(props)?;
    let bad_level = |e: ParquetError| {
        PARQUET_COMPRESSION_LEVEL.error(props, format_args!("is not a level of the codec: {e}"))
    };
    let unsigned = |default: u32| -> Result<u32> {
        level.map_or(Ok(default), |l| {
            u32::try_from(l)
                .map_err(|_| PARQUET_COMPRESSION_LEVEL.error(props, "is not a level of the codec"))
        })
    };
    Ok(match PARQUET_COMPRESSION.get(props)? {
        ParquetCodec::Zstd => {
            Compression::ZSTD(ZstdLevel::try_new(level.unwrap_or(3)).map_err(bad_level)?)
        }
        ParquetCodec::Gzip => {
            Compression::GZIP(GzipLevel::try_new(unsigned(6)?).map_err(bad_level)?)
        }
        ParquetCodec::Brotli => {
            Compression::BROTLI(BrotliLevel::try_new(unsigned(1)?).map_err(bad_level)?)
        }
        ParquetCodec::Snappy => Compression::SNAPPY,
        ParquetCodec::Lz4 => Compression::LZ4_RAW,
        ParquetCodec::Uncompressed => Compression::UNCOMPRESSED,
    })
}

/// `truncate(N)` -> N, `full` -> no limit; `none` and `counts` are not supported yet.
fn truncate_length(mode: MetricsMode) -> Result<usize> {
    match mode {
        MetricsMode::Full => Ok(usize::MAX),
        MetricsMode::Truncate(n) => Ok(n),
        MetricsMode::None | MetricsMode::Counts => Err(Error::Unsupported(format!(
            "{} {mode:?}: only truncate(N) and full are supported",
            DEFAULT_WRITE_METRICS_MODE.key()
        ))),
    }
}

/// Writes Arrow batches (whose schema is [`schema_to_arrow`] of the Iceberg schema, fields
/// carrying `PARQUET:field_id`) to one Parquet file in an object store and returns its
/// [`DataFile`] with metrics.
///
/// The bytes go through `object_store`'s [`BufWriter`]: one `put` for small files, a multipart
/// upload once 10 MiB are buffered, so a large file is never held in memory whole.
///
/// ```
/// # async fn example() -> icefloe::Result<()> {
/// use std::sync::Arc;
/// use datafusion::arrow::array::{Int64Array, RecordBatch};
/// use icefloe::spec::{NestedField, PrimitiveType, Schema};
/// use icefloe::write::{DataFileWriter, WriterOptions};
/// use object_store::memory::InMemory;
///
/// let schema = Schema::new(0, vec![NestedField::required(1, "id", PrimitiveType::Long)]);
/// let arrow = Arc::new(icefloe::to_arrow::schema_to_arrow(&schema)?);
/// let batch = RecordBatch::try_new(arrow, vec![Arc::new(Int64Array::from(vec![1, 2, 3]))])
///     .map_err(datafusion::error::DataFusionError::from)?;
///
/// let store = Arc::new(InMemory::new());
/// let mut writer = DataFileWriter::new(
///     store, "t/data/a.parquet".into(), "memory:///t/data/a.parquet".into(),
///     &schema, WriterOptions::default())?;
/// writer.write(&batch).await?;
/// let data_file = writer.close().await?;
/// assert_eq!(data_file.record_count, 3);
/// # Ok(())
/// # }
/// ```
pub struct DataFileWriter {
    /// `None` until the first rows arrive (see [`Self::write`]).
    writer: Option<AsyncArrowWriter<BufWriter>>,
    /// How to open `writer`.
    pending: Option<Box<Pending>>,
    location: String,
    schema: Schema,
    /// The table's Arrow schema, which batches come in.
    arrow_schema: SchemaRef,
    /// The columns the file holds, and what their values must be.
    columns: FileColumns,
    /// The file's Arrow schema: the table's without its `unknown` columns.
    file_schema: SchemaRef,
    /// `None` when the caller sets the bounds ([`ColumnLayout::caller_bounds`]).
    bounds: Option<BoundsCollector>,
    truncate_length: usize,
}

/// What opening a [`DataFileWriter`]'s Parquet writer takes.
struct Pending {
    store: Arc<dyn ObjectStore>,
    path: Path,
    props: WriterOptions,
    layout: ColumnLayout,
    parquet_schema: SchemaDescriptor,
}

impl std::fmt::Debug for DataFileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataFileWriter")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl DataFileWriter {
    /// A writer of a new object at `path` in `store`; `location` is the `file_path` recorded in
    /// the [`DataFile`] (the full URI the table uses). Nothing is written before the first row
    /// group is full or [`DataFileWriter::close`] is called.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        path: Path,
        location: String,
        schema: &Schema,
        props: WriterOptions,
    ) -> Result<Self> {
        Self::with_layout(
            store,
            path,
            location,
            schema,
            props,
            ColumnLayout::default(),
        )
    }

    /// [`Self::new`] with the columns of `layout` written as it says.
    pub(crate) fn with_layout(
        store: Arc<dyn ObjectStore>,
        path: Path,
        location: String,
        schema: &Schema,
        props: WriterOptions,
        layout: ColumnLayout,
    ) -> Result<Self> {
        let arrow_schema = Arc::new(schema_to_arrow(schema)?);
        let columns = FileColumns::of(schema)?;
        let file_schema = Arc::new(
            arrow_schema
                .project(&columns.kept)
                .map_err(|e| Error::invalid(format_args!("data file {location}"), e))?,
        );
        let parquet_schema =
            parquet_schema(&file_schema, schema).map_err(|e| parquet_error(&location, e))?;
        Ok(Self {
            writer: None,
            pending: Some(Box::new(Pending {
                store,
                path,
                props: props.clone(),
                layout: layout.clone(),
                parquet_schema,
            })),
            location,
            schema: schema.clone(),
            arrow_schema,
            columns,
            file_schema,
            bounds: (!layout.caller_bounds).then(BoundsCollector::default),
            truncate_length: props.truncate_length,
        })
    }

    /// The Parquet writer, opened on the first call with the encodings `first` (the file's
    /// first rows, if any) suggests: no dictionary for the columns whose values it finds
    /// (nearly) all distinct ([`choose_encodings`]).
    fn open(&mut self, first: Option<&RecordBatch>) -> Result<&mut AsyncArrowWriter<BufWriter>> {
        if let Some(pending) = self.pending.take() {
            let Pending {
                store,
                path,
                props,
                layout,
                parquet_schema,
            } = *pending;
            let chosen = match (first, layout.fixed) {
                (Some(first), false) => choose_encodings(first),
                _ => Vec::new(),
            };
            // No `ARROW:schema` in the footer, as Java writes none: it would carry Arrow-only
            // choices (view types) that readers merging files of several writers (PyIceberg)
            // reject; readers take types from the Parquet schema and the table schema.
            let options = ArrowWriterOptions::new()
                .with_skip_arrow_metadata(true)
                .with_properties(props.writer_properties(&layout, &chosen))
                .with_parquet_schema(parquet_schema);
            let mut writer = AsyncArrowWriter::try_new_with_options(
                BufWriter::new(store, path),
                Arc::clone(&self.file_schema),
                options,
            )
            .map_err(|e| parquet_error(&self.location, e))?;
            // Java writers record the table schema in the footer too.
            writer.append_key_value_metadata(KeyValue::new(
                "iceberg.schema".to_string(),
                self.schema.to_json().to_string(),
            ));
            self.writer = Some(writer);
        }
        self.writer.as_mut().ok_or_else(|| {
            Error::invalid(
                format_args!("data file {}", self.location),
                "its writer was not opened",
            )
        })
    }

    /// Appends a batch; its columns must have the types [`schema_to_arrow`] gives (field
    /// metadata may differ). A full row group is uploaded before this returns.
    pub async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let fields = self.arrow_schema.fields();
        let schema = batch.schema();
        let same_types = schema.fields().len() == fields.len()
            && schema
                .fields()
                .iter()
                .zip(fields.iter())
                .all(|(a, b)| a.data_type().equals_datatype(b.data_type()));
        if !same_types {
            return Err(Error::invalid(
                format_args!("a batch for {}", self.location),
                format_args!(
                    "its schema {schema} does not match the table's Arrow schema {}",
                    self.arrow_schema
                ),
            ));
        }
        // Field metadata may differ (a projection may drop it): write with the table's schema.
        let invalid =
            |e: ArrowError| Error::invalid(format_args!("a batch for {}", self.location), e);
        let columns = batch
            .columns()
            .iter()
            .zip(fields.iter())
            .map(|(c, f)| relabel(c, f.data_type()))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(invalid)?;
        let batch =
            RecordBatch::try_new(Arc::clone(&self.arrow_schema), columns).map_err(invalid)?;
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.columns
            .check(&batch)
            .map_err(|e| in_location(&self.location, e))?;
        if let Some(bounds) = &mut self.bounds {
            bounds
                .update(self.schema.columns(), batch.columns())
                .map_err(|e| in_location(&self.location, e))?;
        }
        let batch = batch.project(&self.columns.kept).map_err(invalid)?;
        let location = self.location.clone();
        self.open(Some(&batch))?
            .write(&batch)
            .await
            .map_err(|e| parquet_error(&location, e))
    }

    /// Bytes written so far plus the estimated encoded size of the buffered row group: what a
    /// caller compares with `write.target-file-size-bytes` to roll to a new file.
    pub fn bytes_written(&self) -> u64 {
        let total = self
            .writer
            .as_ref()
            .map_or(0, |w| w.bytes_written() + w.in_progress_size());
        u64::try_from(total).unwrap_or(u64::MAX)
    }

    /// Writes the footer, completes the upload and returns the file's [`DataFile`] (content
    /// data, format Parquet, empty partition tuple: the caller sets it).
    pub async fn close(mut self) -> Result<DataFile> {
        let location = self.location.clone();
        let writer = self.open(None)?;
        let metadata = writer
            .finish()
            .await
            .map_err(|e| parquet_error(&location, e))?;
        let size = i64::try_from(writer.bytes_written()).unwrap_or(i64::MAX);
        let skipped: Vec<&str> = self.columns.variant_names().collect();
        let mut file = footer_metrics(&self.location, &metadata, size, &skipped)?;
        if let Some(bounds) = self.bounds {
            let bounds = bounds.finish(self.truncate_length);
            file.nan_value_counts = bounds.nan_counts;
            file.lower_bounds = (!bounds.lower.is_empty()).then_some(bounds.lower);
            file.upper_bounds = (!bounds.upper.is_empty()).then_some(bounds.upper);
        }
        Ok(file)
    }

    /// Gives up on the file: aborts the upload (a multipart upload in progress is cancelled;
    /// nothing was stored before the first part).
    pub async fn abort(self) -> Result<()> {
        let Some(writer) = self.writer else {
            return Ok(());
        };
        let mut inner = writer.into_inner();
        inner.abort().await.map_err(|e| Error::Io {
            path: self.location.clone(),
            source: Box::new(e),
        })
    }
}

/// The rows a file's first batch is sampled at to choose its columns' encodings.
const SAMPLE_ROWS: usize = 4096;

/// The fewest non-null values of a sample that a column's encoding is chosen from (fewer: the
/// writer's default, a dictionary).
const SAMPLE_MIN_VALUES: usize = 1024;

/// A column written without a dictionary, and how instead.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chosen {
    /// The top-level column's name.
    pub(crate) column: String,
    /// `PLAIN` or `DELTA_BINARY_PACKED`.
    pub(crate) encoding: Encoding,
}

/// The top-level columns of `batch` that are better written without a dictionary: primitive
/// or binary ones whose first values ([`SAMPLE_ROWS`]) are all distinct, or nearly (at most one
/// repeat in 256 values: keys, measurements, timestamps). For such a column a dictionary is
/// larger than the plain values it replaces and costs a hash-table lookup a value to build;
/// Parquet's Java writer falls back to plain encoding for the same reason, parquet-rs only
/// once the dictionary outgrows its page. Integer columns (dates, times and timestamps too)
/// whose sampled values ascend are delta-encoded (`DELTA_BINARY_PACKED`: the differences,
/// bit-packed, a few bits a value for a sequence or arrival times); the others are `PLAIN`.
pub(crate) fn choose_encodings(batch: &RecordBatch) -> Vec<Chosen> {
    use datafusion::common::hash_utils::{RandomState, create_hashes};
    let rows = batch.num_rows().min(SAMPLE_ROWS);
    let mut hashes = vec![0u64; rows];
    let state = RandomState::default();
    let mut chosen = Vec::new();
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        let integer = matches!(
            field.data_type(),
            DataType::Int32
                | DataType::Int64
                | DataType::Date32
                | DataType::Time64(_)
                | DataType::Timestamp(_, _)
        );
        let sampled = integer
            || match field.data_type() {
                DataType::Boolean | DataType::Null => false,
                t => {
                    t.is_primitive()
                        || matches!(
                            t,
                            DataType::Utf8
                                | DataType::LargeUtf8
                                | DataType::Utf8View
                                | DataType::Binary
                                | DataType::LargeBinary
                                | DataType::BinaryView
                                | DataType::FixedSizeBinary(_)
                        )
                }
            };
        let sample = column.slice(0, rows);
        if !sampled || rows - sample.null_count() < SAMPLE_MIN_VALUES {
            continue;
        }
        if create_hashes([&sample], &state, &mut hashes).is_err() {
            continue;
        }
        let mut values: Vec<u64> = (0..rows)
            .filter(|i| sample.is_valid(*i))
            .map(|i| hashes[i])
            .collect();
        let count = values.len();
        values.sort_unstable();
        values.dedup();
        if values.len() < count - count / 256 {
            continue;
        }
        let encoding = match integer && ascends(&sample) {
            true => Encoding::DELTA_BINARY_PACKED,
            false => Encoding::PLAIN,
        };
        chosen.push(Chosen {
            column: field.name().clone(),
            encoding,
        });
    }
    chosen
}

/// Whether the non-null values of an integer array never decrease.
fn ascends(array: &ArrayRef) -> bool {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::Int64Type;
    let Ok(longs) = datafusion::arrow::compute::cast(array, &DataType::Int64) else {
        return false;
    };
    let mut last = i64::MIN;
    longs.as_primitive::<Int64Type>().iter().flatten().all(|v| {
        let up = v >= last;
        last = v;
        up
    })
}

/// `column` with the type `target`, which equals its own but for nested field names and
/// metadata (field ids): only the labels change, no data is copied.
fn relabel(column: &ArrayRef, target: &DataType) -> std::result::Result<ArrayRef, ArrowError> {
    if column.data_type() == target {
        return Ok(Arc::clone(column));
    }
    Ok(make_array(relabel_data(column.to_data(), target)?))
}

fn relabel_data(data: ArrayData, target: &DataType) -> std::result::Result<ArrayData, ArrowError> {
    let child_types: Vec<&DataType> = match target {
        DataType::Struct(fields) => fields.iter().map(|f| f.data_type()).collect(),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => vec![f.data_type()],
        _ => Vec::new(),
    };
    let children = if child_types.len() == data.child_data().len() {
        data.child_data()
            .iter()
            .zip(child_types)
            .map(|(c, t)| relabel_data(c.clone(), t))
            .collect::<std::result::Result<Vec<_>, _>>()?
    } else {
        data.child_data().to_vec()
    };
    data.into_builder()
        .data_type(target.clone())
        .child_data(children)
        .build()
}

/// The footer-derived part of a data file: record count, sizes, counts and split offsets.
/// `without_metrics`: top-level columns whose leaves carry no field id (variant groups).
fn footer_metrics(
    location: &str,
    metadata: &ParquetMetaData,
    size: i64,
    without_metrics: &[&str],
) -> Result<DataFile> {
    let record_count = metadata.file_metadata().num_rows();
    let mut file = DataFile::new(
        DataContentType::Data,
        location,
        FileFormat::Parquet,
        record_count,
        size,
    );
    let mut split_offsets = Vec::with_capacity(metadata.num_row_groups());
    let mut unknown_nulls = HashSet::new();
    for rg in metadata.row_groups() {
        if let Some(first) = rg.columns().first() {
            split_offsets.push(
                first
                    .dictionary_page_offset()
                    .unwrap_or_else(|| first.data_page_offset()),
            );
        }
        for chunk in rg.columns() {
            let info = chunk.column_descr().self_type().get_basic_info();
            let top = chunk.column_path().parts().first().map(String::as_str);
            if top.is_some_and(|t| without_metrics.contains(&t)) {
                continue;
            }
            if !info.has_id() {
                return Err(Error::corrupt(
                    location,
                    format!("written column {} has no field id", chunk.column_path()),
                ));
            }
            let id = info.id();
            *file.column_sizes.entry(id).or_insert(0) += chunk.compressed_size();
            *file.value_counts.entry(id).or_insert(0) += chunk.num_values();
            match chunk.statistics().and_then(|s| s.null_count_opt()) {
                Some(nulls) => {
                    *file.null_value_counts.entry(id).or_insert(0) +=
                        i64::try_from(nulls).unwrap_or(i64::MAX);
                }
                None => {
                    unknown_nulls.insert(id);
                }
            }
        }
    }
    // A count missing from one row group leaves the file's count unknown, not low.
    for id in unknown_nulls {
        file.null_value_counts.remove(&id);
    }
    split_offsets.sort_unstable();
    file.split_offsets = Some(split_offsets);
    Ok(file)
}

fn parquet_error(location: &str, e: ParquetError) -> Error {
    match e {
        ParquetError::External(source) => Error::Io {
            path: location.to_string(),
            source,
        },
        other => Error::invalid(
            format_args!("data file {location}"),
            format_args!("cannot be written: {other}"),
        ),
    }
}

fn in_location(location: &str, e: Error) -> Error {
    match e {
        Error::InvalidArgument { .. } => e.within(format_args!("writing {location}")),
        other => other,
    }
}
