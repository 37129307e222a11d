//! Scan planning: pick a snapshot, read its manifest list and manifests, and hand the live data
//! files to DataFusion's `ParquetSource`, with columns resolved by field id. Incremental reads
//! plan the files a range of append snapshots added.

pub(crate) mod adapter;
pub use crate::table::cache;
pub(crate) mod count;
pub(crate) mod deletes;
pub(crate) mod exec;
pub(crate) mod file_types;
pub(crate) mod guard;
mod incremental;
pub(crate) mod plan;
mod prune;
pub(crate) mod reader;

pub(crate) use crate::table::read_manifests;
pub use crate::table::{partition_type, read_manifest, read_manifest_list};
pub use cache::{CacheStats, ManifestCache};
pub use deletes::DeleteFileTask;
pub use exec::{FILE_COLUMN, POS_COLUMN, plan_metric};
pub use incremental::{IncrementalRange, plan_incremental_files};
pub use plan::{FileScanTask, PlanStats, ScanPlan, plan_files};
