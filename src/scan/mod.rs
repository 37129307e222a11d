//! Scan planning: pick a snapshot, read its manifest list and manifests, and hand the live data
//! files to DataFusion's `ParquetSource`, with columns resolved by field id. Incremental reads
//! plan the files a range of append snapshots added.

mod adapter;
pub(crate) mod deletes;
pub(crate) mod exec;
mod incremental;
mod manifests;
mod plan;
mod reader;

pub use incremental::{IncrementalRange, plan_incremental_files};
pub use manifests::{partition_type, read_manifest, read_manifest_list};
pub use deletes::DeleteFileTask;
pub use plan::{FileScanTask, plan_files};
