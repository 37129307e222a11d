//! `CREATE EXTERNAL TABLE ... STORED AS ICEBERG`: a DataFusion `TableProviderFactory` that opens
//! an existing Iceberg table.
//!
//! | option | meaning |
//! |---|---|
//! | `relocate` | `OLD=NEW[,OLD2=NEW2...]`: read paths under OLD from NEW |
//! | `snapshot-id` | read this snapshot (with its schema) instead of the current one |
//! | `ref` | read a branch (current schema) or a tag (its snapshot's schema) by name |
//! | `as-of-timestamp` | read the snapshot current at that instant (with its schema): epoch milliseconds or ISO-8601 (`2024-01-01 10:00:00`, no zone = UTC) |
//!
//! At most one of `snapshot-id`, `ref` and `as-of-timestamp` may be given.

#[cfg(test)]
mod tests;

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::logical_expr::CreateExternalTable;

use crate::error::{Error, Result};
use crate::io::{FileIO, Relocation};
use crate::provider::IcebergTableProvider;
use crate::spec::SnapshotSelector;
use crate::spec::selection::parse_timestamp_ms;
use crate::table::Table;

/// Opens Iceberg tables named by `CREATE EXTERNAL TABLE ... STORED AS ICEBERG LOCATION '...'`.
#[derive(Debug, Default, Clone, Copy)]
pub struct IcebergTableFactory;

#[async_trait]
impl TableProviderFactory for IcebergTableFactory {
    async fn create(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> DFResult<Arc<dyn TableProvider>> {
        let location = cmd.locations.first().ok_or_else(|| {
            DataFusionError::Plan("STORED AS ICEBERG needs a LOCATION".to_string())
        })?;
        let mut relocation = Relocation::new();
        if let Some(rules) = option(cmd, "relocate") {
            for rule in rules.split(',').filter(|r| !r.trim().is_empty()) {
                relocation = relocation.parse_rule(rule.trim())?;
            }
        }
        let selector = selector(cmd)?;
        let io = FileIO::new(Arc::clone(state.runtime_env()), relocation);
        let table = Table::load(io, location).await?;
        let provider = IcebergTableProvider::try_new(table, selector)?;
        if !cmd.schema.fields().is_empty() {
            return Err(DataFusionError::Plan(
                "an Iceberg table brings its own schema: leave the column list out".to_string(),
            ));
        }
        Ok(Arc::new(provider))
    }
}

/// The table state the options name (`snapshot-id`, `ref` or `as-of-timestamp`; at most one).
fn selector(cmd: &CreateExternalTable) -> Result<SnapshotSelector> {
    let given: Vec<(&str, &String)> = ["snapshot-id", "ref", "as-of-timestamp"]
        .into_iter()
        .filter_map(|key| option(cmd, key).map(|value| (key, value)))
        .collect();
    match given.as_slice() {
        [] => Ok(SnapshotSelector::Current),
        [("snapshot-id", s)] => s
            .trim()
            .parse::<i64>()
            .map(SnapshotSelector::SnapshotId)
            .map_err(|_| Error::InvalidArgument(format!("snapshot-id '{s}' is not a snapshot id"))),
        [("ref", name)] => Ok(SnapshotSelector::Ref(name.trim().to_string())),
        [(_, ts)] => parse_timestamp_ms(ts)
            .map(SnapshotSelector::AsOfTimestamp)
            .map_err(|e| match e {
                Error::InvalidArgument(reason) => {
                    Error::InvalidArgument(format!("as-of-timestamp: {reason}"))
                }
                other => other,
            }),
        several => {
            let keys: Vec<&str> = several.iter().map(|(key, _)| *key).collect();
            Err(Error::InvalidArgument(format!(
                "give at most one of 'snapshot-id', 'ref' and 'as-of-timestamp' (got {})",
                keys.join(", ")
            )))
        }
    }
}

/// An option given as `key` or `format.key` (DataFusion prefixes keys without a dot).
fn option<'a>(cmd: &'a CreateExternalTable, key: &str) -> Option<&'a String> {
    cmd.options
        .get(key)
        .or_else(|| cmd.options.get(&format!("format.{key}")))
}
