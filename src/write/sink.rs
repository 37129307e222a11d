//! `INSERT INTO` an Iceberg table: [`IcebergSink`], the DataFusion [`DataSink`] that streams
//! the inserted rows through an [`AppendWriter`] and commits them as one fast append.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, SchemaRef};
use datafusion::datasource::sink::DataSink;
use datafusion::error::Result as DFResult;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType};
use futures::StreamExt;

use super::AppendWriter;
use super::append::commit_files;
use crate::error::{Error, Result};
use crate::spec::Schema;
use crate::table::Table;
use crate::to_arrow::schema_to_arrow;
use crate::transaction::WriteTarget;

/// Called with the committed table after a successful commit.
pub type OnCommit = Arc<dyn Fn(&Table) + Send + Sync>;

/// What `INSERT OVERWRITE` replaces (the session option `icefloe.overwrite_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverwriteMode {
    /// Every row of the branch (Spark's default, `static`).
    Static,
    /// The partitions the inserted rows fall in, in the table's default spec (`dynamic`,
    /// Spark's `partitionOverwriteMode=dynamic`, Iceberg Java's `ReplacePartitions`).
    Dynamic,
}

datafusion::common::extensions_options! {
    /// icefloe's session options: `SET icefloe.<name> = <value>` (registered by
    /// `icefloe::sql::register`).
    pub struct IcefloeOptions {
        /// What `INSERT OVERWRITE` replaces: `static` (every row, the default) or `dynamic`
        /// (the partitions the new rows fall in).
        pub overwrite_mode: String, default = "static".to_string()
    }
}

impl datafusion::common::config::ConfigExtension for IcefloeOptions {
    const PREFIX: &'static str = "icefloe";
}

impl IcefloeOptions {
    /// The overwrite mode these options name.
    pub fn overwrite(&self) -> Result<OverwriteMode> {
        match self.overwrite_mode.to_ascii_lowercase().as_str() {
            "static" => Ok(OverwriteMode::Static),
            "dynamic" => Ok(OverwriteMode::Dynamic),
            other => Err(Error::invalid(
                "session option icefloe.overwrite_mode",
                format_args!("'{other}' is neither 'static' nor 'dynamic'"),
            )),
        }
    }
}

/// A DataFusion [`DataSink`] appending rows to an Iceberg table (`INSERT INTO`; see
/// `IcebergTableProvider::insert_into`).
///
/// [`DataSink::write_all`] streams the input into data files ([`AppendWriter`]: fan-out by the
/// default partition spec, files rolled at `write.target-file-size-bytes`) and then commits
/// them to `branch` as one fast append; it returns the number of rows inserted. Nothing is
/// committed for an input without rows.
///
/// Input batches may differ from the table's Arrow schema in nullability and field metadata
/// (DataFusion has checked that the types are compatible); they are written with the table's
/// schema and field ids. A NULL in a required column (top level or inside a struct), an
/// input error, a write error or a failed commit is an error, and the files written so far
/// are deleted: the table is unchanged.
///
/// Metrics (EXPLAIN ANALYZE): `rows_inserted`, `data_files_written`, `bytes_written` (the
/// committed files' sizes) and `commit_time` (the commit, retries included).
#[derive(Clone)]
pub struct IcebergSink {
    table: Table,
    schema: Schema,
    input_schema: SchemaRef,
    target: WriteTarget,
    branch: String,
    on_commit: Option<OnCommit>,
    overwrite: Option<OverwriteMode>,
    sort_order_id: Option<i32>,
    metrics: ExecutionPlanMetricsSet,
}

impl fmt::Debug for IcebergSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IcebergSink")
            .field("target", &self.target.name())
            .field("branch", &self.branch)
            .finish_non_exhaustive()
    }
}

impl IcebergSink {
    /// A sink writing rows of `input_schema` (the inserting plan's schema, with the columns of
    /// `schema` in order) into data files of `table` with the columns of `schema`, then
    /// committing them to `branch` of the table `target` names.
    pub fn try_new(
        table: Table,
        schema: Schema,
        input_schema: SchemaRef,
        target: WriteTarget,
        branch: impl Into<String>,
    ) -> Result<Self> {
        let arrow_schema = Arc::new(schema_to_arrow(&schema)?);
        if input_schema.fields().len() != arrow_schema.fields().len() {
            return Err(Error::invalid(
                format_args!("INSERT INTO {}", target.name()),
                format_args!(
                    "{} columns given, the table has {}",
                    input_schema.fields().len(),
                    arrow_schema.fields().len()
                ),
            ));
        }
        Ok(Self {
            table,
            schema,
            input_schema,
            target,
            branch: branch.into(),
            on_commit: None,
            overwrite: None,
            sort_order_id: None,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// This sink replacing rows instead of appending (`INSERT OVERWRITE`): its commit removes
    /// every live file of the branch (static) or of the partitions written (dynamic) in the
    /// same snapshot that adds the new files.
    pub fn with_overwrite(mut self, mode: OverwriteMode) -> Self {
        self.overwrite = Some(mode);
        self
    }

    /// Records `order_id` as the `sort_order_id` of the files written: the plan feeding this
    /// sink sorts its rows by that order ([`super::write_ordering`]).
    pub fn with_sort_order_id(mut self, order_id: Option<i32>) -> Self {
        self.sort_order_id = order_id;
        self
    }

    /// Calls `f` with the committed table after each successful commit (a provider uses it to
    /// move to the new snapshot).
    pub fn with_on_commit(mut self, f: OnCommit) -> Self {
        self.on_commit = Some(f);
        self
    }

    /// The table written, the columns written and the files' `sort_order_id`: what writing
    /// data files needs, without the commit's target (see [`write_files`]).
    pub(crate) fn files_of(&self) -> (&Table, &Schema, Option<i32>, String) {
        (
            &self.table,
            &self.schema,
            self.sort_order_id,
            format!("INSERT INTO {}", self.target.name()),
        )
    }

    /// Writes the stream, commits, and returns the rows inserted.
    async fn write_stream(&self, data: SendableRecordBatchStream) -> Result<u64> {
        let (table, schema, sort_order_id, statement) = self.files_of();
        let (files, rows) = write_files(table, schema, sort_order_id, &statement, "", data).await?;
        self.commit(files, rows).await
    }

    /// Commits `files` (holding `rows` rows) as this sink's statement says, and returns the
    /// rows inserted; the files are deleted when the commit fails (unless its outcome is
    /// unknown).
    pub(crate) async fn commit(
        &self,
        files: Vec<(i32, crate::spec::DataFile)>,
        rows: u64,
    ) -> Result<u64> {
        // An empty static overwrite still empties the branch.
        if rows == 0 && self.overwrite != Some(OverwriteMode::Static) {
            let paths: Vec<String> = files.into_iter().map(|(_, f)| f.file_path).collect();
            crate::transaction::delete_all(self.table.io(), &paths).await;
            return Ok(0);
        }
        let metric = |name: &'static str| MetricBuilder::new(&self.metrics).global_counter(name);
        let bytes: i64 = files.iter().map(|(_, f)| f.file_size_in_bytes).sum();
        let file_count = files.len();
        let timer = MetricBuilder::new(&self.metrics).subset_time("commit_time", 0);
        let started = timer.timer();
        let committed = match self.overwrite {
            None => commit_files(&self.target, self.table.clone(), files, &self.branch).await?,
            Some(mode) => self.commit_overwrite(files, mode).await?,
        };
        started.done();
        metric("rows_inserted").add(usize::try_from(rows).unwrap_or(usize::MAX));
        metric("data_files_written").add(file_count);
        metric("bytes_written").add(usize::try_from(bytes).unwrap_or(0));
        if let Some(f) = &self.on_commit {
            f(&committed);
        }
        Ok(rows)
    }

    /// Commits `files` replacing what `mode` says (see [`Self::with_overwrite`]); the files
    /// are deleted when the commit fails.
    async fn commit_overwrite(
        &self,
        files: Vec<(i32, crate::spec::DataFile)>,
        mode: OverwriteMode,
    ) -> Result<Table> {
        let paths: Vec<String> = files.iter().map(|(_, f)| f.file_path.clone()).collect();
        let io = self.table.io().clone();
        let result = async {
            let (delta, removed) = overwrite_delta(&self.table, &self.branch, &files, mode).await?;
            MetricBuilder::new(&self.metrics)
                .global_counter("data_files_removed")
                .add(removed);
            self.target
                .transaction(self.table.clone())
                .with_action(delta.add_data_files(files))
                .commit()
                .await
        }
        .await;
        match result {
            Ok(table) => Ok(table),
            Err(e @ Error::CommitStateUnknown { .. }) => Err(e),
            Err(e) => {
                crate::transaction::delete_all(&io, &paths).await;
                Err(e)
            }
        }
    }
}

/// Writes the rows of `data` into data files of `table` with the columns of `schema` (files
/// marked with `sort_order_id`, their names starting with `file_prefix`), and returns the files
/// with their spec ids and the rows written. On any error the files written are deleted.
/// Errors name `statement`.
pub(crate) async fn write_files(
    table: &Table,
    schema: &Schema,
    sort_order_id: Option<i32>,
    statement: &str,
    file_prefix: &str,
    mut data: SendableRecordBatchStream,
) -> Result<(Vec<(i32, crate::spec::DataFile)>, u64)> {
    let arrow_schema = Arc::new(schema_to_arrow(schema)?);
    let mut writer = AppendWriter::new(table.io(), table.metadata(), schema)?
        .with_sort_order_id(sort_order_id)
        .with_file_prefix(file_prefix);
    let written = async {
        while let Some(batch) = data.next().await {
            let batch = conform(batch?, &arrow_schema, statement, "inserted")?;
            writer.write(&batch).await?;
        }
        Ok::<_, Error>(())
    }
    .await;
    if let Err(e) = written {
        writer.abort().await;
        return Err(e);
    }
    let rows = writer.rows_written();
    Ok((writer.finish().await?, rows))
}

/// `batch` in the table's Arrow schema `arrow_schema`: columns relabelled (cast where only
/// names or metadata of nested fields differ), required columns checked for NULLs. Errors name
/// `statement` (`INSERT INTO db.t`) and the `rows` written (`inserted`, `updated`).
pub(crate) fn conform(
    batch: RecordBatch,
    arrow_schema: &SchemaRef,
    statement: &str,
    rows: &str,
) -> Result<RecordBatch> {
    let fields = arrow_schema.fields();
    if batch.num_columns() != fields.len() {
        return Err(Error::invalid(
            statement,
            format_args!(
                "a batch has {} columns, the table {}",
                batch.num_columns(),
                fields.len()
            ),
        ));
    }
    let mut columns = Vec::with_capacity(fields.len());
    for (column, field) in batch.columns().iter().zip(fields.iter()) {
        let column = match column.data_type() == field.data_type() {
            true => Arc::clone(column),
            false => cast(column, field.data_type()).map_err(|e| {
                Error::invalid(
                    statement,
                    format_args!(
                        "column {} ({}) cannot be written as {}: {e}",
                        field.name(),
                        column.data_type(),
                        field.data_type()
                    ),
                )
            })?,
        };
        check_required(&column, field, field.name(), None, statement, rows)?;
        columns.push(column);
    }
    RecordBatch::try_new(Arc::clone(arrow_schema), columns)
        .map_err(|e| Error::invalid(statement, e))
}

/// The removals of an overwrite of `branch` of `table` by `files`: every live data and delete
/// file (static), or those of the partitions `files` fall in (dynamic; refused while the
/// branch has live data files of another spec than the default, whose rows could not be
/// told apart by partition).
async fn overwrite_delta(
    table: &Table,
    branch: &str,
    files: &[(i32, crate::spec::DataFile)],
    mode: OverwriteMode,
) -> Result<(crate::transaction::RowDelta, usize)> {
    use crate::spec::snapshot::Operation;
    let metadata = table.metadata();
    let head = metadata.branch_head(branch);
    let mut delta = crate::transaction::RowDelta::new(head)
        .to_branch(branch)
        .operation(Operation::Overwrite);
    let Some(snapshot) = head.and_then(|id| metadata.snapshot_by_id(id)) else {
        return Ok((delta, 0));
    };
    let tasks = crate::scan::plan_files(table.io(), metadata, snapshot).await?;
    let written: std::collections::HashSet<(i32, String)> = files
        .iter()
        .map(|(spec, f)| (*spec, format!("{:?}", f.partition)))
        .collect();
    if mode == OverwriteMode::Dynamic {
        delta = delta.with_summary_property("replace-partitions", "true");
        if let Some(other) = tasks
            .iter()
            .find(|t| t.partition_spec_id != metadata.default_spec_id)
        {
            return Err(Error::Unsupported(format!(
                "dynamic INSERT OVERWRITE of {}: data file {} is of partition spec {}, not the \
                 default spec {}; overwrite statically or rewrite the table first",
                metadata.location,
                other.data_file.file_path,
                other.partition_spec_id,
                metadata.default_spec_id
            )));
        }
    }
    let mut deletes = std::collections::HashSet::new();
    let mut removed = 0;
    for task in &tasks {
        let replaced = match mode {
            OverwriteMode::Static => true,
            OverwriteMode::Dynamic => written.contains(&(
                task.partition_spec_id,
                format!("{:?}", task.data_file.partition),
            )),
        };
        if !replaced {
            continue;
        }
        delta = delta.remove_data_file(task.partition_spec_id, &task.data_file);
        removed += 1;
        for delete in &task.deletes {
            let goes = match mode {
                OverwriteMode::Static => true,
                OverwriteMode::Dynamic => {
                    delete.partition_spec_id == task.partition_spec_id
                        && (delete.file.partition == task.data_file.partition
                            || delete.file.referenced_data_file.as_deref()
                                == Some(task.data_file.file_path.as_str()))
                }
            };
            let key = (delete.file.file_path.clone(), delete.file.content_offset);
            if goes && deletes.insert(key) {
                delta = delta.remove_delete_file(&delete.file);
            }
        }
    }
    Ok((delta, removed))
}

/// An error when `array` (of `field`, at `path`) holds a NULL in a row where its parents are
/// valid (`live`: the rows whose enclosing structs are not NULL) while the field is required;
/// struct children are checked the same way. Elements of lists and maps are not checked here.
fn check_required(
    array: &ArrayRef,
    field: &Field,
    path: &str,
    live: Option<&NullBuffer>,
    statement: &str,
    rows: &str,
) -> Result<()> {
    let nulls = array.logical_nulls();
    if !field.is_nullable() {
        let live_nulls = match (&nulls, live) {
            (None, _) => 0,
            (Some(n), None) => n.null_count(),
            (Some(n), Some(l)) => NullBuffer::union(Some(l), Some(n))
                .map_or(0, |both| both.null_count() - l.null_count()),
        };
        if live_nulls > 0 {
            return Err(Error::invalid(
                statement,
                format_args!(
                    "column {path} is required, but {live_nulls} {rows} row(s) have NULL there"
                ),
            ));
        }
    }
    if let (DataType::Struct(children), Some(structs)) = (field.data_type(), array.as_struct_opt())
    {
        let live = NullBuffer::union(live, nulls.as_ref());
        for (child, child_field) in structs.columns().iter().zip(children.iter()) {
            let child_path = format!("{path}.{}", child_field.name());
            check_required(
                child,
                child_field,
                &child_path,
                live.as_ref(),
                statement,
                rows,
            )?;
        }
    }
    Ok(())
}

impl DisplayAs for IcebergSink {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::TreeRender => {
                writeln!(f, "table={}", self.target.name())?;
                write!(f, "branch={}", self.branch)
            }
            _ => write!(
                f,
                "IcebergSink: table={}, branch={}",
                self.target.name(),
                self.branch
            ),
        }
    }
}

#[async_trait]
impl DataSink for IcebergSink {
    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn schema(&self) -> &SchemaRef {
        // The input's schema, so that DataFusion leaves the NULL checks of required columns to
        // `conform` (a typed error naming the table and column).
        &self.input_schema
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> DFResult<u64> {
        Ok(self.write_stream(data).await?)
    }
}

impl IcebergSink {
    /// The branch the sink commits to.
    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// The table the sink commits to.
    pub fn target(&self) -> &WriteTarget {
        &self.target
    }
}

#[cfg(test)]
#[path = "sink_tests.rs"]
mod tests;
