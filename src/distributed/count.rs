//! `IcebergRowCountExec` across processes: its rows, the count's source, planning's counts
//! (its metrics again) and its schema.

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema as ArrowSchema;
use datafusion::error::Result as DFResult;

use super::origin::{planning_from_wire, planning_to_wire};
use super::{corrupt, wire};
use crate::scan::count::{CountSource, RowCountExec};

pub(super) fn encode(node: &RowCountExec) -> DFResult<wire::RowCount> {
    let (rows, schema, stats, source) = node.parts();
    Ok(wire::RowCount {
        rows: rows as u64,
        source: match source {
            CountSource::ManifestList => 0,
            CountSource::Pruned => 1,
        },
        planning: Some(planning_to_wire(stats)),
        schema: Some(schema.as_ref().try_into()?),
    })
}

pub(super) fn decode(node: &wire::RowCount) -> DFResult<RowCountExec> {
    let rows = usize::try_from(node.rows)
        .map_err(|_| corrupt(format!("the row count {} is too large", node.rows)))?;
    let source = match node.source {
        0 => CountSource::ManifestList,
        1 => CountSource::Pruned,
        other => return Err(corrupt(format!("unknown count source {other}"))),
    };
    let planning = node
        .planning
        .as_ref()
        .ok_or_else(|| corrupt("a row count without its planning counts"))?;
    let schema = node
        .schema
        .as_ref()
        .ok_or_else(|| corrupt("a row count without its schema"))?;
    let schema = ArrowSchema::try_from(schema).map_err(|e| corrupt(format!("the schema: {e}")))?;
    Ok(RowCountExec::new(
        Arc::new(schema),
        rows,
        &planning_from_wire(planning),
        source,
    ))
}
