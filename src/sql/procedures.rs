//! Maintenance as table functions, usable from any DataFusion session after
//! [`crate::sql::register`]:
//!
//! ```sql
//! SELECT * FROM iceberg_expire_snapshots('<table>' [, <older than: epoch ms | 'ISO-8601'>]
//!                                        [, <retain last>] [, <dry run: true | false>])
//! SELECT * FROM iceberg_rollback_to_snapshot('<table>', <snapshot id>)
//! SELECT * FROM iceberg_rewrite_data_files('<table>' [, 'key=value' ...])
//! ```
//!
//! `<table>` is `namespace.table` of the session's default catalog when that is an Iceberg
//! catalog holding it, otherwise a table directory. The work happens when the result is read
//! (planning or `EXPLAIN` changes nothing); an expiration returns one row per thing it removed
//! (`kind`: `snapshot`, `ref` or `file`; `name`), a rollback the previous and the current
//! snapshot ids, a compaction Spark's counts ([`rewrite_data_files`]).

mod rewrite_data_files;

pub use rewrite_data_files::IcebergRewriteDataFilesFunction;
pub(crate) use rewrite_data_files::NAME as REWRITE_DATA_FILES;
#[cfg(feature = "cli")]
pub(crate) use rewrite_data_files::rewrite_options;

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

use crate::catalog::TableIdent;
use crate::io::{FileIO, Relocation, StorageProperties};
use crate::maintenance::{ExpireSnapshots, SnapshotManager};
use crate::session::{IcebergCatalogs, block_on};
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

/// The other maintenance operations as table functions, each returning one row of what it
/// did (`action`, `detail`):
///
/// | function | arguments |
/// |---|---|
/// | `iceberg_create_branch` / `iceberg_create_tag` | `'<table>', '<name>' [, <snapshot id>]` |
/// | `iceberg_drop_ref` | `'<table>', '<name>'` |
/// | `iceberg_fast_forward` | `'<table>', '<branch>', '<to ref>'` |
/// | `iceberg_cherry_pick` | `'<table>', <snapshot id>` |
/// | `iceberg_rewrite_manifests` | `'<table>' [, <target size bytes>]` |
/// | `iceberg_remove_orphan_files` | `'<table>' [, <older than>] [, <dry run>]` |
/// | `iceberg_compute_table_stats` | `'<table>' [, '<column>' ...]` (or one `'a, b'`) |
/// | `iceberg_compute_partition_stats` | `'<table>'` |
/// | `iceberg_rewrite_position_delete_files` | `'<table>' [, 'key=value' ...]` (`min-input-files`, `rewrite-all`) |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcebergProcedure {
    /// `iceberg_create_branch`.
    CreateBranch,
    /// `iceberg_create_tag`.
    CreateTag,
    /// `iceberg_drop_ref`.
    DropRef,
    /// `iceberg_fast_forward`.
    FastForward,
    /// `iceberg_cherry_pick`.
    CherryPick,
    /// `iceberg_rewrite_manifests`.
    RewriteManifests,
    /// `iceberg_remove_orphan_files`.
    RemoveOrphanFiles,
    /// `iceberg_compute_table_stats`: theta sketches of columns into a Puffin statistics file
    /// of the current snapshot (`crate::statistics::compute_table_stats`).
    ComputeTableStats,
    /// `iceberg_compute_partition_stats`: the counts of every partition of the current
    /// snapshot into a partition statistics file (`crate::statistics::compute_partition_stats`).
    ComputePartitionStats,
    /// `iceberg_rewrite_position_delete_files`: position delete files merged per partition
    /// (deletion vectors on v3; `crate::maintenance::rewrite_position_delete_files`).
    RewritePositionDeleteFiles,
}

impl IcebergProcedure {
    /// Every procedure with its SQL name.
    pub const ALL: [(&'static str, IcebergProcedure); 10] = [
        ("iceberg_create_branch", Self::CreateBranch),
        ("iceberg_create_tag", Self::CreateTag),
        ("iceberg_drop_ref", Self::DropRef),
        ("iceberg_fast_forward", Self::FastForward),
        ("iceberg_cherry_pick", Self::CherryPick),
        ("iceberg_rewrite_manifests", Self::RewriteManifests),
        ("iceberg_remove_orphan_files", Self::RemoveOrphanFiles),
        ("iceberg_compute_table_stats", Self::ComputeTableStats),
        (
            "iceberg_compute_partition_stats",
            Self::ComputePartitionStats,
        ),
        (
            "iceberg_rewrite_position_delete_files",
            Self::RewritePositionDeleteFiles,
        ),
    ];

    fn usage(self) -> (&'static str, usize, usize) {
        match self {
            Self::CreateBranch => (
                "iceberg_create_branch('<table>', '<name>' [, <snapshot id>])",
                2,
                3,
            ),
            Self::CreateTag => (
                "iceberg_create_tag('<table>', '<name>' [, <snapshot id>])",
                2,
                3,
            ),
            Self::DropRef => ("iceberg_drop_ref('<table>', '<name>')", 2, 2),
            Self::FastForward => (
                "iceberg_fast_forward('<table>', '<branch>', '<to ref>')",
                3,
                3,
            ),
            Self::CherryPick => ("iceberg_cherry_pick('<table>', <snapshot id>)", 2, 2),
            Self::RewriteManifests => (
                "iceberg_rewrite_manifests('<table>' [, <target size bytes>])",
                1,
                2,
            ),
            Self::RemoveOrphanFiles => (
                "iceberg_remove_orphan_files('<table>' [, <older than>] [, <dry run>])",
                1,
                3,
            ),
            Self::ComputeTableStats => (
                "iceberg_compute_table_stats('<table>' [, '<column>' ...])",
                1,
                MAX_COLUMNS,
            ),
            Self::ComputePartitionStats => ("iceberg_compute_partition_stats('<table>')", 1, 1),
            Self::RewritePositionDeleteFiles => (
                "iceberg_rewrite_position_delete_files('<table>' [, 'key=value' ...])",
                1,
                MAX_COLUMNS,
            ),
        }
    }
}

/// The most arguments a procedure naming columns takes.
const MAX_COLUMNS: usize = 1000;

impl TableFunctionImpl for IcebergProcedure {
    fn call_with_args(&self, args: TableFunctionArgs) -> DFResult<Arc<dyn TableProvider>> {
        let (usage, least, most) = self.usage();
        let values = literals(args.exprs(), least, most, usage)?;
        let manager = manager(args.session(), &values[0], usage)?;
        let name = |i: usize| -> DFResult<String> {
            match values.get(i).and_then(string) {
                Some(s) => Ok(s.to_string()),
                None => plan_err!("argument {} must be a string: {usage}", i + 1),
            }
        };
        let optional_integer = |i: usize, what: &str| -> DFResult<Option<i64>> {
            match values.get(i).filter(|v| !v.is_null()) {
                Some(v) => integer(v, what).map(Some),
                None => Ok(None),
            }
        };
        let schema = Arc::new(Schema::new(vec![
            Field::new("action", DataType::Utf8, false),
            Field::new("detail", DataType::Utf8, false),
        ]));
        let kind = *self;
        let mut call = ProcedureCall::default();
        match kind {
            Self::CreateBranch | Self::CreateTag | Self::DropRef => {
                call.names = vec![name(1)?];
                call.number = optional_integer(2, "snapshot id")?;
            }
            Self::FastForward => call.names = vec![name(1)?, name(2)?],
            Self::CherryPick => call.number = optional_integer(1, "snapshot id")?,
            Self::RewriteManifests => call.number = optional_integer(1, "target size")?,
            Self::ComputePartitionStats => {}
            Self::RewritePositionDeleteFiles => {
                call.names = (1..values.len()).map(name).collect::<DFResult<_>>()?;
                position_delete_options(&call.names)?;
            }
            Self::ComputeTableStats => {
                for i in 1..values.len() {
                    let names = name(i)?;
                    call.names
                        .extend(names.split(',').map(|n| n.trim().to_string()));
                }
            }
            Self::RemoveOrphanFiles => {
                if let Some(v) = values.get(1).filter(|v| !v.is_null()) {
                    call.number = Some(timestamp(v)?);
                }
                call.dry_run = match values.get(2) {
                    None => false,
                    Some(ScalarValue::Boolean(Some(b))) => *b,
                    Some(other) => return plan_err!("dry run must be true or false, got {other}"),
                };
            }
        }
        let run_schema = Arc::clone(&schema);
        lazy(schema, move || {
            let (manager, call, schema) = (manager.clone(), call.clone(), Arc::clone(&run_schema));
            Box::pin(async move {
                let (action, detail) = run_procedure(kind, &manager, &call).await?;
                let columns: Vec<ArrayRef> = vec![
                    Arc::new(StringArray::from(vec![action])),
                    Arc::new(StringArray::from(vec![detail])),
                ];
                Ok(RecordBatch::try_new(schema, columns)?)
            })
        })
    }
}

/// The arguments of a procedure call after the table: names, a number (snapshot id, size or
/// time), a dry-run flag.
#[derive(Debug, Clone, Default)]
struct ProcedureCall {
    names: Vec<String>,
    number: Option<i64>,
    dry_run: bool,
}

/// Runs one procedure; `(action, detail)` for its result row.
async fn run_procedure(
    kind: IcebergProcedure,
    manager: &SnapshotManager,
    call: &ProcedureCall,
) -> crate::Result<(String, String)> {
    use crate::maintenance::BranchRetention;
    use crate::maintenance::rewrite_position_delete_files;
    use crate::maintenance::{OrphanFiles, remove_orphan_files, rewrite_manifests};
    use crate::statistics::{ComputePartitionStats, compute_partition_stats};
    use crate::statistics::{ComputeTableStats, compute_table_stats};
    let name = |i: usize| call.names.get(i).cloned().unwrap_or_default();
    let (text, number) = (name(0), call.number);
    Ok(match kind {
        IcebergProcedure::CreateBranch => {
            let t = manager
                .create_branch(&text, number, BranchRetention::default())
                .await?;
            let at = t.metadata().refs[&text].snapshot_id;
            ("create branch".into(), format!("{text} at {at}"))
        }
        IcebergProcedure::CreateTag => {
            let t = manager.create_tag(&text, number, None).await?;
            let at = t.metadata().refs[&text].snapshot_id;
            ("create tag".into(), format!("{text} at {at}"))
        }
        IcebergProcedure::DropRef => {
            manager.drop_ref(&text).await?;
            ("drop ref".into(), text)
        }
        IcebergProcedure::FastForward => {
            let (branch, to) = (name(0), name(1));
            let t = manager.fast_forward(&branch, &to).await?;
            let at = t.metadata().refs[&branch].snapshot_id;
            ("fast forward".into(), format!("{branch} at {at}"))
        }
        IcebergProcedure::CherryPick => {
            let id = number.unwrap_or_default();
            let t = manager.cherry_pick(id).await?;
            let head = t.metadata().current_snapshot_id.unwrap_or_default();
            ("cherry pick".into(), format!("{id} as {head}"))
        }
        IcebergProcedure::RewriteManifests => {
            let size = number.and_then(|n| u64::try_from(n).ok());
            let done = rewrite_manifests(manager.target(), size).await?;
            (
                "rewrite manifests".into(),
                format!("{} into {}", done.rewritten, done.added),
            )
        }
        IcebergProcedure::ComputeTableStats => {
            let mut options = ComputeTableStats::new();
            if !call.names.is_empty() {
                options = options.with_columns(call.names.iter().cloned());
            }
            let done = compute_table_stats(manager.target(), &options).await?;
            let columns: Vec<String> = done
                .columns
                .iter()
                .map(|(name, _, ndv)| format!("{name}: {ndv}"))
                .collect();
            (
                "compute table stats".into(),
                format!(
                    "snapshot {}: {} ({})",
                    done.snapshot_id,
                    columns.join(", "),
                    done.statistics_path
                ),
            )
        }
        IcebergProcedure::ComputePartitionStats => {
            let done =
                compute_partition_stats(manager.target(), &ComputePartitionStats::new()).await?;
            let detail = match &done.statistics_path {
                Some(path) => format!("{} partition(s) ({path})", done.partitions),
                None => "no manifest entries: nothing written".to_string(),
            };
            (
                "compute partition stats".into(),
                format!("snapshot {}: {detail}", done.snapshot_id),
            )
        }
        IcebergProcedure::RewritePositionDeleteFiles => {
            let options = position_delete_options(&call.names)?;
            let done = rewrite_position_delete_files(manager.target(), &options).await?;
            let detail = match done.snapshot {
                Some(id) => format!(
                    "{} delete file(s) into {} (snapshot {id})",
                    done.rewritten_delete_files, done.added_delete_files
                ),
                None => "nothing to rewrite".to_string(),
            };
            ("rewrite position delete files".into(), detail)
        }
        IcebergProcedure::RemoveOrphanFiles => {
            let mut options = OrphanFiles::new();
            if let Some(ms) = number {
                options = options.with_older_than_ms(ms);
            }
            if call.dry_run {
                options = options.dry_run();
            }
            let table = manager.table().await?;
            let done = remove_orphan_files(&table, &options).await?;
            (
                "remove orphan files".into(),
                format!(
                    "{} orphan(s), {} deleted",
                    done.orphan_files.len(),
                    done.deleted
                ),
            )
        }
    })
}

/// The options of `iceberg_rewrite_position_delete_files` from its `key=value` arguments (also
/// those of `icefloe rewrite-position-deletes`).
pub(crate) fn position_delete_options(
    pairs: &[String],
) -> crate::Result<crate::maintenance::RewritePositionDeletes> {
    let mut options = crate::maintenance::RewritePositionDeletes::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(crate::Error::invalid(
                format_args!("option '{pair}'"),
                "expected 'key=value'",
            ));
        };
        options = options.with_option(key, value)?;
    }
    Ok(options)
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
    let io = FileIO::new(Arc::clone(session.runtime_env()), Relocation::default())
        .with_storage(StorageProperties::of_session(session.config()));
    if let Some(state) = session.as_any().downcast_ref::<SessionState>() {
        let default = &state.config_options().catalog.default_catalog;
        if let (Some(catalog), Some(Ok(ident))) = (
            IcebergCatalogs::lookup(state, default),
            name.contains('.').then(|| TableIdent::parse_dotted(name)),
        ) && block_on(catalog.table_exists(&ident))??
        {
            return Ok(SnapshotManager::new(WriteTarget::new(catalog, ident)));
        }
    }
    Ok(SnapshotManager::new(WriteTarget::directory(&io, name)?))
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
