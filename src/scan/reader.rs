//! Parquet readers that survive a wrong `file_size_in_bytes` in a manifest and refuse footers
//! that point outside the file.
//!
//! DataFusion reads a Parquet footer at the end of the file, located with the size it is given;
//! icefloe gives the size the manifest recorded, so planning needs no request per file. Some
//! writers record sizes that are not the file's (a file rewritten after the commit). When the
//! footer cannot be read at the recorded size, the reader asks the store for the real size and
//! reads again; a wrong size can cost one request, never a wrong or failed read.
//!
//! A footer that is read is checked before the parquet crate uses it: every column chunk must
//! lie inside the file ([`check_column_chunks`]; parquet 59 panics on a negative offset). When
//! decoding the footer panics (parquet 59's push decoder underflows on a metadata length larger
//! than the file), the reader looks at the footer itself to say what is wrong with it.

use std::fmt;
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::catalog::Session;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::ParquetSource;
use datafusion::datasource::physical_plan::parquet::{
    CachedParquetFileReaderFactory, ParquetFileReaderFactory,
};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::Result as DFResult;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::parquet::arrow::arrow_reader::ArrowReaderOptions;
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::ParquetMetaData;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::FutureExt;
use futures::future::BoxFuture;
use object_store::{ObjectStore, ObjectStoreExt};

use super::guard::{GuardedSource, panic_message};

/// DataFusion's `ParquetSource` as icefloe reads data files from `store_url`: footers through
/// the session's metadata cache, checked and read again at the real size when the recorded one
/// is wrong (this module), and no file able to panic the scan (guard.rs).
pub(crate) fn parquet_source(
    state: &dyn Session,
    store_url: &ObjectStoreUrl,
    table_schema: TableSchema,
    predicate: Option<&Arc<dyn PhysicalExpr>>,
) -> DFResult<GuardedSource> {
    let readers = reader_factory(state.runtime_env(), store_url)?;
    let mut options = state.table_options().parquet.clone();
    // INT96 timestamps (Impala, Hive, old Spark) as micros, Iceberg's unit, as Java reads them;
    // nanos would overflow past 2262 and not be readable as `timestamp` (file_types.rs).
    if options.global.coerce_int96.is_none() {
        options.global.coerce_int96 = Some("us".to_string());
    }
    let mut source = ParquetSource::new(table_schema)
        .with_table_parquet_options(options)
        .with_parquet_file_reader_factory(readers);
    if let Some(predicate) = predicate {
        source = source.with_predicate(Arc::clone(predicate));
    }
    Ok(GuardedSource::new(Arc::new(source)))
}

/// The readers of data files in `store_url` of `runtime`: footers through its metadata cache,
/// checked, and read again at the real size when the recorded one is wrong.
pub(crate) fn reader_factory(
    runtime: &RuntimeEnv,
    store_url: &ObjectStoreUrl,
) -> DFResult<Arc<dyn ParquetFileReaderFactory>> {
    let store = runtime.object_store(store_url)?;
    let metadata_cache = runtime.cache_manager.get_file_metadata_cache();
    let cached = CachedParquetFileReaderFactory::new(Arc::clone(&store), metadata_cache);
    Ok(Arc::new(SizeCheckingReaderFactory::new(
        Arc::new(cached),
        store,
    )))
}

/// Wraps another factory; see the module docs.
#[derive(Debug)]
pub(crate) struct SizeCheckingReaderFactory {
    inner: Arc<dyn ParquetFileReaderFactory>,
    store: Arc<dyn ObjectStore>,
}

impl SizeCheckingReaderFactory {
    pub(crate) fn new(
        inner: Arc<dyn ParquetFileReaderFactory>,
        store: Arc<dyn ObjectStore>,
    ) -> Self {
        Self { inner, store }
    }
}

impl ParquetFileReaderFactory for SizeCheckingReaderFactory {
    fn create_reader(
        &self,
        partition_index: usize,
        partitioned_file: PartitionedFile,
        metadata_size_hint: Option<usize>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> DFResult<Box<dyn AsyncFileReader + Send>> {
        let inner = self.inner.create_reader(
            partition_index,
            partitioned_file.clone(),
            metadata_size_hint,
            metrics,
        )?;
        Ok(Box::new(SizeCheckingReader {
            inner,
            retry: Some(Retry {
                factory: Arc::clone(&self.inner),
                store: Arc::clone(&self.store),
                partition_index,
                file: partitioned_file,
                metadata_size_hint,
                metrics: metrics.clone(),
            }),
        }))
    }
}

/// What is needed to open the file again with its real size.
struct Retry {
    factory: Arc<dyn ParquetFileReaderFactory>,
    store: Arc<dyn ObjectStore>,
    partition_index: usize,
    file: PartitionedFile,
    metadata_size_hint: Option<usize>,
    metrics: ExecutionPlanMetricsSet,
}

struct SizeCheckingReader {
    inner: Box<dyn AsyncFileReader + Send>,
    /// `None` once the size was checked.
    retry: Option<Retry>,
}

impl fmt::Debug for SizeCheckingReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SizeCheckingReader").finish_non_exhaustive()
    }
}

impl AsyncFileReader for SizeCheckingReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes, ParquetError>> {
        self.inner.get_bytes(range)
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, Result<Vec<Bytes>, ParquetError>> {
        self.inner.get_byte_ranges(ranges)
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, Result<Arc<ParquetMetaData>, ParquetError>> {
        async move {
            let Some(retry) = self.retry.take() else {
                return self.inner.get_metadata(options).await;
            };
            let size = retry.file.object_meta.size;
            let first = self.read_metadata(options, &retry, size).await;
            if first.is_ok() {
                return first;
            }
            let location = &retry.file.object_meta.location;
            let actual = match retry.store.head(location).await {
                Ok(actual) => actual,
                // Say so in a form the scan can tell from a broken file (guard.rs).
                Err(missing @ object_store::Error::NotFound { .. }) => {
                    return Err(ParquetError::External(Box::new(missing)));
                }
                Err(_) => return first,
            };
            if actual.size == size {
                return first;
            }
            let mut file = retry.file.clone();
            file.object_meta.size = actual.size;
            self.inner = retry
                .factory
                .create_reader(
                    retry.partition_index,
                    file,
                    retry.metadata_size_hint,
                    &retry.metrics,
                )
                .map_err(|e| ParquetError::External(Box::new(e)))?;
            self.read_metadata(options, &retry, actual.size).await
        }
        .boxed()
    }
}

impl SizeCheckingReader {
    /// The inner reader's metadata of a file of `size` bytes, checked; a panic while decoding
    /// the footer becomes an error saying what is wrong with it.
    async fn read_metadata(
        &mut self,
        options: Option<&ArrowReaderOptions>,
        retry: &Retry,
        size: u64,
    ) -> Result<Arc<ParquetMetaData>, ParquetError> {
        let read = AssertUnwindSafe(self.inner.get_metadata(options))
            .catch_unwind()
            .await;
        match read {
            Ok(metadata) => {
                let metadata = metadata?;
                check_column_chunks(&metadata, size)?;
                Ok(metadata)
            }
            Err(panic) => Err(footer_fault(retry, size, panic_message(panic.as_ref())).await),
        }
    }
}

/// Why decoding the footer of `retry`'s file (of `size` bytes) panicked with `message`.
async fn footer_fault(retry: &Retry, size: u64, message: String) -> ParquetError {
    let location = &retry.file.object_meta.location;
    let tail = match size.checked_sub(8) {
        Some(start) => retry.store.get_range(location, start..size).await.ok(),
        None => None,
    };
    if let Some(length) = tail.as_deref().and_then(footer_metadata_length)
        && length + 8 > size
    {
        return ParquetError::General(format!(
            "its footer gives a metadata length of {length} bytes, but the file has {size} bytes"
        ));
    }
    ParquetError::General(format!("decoding its footer failed: {message}"))
}

/// The metadata length of a Parquet footer (the file's last 8 bytes), when it ends in `PAR1`.
fn footer_metadata_length(tail: &[u8]) -> Option<u64> {
    let [a, b, c, d, b'P', b'A', b'R', b'1'] = *tail else {
        return None;
    };
    Some(u64::from(u32::from_le_bytes([a, b, c, d])))
}

/// Every column chunk of `metadata` must lie inside the file of `file_size` bytes: the parquet
/// crate asserts (panics) on negative offsets and reads past the end on others.
pub(crate) fn check_column_chunks(
    metadata: &ParquetMetaData,
    file_size: u64,
) -> Result<(), ParquetError> {
    for (group, row_group) in metadata.row_groups().iter().enumerate() {
        for (index, chunk) in row_group.columns().iter().enumerate() {
            let start = chunk
                .dictionary_page_offset()
                .unwrap_or_else(|| chunk.data_page_offset());
            let length = chunk.compressed_size();
            let end = u64::try_from(start)
                .ok()
                .zip(u64::try_from(length).ok())
                .and_then(|(start, length)| start.checked_add(length));
            if end.is_none_or(|end| end > file_size) {
                return Err(ParquetError::General(format!(
                    "column chunk {index} of row group {group} is said to be {length} bytes at \
                     offset {start}, outside the file's {file_size} bytes"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, RecordBatch};
    use datafusion::datasource::physical_plan::parquet::DefaultParquetFileReaderFactory;
    use datafusion::parquet::arrow::ArrowWriter;
    use object_store::memory::InMemory;
    use object_store::path::Path;

    async fn parquet_in_store() -> (Arc<dyn ObjectStore>, Path, u64) {
        let batch =
            RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from(vec![1, 2, 3])) as _)])
                .unwrap();
        let mut buf = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut buf, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = Path::from("t/data/f.parquet");
        let size = buf.len() as u64;
        store.put(&path, buf.into()).await.unwrap();
        (store, path, size)
    }

    async fn metadata_with_recorded_size(
        recorded: u64,
    ) -> Result<Arc<ParquetMetaData>, ParquetError> {
        let (store, path, _) = parquet_in_store().await;
        let factory = SizeCheckingReaderFactory::new(
            Arc::new(DefaultParquetFileReaderFactory::new(Arc::clone(&store))),
            store,
        );
        let file = PartitionedFile::new(path.to_string(), recorded);
        let mut reader = factory
            .create_reader(0, file, None, &ExecutionPlanMetricsSet::new())
            .unwrap();
        reader.get_metadata(None).await
    }

    #[tokio::test]
    async fn wrong_recorded_sizes_are_corrected_from_the_store() {
        let (_, _, real) = parquet_in_store().await;
        for recorded in [real, real - 17, real + 40, 12] {
            let metadata = metadata_with_recorded_size(recorded).await.unwrap();
            assert_eq!(
                metadata.file_metadata().num_rows(),
                3,
                "recorded {recorded}"
            );
        }
    }

    /// An INT96 timestamp (Impala, Hive) reads as Iceberg's micros: DataFusion would read it
    /// as nanos, which a `timestamp` column refuses.
    #[tokio::test]
    async fn int96_timestamps_read_as_micros() {
        use datafusion::arrow::array::{Array, TimestampMicrosecondArray};
        use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
        use datafusion::parquet::data_type::{Int96, Int96Type};
        use datafusion::parquet::file::properties::WriterProperties;
        use datafusion::parquet::file::writer::SerializedFileWriter;
        use datafusion::parquet::schema::parser::parse_message_type;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("int96.parquet");
        let schema = parse_message_type("message t { optional int96 ts = 1; }").unwrap();
        let props = Arc::new(WriterProperties::builder().build());
        let file = std::fs::File::create(&path).unwrap();
        let mut writer = SerializedFileWriter::new(file, Arc::new(schema), props).unwrap();
        let mut group = writer.next_row_group().unwrap();
        let mut column = group.next_column().unwrap().unwrap();
        // 2024-01-01T00:00:01: Julian day 2460311, one second (in nanos) into it.
        let mut value = Int96::new();
        value.set_data(1_000_000_000, 0, 2_460_311);
        let typed = column.typed::<Int96Type>();
        typed.write_batch(&[value], Some(&[1]), None).unwrap();
        column.close().unwrap();
        group.close().unwrap();
        writer.close().unwrap();

        let field = Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true)
            .with_metadata([(crate::to_arrow::FIELD_ID_KEY.to_string(), "1".to_string())].into());
        let table = Arc::new(Schema::new(vec![field]));
        let batches = crate::scan::guard::tests::scan_as(&path, table)
            .await
            .unwrap();
        let column = batches[0].column(0);
        let micros = column
            .as_any()
            .downcast_ref::<TimestampMicrosecondArray>()
            .unwrap();
        assert_eq!(micros.value(0), 1_704_067_201_000_000);
    }
}
