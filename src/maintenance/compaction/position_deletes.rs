//! Rewriting position deletes ([`rewrite_position_delete_files`], Iceberg Java's
//! `RewritePositionDeleteFiles`): the position delete files of a partition merged into one,
//! sorted by data file and position, without the positions of data files that are no longer
//! live; on v3 tables every data file's position deletes and deletion vector become its one
//! deletion vector (the spec's v3 form: position delete files are deprecated there).
//!
//! One `replace` snapshot removes the old delete files and adds the new ones; the rows the
//! table reads do not change. A concurrent commit that removed one of the old delete files
//! conflicts (a compaction that applied it); on v3 so does a concurrent delete for a data file
//! whose vector is rewritten (at most one vector per data file).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use roaring::RoaringTreemap;

use super::plan::{PartitionKey, partition_key};
use crate::error::Result;
use crate::io::location_key;
use crate::scan::deletes::positions;
use crate::scan::{DeleteFileTask, FileScanTask, plan_files};
use crate::spec::snapshot::Operation;
use crate::spec::{DataContentType, DataFile, FormatVersion, Literal};
use crate::table::Table;
use crate::transaction::{Isolation, RowDelta, WriteTarget, delete_all};
use crate::write::{DeletionVector, write_deletion_vectors, write_position_deletes};

/// The options of [`rewrite_position_delete_files`] (Java's names).
#[derive(Debug, Clone)]
pub struct RewritePositionDeletes {
    min_input_files: usize,
    rewrite_all: bool,
}

impl Default for RewritePositionDeletes {
    fn default() -> Self {
        Self {
            min_input_files: 5,
            rewrite_all: false,
        }
    }
}

impl RewritePositionDeletes {
    /// Java's defaults: partitions with at least 5 position delete files (v2); on v3 every
    /// partition with a position delete file.
    pub fn new() -> Self {
        Self::default()
    }

    /// `min-input-files` (at least 1) or `rewrite-all` (`true`/`false`); another key or value
    /// is [`crate::Error::InvalidArgument`].
    pub fn with_option(mut self, key: &str, value: &str) -> Result<Self> {
        let bad = |expected: &str| {
            crate::Error::invalid(
                format_args!("rewrite option {key} = '{value}'"),
                format_args!("expected {expected}"),
            )
        };
        match key.trim() {
            "min-input-files" => {
                let n = value
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| bad("a whole number"))?;
                self.min_input_files = n.max(1);
            }
            "rewrite-all" => {
                self.rewrite_all = match value.trim().to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(bad("true or false")),
                }
            }
            other => {
                return Err(crate::Error::invalid(
                    format_args!("rewrite option '{other}'"),
                    "is not an option of rewrite_position_delete_files",
                ));
            }
        }
        Ok(self)
    }
}

/// What [`rewrite_position_delete_files`] did.
#[derive(Debug, Clone, Default)]
pub struct RewritePositionDeletesResult {
    /// Delete files (position delete files and deletion vectors) removed.
    pub rewritten_delete_files: usize,
    /// Delete files written in their place.
    pub added_delete_files: usize,
    /// The bytes of the removed delete files (a vector: its blob).
    pub rewritten_bytes: u64,
    /// The bytes of the files written.
    pub added_bytes: u64,
    /// The snapshot committed, if any.
    pub snapshot: Option<i64>,
    /// The table after the commit.
    pub table: Option<Table>,
}

/// The position deletes of one partition, and the data files they apply to.
struct Partition {
    spec_id: i32,
    tuple: Vec<Option<Literal>>,
    deletes: HashMap<(String, Option<i64>), Arc<DeleteFileTask>>,
    data: Vec<FileScanTask>,
}

/// Rewrites the position deletes of the current snapshot of `main` (see the module docs).
pub async fn rewrite_position_delete_files(
    target: &WriteTarget,
    options: &RewritePositionDeletes,
) -> Result<RewritePositionDeletesResult> {
    let table = target.load().await?;
    table.ensure_writable()?;
    let metadata = Arc::clone(table.metadata());
    let Some(start) = metadata.current_snapshot().cloned() else {
        return Ok(RewritePositionDeletesResult::default());
    };
    let v3 = metadata.format_version >= FormatVersion::V3;
    let tasks = plan_files(table.io(), &metadata, &start).await?;
    let chosen: Vec<Partition> = by_partition(tasks)
        .into_values()
        .filter(|p| {
            let files = p
                .deletes
                .values()
                .filter(|d| d.file.content_offset.is_none())
                .count();
            options.rewrite_all || (v3 && files > 0) || files >= options.min_input_files
        })
        .collect();
    if chosen.is_empty() {
        return Ok(RewritePositionDeletesResult::default());
    }
    let mut delta = RowDelta::new(Some(start.snapshot_id))
        .operation(Operation::Replace)
        .isolation(Isolation::Snapshot);
    let mut result = RewritePositionDeletesResult::default();
    let mut vectors = Vec::new();
    let mut added: Vec<(i32, DataFile)> = Vec::new();
    for partition in &chosen {
        for delete in partition.deletes.values() {
            delta = delta.remove_delete_file(&delete.file);
            result.rewritten_delete_files += 1;
            let size = delete
                .file
                .content_size_in_bytes
                .unwrap_or(delete.file.file_size_in_bytes);
            result.rewritten_bytes += u64::try_from(size).unwrap_or(0);
        }
        let deleted = deleted_positions(&table, partition).await?;
        if v3 {
            for task in &partition.data {
                delta = delta.touch(task.partition_spec_id, &task.data_file);
            }
            vectors.extend(
                deleted
                    .into_iter()
                    .map(|(data_file, positions)| DeletionVector {
                        data_file,
                        spec_id: partition.spec_id,
                        partition: partition.tuple.clone(),
                        positions,
                    }),
            );
        } else if !deleted.is_empty() {
            let written = write_position_deletes(
                table.io(),
                &metadata,
                partition.spec_id,
                &partition.tuple,
                &deleted,
            );
            added.push((partition.spec_id, written.await?));
        }
    }
    if !vectors.is_empty() {
        added.extend(write_deletion_vectors(table.io(), &metadata, &vectors).await?);
    }
    result.added_delete_files = added.len();
    result.added_bytes = added
        .iter()
        .map(|(_, f)| {
            u64::try_from(f.content_size_in_bytes.unwrap_or(f.file_size_in_bytes)).unwrap_or(0)
        })
        .sum();
    let mut paths: Vec<String> = added.iter().map(|(_, f)| f.file_path.clone()).collect();
    paths.dedup();
    let snapshot = delta.snapshot_id();
    delta = delta.add_delete_files(added);
    match target.transaction(table).with_action(delta).commit().await {
        Ok(committed) => {
            result.snapshot = Some(snapshot);
            result.table = Some(committed);
            Ok(result)
        }
        Err(e @ crate::Error::CommitStateUnknown { .. }) => Err(e),
        Err(e) => {
            let io = target.io();
            delete_all(io, &paths).await;
            Err(e)
        }
    }
}

/// The live data files' position deletes (files and vectors), by the partition of the delete
/// file (spec id and tuple: an unpartitioned spec's deletes are one partition), each with the
/// data files they apply to (their other deletes left out).
fn by_partition(tasks: Vec<FileScanTask>) -> BTreeMap<PartitionKey, Partition> {
    let mut partitions: BTreeMap<PartitionKey, Partition> = BTreeMap::new();
    for task in tasks {
        let mut own: BTreeMap<PartitionKey, Vec<Arc<DeleteFileTask>>> = BTreeMap::new();
        let positional = task
            .deletes
            .iter()
            .filter(|d| d.file.content == DataContentType::PositionDeletes);
        for delete in positional {
            let key = partition_key(delete.partition_spec_id, &delete.file);
            own.entry(key).or_default().push(Arc::clone(delete));
        }
        for (key, deletes) in own {
            let first = &deletes[0];
            let partition = partitions.entry(key).or_insert_with(|| Partition {
                spec_id: first.partition_spec_id,
                tuple: first.file.partition.clone(),
                deletes: HashMap::new(),
                data: Vec::new(),
            });
            for delete in &deletes {
                let id = (delete.file.file_path.clone(), delete.file.content_offset);
                partition.deletes.insert(id, Arc::clone(delete));
            }
            let mut data = task.clone();
            data.deletes = deletes;
            partition.data.push(data);
        }
    }
    partitions
}

/// The positions `partition`'s deletes remove from each of its live data files, by
/// `file_path`.
async fn deleted_positions(
    table: &Table,
    partition: &Partition,
) -> Result<BTreeMap<String, RoaringTreemap>> {
    let io = table.io();
    let mut by_key = positions::load(io, &partition.data).await?;
    let mut out = BTreeMap::new();
    for task in &partition.data {
        let path = &task.data_file.file_path;
        if let Some(positions) = by_key.remove(&location_key(io, path))
            && !positions.is_empty()
        {
            out.insert(path.clone(), positions);
        }
    }
    Ok(out)
}
