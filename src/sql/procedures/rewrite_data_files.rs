//! `iceberg_rewrite_data_files('<table>' [, 'key=value' ...])`: compaction
//! ([`crate::maintenance::rewrite_data_files`]) as a table function, with Spark's result row.
//!
//! The options after the table are `key=value` strings ([`rewrite_options`], which `icefloe
//! rewrite-data-files` shares): `strategy=binpack|sort`, `sort-order=<sort items as WRITE
//! ORDERED BY takes them>` (the `sort` strategy in the given order), `where=<SQL condition on
//! the table's columns>` (only files that may hold matching rows, rewritten whole; a condition
//! that cannot be turned into an Iceberg filter exactly is refused), and every option of
//! [`RewriteDataFiles::with_option`] by Iceberg Java's name.
//!
//! Like the other procedures it acts when its result is read. The compaction runs in a task of
//! its own: a query dropped while it runs (Ctrl-C in the shell) cancels it through its
//! [`Cancel`], which deletes the files written and commits nothing more.

use std::sync::Arc;

use datafusion::arrow::array::Int64Builder;
use datafusion::arrow::array::{ArrayRef, Int32Array, Int64Array, ListBuilder, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{DFSchema, plan_err};
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::session_state::SessionState;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::optimizer::simplify_expressions::ExprSimplifier;

use super::{lazy, literals, manager, string};
use crate::error::{Error, Result};
use crate::expr::Predicate;
use crate::expr::convert::convert;
use crate::maintenance::{
    Cancel, RewriteDataFiles, RewriteDataFilesResult, Strategy, rewrite_data_files,
};
use crate::spec::TableMetadata;
use crate::to_arrow::schema_to_arrow;
use crate::write::WriteTarget;

/// The SQL name of the procedure.
pub(crate) const NAME: &str = "iceberg_rewrite_data_files";

const USAGE: &str = "iceberg_rewrite_data_files('<table>' [, 'key=value' ...]), keys: strategy, \
     sort-order, where, and Iceberg's rewrite options (min-input-files, target-file-size-bytes, \
     ...)";

/// The most `key=value` arguments a call takes.
const MAX_OPTIONS: usize = 100;

/// `iceberg_rewrite_data_files(...)` (see the module docs).
#[derive(Debug, Default, Clone, Copy)]
pub struct IcebergRewriteDataFilesFunction;

impl TableFunctionImpl for IcebergRewriteDataFilesFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DFResult<Arc<dyn TableProvider>> {
        let values = literals(args.exprs(), 1, MAX_OPTIONS + 1, USAGE)?;
        let manager = manager(args.session(), &values[0], USAGE)?;
        let pairs = values[1..]
            .iter()
            .map(|value| match string(value) {
                Some(text) => option_pair(text),
                None => plan_err!("options must be 'key=value' strings, got {value}: {USAGE}"),
            })
            .collect::<DFResult<Vec<_>>>()?;
        let Some(state) = args.session().as_any().downcast_ref::<SessionState>() else {
            return plan_err!("{NAME} needs a DataFusion SessionState");
        };
        // The options are checked now, on the table as it is; they apply when the result is read.
        let table = super::block_on(manager.table())??;
        rewrite_options(state, table.metadata(), &pairs)?;
        let state = Arc::new(state.clone());
        let schema = result_schema();
        let run_schema = Arc::clone(&schema);
        lazy(schema, move || {
            let (target, state, pairs) =
                (manager.target().clone(), Arc::clone(&state), pairs.clone());
            let schema = Arc::clone(&run_schema);
            Box::pin(async move { result_batch(schema, &run(target, state, pairs).await?) })
        })
    }
}

/// Compacts the table `target` names with the options of `pairs`, in a task of its own that
/// is cancelled when this future is dropped.
async fn run(
    target: WriteTarget,
    state: Arc<SessionState>,
    pairs: Vec<(String, String)>,
) -> DFResult<RewriteDataFilesResult> {
    let cancel = Cancel::new();
    let _on_drop = CancelOnDrop(cancel.clone());
    let job = tokio::spawn(async move {
        let table = target.load().await?;
        let options = rewrite_options(&state, table.metadata(), &pairs)?;
        Ok::<_, DataFusionError>(rewrite_data_files(&target, &options.with_cancel(cancel)).await?)
    });
    job.await
        .map_err(|e| DataFusionError::External(Box::new(e)))?
}

/// Cancels the compaction when the query reading its result goes away before it ends.
struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// `key=value` as a pair (the key trimmed; the value is everything after the first `=`).
fn option_pair(text: &str) -> DFResult<(String, String)> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_string(), value.trim().to_string()))
        }
        _ => plan_err!("rewrite option '{text}' is not key=value"),
    }
}

/// The options of a compaction of the table `metadata` describes from `key=value` pairs (see
/// the module docs); `state` parses `where` and `sort-order`. As Spark's procedure: a
/// `sort-order` makes the strategy `sort`, and with `strategy=binpack` it is refused.
///
/// Errors: [`Error::InvalidArgument`] naming the option.
pub(crate) fn rewrite_options(
    state: &SessionState,
    metadata: &TableMetadata,
    pairs: &[(String, String)],
) -> Result<RewriteDataFiles> {
    let mut options = RewriteDataFiles::new();
    let (mut strategy, mut order) = (None, None);
    for (key, value) in pairs {
        match key.as_str() {
            "strategy" => strategy = Some(value.to_ascii_lowercase()),
            "sort-order" => order = Some(crate::sql::parse_sort_order(state, value)?),
            "where" => options = options.with_filter(where_predicate(state, metadata, value)?),
            _ => options = options.with_option(key, value)?,
        }
    }
    let refused = |value: &str, why: &str| {
        Error::invalid(format_args!("rewrite option strategy = '{value}'"), why)
    };
    let strategy = match (strategy.as_deref(), order) {
        (None | Some("binpack"), None) => Strategy::BinPack,
        (None | Some("sort"), order @ Some(_)) | (Some("sort"), order @ None) => {
            Strategy::Sort(order)
        }
        (Some(value @ "binpack"), Some(_)) => {
            return Err(refused(value, "a sort-order takes strategy sort"));
        }
        (Some(value @ "zorder"), _) => {
            return Err(refused(value, "z-order is not supported (binpack or sort)"));
        }
        (Some(value), _) => return Err(refused(value, "expected binpack or sort")),
    };
    Ok(options.with_strategy(strategy))
}

/// The `where` condition `text` over the current schema of `metadata`, as an Iceberg filter:
/// planned and simplified by DataFusion, then converted exactly or refused.
fn where_predicate(
    state: &SessionState,
    metadata: &TableMetadata,
    text: &str,
) -> Result<Predicate> {
    let refused = |why: &dyn std::fmt::Display| {
        Error::invalid(format_args!("rewrite option where = '{text}'"), why)
    };
    let schema = metadata.current_schema();
    let df_schema = DFSchema::try_from(schema_to_arrow(schema)?).map_err(|e| refused(&e))?;
    let df_schema = Arc::new(df_schema);
    let planned = state
        .create_logical_expr(text, &df_schema)
        .map_err(|e| refused(&e))?;
    let simplify = SimplifyContext::builder()
        .with_config_options(Arc::clone(state.config_options()))
        .with_schema(Arc::clone(&df_schema))
        .with_current_time()
        .build();
    let simplifier = ExprSimplifier::new(simplify);
    let expr = simplifier
        .coerce(planned, &df_schema)
        .and_then(|e| simplifier.simplify(e))
        .map_err(|e| refused(&e))?;
    convert(&expr, schema).ok_or_else(|| {
        refused(
            &"cannot be turned into an Iceberg filter exactly (it takes comparisons, IN, IS \
              NULL, LIKE 'prefix%', AND, OR and NOT of top-level columns and constants)",
        )
    })
}

/// Spark's output columns of `rewrite_data_files`, then the snapshots committed.
fn result_schema() -> SchemaRef {
    let item = Arc::new(Field::new("item", DataType::Int64, true));
    Arc::new(Schema::new(vec![
        Field::new("rewritten_data_files_count", DataType::Int32, false),
        Field::new("added_data_files_count", DataType::Int32, false),
        Field::new("rewritten_bytes_count", DataType::Int64, false),
        Field::new("failed_data_files_count", DataType::Int32, false),
        Field::new("removed_delete_files_count", DataType::Int32, false),
        Field::new("snapshot_ids", DataType::List(item), false),
    ]))
}

fn result_batch(schema: SchemaRef, done: &RewriteDataFilesResult) -> DFResult<RecordBatch> {
    let count = |n: usize| -> ArrayRef {
        Arc::new(Int32Array::from(vec![i32::try_from(n).unwrap_or(i32::MAX)]))
    };
    let bytes = i64::try_from(done.rewritten_bytes).unwrap_or(i64::MAX);
    let mut snapshots = ListBuilder::new(Int64Builder::new());
    snapshots.values().append_slice(&done.snapshots);
    snapshots.append(true);
    let columns: Vec<ArrayRef> = vec![
        count(done.rewritten_data_files),
        count(done.added_data_files),
        Arc::new(Int64Array::from(vec![bytes])),
        count(done.failed_data_files),
        count(done.removed_delete_files),
        Arc::new(snapshots.finish()),
    ];
    Ok(RecordBatch::try_new(schema, columns)?)
}
