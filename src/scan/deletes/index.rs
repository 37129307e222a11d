//! Which delete files apply to which data file, by the spec's rules ("Scan Planning"):
//!
//! - a position delete file applies to a data file whose data sequence number is `<=` its own,
//!   in the same partition (spec and values) unless the delete's spec is unpartitioned,
//!   narrowed by `referenced_data_file` and, when its `file_path` bounds name one file, by
//!   those;
//! - a deletion vector (a position delete stored in Puffin) applies to its
//!   `referenced_data_file` at a data sequence number `<=` its own, same partition rule, and
//!   replaces the position delete files of that data file (writers fold older ones into the
//!   vector);
//! - an equality delete file applies to a data file whose data sequence number is strictly
//!   `<` its own, with the same partition rule.
//!
//! Paths are compared as resolved object locations, so `hdfs://host/wh/f.parquet` in one file
//! and `/wh/f.parquet` in another are the same file when the relocation rules say so.

use std::collections::HashMap;
use std::sync::Arc;

use super::DeleteFileTask;
use crate::io::FileIO;
use crate::scan::FileScanTask;
use crate::spec::{DataContentType, FileFormat, Literal, PrimitiveType, TableMetadata};

/// The reserved field id of a position delete file's `file_path` column.
pub(crate) const FILE_PATH_FIELD_ID: i32 = 2_147_483_546;

/// The live delete files of a snapshot, indexed for matching against its data files.
#[derive(Debug, Default)]
pub(crate) struct DeleteIndex {
    /// Position and equality delete files that apply to a whole partition, by (spec id,
    /// partition key).
    by_partition: HashMap<(i32, String), Vec<Arc<DeleteFileTask>>>,
    /// Delete files written with an unpartitioned spec: they apply across partitions.
    global: Vec<Arc<DeleteFileTask>>,
    /// Position delete files and deletion vectors that name their one data file, by the
    /// resolved location of that file, with their partition (`None`: unpartitioned spec).
    by_data_file: HashMap<String, Vec<Scoped>>,
}

impl DeleteIndex {
    /// Indexes `deletes` (live delete entries of one snapshot).
    pub(crate) fn new(io: &FileIO, metadata: &TableMetadata, deletes: Vec<DeleteFileTask>) -> Self {
        let mut index = Self::default();
        for delete in deletes {
            let delete = Arc::new(delete);
            let unpartitioned = metadata
                .partition_spec_by_id(delete.partition_spec_id)
                .is_none_or(|spec| spec.is_unpartitioned());
            let partition = (!unpartitioned).then(|| {
                (
                    delete.partition_spec_id,
                    partition_key(&delete.file.partition),
                )
            });
            if delete.file.content == DataContentType::PositionDeletes
                && let Some(target) = single_target(&delete)
            {
                let key = location_key(io, &target);
                index
                    .by_data_file
                    .entry(key)
                    .or_default()
                    .push((delete, partition));
                continue;
            }
            match partition {
                None => index.global.push(delete),
                Some(key) => index.by_partition.entry(key).or_default().push(delete),
            }
        }
        index
    }

    /// Whether no delete file is indexed.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_partition.is_empty() && self.global.is_empty() && self.by_data_file.is_empty()
    }

    /// The delete files that apply to `task` (a data file), deletion vectors first.
    pub(crate) fn deletes_for(&self, io: &FileIO, task: &FileScanTask) -> Vec<Arc<DeleteFileTask>> {
        if self.is_empty() {
            return Vec::new();
        }
        let key = location_key(io, &task.data_file.file_path);
        let partition = (
            task.partition_spec_id,
            partition_key(&task.data_file.partition),
        );
        let named = self.by_data_file.get(&key).into_iter().flatten();
        let candidates = named
            .filter(|(_, scope)| scope.as_ref().is_none_or(|p| *p == partition))
            .map(|(delete, _)| delete)
            .chain(self.by_partition.get(&partition).into_iter().flatten())
            .chain(&self.global);
        let mut applying: Vec<Arc<DeleteFileTask>> = candidates
            .filter(|d| applies(d, task.data_sequence_number))
            .cloned()
            .collect();
        if applying.iter().any(|d| d.is_deletion_vector()) {
            applying.retain(|d| {
                d.is_deletion_vector() || d.file.content == DataContentType::EqualityDeletes
            });
        }
        applying.sort_by_key(|d| !d.is_deletion_vector());
        applying
    }
}

/// The sequence-number rule: position deletes (and vectors) apply to data at or before their
/// sequence number, equality deletes only to data strictly before it.
pub(crate) fn applies(delete: &DeleteFileTask, data_sequence_number: i64) -> bool {
    match delete.file.content {
        DataContentType::EqualityDeletes => data_sequence_number < delete.data_sequence_number,
        _ => data_sequence_number <= delete.data_sequence_number,
    }
}

/// The one data file a position delete file or vector is for: `referenced_data_file`, or its
/// `file_path` bounds when both name the same file.
fn single_target(delete: &DeleteFileTask) -> Option<String> {
    if let Some(target) = &delete.file.referenced_data_file {
        return Some(target.clone());
    }
    let bound = |bounds: &Option<HashMap<i32, Vec<u8>>>| -> Option<String> {
        let bytes = bounds.as_ref()?.get(&FILE_PATH_FIELD_ID)?;
        match Literal::from_bytes(&PrimitiveType::String, bytes).ok()? {
            Literal::String(s) => Some(s),
            _ => None,
        }
    };
    let lower = bound(&delete.file.lower_bounds)?;
    // Bounds may be truncated: only a full path equal on both sides pins one file, and a
    // truncated upper bound would differ from the lower one.
    (bound(&delete.file.upper_bounds)? == lower).then_some(lower)
}

pub(crate) use crate::io::{location_key, resolved_key};

/// A partition: spec id and [`partition_key`].
type PartitionKey = (i32, String);

/// A delete file and its partition (`None`: written with an unpartitioned spec).
type Scoped = (Arc<DeleteFileTask>, Option<PartitionKey>);

/// A hashable form of a partition tuple (values of one spec compare equal exactly when their
/// debug forms do).
fn partition_key(values: &[Option<Literal>]) -> String {
    format!("{values:?}")
}

impl DeleteFileTask {
    /// Whether this is a v3 deletion vector (a position delete stored as a Puffin blob).
    pub(crate) fn is_deletion_vector(&self) -> bool {
        self.file.content == DataContentType::PositionDeletes
            && self.file.file_format == FileFormat::Puffin
    }
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;

/// Building blocks for the delete tests of sibling modules.
#[cfg(test)]
pub(crate) mod tests_support {
    /// A minimal Parquet data-file entry at `path` (content: data; callers change it).
    pub(crate) fn file(path: String) -> crate::spec::DataFile {
        super::tests::file(super::DataContentType::Data, &path, None)
    }
}
