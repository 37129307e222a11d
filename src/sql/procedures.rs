//! Maintenance as table functions, usable from any DataFusion session after
//! [`crate::sql::register`]:
//!
//! ```sql
//! SELECT * FROM iceberg_expire_snapshots('<table>' [, <older than: epoch ms | 'ISO-8601'>]
//!                                        [, <retain last>] [, <dry run: true | false>])
//! SELECT * FROM iceberg_rollback_to_snapshot('<table>', <snapshot id>)
//! ```
//!
//! `<table>` is `namespace.table` of the session's default catalog when that is an Iceberg
//! catalog holding it, otherwise a table directory. The work happens when the result is read
//! (planning or `EXPLAIN` changes nothing); an expiration returns one row per thing it removed
//! (`kind`: `snapshot`, `ref` or `file`; `name`), a rollback the previous and the current
//! snapshot ids.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::streaming::StreamingTable;
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{ScalarValue, plan_err};
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::TaskContext;
use datafusion::execution::session_state::SessionState;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use futures::future::BoxFuture;
use futures::stream;

use crate::catalog::datafusion::IcebergCatalogs;
use crate::io::{FileIO, Relocation};
use crate::manage::{ExpireSnapshots, SnapshotManager};
use crate::spec::selection::parse_timestamp_ms;
use crate::write::WriteTarget;

const EXPIRE_USAGE: &str = "iceberg_expire_snapshots('<table>' [, <older than>] \
     [, <retain last>] [, <dry run>])";
const ROLLBACK_USAGE: &str = "iceberg_rollback_to_snapshot('<table>', <snapshot id>)";

/// `iceberg_expire_snapshots(...)` (see the module docs).
#[derive(Debug, Default, Clone, Copy)]
pub struct IcebergExpireSnapshotsFunction;

/// `iceberg_rollback_to_snapshot(...)` (see the module docs).
#[derive(Debug, Default, Clone, Copy)]
pub struct IcebergRollbackFunction;

impl TableFunctionImpl for IcebergExpireSnapshotsFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DFResult<Arc<dyn TableProvider>> {
        let values = literals(args.exprs(), 1, 4, EXPIRE_USAGE)?;
        let manager = manager(args.session(), &values[0], EXPIRE_USAGE)?;
        let mut options = ExpireSnapshots::default();
        if let Some(value) = values.get(1).filter(|v| !v.is_null()) {
            options.older_than_ms = Some(timestamp(value)?);
        }
        if let Some(value) = values.get(2).filter(|v| !v.is_null()) {
            options.retain_last = Some(
                integer(value, "retain last")?
                    .try_into()
                    .map_err(|_| DataFusionError::Plan("retain last is out of range".into()))?,
            );
        }
        if let Some(value) = values.get(3) {
            options.dry_run = match value {
                ScalarValue::Boolean(Some(b)) => *b,
                other => return plan_err!("dry run must be true or false, got {other}"),
            };
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("kind", DataType::Utf8, false),
            Field::new("name", DataType::Utf8, false),
        ]));
        let run_schema = Arc::clone(&schema);
        lazy(schema, move || {
            let (manager, options, schema) =
                (manager.clone(), options.clone(), Arc::clone(&run_schema));
            Box::pin(async move {
                let done = manager.expire_snapshots(&options).await?;
                let mut kinds = Vec::new();
                let mut names = Vec::new();
                for id in &done.expired {
                    kinds.push("snapshot");
                    names.push(id.to_string());
                }
                for name in &done.removed_refs {
                    kinds.push("ref");
                    names.push(name.clone());
                }
                for file in &done.deleted_files {
                    kinds.push("file");
                    names.push(file.clone());
                }
                let columns: Vec<ArrayRef> = vec![
                    Arc::new(StringArray::from(kinds)),
                    Arc::new(StringArray::from(names)),
                ];
                Ok(RecordBatch::try_new(schema, columns)?)
            })
        })
    }
}

impl TableFunctionImpl for IcebergRollbackFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DFResult<Arc<dyn TableProvider>> {
        let values = literals(args.exprs(), 2, 2, ROLLBACK_USAGE)?;
        let manager = manager(args.session(), &values[0], ROLLBACK_USAGE)?;
        let snapshot_id = integer(&values[1], "snapshot id")?;
        let schema = Arc::new(Schema::new(vec![
            Field::new("previous_snapshot_id", DataType::Int64, true),
            Field::new("current_snapshot_id", DataType::Int64, true),
        ]));
        let run_schema = Arc::clone(&schema);
        lazy(schema, move || {
            let (manager, schema) = (manager.clone(), Arc::clone(&run_schema));
            Box::pin(async move {
                let previous = manager.current_snapshot_id().await?;
                let table = manager.rollback_to_snapshot(snapshot_id).await?;
                let current = table.metadata().current_snapshot_id;
                let columns: Vec<ArrayRef> = vec![
                    Arc::new(Int64Array::from(vec![previous])),
                    Arc::new(Int64Array::from(vec![current])),
                ];
                Ok(RecordBatch::try_new(schema, columns)?)
            })
        })
    }
}

/// The work of a call, run once per read of its result.
type Work = dyn Fn() -> BoxFuture<'static, DFResult<RecordBatch>> + Send + Sync;

/// A one-partition table whose only batch is what `work` returns when it is read.
fn lazy(
    schema: SchemaRef,
    work: impl Fn() -> BoxFuture<'static, DFResult<RecordBatch>> + Send + Sync + 'static,
) -> DFResult<Arc<dyn TableProvider>> {
    let partition = Lazy {
        schema: Arc::clone(&schema),
        work: Arc::new(work),
    };
    Ok(Arc::new(StreamingTable::try_new(
        schema,
        vec![Arc::new(partition)],
    )?))
}

struct Lazy {
    schema: SchemaRef,
    work: Arc<Work>,
}

impl std::fmt::Debug for Lazy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IcebergProcedure").finish_non_exhaustive()
    }
}

impl PartitionStream for Lazy {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let work = (self.work)();
        let batches = stream::once(work);
        Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            batches,
        ))
    }
}

/// The manager of the table a call names: `namespace.table` of the default catalog when it is
/// an Iceberg catalog that has it, else a table directory.
fn manager(session: &dyn Session, value: &ScalarValue, usage: &str) -> DFResult<SnapshotManager> {
    let Some(name) = string(value) else {
        return plan_err!("the table must be a string: {usage}");
    };
    let io = FileIO::new(Arc::clone(session.runtime_env()), Relocation::default());
    if let Some(state) = session.as_any().downcast_ref::<SessionState>() {
        let default = &state.config_options().catalog.default_catalog;
        if let (Some(catalog), Some((namespace, table))) = (
            IcebergCatalogs::lookup(state, default),
            name.rsplit_once('.'),
        ) && catalog.metadata_location(namespace, table)?.is_some()
        {
            let io = catalog.io().clone();
            return Ok(SnapshotManager::new(
                io,
                WriteTarget::catalog(catalog, namespace, table),
            ));
        }
    }
    Ok(SnapshotManager::new(io, WriteTarget::directory(name)))
}

/// The arguments as literals: at least `required`, at most `most`.
fn literals(
    exprs: &[Expr],
    required: usize,
    most: usize,
    usage: &str,
) -> DFResult<Vec<ScalarValue>> {
    if exprs.len() < required || exprs.len() > most {
        return plan_err!("usage: {usage}");
    }
    exprs
        .iter()
        .map(|e| match e {
            Expr::Literal(value, _) => Ok(value.clone()),
            other => plan_err!("arguments must be literals, got {other}: {usage}"),
        })
        .collect()
}

fn string(value: &ScalarValue) -> Option<&str> {
    match value {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::Utf8View(Some(s))
        | ScalarValue::LargeUtf8(Some(s)) => Some(s),
        _ => None,
    }
}

fn integer(value: &ScalarValue, what: &str) -> DFResult<i64> {
    match value.cast_to(&DataType::Int64) {
        Ok(ScalarValue::Int64(Some(n))) if !matches!(value, ScalarValue::Utf8(_)) => Ok(n),
        _ => plan_err!("{what} must be an integer, got {value}"),
    }
}

/// Epoch milliseconds, an ISO-8601 string, or a timestamp literal.
fn timestamp(value: &ScalarValue) -> DFResult<i64> {
    if let Some(text) = string(value) {
        return Ok(parse_timestamp_ms(text)?);
    }
    match value.cast_to(&DataType::Timestamp(
        datafusion::arrow::datatypes::TimeUnit::Millisecond,
        None,
    )) {
        Ok(ScalarValue::TimestampMillisecond(Some(ms), _)) => Ok(ms),
        _ => plan_err!("older than must be epoch milliseconds or a timestamp, got {value}"),
    }
}

#[cfg(test)]
#[path = "procedures_tests.rs"]
mod tests;
