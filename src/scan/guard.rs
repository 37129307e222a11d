//! No Parquet file can crash a scan: every failure while a file is opened or decoded, panics
//! included, becomes an error that names the file.
//!
//! The parquet and arrow crates still panic on some corrupt files (a footer length larger than
//! the file, a negative column chunk offset, a data page that uses a dictionary the chunk does
//! not have, a broken `ARROW:schema`, ...), and their decode errors do not say which file they
//! are about. [`GuardedSource`] wraps DataFusion's `ParquetSource` and each file's morsel
//! planners, pending I/O and batch streams, so it knows the file whenever one of them fails: a
//! panic (caught with `catch_unwind`) or a decoder error becomes [`Error::Corrupt`] naming the
//! file, a store error [`Error::NotFound`] or [`Error::Io`]. Errors icefloe raised itself pass
//! through, given the file when they have none (the field-id adapter's type refusals, which do
//! not know it). [`catch_decoder`] does the same for the delete files icefloe decodes itself.
//!
//! The default panic hook still prints a caught panic to stderr; the scan goes on to fail with
//! the error, it does not abort.
//!
//! Catching needs `panic = "unwind"` (the default; the crate's profiles keep it).

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use datafusion::arrow::array::RecordBatch;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileScanConfig, FileSource};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_expr::{EquivalenceProperties, LexOrdering, PhysicalExpr};
use datafusion::physical_expr_common::sort_expr::PhysicalSortExpr;
use datafusion::physical_plan::DisplayFormatType;
use datafusion::physical_plan::SortOrderPushdownResult;
use datafusion::physical_plan::filter_pushdown::FilterPushdownPropagation;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion_datasource::file_stream::FileOpener;
use datafusion_datasource::morsel::{Morsel, MorselPlan, MorselPlanner, Morselizer};
use futures::stream::BoxStream;
use futures::{FutureExt, Stream, StreamExt};
use object_store::ObjectStore;

use crate::error::{Error, Result};

/// A [`FileSource`] (DataFusion's `ParquetSource`) whose files cannot panic the scan; see the
/// module docs. Everything else is the inner source's: plans, metrics and EXPLAIN are unchanged.
#[derive(Clone)]
pub(crate) struct GuardedSource {
    inner: Arc<dyn FileSource>,
    origin: Option<Arc<ScanOrigin>>,
}

/// What a scan was built from that its DataFusion parts do not keep, for a process that
/// rebuilds it (`icefloe::distributed`): the store its files' locations name (`file://`,
/// `s3://bucket`; the scan's URL may be a registry name for it), the IO that reached it, the
/// field-id adapter its config holds, and what planning counted (the first scan of a query
/// reports it).
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "distributed"), allow(dead_code))]
pub(crate) struct ScanOrigin {
    pub(crate) store: String,
    pub(crate) io: crate::io::FileIO,
    pub(crate) adapter: crate::scan::adapter::FieldIdAdapterFactory,
    pub(crate) planning: Option<crate::scan::plan::PlanStats>,
}

impl GuardedSource {
    pub(crate) fn new(inner: Arc<dyn FileSource>) -> Self {
        Self {
            inner,
            origin: None,
        }
    }

    /// This source, knowing where its files live.
    pub(crate) fn with_origin(mut self, origin: ScanOrigin) -> Self {
        self.origin = Some(Arc::new(origin));
        self
    }

    /// The wrapped source (DataFusion's `ParquetSource`).
    #[cfg_attr(not(feature = "distributed"), allow(dead_code))]
    pub(crate) fn inner(&self) -> &Arc<dyn FileSource> {
        &self.inner
    }

    /// Where its files live, when the scan was built knowing it.
    #[cfg_attr(not(feature = "distributed"), allow(dead_code))]
    pub(crate) fn origin(&self) -> Option<&ScanOrigin> {
        self.origin.as_deref()
    }

    /// `inner` guarded like this source, with its origin.
    fn wrap(&self, inner: Arc<dyn FileSource>) -> Arc<dyn FileSource> {
        Arc::new(Self {
            inner,
            origin: self.origin.clone(),
        })
    }
}

impl FileSource for GuardedSource {
    fn create_file_opener(
        &self,
        store: Arc<dyn ObjectStore>,
        config: &FileScanConfig,
        partition: usize,
    ) -> DFResult<Arc<dyn FileOpener>> {
        self.inner.create_file_opener(store, config, partition)
    }

    fn create_morselizer(
        &self,
        store: Arc<dyn ObjectStore>,
        config: &FileScanConfig,
        partition: usize,
    ) -> DFResult<Box<dyn Morselizer>> {
        let inner = self.inner.create_morselizer(store, config, partition)?;
        let url = config.object_store_url.as_str();
        let store_url = url.strip_suffix('/').unwrap_or(url);
        Ok(Box::new(GuardedMorselizer {
            inner,
            store_url: store_url.to_string(),
        }))
    }

    fn table_schema(&self) -> &TableSchema {
        self.inner.table_schema()
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        self.wrap(self.inner.with_batch_size(batch_size))
    }

    fn filter(&self) -> Option<Arc<dyn PhysicalExpr>> {
        self.inner.filter()
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        self.inner.projection()
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        self.inner.metrics()
    }

    fn file_type(&self) -> &str {
        self.inner.file_type()
    }

    fn fmt_extra(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.fmt_extra(t, f)
    }

    fn supports_repartitioning(&self) -> bool {
        self.inner.supports_repartitioning()
    }

    fn repartitioned(
        &self,
        target_partitions: usize,
        repartition_file_min_size: usize,
        output_ordering: Option<LexOrdering>,
        config: &FileScanConfig,
    ) -> DFResult<Option<FileScanConfig>> {
        self.inner.repartitioned(
            target_partitions,
            repartition_file_min_size,
            output_ordering,
            config,
        )
    }

    fn try_pushdown_filters(
        &self,
        filters: Vec<Arc<dyn PhysicalExpr>>,
        config: &ConfigOptions,
    ) -> DFResult<FilterPushdownPropagation<Arc<dyn FileSource>>> {
        let mut pushed = self.inner.try_pushdown_filters(filters, config)?;
        pushed.updated_node = pushed.updated_node.map(|n| self.wrap(n));
        Ok(pushed)
    }

    fn try_pushdown_sort(
        &self,
        order: &[PhysicalSortExpr],
        eq_properties: &EquivalenceProperties,
    ) -> DFResult<SortOrderPushdownResult<Arc<dyn FileSource>>> {
        Ok(self
            .inner
            .try_pushdown_sort(order, eq_properties)?
            .map(|n| self.wrap(n)))
    }

    fn reorder_files(&self, files: Vec<PartitionedFile>) -> Vec<PartitionedFile> {
        self.inner.reorder_files(files)
    }

    fn try_pushdown_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> DFResult<Option<Arc<dyn FileSource>>> {
        Ok(self
            .inner
            .try_pushdown_projection(projection)?
            .map(|n| self.wrap(n)))
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DFResult<TreeNodeRecursion>,
    ) -> DFResult<TreeNodeRecursion> {
        self.inner.apply_expressions(f)
    }
}

/// Plans each file through the inner morselizer, guarded, knowing the file's name.
struct GuardedMorselizer {
    inner: Box<dyn Morselizer>,
    /// `file://`, `s3://bucket`, ...: with a file's store path, its full name.
    store_url: String,
}

impl fmt::Debug for GuardedMorselizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardedMorselizer")
            .field("inner", &self.inner)
            .finish()
    }
}

/// How errors name a data file that relocation moved: as the metadata writes it, and where it
/// was read ([`crate::FileIO::named`]); attached to the scan's `PartitionedFile`.
#[derive(Debug, Clone)]
pub(crate) struct NamedAs(pub(crate) Arc<str>);

/// A data file's name in errors: the file read (`Corrupt` names it: its bytes are the bad
/// ones), and how a missing or unreadable file is named (with the metadata's path when
/// relocation moved it). Reads as the file read.
#[derive(Debug)]
struct Named {
    read: String,
    shown: String,
}

impl std::ops::Deref for Named {
    type Target = str;

    fn deref(&self) -> &str {
        &self.read
    }
}

impl Morselizer for GuardedMorselizer {
    fn plan_file(&self, file: PartitionedFile) -> DFResult<Box<dyn MorselPlanner>> {
        let read = format!("{}/{}", self.store_url, file.object_meta.location);
        let shown = match file.extensions.get::<NamedAs>() {
            Some(NamedAs(name)) => name.to_string(),
            None => read.clone(),
        };
        let name = Arc::new(Named { read, shown });
        let planner = guarded(&name, || self.inner.plan_file(file))?;
        Ok(Box::new(GuardedPlanner {
            inner: planner,
            file: name,
        }))
    }
}

/// One file's planner; everything it hands out is guarded with the same file name.
#[derive(Debug)]
struct GuardedPlanner {
    inner: Box<dyn MorselPlanner>,
    file: Arc<Named>,
}

impl GuardedPlanner {
    fn wrap(file: &Arc<Named>, inner: Box<dyn MorselPlanner>) -> Box<dyn MorselPlanner> {
        Box::new(Self {
            inner,
            file: Arc::clone(file),
        })
    }

    /// The inner plan with its morsels, planners and pending I/O guarded.
    fn guard_plan(file: &Arc<Named>, mut plan: MorselPlan) -> MorselPlan {
        let morsels = plan
            .take_morsels()
            .into_iter()
            .map(|inner| {
                Box::new(GuardedMorsel {
                    inner,
                    file: Arc::clone(file),
                }) as Box<dyn Morsel>
            })
            .collect();
        let planners = plan
            .take_ready_planners()
            .into_iter()
            .map(|p| Self::wrap(file, p))
            .collect();
        let pending = plan.take_pending_planner();
        let mut guarded_plan = MorselPlan::new()
            .with_morsels(morsels)
            .with_planners(planners);
        if let Some(pending) = pending {
            let file = Arc::clone(file);
            let io = AssertUnwindSafe(pending.into_future()).catch_unwind();
            guarded_plan.set_pending_planner(io.map(move |outcome| {
                let planner = caught(&file, outcome)?;
                Ok(Self::wrap(&file, planner))
            }));
        }
        guarded_plan
    }
}

impl MorselPlanner for GuardedPlanner {
    fn plan(self: Box<Self>) -> DFResult<Option<MorselPlan>> {
        let Self { inner, file } = *self;
        let plan = guarded(&file, || inner.plan())?;
        Ok(plan.map(|plan| Self::guard_plan(&file, plan)))
    }
}

/// A morsel whose batch stream is guarded.
#[derive(Debug)]
struct GuardedMorsel {
    inner: Box<dyn Morsel>,
    file: Arc<Named>,
}

impl Morsel for GuardedMorsel {
    fn into_stream(self: Box<Self>) -> BoxStream<'static, DFResult<RecordBatch>> {
        let Self { inner, file } = *self;
        match guarded(&file, || Ok(inner.into_stream())) {
            Ok(stream) => GuardedStream {
                inner: Some(stream),
                file,
            }
            .boxed(),
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
        }
    }
}

/// A batch stream that ends with the file's error at the first panic or error.
struct GuardedStream {
    /// `None` once it failed: a decoder that panicked is not polled again.
    inner: Option<BoxStream<'static, DFResult<RecordBatch>>>,
    file: Arc<Named>,
}

impl Stream for GuardedStream {
    type Item = DFResult<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = catch_unwind(AssertUnwindSafe(|| inner.poll_next_unpin(cx)));
        let failure = match polled {
            Ok(Poll::Ready(Some(Err(e)))) => in_file(&self.file, e),
            Ok(other) => return other,
            Err(panic) => panicked(&self.file, panic.as_ref()),
        };
        self.inner = None;
        Poll::Ready(Some(Err(failure)))
    }
}

/// Runs `f`, turning a panic or an error into the file's error.
fn guarded<T>(file: &Named, f: impl FnOnce() -> DFResult<T>) -> DFResult<T> {
    caught(file, catch_unwind(AssertUnwindSafe(f)))
}

fn caught<T>(file: &Named, outcome: std::thread::Result<DFResult<T>>) -> DFResult<T> {
    match outcome {
        Ok(result) => result.map_err(|e| in_file(file, e)),
        Err(panic) => Err(panicked(file, panic.as_ref())),
    }
}

/// Runs the decoding of a file icefloe reads itself (delete files), turning a panic of the
/// parquet or arrow crates into [`Error::Corrupt`] naming `file`.
pub(crate) fn catch_decoder<T>(file: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| Err(panic_error(file, panic.as_ref())))
}

fn panicked(file: &str, panic: &(dyn Any + Send)) -> DataFusionError {
    panic_error(file, panic).into()
}

fn panic_error(file: &str, panic: &(dyn Any + Send)) -> Error {
    let message = panic_message(panic);
    Error::corrupt(file, format!("the Parquet decoder failed on it: {message}"))
}

/// The message a panic was raised with.
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

/// A failure while reading `file`, as the error that names it.
fn in_file(file: &Named, error: DataFusionError) -> DataFusionError {
    let error = match error {
        // Raised by icefloe (the field-id adapter): add the file where it has none.
        DataFusionError::External(e) => match e.downcast::<Error>() {
            Ok(ours) => return ours.in_file(file).into(),
            Err(other) => DataFusionError::External(other),
        },
        other => other,
    };
    if find::<Error>(&error).is_some() {
        return error; // raised by icefloe, with its own context
    }
    if let Some(store) = find::<object_store::Error>(&error) {
        let failure = match store {
            object_store::Error::NotFound { .. } => Error::NotFound {
                what: format!("data file {}", file.shown),
                source: Some(Box::new(error)),
            },
            _ => Error::Io {
                path: file.shown.clone(),
                source: Box::new(error),
            },
        };
        return failure.into();
    }
    // The decoder's message is shown with the file (DataFusion prints no sources), and its
    // error stays the source, for callers that look for it.
    let unreadable = "not a readable Parquet file";
    let failure = match error {
        DataFusionError::ParquetError(e) => {
            Error::corrupt_with(&file.read, format!("{unreadable}: {e}"), *e)
        }
        DataFusionError::ArrowError(e, _) => {
            Error::corrupt_with(&file.read, format!("{unreadable}: {e}"), *e)
        }
        other => return other.context(format!("reading {}", file.shown)),
    };
    failure.into()
}

/// The first error of type `T` in `error`'s source chain (`error` included).
fn find<T: std::error::Error + 'static>(error: &DataFusionError) -> Option<&T> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = next {
        if let Some(found) = e.downcast_ref::<T>() {
            return Some(found);
        }
        next = e.source();
    }
    None
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::physical_plan::FileScanConfigBuilder;
    use datafusion::datasource::source::DataSourceExec;
    use datafusion::execution::object_store::ObjectStoreUrl;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use datafusion::parquet::file::metadata::ParquetMetaDataPushDecoder;
    use datafusion::physical_plan::collect;
    use datafusion::prelude::SessionContext;
    use std::collections::HashMap;
    use std::path::PathBuf;

    use crate::scan::adapter::FieldIdAdapterFactory;
    use crate::spec::FormatVersion;

    /// Single-byte corruptions of `intact.parquet` on which parquet / arrow 59.3.2 panic, with
    /// the panic (tests/fixtures/corrupt_parquet/README.md).
    const PANICKING: [(&str, &str); 9] = [
        (
            "footer-length-ffffffff",
            "attempt to subtract with overflow",
        ),
        (
            "negative-column-chunk-offset",
            "column start and length should not be negative",
        ),
        (
            "dictionary-page-missing",
            "Decoder for dict should have been set",
        ),
        (
            "dictionary-index-bit-width-40",
            "num_bits <= size_of::<T>() * 8",
        ),
        ("byte-array-divide-by-zero", "attempt to divide by zero"),
        (
            "validity-bitmap-out-of-bounds",
            "offset + len out of bounds",
        ),
        (
            "arrow-schema-int-bit-width-60",
            "Int type with bit width of 60",
        ),
        (
            "arrow-schema-without-fields",
            "called `Option::unwrap()` on a `None` value",
        ),
        ("arrow-schema-type-none", "Type NONE not supported"),
    ];

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/corrupt_parquet")
            .join(format!("{name}.parquet"))
    }

    /// The fixtures' columns: `id` long (field 1), `name` string (field 2).
    fn schema() -> Arc<Schema> {
        let field = |name: &str, ty, id: i32| {
            Field::new(name, ty, true)
                .with_metadata([(crate::to_arrow::FIELD_ID_KEY.to_string(), id.to_string())].into())
        };
        Arc::new(Schema::new(vec![
            field("id", DataType::Int64, 1),
            field("name", DataType::Utf8, 2),
        ]))
    }

    /// Scans one fixture the way icefloe scans data files; the row count.
    async fn scan(path: &std::path::Path) -> DFResult<usize> {
        let batches = scan_as(path, schema()).await?;
        Ok(batches.iter().map(|b| b.num_rows()).sum())
    }

    /// Scans one file as a table of `schema`, as icefloe scans data files (columns by field id).
    pub(crate) async fn scan_as(
        path: &std::path::Path,
        schema: Arc<Schema>,
    ) -> DFResult<Vec<RecordBatch>> {
        let ctx = SessionContext::new();
        let url = ObjectStoreUrl::local_filesystem();
        let table_schema = TableSchema::from(schema);
        let source = crate::scan::reader::parquet_source(&ctx.state(), &url, table_schema, None)?;
        let size = std::fs::metadata(path)?.len();
        let file = PartitionedFile::new(path.display().to_string(), size);
        let adapter = FieldIdAdapterFactory::new(None, HashMap::new(), FormatVersion::V2);
        let config = FileScanConfigBuilder::new(url, Arc::new(source))
            .with_file(file)
            .with_expr_adapter(Some(Arc::new(adapter)))
            .build();
        collect(DataSourceExec::from_data_source(config), ctx.task_ctx()).await
    }

    #[tokio::test]
    async fn the_intact_fixture_reads() {
        assert_eq!(scan(&fixture("intact")).await.unwrap(), 3);
    }

    #[tokio::test]
    async fn files_that_panic_parquet_are_corrupt_and_named() {
        for (name, panic) in PANICKING {
            let path = fixture(name);
            let err = scan(&path).await.expect_err(name);
            let Some(Error::Corrupt { path: named, .. }) = find::<Error>(&err) else {
                panic!("{name}: not a Corrupt error: {err}");
            };
            assert!(
                named.ends_with(&format!("{name}.parquet")),
                "{name}: {named}"
            );
            assert!(named.starts_with("file:///"), "{name}: {named}");
            // The footer and the negative offset are refused before parquet uses them.
            let said = match name {
                "footer-length-ffffffff" => "a metadata length of 4294967295 bytes",
                "negative-column-chunk-offset" => "outside the file",
                _ => panic,
            };
            assert!(err.to_string().contains(said), "{name}: {err}");
        }
    }

    #[tokio::test]
    async fn a_missing_file_is_not_found_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gone.parquet");
        std::fs::copy(fixture("intact"), &path).unwrap();
        let ctx = SessionContext::new();
        let url = ObjectStoreUrl::local_filesystem();
        let source =
            crate::scan::reader::parquet_source(&ctx.state(), &url, schema().into(), None).unwrap();
        let file = PartitionedFile::new(path.display().to_string(), 905);
        let config = FileScanConfigBuilder::new(url, Arc::new(source))
            .with_file(file)
            .build();
        std::fs::remove_file(&path).unwrap();
        let err = collect(DataSourceExec::from_data_source(config), ctx.task_ctx())
            .await
            .unwrap_err();
        let Some(Error::NotFound { what, .. }) = find::<Error>(&err) else {
            panic!("not NotFound: {err}");
        };
        assert!(what.ends_with("gone.parquet"), "{what}");
    }

    /// Each fixture reproduces its panic in the pinned parquet crate (the push decoder, which
    /// DataFusion reads footers with, for the footer; the synchronous reader for the others).
    /// When this fails after an upgrade, the bug is fixed upstream: drop the fixture from the
    /// list (and from the README).
    #[test]
    fn the_fixtures_still_panic_the_parquet_crate() {
        for (name, panic) in PANICKING {
            let bytes = bytes::Bytes::from(std::fs::read(fixture(name)).unwrap());
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                if name.starts_with("footer") {
                    let size = bytes.len() as u64;
                    let mut decoder = ParquetMetaDataPushDecoder::try_new(size).unwrap();
                    decoder.push_range(0..size, bytes).unwrap();
                    let _ = decoder.try_decode();
                } else if let Ok(builder) = ParquetRecordBatchReaderBuilder::try_new(bytes) {
                    let _ = builder.build().map(|reader| reader.count());
                }
            }));
            let message = outcome.err().map(|p| panic_message(p.as_ref()));
            assert!(
                message.as_deref().is_some_and(|m| m.contains(panic)),
                "{name}: {message:?}"
            );
        }
    }

    #[test]
    fn panics_in_self_decoded_files_are_corrupt() {
        let err = catch_decoder::<()>("s3://b/t/data/d.parquet", || panic!("boom"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("s3://b/t/data/d.parquet") && err.contains("boom"),
            "{err}"
        );
    }
}
