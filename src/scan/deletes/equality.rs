//! Equality deletes: a hashed filter per data file.
//!
//! Each equality delete file becomes a set of keys (its `equality_ids` columns, encoded with
//! Arrow's row format so NULL equals NULL and values compare by type). The scan below reads the
//! key columns (even when the query does not project them) and a hidden constant column naming
//! each row's data file; [`EqualityDeleteExec`] drops the rows whose key is in the set of a
//! delete file that applies to that data file, then drops the extra columns. The delete files
//! are read when the first partition runs, once per query, shared by every partition, and
//! their memory is reserved in DataFusion's memory pool.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{cast, filter_record_batch};
use datafusion::arrow::datatypes::{DataType, Schema as ArrowSchema, SchemaRef, UInt32Type};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Statistics};
use datafusion::error::Result as DFResult;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::errors::ParquetError;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::{StreamExt, TryStreamExt, stream};
use tokio::sync::OnceCell;

use super::DeleteFileTask;
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::scan::file_types::check_delete_column;
use crate::scan::guard::catch_decoder;
use crate::scan::reader::check_column_chunks;
use crate::to_arrow::FIELD_ID_KEY;

/// How many equality delete files are read at once.
const CONCURRENCY: usize = 8;

/// The equality delete files of one scan and, once read, their key sets.
pub(crate) struct EqualityDeletes {
    io: FileIO,
    /// The distinct equality delete files of the scan.
    files: Vec<Arc<DeleteFileTask>>,
    /// The Arrow type each key column is compared as (the scan's type of that field id).
    key_types: HashMap<i32, DataType>,
    /// The key sets, read on first use.
    sets: OnceCell<Arc<KeySets>>,
}

/// The keys of every equality delete file, in `files` order, and the memory they hold.
struct KeySets {
    sets: Vec<KeySet>,
    _reservation: MemoryReservation,
}

/// The keys of one delete file.
struct KeySet {
    /// The key columns, in the file's `equality_ids` order.
    ids: Vec<i32>,
    /// Encodes key columns of that order and those types.
    converter: RowConverter,
    /// The encoded keys.
    keys: HashSet<Box<[u8]>>,
}

impl fmt::Debug for EqualityDeletes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EqualityDeletes")
            .field("files", &self.files.len())
            .finish_non_exhaustive()
    }
}

impl EqualityDeletes {
    /// The deletes of `files`, comparing key column `id` as `key_types[id]`.
    pub(crate) fn new(
        io: FileIO,
        files: Vec<Arc<DeleteFileTask>>,
        key_types: HashMap<i32, DataType>,
    ) -> Self {
        Self {
            io,
            files,
            key_types,
            sets: OnceCell::new(),
        }
    }

    /// The IO, the files and the key types, as [`EqualityDeletes::new`] takes them.
    #[cfg_attr(not(feature = "distributed"), allow(dead_code))]
    pub(crate) fn parts(&self) -> (&FileIO, &[Arc<DeleteFileTask>], &HashMap<i32, DataType>) {
        (&self.io, &self.files, &self.key_types)
    }

    /// The key sets, reading the delete files the first time.
    async fn sets(&self, context: &TaskContext) -> Result<Arc<KeySets>> {
        let sets = self
            .sets
            .get_or_try_init(|| async {
                let reservation =
                    MemoryConsumer::new("icefloe equality deletes").register(context.memory_pool());
                let reads: Vec<_> = self.files.iter().map(|file| self.read(file)).collect();
                let sets: Vec<KeySet> = stream::iter(reads)
                    .buffered(CONCURRENCY)
                    .try_collect()
                    .await?;
                let bytes: usize = sets.iter().map(KeySet::memory_size).sum();
                // The pool's own error (resources exhausted), with what needed the memory.
                reservation.try_grow(bytes).map_err(|e| {
                    e.context(format!(
                        "the equality delete files of this scan need {bytes} bytes of memory"
                    ))
                })?;
                Ok::<_, Error>(Arc::new(KeySets {
                    sets,
                    _reservation: reservation,
                }))
            })
            .await?;
        Ok(Arc::clone(sets))
    }

    /// Reads one equality delete file into its key set.
    async fn read(&self, delete: &DeleteFileTask) -> Result<KeySet> {
        let path = &delete.file.file_path;
        let ids = delete
            .file
            .equality_ids
            .clone()
            .filter(|ids| !ids.is_empty())
            .ok_or_else(|| Error::corrupt(path, "equality delete file without equality_ids"))?;
        let types: Vec<DataType> = ids
            .iter()
            .map(|id| self.key_types.get(id).cloned())
            .collect::<Option<_>>()
            .ok_or_else(|| {
                Error::corrupt(
                    path,
                    format!("equality field ids {ids:?} are not all columns"),
                )
            })?;
        let limit = self.io.read_limits().delete_file_bytes;
        let bytes = self.io.read_bounded(path, limit).await?;
        catch_decoder(path, || decode_keys(path, bytes, ids, &types))
    }
}

/// The key set of an equality delete file's bytes: its `ids` columns, compared as `types`.
fn decode_keys(path: &str, bytes: Bytes, ids: Vec<i32>, types: &[DataType]) -> Result<KeySet> {
    let corrupt = |e: ArrowError| Error::corrupt_with(path, e.to_string(), e);
    let unreadable = |e: ParquetError| Error::corrupt_with(path, e.to_string(), e);
    let converter =
        RowConverter::new(types.iter().cloned().map(SortField::new).collect()).map_err(corrupt)?;
    let size = bytes.len() as u64;
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(unreadable)?;
    check_column_chunks(builder.metadata(), size).map_err(unreadable)?;
    let columns = key_columns(builder.schema(), &ids, types).map_err(|e| e.in_file(path))?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), columns.iter().copied());
    let reader = builder.with_projection(mask).build().map_err(unreadable)?;
    // The projected batch keeps the file's column order; put it in `ids` order.
    let mut sorted = columns.clone();
    sorted.sort_unstable();
    let order: Vec<usize> = columns
        .iter()
        .map(|c| sorted.binary_search(c).unwrap_or(0))
        .collect();
    let mut keys = HashSet::new();
    for batch in reader {
        let batch = batch.map_err(corrupt)?;
        let arrays: Vec<ArrayRef> = order
            .iter()
            .zip(types)
            .map(|(i, ty)| cast(batch.column(*i), ty))
            .collect::<std::result::Result<_, _>>()
            .map_err(corrupt)?;
        let rows = converter.convert_columns(&arrays).map_err(corrupt)?;
        keys.extend(rows.iter().map(|row| Box::<[u8]>::from(row.as_ref())));
    }
    Ok(KeySet {
        ids,
        converter,
        keys,
    })
}

/// The top-level column of each field id in `ids`, checked to hold it as `types` allow; the
/// error is an [`Error::Corrupt`] without a path.
fn key_columns(schema: &ArrowSchema, ids: &[i32], types: &[DataType]) -> Result<Vec<usize>> {
    ids.iter()
        .zip(types)
        .map(|(id, ty)| {
            let column = schema
                .fields()
                .iter()
                .position(|f| {
                    f.metadata()
                        .get(FIELD_ID_KEY)
                        .is_some_and(|v| v.parse::<i32>() == Ok(*id))
                })
                .ok_or_else(|| Error::corrupt("", format!("no column with field id {id}")))?;
            check_delete_column(schema.field(column), ty, *id)
                .map_err(|r| Error::corrupt_with("", r.to_string(), r))?;
            Ok(column)
        })
        .collect()
}

impl KeySet {
    fn memory_size(&self) -> usize {
        let per_key = std::mem::size_of::<Box<[u8]>>() + 8;
        self.keys.iter().map(|k| k.len() + per_key).sum::<usize>() + self.converter.size()
    }
}

/// Drops the rows of its input that an equality delete file applying to their data file
/// deletes, and keeps the first `output` columns.
#[derive(Debug)]
pub(crate) struct EqualityDeleteExec {
    input: Arc<dyn ExecutionPlan>,
    deletes: Arc<EqualityDeletes>,
    /// For each data file ordinal, the indexes (into `deletes.files`) of the files that apply.
    per_file: Arc<Vec<Vec<usize>>>,
    /// The input column of each key field id.
    key_columns: Arc<HashMap<i32, usize>>,
    /// The input column holding the data file ordinal.
    ordinal_column: usize,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl EqualityDeleteExec {
    /// Filters `input`; see the type docs.
    pub(crate) fn new(
        input: Arc<dyn ExecutionPlan>,
        deletes: Arc<EqualityDeletes>,
        per_file: Vec<Vec<usize>>,
        key_columns: HashMap<i32, usize>,
        ordinal_column: usize,
        output: usize,
    ) -> DFResult<Self> {
        let indices: Vec<usize> = (0..output).collect();
        let schema = Arc::new(input.schema().project(&indices)?);
        let properties = properties_over(&schema, &input);
        Ok(Self {
            input,
            deletes,
            per_file: Arc::new(per_file),
            key_columns: Arc::new(key_columns),
            ordinal_column,
            schema,
            properties,
        })
    }
}

impl EqualityDeleteExec {
    /// The deletes, the files applying per data file ordinal, the key columns and the ordinal
    /// column, as [`EqualityDeleteExec::new`] takes them (the output is the schema's width).
    #[cfg_attr(not(feature = "distributed"), allow(dead_code))]
    pub(crate) fn parts(&self) -> (&EqualityDeletes, &[Vec<usize>], &HashMap<i32, usize>, usize) {
        (
            &self.deletes,
            &self.per_file,
            &self.key_columns,
            self.ordinal_column,
        )
    }
}

/// The properties of the filter over `input`: its partitioning, so that every partition of
/// the input is one of the output (also after an optimizer splits the scan below into more).
fn properties_over(schema: &SchemaRef, input: &Arc<dyn ExecutionPlan>) -> Arc<PlanProperties> {
    Arc::new(PlanProperties::new(
        EquivalenceProperties::new(Arc::clone(schema)),
        input.properties().partitioning.clone(),
        EmissionType::Incremental,
        Boundedness::Bounded,
    ))
}

impl DisplayAs for EqualityDeleteExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IcebergEqualityDeleteExec: delete_files={}",
            self.deletes.files.len()
        )
    }
}

impl ExecutionPlan for EqualityDeleteExec {
    fn name(&self) -> &str {
        "IcebergEqualityDeleteExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DFResult<TreeNodeRecursion>,
    ) -> DFResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(format!(
                "IcebergEqualityDeleteExec takes one child, got {}",
                children.len()
            )));
        }
        let input = children.swap_remove(0);
        // The new input may have other partitions (DataFusion splits file scans by byte range):
        // the properties follow it, or the parent would run only the old number of them.
        let properties = properties_over(&self.schema, &input);
        Ok(Arc::new(Self {
            input,
            deletes: Arc::clone(&self.deletes),
            per_file: Arc::clone(&self.per_file),
            key_columns: Arc::clone(&self.key_columns),
            ordinal_column: self.ordinal_column,
            schema: Arc::clone(&self.schema),
            properties,
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        let input = self.input.execute(partition, Arc::clone(&context))?;
        let filter = BatchFilter {
            per_file: Arc::clone(&self.per_file),
            key_columns: Arc::clone(&self.key_columns),
            ordinal_column: self.ordinal_column,
            output: self.schema.fields().len(),
        };
        let deletes = Arc::clone(&self.deletes);
        let batches = stream::once(async move {
            let sets = deletes.sets(&context).await?;
            Ok::<_, DataFusionError>(input.map(move |batch| filter.apply(&sets, &batch?)))
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            batches,
        )))
    }

    fn partition_statistics(&self, _partition: Option<usize>) -> DFResult<Arc<Statistics>> {
        // Deletes remove an unknown number of rows.
        Ok(Arc::new(Statistics::new_unknown(&self.schema)))
    }
}

/// What one batch is filtered with.
#[derive(Clone)]
struct BatchFilter {
    per_file: Arc<Vec<Vec<usize>>>,
    key_columns: Arc<HashMap<i32, usize>>,
    ordinal_column: usize,
    output: usize,
}

impl BatchFilter {
    fn apply(&self, sets: &KeySets, batch: &RecordBatch) -> DFResult<RecordBatch> {
        let ordinals = batch
            .column(self.ordinal_column)
            .as_primitive_opt::<UInt32Type>()
            .ok_or_else(|| DataFusionError::Internal("data file ordinal is not u32".into()))?;
        let mut keep = vec![true; batch.num_rows()];
        // Rows come file by file: handle each run of one ordinal at once.
        let mut start = 0;
        while start < batch.num_rows() {
            let ordinal = ordinals.value(start);
            let end = (start..batch.num_rows())
                .find(|&i| ordinals.value(i) != ordinal)
                .unwrap_or(batch.num_rows());
            let applying = self
                .per_file
                .get(ordinal as usize)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for &file in applying {
                let set = &sets.sets[file];
                let columns: Vec<ArrayRef> = set
                    .ids
                    .iter()
                    .map(|id| {
                        self.key_columns
                            .get(id)
                            .map(|c| batch.column(*c).slice(start, end - start))
                            .ok_or_else(|| {
                                DataFusionError::Internal(format!("key column {id} not read"))
                            })
                    })
                    .collect::<DFResult<_>>()?;
                let rows = set.converter.convert_columns(&columns)?;
                for (i, row) in rows.iter().enumerate() {
                    if keep[start + i] && set.keys.contains(row.as_ref()) {
                        keep[start + i] = false;
                    }
                }
            }
            start = end;
        }
        let kept = filter_record_batch(batch, &BooleanArray::from(keep))?;
        let indices: Vec<usize> = (0..self.output).collect();
        Ok(kept.project(&indices)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};

    #[test]
    fn null_keys_equal_null_keys_and_types_matter() {
        let converter = RowConverter::new(vec![
            SortField::new(DataType::Int64),
            SortField::new(DataType::Utf8),
        ])
        .unwrap();
        let deleted: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![Some(1), None])),
            Arc::new(StringArray::from(vec![None, Some("x")])),
        ];
        let keys: HashSet<Box<[u8]>> = converter
            .convert_columns(&deleted)
            .unwrap()
            .iter()
            .map(|r| Box::<[u8]>::from(r.as_ref()))
            .collect();
        let data: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![Some(1), Some(1), None, None])),
            Arc::new(StringArray::from(vec![None, Some(""), Some("x"), None])),
        ];
        let hits: Vec<bool> = converter
            .convert_columns(&data)
            .unwrap()
            .iter()
            .map(|r| keys.contains(r.as_ref()))
            .collect();
        assert_eq!(hits, [true, false, true, false]);
    }

    /// An equality delete file with one key column, field id 1, holding `keys`.
    fn delete_file(keys: ArrayRef) -> Bytes {
        use datafusion::arrow::datatypes::Field;
        use datafusion::parquet::arrow::ArrowWriter;

        let field = Field::new("id", keys.data_type().clone(), true)
            .with_metadata([(FIELD_ID_KEY.to_string(), "1".to_string())].into());
        let schema = Arc::new(ArrowSchema::new(vec![field]));
        let batch = RecordBatch::try_new(Arc::clone(&schema), vec![keys]).unwrap();
        let mut buf = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut buf, schema, None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        Bytes::from(buf)
    }

    #[test]
    fn keys_stored_as_another_type_are_refused() {
        let int32 = Arc::new(datafusion::arrow::array::Int32Array::from(vec![5]));
        let set = decode_keys(
            "eq.parquet",
            delete_file(int32),
            vec![1],
            &[DataType::Int64],
        );
        assert_eq!(
            set.unwrap().keys.len(),
            1,
            "int keys of a long column are promoted"
        );
        let strings = Arc::new(StringArray::from(vec!["5"]));
        let err = decode_keys(
            "eq.parquet",
            delete_file(strings),
            vec![1],
            &[DataType::Int64],
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            err.contains("eq.parquet") && err.contains("column 'id' (field id 1)"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn key_sets_beyond_the_memory_pool_are_refused_with_the_pool_error() {
        use datafusion::execution::memory_pool::GreedyMemoryPool;
        use datafusion::execution::runtime_env::RuntimeEnvBuilder;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eq.parquet");
        std::fs::write(
            &path,
            delete_file(Arc::new(Int64Array::from(vec![1, 2, 3]))),
        )
        .unwrap();
        let mut file = super::super::index::tests_support::file(path.display().to_string());
        file.content = crate::spec::DataContentType::EqualityDeletes;
        file.equality_ids = Some(vec![1]);
        let task = Arc::new(DeleteFileTask {
            file,
            partition_spec_id: 0,
            data_sequence_number: 1,
        });
        let deletes = || {
            let types = HashMap::from([(1, DataType::Int64)]);
            EqualityDeletes::new(FileIO::default(), vec![Arc::clone(&task)], types)
        };
        let sets = deletes().sets(&TaskContext::default()).await.unwrap();
        assert_eq!(sets.sets[0].keys.len(), 3);

        let pool = Arc::new(GreedyMemoryPool::new(16));
        let runtime = RuntimeEnvBuilder::new()
            .with_memory_pool(pool)
            .build_arc()
            .unwrap();
        let context = TaskContext::default().with_runtime(runtime);
        let err = deletes().sets(&context).await.err().unwrap();
        let Error::DataFusion(e) = &err else {
            panic!("not the pool's error: {err:?}");
        };
        assert!(
            matches!(e.find_root(), DataFusionError::ResourcesExhausted(_)),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("the equality delete files of this scan need"),
            "{e}"
        );
    }
}
