//! icefloe's execution plans across processes (cargo feature `distributed`): [`IcefloeCodec`],
//! a datafusion-proto `PhysicalExtensionCodec` for the plan nodes icefloe makes, so that a
//! coordinator can send a plan to workers (datafusion-distributed, Ballista) that decode it
//! with the same codec.
//!
//! A node travels with the facts a worker needs and nothing it can re-derive: never a catalog
//! connection, and no object store (the worker builds its own from its session).
//!
//! | node | travels |
//! |---|---|
//! | `IcebergRowCountExec` (a `count(*)` from the manifest list, or a scan planning pruned to nothing) | yes: rows, schema, planning counts |
//! | the Parquet scan (`DataSourceExec` with icefloe's guarded source) | not yet: refused, never sent as a plain Parquet scan |
//! | `IcebergEqualityDeleteExec`, metadata-table scans, the INSERT and DML sinks | not yet: refused |
//!
//! The scan is refused on purpose until it travels whole: DataFusion's own encoding of its
//! inner Parquet source would drop what icefloe attaches to each file (the rows position
//! deletes remove, the field-id mapping, `_pos`), and a worker would read deleted rows back.
//! Every refusal is an error naming the node.
//!
//! The bytes of a node: a format version, a node tag, then the node's fields (little-endian
//! integers; schemas as datafusion-proto's `Schema` message).

mod payload;

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};

use crate::scan::count::RowCountExec;
use payload::{Reader, Writer};

/// The payload format written; a reader refuses others.
const FORMAT: u8 = 1;

/// The node kinds.
const ROW_COUNT: u8 = 1;

/// The `PhysicalExtensionCodec` of icefloe's plan nodes (see the module docs). Register it on
/// the coordinator and on every worker; nodes of other libraries are refused with an error, so
/// it composes with their codecs (datafusion-proto's `ComposedPhysicalExtensionCodec`).
#[derive(Debug, Default, Clone, Copy)]
pub struct IcefloeCodec;

impl PhysicalExtensionCodec for IcefloeCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        _ctx: &TaskContext,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let mut reader = Reader::new(buf);
        let format = reader.u8("the format version")?;
        if format != FORMAT {
            return Err(payload::corrupt(format!(
                "format version {format} (this icefloe reads {FORMAT})"
            )));
        }
        match reader.u8("the node tag")? {
            ROW_COUNT if inputs.is_empty() => Ok(Arc::new(payload::read_row_count(reader)?)),
            ROW_COUNT => Err(payload::corrupt(format!(
                "an IcebergRowCountExec given {} inputs (it is a leaf)",
                inputs.len()
            ))),
            tag => Err(payload::corrupt(format!("unknown node tag {tag}"))),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DFResult<()> {
        let mut writer = Writer::new();
        writer.u8(FORMAT);
        if let Some(count) = node.downcast_ref::<RowCountExec>() {
            writer.u8(ROW_COUNT);
            payload::write_row_count(&mut writer, count)?;
        } else {
            return Err(DataFusionError::NotImplemented(format!(
                "icefloe's codec does not send {} to another process yet{}",
                node.name(),
                match node.name() {
                    "DataSourceExec" => {
                        " (an icefloe scan travels only whole: a plain Parquet scan would read \
                         the rows its position deletes remove)"
                    }
                    _ => "",
                }
            )));
        }
        buf.extend_from_slice(&writer.into_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests;
