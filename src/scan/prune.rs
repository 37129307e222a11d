//! What a scan's filter lets planning skip: manifests by the manifest list's partition
//! summaries (stage 1), then files by their partition tuple and their column metrics
//! (stage 2). Every test is conservative: it answers "may match" unless metadata proves that
//! no row can. The filter is projected once per partition spec, so a table with evolved specs
//! prunes every manifest and file by its own spec.

use std::collections::HashMap;

use crate::expr::Predicate;
use crate::expr::eval::{manifest, metrics, partition};
use crate::expr::project::project_inclusive;
use crate::spec::{DataFile, ManifestFile, PartitionSpec, Schema, StructType, TableMetadata};
use crate::table::partition_type;

/// The filter of one scan, ready to test metadata against.
#[derive(Debug)]
pub(crate) struct Pruner<'a> {
    /// The scan's filter over the read schema's field ids (`None`: keep everything).
    filter: Option<Predicate>,
    /// Per spec id: the spec, its partition type, and the filter projected onto it (`None`
    /// when the projection is AlwaysTrue, or the spec or its type is unknown).
    specs: HashMap<i32, Projected<'a>>,
}

#[derive(Debug)]
struct Projected<'a> {
    spec: &'a PartitionSpec,
    partition_type: StructType,
    predicate: Predicate,
}

impl<'a> Pruner<'a> {
    /// A pruner that keeps everything.
    pub(crate) fn none(_metadata: &'a TableMetadata) -> Self {
        Self {
            filter: None,
            specs: HashMap::new(),
        }
    }

    /// A pruner for `filter` over `schema`'s field ids (AlwaysTrue keeps everything).
    pub(crate) fn new(metadata: &'a TableMetadata, schema: &'a Schema, filter: Predicate) -> Self {
        if filter == Predicate::AlwaysTrue {
            return Self::none(metadata);
        }
        let specs = metadata
            .partition_specs
            .iter()
            .filter_map(|spec| {
                let predicate = project_inclusive(&filter, spec, schema);
                if predicate == Predicate::AlwaysTrue {
                    return None;
                }
                let partition_type = partition_type(metadata, spec).ok()?;
                let projected = Projected {
                    spec,
                    partition_type,
                    predicate,
                };
                Some((spec.spec_id, projected))
            })
            .collect();
        Self {
            filter: Some(filter),
            specs,
        }
    }

    /// Stage 1: whether a manifest may hold matching files, from its partition summaries.
    pub(crate) fn manifest_may_match(&self, m: &ManifestFile) -> bool {
        match self.specs.get(&m.partition_spec_id) {
            None => true,
            Some(p) => manifest::manifest_may_match(
                &p.predicate,
                &p.partition_type,
                m.partitions.as_deref(),
            ),
        }
    }

    /// Stage 2: whether a file's partition may hold matching rows.
    pub(crate) fn partition_may_match(&self, spec_id: i32, file: &DataFile) -> bool {
        match self.specs.get(&spec_id) {
            None => true,
            Some(p) => partition::partition_may_match(&p.predicate, p.spec, &file.partition),
        }
    }

    /// Stage 2: whether a data file's column metrics allow matching rows.
    pub(crate) fn metrics_may_match(&self, file: &DataFile) -> bool {
        match &self.filter {
            None => true,
            Some(filter) => metrics::file_may_match(filter, file),
        }
    }
}
