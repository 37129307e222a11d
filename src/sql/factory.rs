//! `CREATE EXTERNAL TABLE ... STORED AS ICEBERG`: a DataFusion `TableProviderFactory` that opens
//! an existing Iceberg table.
//!
//! | option | meaning |
//! |---|---|
//! | `relocate` | `OLD=NEW[,OLD2=NEW2...]`: read paths under OLD from NEW |
//! | `snapshot-id` | read this snapshot instead of the current one |

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::logical_expr::CreateExternalTable;

use crate::error::Error;
use crate::io::{FileIO, Relocation};
use crate::provider::IcebergTableProvider;
use crate::spec::SnapshotSelector;
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
        let snapshot_id = option(cmd, "snapshot-id")
            .map(|s| {
                s.trim().parse::<i64>().map_err(|_| {
                    Error::InvalidArgument(format!("snapshot-id '{s}' is not a snapshot id"))
                })
            })
            .transpose()?;
        let io = FileIO::new(Arc::clone(state.runtime_env()), relocation);
        let table = Table::load(io, location).await?;
        let selector = snapshot_id.map_or(SnapshotSelector::Current, SnapshotSelector::SnapshotId);
        let provider = IcebergTableProvider::try_new(table, selector)?;
        if !cmd.schema.fields().is_empty() {
            return Err(DataFusionError::Plan(
                "an Iceberg table brings its own schema: leave the column list out".to_string(),
            ));
        }
        Ok(Arc::new(provider))
    }
}

/// An option given as `key` or `format.key` (DataFusion prefixes keys without a dot).
fn option<'a>(cmd: &'a CreateExternalTable, key: &str) -> Option<&'a String> {
    cmd.options
        .get(key)
        .or_else(|| cmd.options.get(&format!("format.{key}")))
}
