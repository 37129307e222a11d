//! Parquet readers that survive a wrong `file_size_in_bytes` in a manifest.
//!
//! DataFusion reads a Parquet footer at the end of the file, located with the size it is given;
//! icefloe gives the size the manifest recorded, so planning needs no request per file. Some
//! writers record sizes that are not the file's (a file rewritten after the commit). When the
//! footer cannot be read at the recorded size, the reader asks the store for the real size and
//! reads again; a wrong size can cost one request, never a wrong or failed read.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::ParquetFileReaderFactory;
use datafusion::error::Result as DFResult;
use datafusion::parquet::arrow::arrow_reader::ArrowReaderOptions;
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::ParquetMetaData;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::FutureExt;
use futures::future::BoxFuture;
use object_store::{ObjectStore, ObjectStoreExt};

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
            let first = self.inner.get_metadata(options).await;
            let (Err(err), Some(retry)) = (&first, self.retry.take()) else {
                return first;
            };
            let location = &retry.file.object_meta.location;
            let Ok(actual) = retry.store.head(location).await else {
                return first;
            };
            if actual.size == retry.file.object_meta.size {
                return Err(ParquetError::General(err.to_string()));
            }
            let mut file = retry.file;
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
            self.inner.get_metadata(options).await
        }
        .boxed()
    }
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

    async fn metadata_with_recorded_size(recorded: u64) -> Result<Arc<ParquetMetaData>, String> {
        let (store, path, _) = parquet_in_store().await;
        let factory = SizeCheckingReaderFactory::new(
            Arc::new(DefaultParquetFileReaderFactory::new(Arc::clone(&store))),
            store,
        );
        let file = PartitionedFile::new(path.to_string(), recorded);
        let mut reader = factory
            .create_reader(0, file, None, &ExecutionPlanMetricsSet::new())
            .unwrap();
        reader.get_metadata(None).await.map_err(|e| e.to_string())
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
}
