//! The write path: Parquet data files with Iceberg field ids and metrics, and the split of
//! rows by partition tuple, and [`append_batches`], which writes batches and commits them.
//!
//! - [`DataFileWriter`] writes Arrow batches to one Parquet file and returns its
//!   [`DataFile`](crate::spec::DataFile) with the spec's column metrics.
//! - [`split_by_partition`] groups a batch's rows by their partition tuple under a spec.
//! - [`AppendWriter`] streams batches into rolled data files, one open file per partition.
//! - [`TableCreation`] builds a new table's first metadata (fresh field ids, partition spec,
//!   sort order, properties, format version) and writes it; [`reachable_files`] (defined in
//!   [`crate::maintenance`]) lists what a table's metadata reaches (for `DROP TABLE ... PURGE`).
//! - [`IcebergSink`] is the DataFusion `DataSink` behind `INSERT INTO` (one fast append).

mod append;
mod bounds;
#[cfg(test)]
mod bounds_tests;
mod columns;
mod data_file;
#[cfg(test)]
mod data_file_tests;
mod deletion_vectors;
mod fanout;
#[cfg(test)]
mod fanout_tests;
mod ordering;
mod position_deletes;
pub(crate) mod sink;

// Lives in `table` (below every layer that walks a table); re-exported for existing callers.
pub use crate::table::reachable_files;

pub use crate::table::{
    TableCreation, arrow_to_iceberg_type, assign_fresh_ids, parse_partition_term, split_terms,
};
pub use crate::transaction::WriteTarget;
pub use append::append_batches;
pub use append::{AppendWriter, MAX_OPEN_FILES_DEFAULT, commit_files, create_with_files};
pub(crate) use columns::parquet_schema;
pub use data_file::{DataFileWriter, WriterOptions};
pub(crate) use deletion_vectors::write_deletion_vectors_named;
pub use deletion_vectors::{DeletionVector, write_deletion_vectors};
pub(crate) use fanout::literal_at;
pub use fanout::split_by_partition;
pub(crate) use ordering::sort_exprs;
pub use ordering::{TransformFn, sink_input, write_ordering};
pub(crate) use position_deletes::write_position_deletes_named;
pub use position_deletes::{
    DELETE_FILE_PATH_FIELD_ID, DELETE_POS_FIELD_ID, position_delete_schema, write_position_deletes,
};
pub(crate) use sink::conform;
pub use sink::{IcebergSink, IcefloeOptions, OnCommit, OverwriteMode};
