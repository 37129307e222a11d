//! Table statistics and partition statistics (spec: "Table Statistics", "Partition
//! Statistics"): computing theta sketches of columns into Puffin files and partition counts
//! into Parquet files, committing them (`set-statistics`, `set-partition-statistics`), and
//! reading the number of distinct values a scan reports to DataFusion's optimizer.

mod theta;
