//! `IcebergMetadataScanExec` across processes: the metadata file, the relation and the state
//! it shows; a worker loads the file with the IO that travels and computes the same rows.

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema as ArrowSchema;
use datafusion::error::Result as DFResult;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::DefaultLogicalExtensionCodec;
use datafusion_proto::logical_plan::from_proto::parse_exprs;
use datafusion_proto::logical_plan::to_proto::serialize_exprs;

use super::origin::{io_from_wire, io_to_wire, selector_from_wire, selector_to_wire};
use super::{IcefloeCodec, corrupt, wire};
use crate::metadata_tables::MetadataTableKind;
use crate::metadata_tables::exec::{MetadataScanExec, Relation};

pub(super) fn encode(
    node: &MetadataScanExec,
    codec: &IcefloeCodec,
) -> DFResult<wire::MetadataScan> {
    let (relation, filters, projection, limit) = node.parts();
    // Filters are hints the relation may read less with; one DataFusion cannot encode (a
    // function of the session's own) is left out, and still applied above the scan.
    let filters = serialize_exprs(filters, &DefaultLogicalExtensionCodec {}).unwrap_or_default();
    Ok(wire::MetadataScan {
        io: Some(io_to_wire(&relation.io, codec.sends_credentials())),
        metadata_location: relation.metadata_location.clone(),
        relation: relation.kind.name().to_string(),
        selector: selector_to_wire(&relation.selector),
        filters,
        projection: projection
            .map(|p| p.iter().map(|&c| c as u32).collect())
            .unwrap_or_default(),
        projected: projection.is_some(),
        limit: limit.map(|l| l as u64),
        schema: Some(node.schema().as_ref().try_into()?),
    })
}

pub(super) fn decode(
    node: &wire::MetadataScan,
    ctx: &TaskContext,
) -> DFResult<Arc<dyn ExecutionPlan>> {
    let kind = MetadataTableKind::parse(&node.relation)
        .ok_or_else(|| corrupt(format!("unknown metadata relation '{}'", node.relation)))?;
    let selector = selector_from_wire(node.selector.as_ref());
    let relation = Relation {
        io: io_from_wire(node.io.as_ref(), ctx)?,
        metadata_location: node.metadata_location.clone(),
        kind,
        selector,
    };
    let filters = parse_exprs(&node.filters, ctx, &DefaultLogicalExtensionCodec {})
        .map_err(|e| corrupt(format!("the filters of a metadata scan: {e}")))?;
    let schema = node
        .schema
        .as_ref()
        .ok_or_else(|| corrupt("a metadata scan without its schema"))?;
    let schema = ArrowSchema::try_from(schema).map_err(|e| corrupt(format!("the schema: {e}")))?;
    let projection = node
        .projected
        .then(|| node.projection.iter().map(|&c| c as usize).collect());
    let exec = MetadataScanExec::unloaded(
        relation,
        filters,
        projection,
        node.limit.map(|l| l as usize),
        Arc::new(schema),
    );
    Ok(Arc::new(exec))
}
