//! Table statistics and partition statistics (spec: "Table Statistics", "Partition
//! Statistics"): computing theta sketches of columns into Puffin files
//! ([`compute_table_stats`]) and partition counts into Parquet files, committing them
//! (`set-statistics`, `set-partition-statistics`), and reading the number of distinct values
//! a scan reports to DataFusion's optimizer.

mod compute;
pub(crate) mod ndv;
mod theta;

pub use compute::{ComputeTableStats, TableStatsReport, compute_table_stats};

#[cfg(test)]
mod tests;
