//! Appending Arrow batches to a table: rows split by the default partition spec, one Parquet
//! file per partition (rolled at `write.target-file-size-bytes`), then one commit
//! (a [`crate::transaction::Transaction`] with a [`FastAppend`]). The Rust form of `INSERT INTO`.
//!
//! [`AppendWriter`] is the streaming part: batches go in one at a time and only the open
//! files' current row groups are held in memory. [`append_batches`] writes a slice of batches
//! with it and commits.

use datafusion::arrow::array::RecordBatch;

use std::sync::Arc;

use super::{DataFileWriter, WriterOptions, split_by_partition};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::spec::properties::WRITE_TARGET_FILE_SIZE_BYTES;
use crate::spec::{DataFile, Literal, PartitionSpec, Schema, TableMetadata};
use crate::table::Table;
use crate::transaction::{FastAppend, WriteTarget, delete_all};

/// How many partition files an [`AppendWriter`] keeps open at once by default.
pub const MAX_OPEN_FILES_DEFAULT: usize = 64;

/// Writes `batches` (in the table's current schema) as data files of the table `target`
/// names, partitioned by its default spec, and commits them as one append to `branch`.
/// Returns the committed table. A failure before or during the commit deletes the files
/// written (except after [`Error::CommitStateUnknown`], when the commit may have happened).
pub async fn append_batches(
    target: &WriteTarget,
    batches: &[RecordBatch],
    branch: &str,
) -> Result<Table> {
    let base = target.load().await?;
    let metadata = Arc::clone(base.metadata());
    let mut writer = AppendWriter::new(base.io(), &metadata, metadata.current_schema())?;
    for batch in batches {
        if let Err(e) = writer.write(batch).await {
            writer.abort().await;
            return Err(e);
        }
    }
    let files = writer.finish().await?;
    commit_files(target, base, files, branch).await
}

/// Commits `files` (written by an [`AppendWriter`] for `base`, a version of the table
/// `target` names) as one fast append to `branch`. When the commit fails the files are
/// deleted (best effort) and the error returned; after [`Error::CommitStateUnknown`] they are
/// kept, since the commit may have happened.
pub async fn commit_files(
    target: &WriteTarget,
    base: Table,
    files: Vec<(i32, DataFile)>,
    branch: &str,
) -> Result<Table> {
    let paths: Vec<String> = files.iter().map(|(_, f)| f.file_path.clone()).collect();
    let io = base.io().clone();
    let append = FastAppend::new(files).to_branch(branch);
    match target.transaction(base).with_action(append).commit().await {
        Ok(table) => Ok(table),
        Err(e @ Error::CommitStateUnknown { .. }) => Err(e),
        Err(e) => {
            delete_all(&io, &paths).await;
            Err(e)
        }
    }
}

/// Creates the table `ident` of `catalog` from `staged` (see
/// [`Catalog::stage_create`](crate::catalog::Catalog::stage_create)) with `files` (written by
/// an [`AppendWriter`] for it) as its first snapshot, in one commit
/// ([`Transaction::create`](crate::transaction::Transaction::create)). When the commit fails the
/// files are deleted (best effort), as by [`commit_files`].
pub async fn create_with_files(
    catalog: Arc<dyn crate::catalog::Catalog>,
    ident: crate::catalog::TableIdent,
    staged: Table,
    files: Vec<(i32, DataFile)>,
) -> Result<Table> {
    let paths: Vec<String> = files.iter().map(|(_, f)| f.file_path.clone()).collect();
    let io = staged.io().clone();
    let mut create = crate::transaction::Transaction::create(catalog, ident, staged);
    if !files.is_empty() {
        create = create.fast_append(files);
    }
    match create.commit().await {
        Ok(table) => Ok(table),
        Err(e @ Error::CommitStateUnknown { .. }) => Err(e),
        Err(e) => {
            delete_all(&io, &paths).await;
            Err(e)
        }
    }
}

/// One open data file: the partition tuple its rows share.
struct OpenFile {
    tuple: Vec<Option<Literal>>,
    /// The file's location (its `file_path`).
    location: String,
    writer: DataFileWriter,
    /// When it last received rows (a counter of [`AppendWriter::write`] calls).
    last_used: u64,
}

/// Writes rows of a table as Parquet data files, one open file per partition tuple of the
/// table's default spec, without committing them.
///
/// - A file is closed and a new one started for its partition once it reaches
///   `write.target-file-size-bytes` (bytes written plus the buffered row group's estimate).
/// - At most [`MAX_OPEN_FILES_DEFAULT`] files (see [`AppendWriter::with_max_open_files`]) are
///   open at once, since each holds its current row group in memory. When rows arrive for
///   another partition while that many are open, the least recently written file is closed
///   (it becomes a complete data file); later rows of its partition go to a new file. Input
///   clustered by partition therefore makes one file per partition; input cycling through
///   more partitions than the limit makes more, smaller files.
/// - [`AppendWriter::finish`] closes every file and returns them with their partition spec id,
///   for [`crate::commit::append`]; [`AppendWriter::abort`] deletes whatever was written.
///
/// Batches must have the Arrow types of `schema` ([`crate::to_arrow::schema_to_arrow`]; field
/// metadata and nullability may differ). Partition source columns are found by field id, else
/// by position.
pub struct AppendWriter {
    io: FileIO,
    table_location: String,
    schema: Schema,
    spec: PartitionSpec,
    options: WriterOptions,
    target_size: u64,
    max_open: usize,
    open: Vec<OpenFile>,
    done: Vec<(i32, DataFile)>,
    writes: u64,
    rows: u64,
    /// The `sort_order_id` of the files: the order their rows arrive in.
    sort_order_id: Option<i32>,
    /// What every file's name starts with (before its uuid).
    file_prefix: String,
}

impl std::fmt::Debug for AppendWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppendWriter")
            .field("table_location", &self.table_location)
            .field("open", &self.open.len())
            .field("done", &self.done.len())
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl AppendWriter {
    /// A writer of data files for the table `metadata` describes (its location, default
    /// partition spec and write properties), with the columns of `schema` (normally the
    /// current schema). Bad write properties are [`Error::InvalidArgument`] /
    /// [`Error::Unsupported`]; a missing default spec is [`Error::Corrupt`].
    pub fn new(io: &FileIO, metadata: &TableMetadata, schema: &Schema) -> Result<Self> {
        let spec = metadata.default_partition_spec().ok_or_else(|| {
            Error::corrupt(
                metadata.location.clone(),
                "the default partition spec is missing",
            )
        })?;
        let target_size = WRITE_TARGET_FILE_SIZE_BYTES.get(metadata)?;
        Ok(Self {
            io: io.clone(),
            table_location: metadata.location.trim_end_matches('/').to_string(),
            schema: schema.clone(),
            spec: spec.clone(),
            options: WriterOptions::from_properties(metadata)?,
            target_size,
            max_open: MAX_OPEN_FILES_DEFAULT,
            open: Vec::new(),
            done: Vec::new(),
            writes: 0,
            rows: 0,
            sort_order_id: None,
            file_prefix: String::new(),
        })
    }

    /// Records `order_id` as the `sort_order_id` of every file: the caller writes rows sorted
    /// by that sort order.
    pub fn with_sort_order_id(mut self, order_id: Option<i32>) -> Self {
        self.sort_order_id = order_id;
        self
    }

    /// Starts every file's name with `prefix` (then a uuid), so that the files of one writer
    /// can be found by listing.
    pub fn with_file_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.file_prefix = prefix.into();
        self
    }

    /// Rolls files at `bytes` instead of the table's `write.target-file-size-bytes`.
    pub fn with_target_file_size(mut self, bytes: u64) -> Self {
        self.target_size = bytes.max(1);
        self
    }

    /// Keeps at most `n` (at least 1) files open at once (see the type's docs).
    pub fn with_max_open_files(mut self, n: usize) -> Self {
        self.max_open = n.max(1);
        self
    }

    /// The rows written so far.
    pub fn rows_written(&self) -> u64 {
        self.rows
    }

    /// Writes a batch's rows into the files of their partitions. After an error, call
    /// [`AppendWriter::abort`].
    pub async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.writes += 1;
        for (tuple, rows) in split_by_partition(batch, &self.spec, &self.schema)? {
            let found = self.open.iter().position(|f| f.tuple == tuple);
            let index = match found {
                Some(i) => i,
                None => self.open_file(tuple).await?,
            };
            let file = &mut self.open[index];
            file.last_used = self.writes;
            file.writer.write(&rows).await?;
            self.rows += rows.num_rows() as u64;
            if file.writer.bytes_written() >= self.target_size {
                self.close_file(index).await?;
            }
        }
        Ok(())
    }

    /// Closes every open file and returns all the files written, each with its partition spec
    /// id. On an error every file is deleted.
    pub async fn finish(mut self) -> Result<Vec<(i32, DataFile)>> {
        while !self.open.is_empty() {
            if let Err(e) = self.close_file(self.open.len() - 1).await {
                self.abort().await;
                return Err(e);
            }
        }
        Ok(self.done)
    }

    /// Gives up: aborts the open files' uploads and deletes the files already closed (best
    /// effort: a file left behind is unreferenced by any snapshot).
    pub async fn abort(self) {
        for file in self.open {
            let _ = file.writer.abort().await;
        }
        let paths: Vec<String> = self.done.into_iter().map(|(_, f)| f.file_path).collect();
        delete_all(&self.io, &paths).await;
    }

    /// Opens a file for `tuple`, first closing the least recently written one when the limit
    /// is reached; returns its index.
    async fn open_file(&mut self, tuple: Vec<Option<Literal>>) -> Result<usize> {
        if self.open.len() >= self.max_open {
            let oldest = self
                .open
                .iter()
                .enumerate()
                .min_by_key(|(_, f)| f.last_used)
                .map(|(i, _)| i);
            if let Some(i) = oldest {
                self.close_file(i).await?;
            }
        }
        let (location, writer) = self.new_writer(&tuple)?;
        self.open.push(OpenFile {
            tuple,
            location,
            writer,
            last_used: self.writes,
        });
        Ok(self.open.len() - 1)
    }

    fn new_writer(&self, tuple: &[Option<Literal>]) -> Result<(String, DataFileWriter)> {
        let partition_path = match self.spec.is_unpartitioned() {
            true => String::new(),
            false => format!("{}/", self.spec.partition_path(&self.schema, tuple)?),
        };
        let location = format!(
            "{}/data/{partition_path}{}{}.parquet",
            self.table_location,
            self.file_prefix,
            uuid::Uuid::new_v4()
        );
        let resolved = self.io.resolve(&location)?;
        let writer = DataFileWriter::new(
            resolved.store,
            resolved.path,
            location.clone(),
            &self.schema,
            self.options.clone(),
        )?;
        Ok((location, writer))
    }

    /// Closes the open file at `index` into `done`. A file that fails to close is deleted
    /// (best effort).
    async fn close_file(&mut self, index: usize) -> Result<()> {
        let OpenFile {
            tuple,
            location,
            writer,
            ..
        } = self.open.swap_remove(index);
        match writer.close().await {
            Ok(mut file) => {
                file.partition = tuple;
                file.sort_order_id = self.sort_order_id;
                self.done.push((self.spec.spec_id, file));
                Ok(())
            }
            Err(e) => {
                delete_all(&self.io, &[location]).await;
                Err(e)
            }
        }
    }
}

#[cfg(test)]
#[path = "append_tests.rs"]
mod tests;
