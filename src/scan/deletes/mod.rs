//! Row-level deletes (merge-on-read): which delete files apply to which data file
//! ([`index`]), position deletes and deletion vectors turned into Parquet row selections
//! ([`positions`], [`puffin`]), and equality deletes applied as a hashed filter per data file
//! ([`equality`]).
//!
//! Position deletes and vectors are read while the scan is planned (each delete file once per
//! query), because DataFusion's Parquet reader takes a row selection per file: deleted rows
//! are never decoded, and a row group or page whose rows are all deleted is never read.
//! Equality delete files are read when the scan first runs, once per query, and shared by every
//! partition of the scan. The memory both hold is reserved in DataFusion's memory pool.

pub(crate) mod equality;
pub(crate) mod index;
pub(crate) mod positions;
pub(crate) mod puffin;

use crate::spec::DataFile;

pub(crate) use index::DeleteIndex;

/// A live delete file of a snapshot, with the facts that decide where it applies.
#[derive(Debug, Clone)]
pub struct DeleteFileTask {
    /// The delete file (position deletes, a deletion vector, or equality deletes).
    pub file: DataFile,
    /// The partition spec its manifest was written with.
    pub partition_spec_id: i32,
    /// Its data sequence number.
    pub data_sequence_number: i64,
}
