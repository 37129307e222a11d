//! Table statistics and partition statistics (spec: "Table Statistics", "Partition
//! Statistics"): computing theta sketches of columns into Puffin files
//! ([`compute_table_stats`]) and partition counts into Parquet files
//! ([`compute_partition_stats`]), committing them
//! (`set-statistics`, `set-partition-statistics`), and reading the number of distinct values
//! a scan reports to DataFusion's optimizer.

mod compute;
pub(crate) mod ndv;
mod partitions;
mod theta;

pub use compute::{ComputeTableStats, TableStatsReport, compute_table_stats};
pub use partitions::{ComputePartitionStats, PartitionStatsReport, compute_partition_stats};

#[cfg(test)]
mod partitions_tests;
#[cfg(test)]
mod tests;
