//! icefloe's execution plans across processes (cargo feature `distributed`): [`IcefloeCodec`],
//! a datafusion-proto `PhysicalExtensionCodec` for the plan nodes icefloe makes, so that a
//! coordinator can send a plan to workers (datafusion-distributed, Ballista) that decode it
//! with the same codec.
//!
//! A node travels with the facts a worker needs and nothing it can re-derive: never a catalog
//! connection and never an object store. A worker reads through a store of its own runtime: one
//! it registered for the bucket, else one built from the storage properties that travel (the
//! worker session's [`crate::io::StorageProperties`] underneath, and credentials only when
//! the coordinator's codec was built [`IcefloeCodec::with_credentials`]).
//!
//! | node | travels |
//! |---|---|
//! | the Parquet scan (`DataSourceExec` with icefloe's guarded source) | its files (path, size, byte range, partition values, the statistics a reader uses, the rows surviving position deletes and deletion vectors, names under relocation), projection, predicate, Parquet options, the field-id adapter (name mapping, defaults, format version), `_pos`, the store and its IO |
//! | `IcebergEqualityDeleteExec` | the delete files that apply (read by the worker, once per plan it decodes), key types and columns, which files apply to which data file, the IO |
//! | `IcebergRowCountExec` (a `count(*)` from the manifest list, or a scan planning pruned to nothing) | rows, schema, planning counts |
//! | `IcebergMetadataScanExec` (`t$files`, `t$snapshots`, ...) | the metadata file (the worker loads it and computes the rows), relation, snapshot selection, filter hints, projection, limit, the IO |
//! | `IcebergWriteExec` (an INSERT's writers, [`write::ParallelWrites`]) | the metadata file, the columns written, the files' sort order; never the commit's catalog (`IcebergCommitExec` runs where the statement was planned) |
//! | `IcebergChangeWriteExec` (the writers of a DELETE, UPDATE or MERGE, [`write::ParallelWrites`]) | the metadata file, the statement, the snapshot its rows were read from, the schema they were read with; never the commit (`IcebergChangeCommitExec` runs where the statement was planned) |
//! | procedures, TRUNCATE | no: refused (they run where they were planned) |
//!
//! A scan never travels as DataFusion's plain Parquet scan (its own encoding of the inner
//! source would drop what icefloe attaches to each file, and a worker would read deleted rows
//! back): the guarded source has no proto encoding of its own, so DataFusion hands the whole
//! node to this codec. Every refusal is an error naming the node.
//!
//! The bytes of a node: a format version, then a protobuf message ([`wire`]).

pub mod ballista;
mod changes;
pub mod cluster;
mod count;
mod deletes;
mod logical;
mod metadata;
mod nodes;
mod origin;
mod scan;
mod wire;
pub mod write;

use std::sync::Arc;

use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};

use crate::dml::RowChangeKind;
use crate::error::Error;
use crate::metadata_tables::exec::MetadataScanExec;
use crate::scan::count::RowCountExec;
use crate::scan::deletes::equality::EqualityDeleteExec;
use wire::Kind;

pub use logical::IcefloeLogicalCodec;

/// The `PhysicalExtensionCodec` of icefloe's plan nodes (see the module docs). Register it on
/// the coordinator and on every worker; nodes of other libraries are refused with an error, so
/// it composes with their codecs (datafusion-proto's `ComposedPhysicalExtensionCodec`).
#[derive(Debug, Default, Clone, Copy)]
pub struct IcefloeCodec {
    credentials: bool,
}

impl IcefloeCodec {
    /// A codec that sends the storage properties that say where a store is (endpoint, region,
    /// path style), never a credential: workers reach the stores with their own.
    pub fn new() -> Self {
        Self::default()
    }

    /// This codec sending the storage credentials a table was opened with too (keys, session
    /// tokens, a REST catalog's vended credentials), for workers that have none of their own.
    /// They travel in the plan's bytes: only over a network the embedder trusts.
    pub fn with_credentials(mut self) -> Self {
        self.credentials = true;
        self
    }

    fn sends_credentials(&self) -> bool {
        self.credentials
    }
}

/// An error about plan bytes that cannot be read.
fn corrupt(reason: impl Into<String>) -> DataFusionError {
    Error::corrupt("an icefloe plan node's bytes", reason.into()).into()
}

impl PhysicalExtensionCodec for IcefloeCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let node: wire::Node = wire::from_bytes(buf)?;
        let kind = node
            .kind
            .ok_or_else(|| corrupt("a node of no known kind"))?;
        let leaf = |name: &str| match inputs.is_empty() {
            true => Ok(()),
            false => Err(corrupt(format!(
                "an {name} given {} inputs (it is a leaf)",
                inputs.len()
            ))),
        };
        match &kind {
            Kind::RowCount(count) => {
                leaf("IcebergRowCountExec")?;
                Ok(Arc::new(count::decode(count)?))
            }
            Kind::Scan(scan) => {
                leaf("icefloe scan")?;
                scan::decode(scan, ctx, self, proto_converter)
            }
            Kind::MetadataScan(node) => {
                leaf("IcebergMetadataScanExec")?;
                metadata::decode(node, ctx)
            }
            Kind::Write(node) => match inputs {
                [input] => write_from_wire(node, input, ctx),
                _ => Err(corrupt(format!(
                    "an IcebergWriteExec given {} inputs (it has one)",
                    inputs.len()
                ))),
            },
            Kind::ChangeWrite(node) => match inputs {
                [input] => change_write_from_wire(node, input, ctx),
                _ => Err(corrupt(format!(
                    "an IcebergChangeWriteExec given {} inputs (it has one)",
                    inputs.len()
                ))),
            },
            Kind::EqualityDeletes(node) => match inputs {
                [input] => deletes::decode(node, input, ctx),
                _ => Err(corrupt(format!(
                    "an IcebergEqualityDeleteExec given {} inputs (it has one)",
                    inputs.len()
                ))),
            },
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DFResult<()> {
        let kind = if let Some(count) = node.downcast_ref::<RowCountExec>() {
            Kind::RowCount(count::encode(count)?)
        } else if let Some(scan) = node.downcast_ref::<DataSourceExec>() {
            Kind::Scan(Box::new(scan::encode(scan, self, proto_converter)?))
        } else if let Some(deletes) = node.downcast_ref::<EqualityDeleteExec>() {
            Kind::EqualityDeletes(deletes::encode(deletes, self)?)
        } else if let Some(write) = node.downcast_ref::<write::WriteExec>() {
            Kind::Write(write_to_wire(write, self)?)
        } else if let Some(write) = node.downcast_ref::<changes::ChangeWriteExec>() {
            Kind::ChangeWrite(change_write_to_wire(write, self))
        } else if let Some(scan) = node.downcast_ref::<MetadataScanExec>() {
            Kind::MetadataScan(metadata::encode(scan, self)?)
        } else {
            return Err(DataFusionError::NotImplemented(format!(
                "icefloe's codec does not send {} to another process",
                node.name()
            )));
        };
        // Nothing is written before the node is known: a composed codec shares `buf`.
        wire::to_bytes(&wire::Node { kind: Some(kind) }, buf);
        Ok(())
    }
}

fn write_to_wire(node: &write::WriteExec, codec: &IcefloeCodec) -> DFResult<wire::Write> {
    let spec = node.writer();
    Ok(wire::Write {
        io: Some(origin::io_to_wire(&spec.io, codec.sends_credentials())),
        metadata_location: spec.metadata_location.clone(),
        schema: spec.schema.to_json().to_string(),
        sort_order_id: spec.sort_order_id,
        statement: spec.statement.clone(),
        token: spec.token.clone(),
    })
}

fn write_from_wire(
    node: &wire::Write,
    input: &Arc<dyn ExecutionPlan>,
    ctx: &TaskContext,
) -> DFResult<Arc<dyn ExecutionPlan>> {
    let json: serde_json::Value = serde_json::from_str(&node.schema)
        .map_err(|e| corrupt(format!("the schema written: {e}")))?;
    let schema = crate::spec::Schema::from_json(&json)
        .map_err(|e| corrupt(format!("the schema written: {e}")))?;
    let spec = write::WriteSpec {
        io: origin::io_from_wire(node.io.as_ref(), ctx)?,
        metadata_location: node.metadata_location.clone(),
        schema,
        sort_order_id: node.sort_order_id,
        statement: node.statement.clone(),
        token: node.token.clone(),
        loaded: tokio::sync::OnceCell::new(),
    };
    Ok(Arc::new(write::WriteExec::new(
        Arc::clone(input),
        Arc::new(spec),
    )))
}

fn change_write_to_wire(
    node: &changes::ChangeWriteExec,
    codec: &IcefloeCodec,
) -> wire::ChangeWrite {
    let spec = node.writer();
    let scanned = spec.scanned_to_wire();
    let has_scanned = scanned.is_some();
    let (scanned, deletes) = scanned.unwrap_or_default();
    wire::ChangeWrite {
        io: Some(origin::io_to_wire(&spec.io, codec.sends_credentials())),
        metadata_location: spec.metadata_location.clone(),
        kind: match spec.kind {
            RowChangeKind::Delete => 1,
            RowChangeKind::Update => 2,
            RowChangeKind::Merge => 3,
            RowChangeKind::Truncate => 4,
        },
        schema: spec.schema.to_json().to_string(),
        base_snapshot: spec.base_snapshot,
        statement: spec.statement.clone(),
        token: spec.token.clone(),
        has_scanned,
        scanned,
        deletes,
    }
}

fn change_write_from_wire(
    node: &wire::ChangeWrite,
    input: &Arc<dyn ExecutionPlan>,
    ctx: &TaskContext,
) -> DFResult<Arc<dyn ExecutionPlan>> {
    let kind = match node.kind {
        1 => RowChangeKind::Delete,
        2 => RowChangeKind::Update,
        3 => RowChangeKind::Merge,
        4 => RowChangeKind::Truncate,
        other => return Err(corrupt(format!("row-level statement kind {other}"))),
    };
    let json: serde_json::Value = serde_json::from_str(&node.schema)
        .map_err(|e| corrupt(format!("the schema of the rows changed: {e}")))?;
    let schema = crate::spec::Schema::from_json(&json)
        .map_err(|e| corrupt(format!("the schema of the rows changed: {e}")))?;
    let spec = changes::ChangeSpec {
        io: origin::io_from_wire(node.io.as_ref(), ctx)?,
        metadata_location: node.metadata_location.clone(),
        kind,
        schema,
        base_snapshot: node.base_snapshot,
        statement: node.statement.clone(),
        token: node.token.clone(),
        scanned: match node.has_scanned {
            true => changes::Scanned::Sent {
                wire: (node.scanned.clone(), node.deletes.clone()),
                read: tokio::sync::OnceCell::new(),
            },
            false => changes::Scanned::Unknown,
        },
        loaded: tokio::sync::OnceCell::new(),
    };
    Ok(Arc::new(changes::ChangeWriteExec::new(
        Arc::clone(input),
        Arc::new(spec),
    )))
}

#[cfg(test)]
mod tests;
