//! Evaluators that decide from metadata alone whether rows may match. (Being written.)
//!
//! - `partition.rs`: a projected predicate against a partition tuple (stage 2, partitions).
//! - `manifest.rs`: a projected predicate against manifest-list field summaries (stage 1).
//! - `metrics.rs`: a predicate against a data file's column metrics (stage 2, metrics).

pub mod manifest;
pub mod metrics;
pub mod partition;
