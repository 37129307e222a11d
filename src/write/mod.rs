//! The write path: Parquet data files with Iceberg field ids and metrics, and the split of
//! rows by partition tuple, and [`append_batches`], which writes batches and commits them.
//!
//! - [`DataFileWriter`] writes Arrow batches to one Parquet file and returns its
//!   [`DataFile`](crate::spec::DataFile) with the spec's column metrics.
//! - [`split_by_partition`] groups a batch's rows by their partition tuple under a spec.

mod append;
mod bounds;
#[cfg(test)]
mod bounds_tests;
mod data_file;
#[cfg(test)]
mod data_file_tests;
mod fanout;
#[cfg(test)]
mod fanout_tests;

pub use append::{TARGET_FILE_SIZE_BYTES, TARGET_FILE_SIZE_DEFAULT, append_batches};
pub use data_file::{
    COMPRESSION_CODEC, COMPRESSION_LEVEL, DataFileWriter, METRICS_DEFAULT, PAGE_SIZE_BYTES,
    ROW_GROUP_SIZE_BYTES, WriterOptions,
};
pub use fanout::split_by_partition;
