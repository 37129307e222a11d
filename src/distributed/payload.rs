//! The bytes of icefloe's plan nodes ([`super::IcefloeCodec`]): a small writer and a reader
//! that refuses truncated or malformed input with an error naming what it was reading.

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::datatypes::Schema as ArrowSchema;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion_proto::protobuf;
use prost::Message;

use crate::error::Error;
use crate::scan::count::{CountSource, RowCountExec};
use crate::scan::plan::PlanStats;

/// An error about plan bytes that cannot be read.
pub(super) fn corrupt(reason: impl Into<String>) -> DataFusionError {
    Error::corrupt("an icefloe plan node's bytes", reason.into()).into()
}

/// Appends little-endian integers and length-prefixed byte strings.
pub(super) struct Writer(Vec<u8>);

impl Writer {
    pub(super) fn new() -> Self {
        Self(Vec::new())
    }

    pub(super) fn u8(&mut self, value: u8) {
        self.0.push(value);
    }

    pub(super) fn u64(&mut self, value: u64) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    pub(super) fn bytes(&mut self, value: &[u8]) {
        self.u64(value.len() as u64);
        self.0.extend_from_slice(value);
    }

    pub(super) fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

/// Reads what [`Writer`] wrote; every read names what it reads for its error.
pub(super) struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Self(bytes)
    }

    fn take(&mut self, n: usize, what: &str) -> DFResult<&'a [u8]> {
        if self.0.len() < n {
            return Err(corrupt(format!(
                "truncated: {what} needs {n} bytes, {} are left",
                self.0.len()
            )));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    pub(super) fn u8(&mut self, what: &str) -> DFResult<u8> {
        Ok(self.take(1, what)?[0])
    }

    pub(super) fn u64(&mut self, what: &str) -> DFResult<u64> {
        let bytes = self.take(8, what)?;
        Ok(u64::from_le_bytes(bytes.try_into().unwrap_or_default()))
    }

    pub(super) fn usize(&mut self, what: &str) -> DFResult<usize> {
        let value = self.u64(what)?;
        usize::try_from(value).map_err(|_| corrupt(format!("{what} {value} is too large")))
    }

    pub(super) fn bytes(&mut self, what: &str) -> DFResult<&'a [u8]> {
        let n = self.usize(what)?;
        self.take(n, what)
    }

    /// Fails unless every byte was read.
    pub(super) fn finish(self, what: &str) -> DFResult<()> {
        match self.0.is_empty() {
            true => Ok(()),
            false => Err(corrupt(format!(
                "{} bytes left over after {what}",
                self.0.len()
            ))),
        }
    }
}

fn write_schema(writer: &mut Writer, schema: &ArrowSchema) -> DFResult<()> {
    let proto = protobuf::Schema::try_from(schema)?;
    writer.bytes(&proto.encode_to_vec());
    Ok(())
}

fn read_schema(reader: &mut Reader<'_>) -> DFResult<ArrowSchema> {
    let bytes = reader.bytes("the schema")?;
    let proto = protobuf::Schema::decode(bytes).map_err(|e| corrupt(format!("the schema: {e}")))?;
    ArrowSchema::try_from(&proto).map_err(|e| corrupt(format!("the schema: {e}")))
}

fn write_stats(writer: &mut Writer, stats: &PlanStats) {
    for count in [
        stats.manifests_total,
        stats.manifests_pruned,
        stats.data_files_total,
        stats.data_files_pruned_by_partition,
        stats.data_files_pruned_by_metrics,
        stats.data_files_scanned,
        stats.delete_files_matched,
    ] {
        writer.u64(count as u64);
    }
    writer.u64(stats.bytes_scanned);
    writer.u64(u64::try_from(stats.planning_time.as_nanos()).unwrap_or(u64::MAX));
}

fn read_stats(reader: &mut Reader<'_>) -> DFResult<PlanStats> {
    Ok(PlanStats {
        manifests_total: reader.usize("manifests_total")?,
        manifests_pruned: reader.usize("manifests_pruned")?,
        data_files_total: reader.usize("data_files_total")?,
        data_files_pruned_by_partition: reader.usize("data_files_pruned_by_partition")?,
        data_files_pruned_by_metrics: reader.usize("data_files_pruned_by_metrics")?,
        data_files_scanned: reader.usize("data_files_scanned")?,
        delete_files_matched: reader.usize("delete_files_matched")?,
        bytes_scanned: reader.u64("bytes_scanned")?,
        planning_time: Duration::from_nanos(reader.u64("planning_time")?),
    })
}

/// An `IcebergRowCountExec`: rows, the count's source, the planning counts, the schema.
pub(super) fn write_row_count(writer: &mut Writer, node: &RowCountExec) -> DFResult<()> {
    let (rows, schema, stats, source) = node.parts();
    writer.u64(rows as u64);
    writer.u8(match source {
        CountSource::ManifestList => 0,
        CountSource::Pruned => 1,
    });
    write_stats(writer, stats);
    write_schema(writer, schema)
}

pub(super) fn read_row_count(mut reader: Reader<'_>) -> DFResult<RowCountExec> {
    let rows = reader.usize("the row count")?;
    let source = match reader.u8("the count's source")? {
        0 => CountSource::ManifestList,
        1 => CountSource::Pruned,
        other => return Err(corrupt(format!("unknown count source {other}"))),
    };
    let stats = read_stats(&mut reader)?;
    let schema = read_schema(&mut reader)?;
    reader.finish("an IcebergRowCountExec")?;
    Ok(RowCountExec::new(Arc::new(schema), rows, &stats, source))
}
