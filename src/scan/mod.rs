//! Scan planning: pick a snapshot, read its manifest list and manifests, and hand the live data
//! files to DataFusion's `ParquetSource`, with columns resolved by field id.

mod adapter;
pub(crate) mod exec;
mod manifests;
mod plan;
mod reader;

pub use manifests::{partition_type, read_manifest, read_manifest_list};
pub use plan::{FileScanTask, plan_files};
