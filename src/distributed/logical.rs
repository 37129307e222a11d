//! [`IcefloeLogicalCodec`]: icefloe's table providers in logical plans, for runtimes that ship
//! logical plans (Ballista's client sends one to its scheduler, which plans it).
//!
//! A provider travels as the metadata file it read and what it reads of it (snapshot, ref,
//! timestamp, incremental range, metadata relation), with its IO (credentials only when
//! allowed); the receiver loads that same metadata file, so it plans the state the sender saw.
//! A decoded provider is read-only: a catalog connection never travels. Everything that is not
//! icefloe's goes to the wrapped codec.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, Extension, LogicalPlan, ScalarUDF, WindowUDF};
use datafusion_proto::logical_plan::{DefaultLogicalExtensionCodec, LogicalExtensionCodec};

use super::origin::{io_from_wire, io_to_wire, selector_from_wire, selector_to_wire};
use super::{corrupt, wire};
use crate::IcebergTableProvider;
use crate::metadata_tables::{IcebergMetadataTable, MetadataTableKind};
use crate::session::blocking::block_on;
use crate::table::Table;

/// The first byte of a provider's bytes: icefloe's, or the wrapped codec's.
const ICEFLOE: u8 = 1;
const WRAPPED: u8 = 0;

/// A datafusion-proto `LogicalExtensionCodec` for icefloe's table providers, wrapping the
/// codec of the runtime (Ballista's `BallistaLogicalExtensionCodec`) for everything else. Use
/// it on the sender and the receiver.
#[derive(Debug, Clone)]
pub struct IcefloeLogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
    credentials: bool,
}

impl Default for IcefloeLogicalCodec {
    fn default() -> Self {
        Self::wrapping(Arc::new(DefaultLogicalExtensionCodec {}))
    }
}

impl IcefloeLogicalCodec {
    /// icefloe's providers, and `inner` for everything else.
    pub fn wrapping(inner: Arc<dyn LogicalExtensionCodec>) -> Self {
        Self {
            inner,
            credentials: false,
        }
    }

    /// This codec sending the storage credentials tables were opened with too (see
    /// [`super::IcefloeCodec::with_credentials`]).
    pub fn with_credentials(mut self) -> Self {
        self.credentials = true;
        self
    }

    fn encode_provider(&self, provider: &dyn TableProvider) -> DFResult<Option<wire::Provider>> {
        if let Some(table) = provider.downcast_ref::<IcebergTableProvider>() {
            if table.has_row_ids() {
                return Err(DataFusionError::NotImplemented(
                    "DELETE, UPDATE and MERGE on an Iceberg table do not travel in a logical \
                     plan (Ballista): they are planned and committed where the statement is; \
                     run them in a session of this process or on a datafusion-distributed \
                     coordinator"
                        .into(),
                ));
            }
            let loaded = table.table();
            let range = table.incremental_range();
            return Ok(Some(wire::Provider {
                io: Some(io_to_wire(loaded.io(), self.credentials)),
                metadata_location: loaded.metadata_location().to_string(),
                selector: selector_to_wire(table.selector()),
                relation: None,
                incremental_from: range.map(|r| r.from_exclusive),
            }));
        }
        if let Some(relation) = provider.downcast_ref::<IcebergMetadataTable>() {
            let loaded = relation.table();
            return Ok(Some(wire::Provider {
                io: Some(io_to_wire(loaded.io(), self.credentials)),
                metadata_location: loaded.metadata_location().to_string(),
                selector: selector_to_wire(relation.selector()),
                relation: Some(relation.kind().name().to_string()),
                incremental_from: None,
            }));
        }
        Ok(None)
    }

    fn decode_provider(
        &self,
        provider: &wire::Provider,
        ctx: &TaskContext,
    ) -> DFResult<Arc<dyn TableProvider>> {
        let io = io_from_wire(provider.io.as_ref(), ctx)?;
        let location = provider.metadata_location.clone();
        let table = block_on(Table::load_metadata_file(io, location))??;
        let selector = selector_from_wire(provider.selector.as_ref());
        if let Some(name) = &provider.relation {
            let kind = MetadataTableKind::parse(name)
                .ok_or_else(|| corrupt(format!("unknown metadata relation '{name}'")))?;
            return Ok(Arc::new(IcebergMetadataTable::try_new(
                table, kind, selector,
            )?));
        }
        let provider = match provider.incremental_from {
            Some(from) => IcebergTableProvider::incremental(table, from, selector)?,
            None => IcebergTableProvider::try_new(table, selector)?,
        };
        // The table travelled as its metadata file: its catalog, where a commit goes, did not.
        let provider = provider.refusing_writes(
            "writes through a runtime that sends logical plans (Ballista) are not supported: \
             the table travelled without its catalog; run INSERT in a session of this process \
             or on a datafusion-distributed coordinator",
        );
        Ok(Arc::new(provider))
    }
}

impl LogicalExtensionCodec for IcefloeLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> DFResult<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> DFResult<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> DFResult<Arc<dyn TableProvider>> {
        match buf.split_first() {
            Some((&ICEFLOE, rest)) => {
                let provider: wire::Provider = wire::from_bytes(rest)?;
                self.decode_provider(&provider, ctx)
            }
            Some((&WRAPPED, rest)) => self
                .inner
                .try_decode_table_provider(rest, table_ref, schema, ctx),
            _ => Err(corrupt(format!("the table provider of '{table_ref}'"))),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> DFResult<()> {
        match self.encode_provider(node.as_ref())? {
            Some(provider) => {
                buf.push(ICEFLOE);
                wire::to_bytes(&provider, buf);
                Ok(())
            }
            None => {
                let mut inner = Vec::new();
                self.inner
                    .try_encode_table_provider(table_ref, node, &mut inner)?;
                buf.push(WRAPPED);
                buf.extend(inner);
                Ok(())
            }
        }
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> DFResult<Arc<dyn FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> DFResult<()> {
        self.inner.try_encode_file_format(buf, node)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DFResult<Arc<ScalarUDF>> {
        self.inner.try_decode_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DFResult<()> {
        self.inner.try_encode_udf(node, buf)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> DFResult<Arc<AggregateUDF>> {
        self.inner.try_decode_udaf(name, buf)
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DFResult<()> {
        self.inner.try_encode_udaf(node, buf)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> DFResult<Arc<WindowUDF>> {
        self.inner.try_decode_udwf(name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> DFResult<()> {
        self.inner.try_encode_udwf(node, buf)
    }
}
