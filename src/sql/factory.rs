//! `CREATE EXTERNAL TABLE ... STORED AS ICEBERG`: a DataFusion `TableProviderFactory` that opens
//! an existing Iceberg table, or creates one.
//!
//! Without a column list the table at `LOCATION` (a table directory or metadata file) is
//! opened. With a column list and no table at `LOCATION`, a table directory is created there
//! (`metadata/v1.metadata.json` and `version-hint.text`, see [`TableCreation`]): DataFusion
//! column types become Iceberg types ([`crate::write::arrow_to_iceberg_type`]; SQL `TIMESTAMP`
//! is `timestamp`, `TIMESTAMP WITH TIME ZONE` `timestamptz`, microseconds before v3;
//! [`crate::sql::register`] gives a session without a time zone UTC, so that DataFusion types
//! `TIMESTAMP WITH TIME ZONE` with one), `NOT NULL`
//! columns are required, field ids are assigned as Java and PyIceberg assign them. A column
//! list for a location that already holds a table is an error (the table brings its schema).
//!
//! ```sql
//! CREATE EXTERNAL TABLE orders (order_id BIGINT NOT NULL, order_ts TIMESTAMP WITH TIME ZONE,
//!   category VARCHAR, amount DECIMAL(10, 2))
//! STORED AS ICEBERG LOCATION '/warehouse/db/orders'
//! PARTITIONED BY (category)
//! OPTIONS ('partitioning' 'day(order_ts), bucket(16, order_id)', 'format-version' '3',
//!          'write.target-file-size-bytes' '134217728');
//! ```
//!
//! | option | meaning |
//! |---|---|
//! | `relocate` | `OLD=NEW[,OLD2=NEW2...]`: read paths under OLD from NEW |
//! | `snapshot-id` | read this snapshot (with its schema) instead of the current one |
//! | `ref` | read a branch (current schema) or a tag (its snapshot's schema) by name |
//! | `as-of-timestamp` | read the snapshot current at that instant (with its schema): epoch milliseconds or ISO-8601 (`2024-01-01 10:00:00`, no zone = UTC) |
//! | `partitioning` | creating only: the partition spec as comma-separated terms, after the `PARTITIONED BY` columns: `col` / `identity(col)`, `bucket(N, col)`, `truncate(W, col)`, `year(col)`, `month(col)`, `day(col)`, `hour(col)`, `void(col)` ([`crate::write::parse_partition_term`]) |
//! | `format-version` | creating only: 1, 2 (the default) or 3 |
//! | `s3.*`, `gcs.*`, `adls.*`, `client.*` | how to reach the store (`s3.endpoint`, `s3.access-key-id`, ...: Iceberg's FileIO properties, see `icefloe::io::StorageProperties`), on top of the session's; never recorded in the table |
//! | any other key | creating only: a table property (`write.target-file-size-bytes`, `commit.retry.num-retries`, ...) |
//!
//! `PARTITIONED BY (col, ...)` partitions by identity of those columns. At most one of
//! `snapshot-id`, `ref` and `as-of-timestamp` may be given. An option is never ignored: opening
//! an existing table takes only the options above that read it (a table's properties are its
//! own), and a key that is nearly one of them (`snapshot_id`, `snapshotid`, `partitionning`) is
//! an error with the suggestion, also when creating, where it would otherwise become a
//! property.

#[cfg(test)]
mod tests;

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::logical_expr::CreateExternalTable;

use crate::error::{Error, Result};
use crate::io::{FileIO, Relocation, StorageProperties};
use crate::provider::IcebergTableProvider;
use crate::spec::selection::parse_timestamp_ms;
use crate::spec::{SnapshotSelector, Transform};
use crate::table::Table;
use crate::table::locate::locate_metadata;
use crate::write::{TableCreation, WriteTarget};

/// The options icefloe reads itself; every other option of a created table is a property.
const OWN_OPTIONS: &[&str] = &[
    "relocate",
    "snapshot-id",
    "ref",
    "as-of-timestamp",
    "partitioning",
];

/// The options that read an existing table (the others only shape a new one).
const READ_OPTIONS: &[&str] = &["relocate", "snapshot-id", "ref", "as-of-timestamp"];

/// The storage properties among the options.
fn storage_options(cmd: &CreateExternalTable) -> StorageProperties {
    StorageProperties::from_pairs(cmd.options.iter().filter_map(|(key, value)| {
        let key = key.strip_prefix("format.").unwrap_or(key);
        crate::io::storage::is_file_io_key(key).then(|| (key.to_string(), value.clone()))
    }))
}

/// Refuses an option that would be ignored or misread: any but [`READ_OPTIONS`] when opening
/// an existing table, and, when creating, a key that is nearly an icefloe option (it would
/// silently become a table property).
fn check_options(cmd: &CreateExternalTable, creating: bool) -> Result<()> {
    let own = OWN_OPTIONS.iter().copied().chain(["format-version"]);
    for key in cmd.options.keys() {
        let key = key.strip_prefix("format.").unwrap_or(key);
        if crate::io::storage::is_file_io_key(key) {
            continue;
        }
        if OWN_OPTIONS.contains(&key) || key == "format-version" {
            if !creating && !READ_OPTIONS.contains(&key) {
                return Err(Error::invalid(
                    format_args!("option '{key}'"),
                    "only shapes a new table, and a table exists at LOCATION (its partition \
                     spec and format version are its own)",
                ));
            }
            continue;
        }
        let hint = crate::error::closest(key, own.clone())
            .map(|c| format!(" (did you mean '{c}'?)"))
            .unwrap_or_default();
        if creating && hint.is_empty() {
            continue; // a table property
        }
        let reason = match creating {
            true => format!(
                "looks like a misspelt icefloe option{hint}; as a table property it would do nothing"
            ),
            false => format!(
                "is not an option for opening a table{hint}: the options are {}",
                READ_OPTIONS.join(", ")
            ),
        };
        return Err(Error::invalid(format_args!("option '{key}'"), reason));
    }
    Ok(())
}

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
        let given = cmd.locations.first().ok_or_else(|| {
            DataFusionError::Plan("STORED AS ICEBERG needs a LOCATION".to_string())
        })?;
        // `x/../../y` is `y`: resolve it once, so the table records and is written as `y`.
        let location = &crate::io::normalize_location(given)?;
        let mut relocation = Relocation::new();
        if let Some(rules) = option(cmd, "relocate") {
            for rule in rules.split(',').filter(|r| !r.trim().is_empty()) {
                relocation = relocation.parse_rule(rule.trim())?;
            }
        }
        let columns_given = !cmd.schema.fields().is_empty();
        check_options(cmd, columns_given)?;
        let selector = selector(cmd)?;
        let storage = StorageProperties::of_session(state.config()).merged(&storage_options(cmd));
        let io = FileIO::new(Arc::clone(state.runtime_env()), relocation).with_storage(storage);
        let write_io = io.clone();
        let table = match locate_metadata(&io, location).await {
            Err(Error::NotFound { .. }) if columns_given => {
                creation(cmd)?.create_at(&io, location).await?
            }
            Err(e) => return Err(e.into()),
            Ok(_) if columns_given => {
                return Err(DataFusionError::Plan(format!(
                    "an Iceberg table brings its own schema: leave the column list out \
                     (a table exists at {location})"
                )));
            }
            Ok(_) => Table::load(io, location).await?,
        };
        let current = selector == SnapshotSelector::Current;
        let mut provider = IcebergTableProvider::try_new(table, selector)?;
        if current {
            // INSERT INTO commits to the table directory (a chosen snapshot stays read-only).
            if let Ok(target) = WriteTarget::directory(&write_io, location.as_str()) {
                provider = provider.with_write_target(target);
            }
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
            .map_err(|_| Error::invalid(format_args!("snapshot-id '{s}'"), "is not a snapshot id")),
        [("ref", name)] => Ok(SnapshotSelector::Ref(name.trim().to_string())),
        [(_, ts)] => parse_timestamp_ms(ts)
            .map(SnapshotSelector::AsOfTimestamp)
            .map_err(|e| e.within("as-of-timestamp")),
        several => {
            let keys: Vec<&str> = several.iter().map(|(key, _)| *key).collect();
            Err(Error::invalid(
                format_args!("options {}", keys.join(", ")),
                "give at most one of 'snapshot-id', 'ref' and 'as-of-timestamp'",
            ))
        }
    }
}

/// The table a column list describes: its columns, `PARTITIONED BY` columns (identity), the
/// `partitioning` option's terms, `format-version` and the other options as properties.
fn creation(cmd: &CreateExternalTable) -> Result<TableCreation> {
    let mut creation = TableCreation::from_arrow(Arc::new(cmd.schema.as_arrow().clone()));
    for column in &cmd.table_partition_cols {
        creation = creation.with_partition_field(column, Transform::Identity);
    }
    if let Some(terms) = option(cmd, "partitioning") {
        creation = creation.with_partitioning(terms)?;
    }
    let properties = cmd.options.iter().filter_map(|(key, value)| {
        let key = key.strip_prefix("format.").unwrap_or(key);
        (!OWN_OPTIONS.contains(&key) && !crate::io::storage::is_file_io_key(key))
            .then(|| (key.to_string(), value.clone()))
    });
    Ok(creation.with_properties(properties))
}

/// An option given as `key` or `format.key` (DataFusion prefixes keys without a dot).
fn option<'a>(cmd: &'a CreateExternalTable, key: &str) -> Option<&'a String> {
    cmd.options
        .get(key)
        .or_else(|| cmd.options.get(&format!("format.{key}")))
}
