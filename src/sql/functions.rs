//! Table functions for Iceberg tables outside any catalog, registered by
//! [`crate::sql::register`]:
//!
//! ```sql
//! SELECT * FROM iceberg_scan('<location>' [, <snapshot id> | '<branch or tag>'] [, 'OLD=NEW[,OLD2=NEW2]'])
//! SELECT * FROM iceberg_incremental('<location>', <from snapshot id, exclusive>
//!                                   [, <to snapshot id> | '<branch>'] [, 'OLD=NEW[,OLD2=NEW2]'])
//! SELECT * FROM iceberg_metadata('<location>', '<relation>'
//!                                [, <snapshot id> | '<branch or tag>'] [, 'OLD=NEW[,OLD2=NEW2]'])
//! ```
//!
//! `<location>` is a metadata file or a table directory, read through the session's object
//! stores. The optional last argument relocates a moved table: paths under `OLD` are read under
//! `NEW` (several rules separated by commas, as `--relocate` and the `relocate` option of
//! `CREATE EXTERNAL TABLE ... STORED AS ICEBERG`). A string containing `=` in the last position
//! is always read as relocation rules, never as a ref name. `iceberg_incremental` reads the rows
//! appended after `from` up to `to` (default: the current snapshot), see
//! [`IcebergTableProvider::incremental`]. `iceberg_metadata` reads a metadata table
//! (`snapshots`, `files`, ...: [`MetadataTableKind`]); a version applies to the per-snapshot ones.
//!
//! DataFusion calls table functions synchronously while planning, and loading a table is
//! asynchronous. Inside a multi-threaded Tokio runtime (the usual case, and the CLI's) the load
//! runs on the calling worker through `block_in_place`, so it uses the session's runtime and does
//! not stall the other workers. Anywhere else (a current-thread runtime, where `block_in_place`
//! is not allowed, or no runtime) it runs on a scoped helper thread with its own current-thread
//! runtime, and the call waits for it.

use std::sync::Arc;

use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{ScalarValue, plan_err};
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::logical_expr::Expr;

use crate::io::{FileIO, Relocation, StorageProperties};
use crate::metadata_tables::{IcebergMetadataTable, MetadataTableKind};
use crate::provider::IcebergTableProvider;
use crate::session::block_on;
use crate::session::refs::selector_for_name;
use crate::spec::{SnapshotSelector, TableMetadata};
use crate::table::Table;

const SCAN_USAGE: &str =
    "iceberg_scan('<location>' [, <snapshot id> | '<branch or tag>'] [, 'OLD=NEW[,...]'])";
const METADATA_USAGE: &str = "iceberg_metadata('<location>', '<relation>' \
     [, <snapshot id> | '<branch or tag>'] [, 'OLD=NEW[,...]'])";
const INCREMENTAL_USAGE: &str = "iceberg_incremental('<location>', <from snapshot id> \
     [, <to snapshot id> | '<branch>'] [, 'OLD=NEW[,...]'])";

/// `iceberg_scan(...)`: one state of a table (see the module docs).
#[derive(Debug, Default, Clone, Copy)]
pub struct IcebergScanFunction;

/// `iceberg_incremental(...)`: the rows appended between two snapshots (see the module docs).
#[derive(Debug, Default, Clone, Copy)]
pub struct IcebergIncrementalFunction;

impl TableFunctionImpl for IcebergScanFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DFResult<Arc<dyn TableProvider>> {
        let call = Call::new(args.exprs(), 1, 1, SCAN_USAGE)?;
        let location = call.location()?;
        let provider = (|| {
            let version = call.values.get(1).map(Version::new).transpose()?;
            let table = load(args.session(), &location, call.relocation()?)?;
            let selector = Version::selector(version.as_ref(), table.metadata());
            Ok(IcebergTableProvider::try_new(table, selector)?)
        })();
        named(provider, &format!("iceberg_scan('{location}')"))
    }
}

impl TableFunctionImpl for IcebergIncrementalFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DFResult<Arc<dyn TableProvider>> {
        let call = Call::new(args.exprs(), 2, 1, INCREMENTAL_USAGE)?;
        let location = call.location()?;
        let provider = (|| {
            let from = snapshot_id(&call.values[1])?;
            let to = call.values.get(2).map(Version::new).transpose()?;
            let table = load(args.session(), &location, call.relocation()?)?;
            let to = Version::selector(to.as_ref(), table.metadata());
            Ok(IcebergTableProvider::incremental(table, from, to)?)
        })();
        named(provider, &format!("iceberg_incremental('{location}')"))
    }
}

/// `iceberg_metadata(...)`: a metadata table of a table (see the module docs).
#[derive(Debug, Default, Clone, Copy)]
pub struct IcebergMetadataFunction;

impl TableFunctionImpl for IcebergMetadataFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DFResult<Arc<dyn TableProvider>> {
        let call = Call::new(args.exprs(), 2, 1, METADATA_USAGE)?;
        let location = call.location()?;
        let provider = (|| {
            let kind = relation(&call.values[1])?;
            let version = call.values.get(2).map(Version::new).transpose()?;
            let table = load(args.session(), &location, call.relocation()?)?;
            let selector = Version::selector(version.as_ref(), table.metadata());
            Ok(IcebergMetadataTable::try_new(table, kind, selector)?)
        })();
        named(provider, &format!("iceberg_metadata('{location}')"))
    }
}

/// A relation name argument.
fn relation(value: &ScalarValue) -> DFResult<MetadataTableKind> {
    if let Some(kind) = string(value).and_then(MetadataTableKind::parse) {
        return Ok(kind);
    }
    let names: Vec<_> = MetadataTableKind::ALL.iter().map(|k| k.name()).collect();
    plan_err!(
        "{value} is not a metadata table; one of: {}",
        names.join(", ")
    )
}

/// The provider, or the error with the call (and so the location) named.
fn named<T: TableProvider + 'static>(
    provider: DFResult<T>,
    call: &str,
) -> DFResult<Arc<dyn TableProvider>> {
    match provider {
        Ok(provider) => Ok(Arc::new(provider)),
        Err(e) => Err(e.context(call.to_string())),
    }
}

/// A table function's arguments, folded to values, with the trailing relocation rules split off.
struct Call {
    values: Vec<ScalarValue>,
    relocation: Option<String>,
}

impl Call {
    /// `required` leading arguments, then up to `optional` more, then optional relocation rules.
    fn new(exprs: &[Expr], required: usize, optional: usize, usage: &str) -> DFResult<Self> {
        let mut values = exprs
            .iter()
            .map(|e| match e {
                Expr::Literal(value, _) => Ok(value.clone()),
                other => plan_err!("{usage}: the argument {other} is not a constant"),
            })
            .collect::<DFResult<Vec<_>>>()?;
        let relocation = match values.last().and_then(string) {
            Some(rules) if values.len() > required && rules.contains('=') => {
                let rules = rules.to_string();
                values.pop();
                Some(rules)
            }
            _ => None,
        };
        if values.len() < required || values.len() > required + optional {
            return plan_err!("usage: {usage}");
        }
        Ok(Self { values, relocation })
    }

    fn location(&self) -> DFResult<String> {
        match self.values.first().and_then(string) {
            Some(location) => Ok(location.to_string()),
            None => plan_err!("the table location must be a string"),
        }
    }

    fn relocation(&self) -> DFResult<Relocation> {
        let rules = self.relocation.as_deref().unwrap_or_default();
        rules
            .split(',')
            .map(str::trim)
            .filter(|rule| !rule.is_empty())
            .try_fold(Relocation::new(), |relocation, rule| {
                relocation.parse_rule(rule).map_err(DataFusionError::from)
            })
    }
}

fn string(value: &ScalarValue) -> Option<&str> {
    match value {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(s),
        _ => None,
    }
}

/// An integer, or a string of digits, as a snapshot id.
fn snapshot_id(value: &ScalarValue) -> DFResult<i64> {
    let id = match string(value) {
        Some(s) => s.trim().parse().ok(),
        None => match value.cast_to(&datafusion::arrow::datatypes::DataType::Int64) {
            Ok(ScalarValue::Int64(id)) if value.data_type().is_integer() => id,
            _ => None,
        },
    };
    id.map_or_else(|| plan_err!("{value} is not a snapshot id"), Ok)
}

/// A version argument: a snapshot id (integers) or a ref name (strings).
enum Version {
    SnapshotId(i64),
    Name(String),
}

impl Version {
    fn new(value: &ScalarValue) -> DFResult<Self> {
        match string(value) {
            Some(name) => Ok(Self::Name(name.to_string())),
            None if value.data_type().is_integer() => snapshot_id(value).map(Self::SnapshotId),
            None => plan_err!("{value} must be a snapshot id or a ref name"),
        }
    }

    /// The state to read; the current one without a version (names: see [`selector_for_name`]).
    fn selector(version: Option<&Self>, metadata: &TableMetadata) -> SnapshotSelector {
        match version {
            None => SnapshotSelector::Current,
            Some(Self::SnapshotId(id)) => SnapshotSelector::SnapshotId(*id),
            Some(Self::Name(name)) => selector_for_name(metadata, name),
        }
    }
}

/// Loads the table at `location` through the session's object stores, from synchronous code.
fn load(session: &dyn Session, location: &str, relocation: Relocation) -> DFResult<Table> {
    let io = FileIO::new(Arc::clone(session.runtime_env()), relocation)
        .with_storage(StorageProperties::of_session(session.config()));
    let location = location.to_string();
    Ok(block_on(async move { Table::load(io, &location).await })??)
}

/// Runs `future` to completion from synchronous code (see the module docs for where).
#[cfg(test)]
#[path = "functions_tests.rs"]
mod tests;
