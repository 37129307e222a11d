//! Shared plumbing: where the fixtures are, opening a table, running SQL, and collecting
//! mismatches so that one run reports all of them.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::prelude::{DataFrame, SessionConfig, SessionContext};
use icefloe::io::StorageProperties;
use icefloe::spec::SnapshotSelector;
use icefloe::{IcebergTableProvider, TableOptions};
use serde_json::Value;

use crate::render::{self, Style};

/// The directory holding `external/` and `pyiceberg/`.
pub struct FixtureRoot {
    pub path: PathBuf,
    /// True when `$ICEFLOE_FIXTURES` names the full sets: nothing may be skipped then.
    pub complete: bool,
}

impl FixtureRoot {
    pub fn from_env() -> Self {
        match std::env::var_os("ICEFLOE_FIXTURES") {
            Some(dir) => {
                let dir = PathBuf::from(dir);
                let path = dir.canonicalize().unwrap_or(dir);
                Self {
                    path,
                    complete: true,
                }
            }
            None => Self {
                path: Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
                complete: false,
            },
        }
    }

    pub fn describe(&self) -> String {
        let mode = if self.complete {
            "$ICEFLOE_FIXTURES, every table required"
        } else {
            "copied subset, tables not copied are skipped"
        };
        format!("{} ({mode})", self.path.display())
    }

    /// `path` under the root, as a string for icefloe.
    pub fn join(&self, relative: &str) -> String {
        self.path.join(relative).to_string_lossy().into_owned()
    }
}

/// What a suite checked, and every mismatch it found.
#[derive(Default)]
pub struct Report {
    pub suite: &'static str,
    pub tables: usize,
    pub skipped_tables: Vec<String>,
    pub snapshots: usize,
    pub delete_snapshots: usize,
    /// Filters whose scan opened at most the data files PyIceberg plans.
    pub pruned_filters: usize,
    pub tolerated_errors: usize,
    pub filters: usize,
    pub travel: TravelCounts,
    pub inspect: InspectCounts,
    pub mismatches: Vec<String>,
    /// (context, error) of failed queries already reported, with how many more failed alike.
    repeated_errors: Vec<(String, String, usize)>,
}

impl Report {
    pub fn new(suite: &'static str) -> Self {
        Self {
            suite,
            ..Self::default()
        }
    }

    /// Records one mismatch; `context` names table, snapshot and query.
    pub fn mismatch(&mut self, context: &str, what: impl std::fmt::Display) {
        self.mismatches.push(format!("{context}: {what}"));
    }

    /// Records a failed query. The first failure with a given error in a given context is
    /// reported in full; later ones are only counted, so that one broken file does not bury
    /// the rest of the report.
    pub fn query_failed(&mut self, context: &str, query: &str, error: &str) {
        let seen = self
            .repeated_errors
            .iter_mut()
            .find(|(c, e, _)| c == context && e == error);
        match seen {
            Some((_, _, more)) => *more += 1,
            None => {
                self.mismatch(context, format!("{query} failed: {error}"));
                self.repeated_errors
                    .push((context.to_string(), error.to_string(), 0));
            }
        }
    }

    /// Adds the counts and mismatches of a part of the suite.
    pub fn absorb(&mut self, part: Report) {
        self.tables += part.tables;
        self.skipped_tables.extend(part.skipped_tables);
        self.snapshots += part.snapshots;
        self.delete_snapshots += part.delete_snapshots;
        self.pruned_filters += part.pruned_filters;
        self.tolerated_errors += part.tolerated_errors;
        self.filters += part.filters;
        self.travel.add(&part.travel);
        self.inspect.add(&part.inspect);
        self.mismatches.extend(part.mismatches);
        for (context, _, more) in part.repeated_errors {
            if more > 0 {
                self.mismatches.push(format!(
                    "{context}: {more} more queries failed with the same error"
                ));
            }
        }
    }

    /// Prints the summary line and fails with every mismatch, if there are any.
    pub fn finish(mut self, root: &FixtureRoot) {
        let own = Report {
            repeated_errors: std::mem::take(&mut self.repeated_errors),
            ..Report::new(self.suite)
        };
        self.absorb(own);
        println!("fixture root: {}", root.describe());
        println!(
            "{}: {} tables, {} snapshots checked ({} with row-level deletes), {} filters checked \
             ({} pruned at least as well as PyIceberg's planner), \
             {} documented unsupported-type errors accepted, {} tables skipped (not copied)",
            self.suite,
            self.tables,
            self.snapshots,
            self.delete_snapshots,
            self.filters,
            self.pruned_filters,
            self.tolerated_errors,
            self.skipped_tables.len(),
        );
        if self.travel != TravelCounts::default() {
            println!("{}: {}", self.suite, self.travel.summary());
        }
        if self.inspect != InspectCounts::default() {
            println!("{}: {}", self.suite, self.inspect.summary());
        }
        if !self.skipped_tables.is_empty() {
            println!("{}: skipped {}", self.suite, self.skipped_tables.join(", "));
        }
        let count = self.mismatches.len();
        assert!(
            self.mismatches.is_empty(),
            "{}: {count} mismatches\n{}",
            self.suite,
            self.mismatches.join("\n")
        );
    }
}

/// What the time-travel, ref and incremental checks covered.
#[derive(Default, Clone, Copy, PartialEq)]
pub struct TravelCounts {
    /// Snapshots read by `VERSION AS OF` (SQL) and `with_snapshot_id` (Rust).
    pub by_version: usize,
    /// Snapshots read by a timestamp inside their time as `main` (Rust option and SQL).
    pub by_timestamp: usize,
    /// Snapshots whose log entry has no gap before the next one: no timestamp selects them.
    pub no_gap: usize,
    /// Snapshots that were never current on `main` (absent from the snapshot log).
    pub never_current: usize,
    /// Snapshot reads whose answer was computed with another schema: row count only.
    pub count_only: usize,
    /// The oracle's AS OF TIMESTAMP entries checked (Rust option and SQL).
    pub as_of_entries: usize,
    /// Of those, instants before the first snapshot, checked to fail.
    pub before_first: usize,
    /// Branches and tags checked (Rust option, quoted name, Spark name through the catalog).
    pub refs: usize,
    /// Incremental reads checked against the row-count difference.
    pub incremental: usize,
    /// Incremental reads checked to fail (a non-append in between, a tag).
    pub incremental_errors: usize,
    /// Other errors checked (unknown snapshot or ref, missing manifest list, ...).
    pub errors: usize,
}

impl TravelCounts {
    fn add(&mut self, other: &TravelCounts) {
        self.by_version += other.by_version;
        self.by_timestamp += other.by_timestamp;
        self.no_gap += other.no_gap;
        self.never_current += other.never_current;
        self.count_only += other.count_only;
        self.as_of_entries += other.as_of_entries;
        self.before_first += other.before_first;
        self.refs += other.refs;
        self.incremental += other.incremental;
        self.incremental_errors += other.incremental_errors;
        self.errors += other.errors;
    }

    fn summary(&self) -> String {
        format!(
            "time travel: {} snapshots by VERSION AS OF and with_snapshot_id, {} by timestamp \
             ({} skipped: no gap before the next commit; {} never current on main), \
             {} read with an older schema checked by row count only, \
             {} AS OF TIMESTAMP oracle entries ({} before the first snapshot, checked to fail), \
             {} refs, {} incremental reads, {} incremental reads checked to fail, \
             {} other errors checked",
            self.by_version,
            self.by_timestamp,
            self.no_gap,
            self.never_current,
            self.count_only,
            self.as_of_entries,
            self.before_first,
            self.refs,
            self.incremental,
            self.incremental_errors,
            self.errors,
        )
    }
}

/// What the metadata-table checks covered.
#[derive(Default, Clone, Copy, Debug, PartialEq)]
pub struct InspectCounts {
    /// (table, relation) pairs compared with the oracle's rows.
    pub relations: usize,
    /// Oracle rows those comparisons expected.
    pub rows: usize,
    /// Oracle entries where PyIceberg failed (`{"error": ...}`): nothing to compare.
    pub oracle_errors: usize,
    /// Comparisons left out because the relation is in `inspect::PENDING_RELATIONS`.
    pub pending: usize,
    /// Metadata tables read at another snapshot, other names and table functions checked.
    pub travel: usize,
    /// Invariants checked (external tables, `all_entries`).
    pub invariants: usize,
    /// Errors checked (unknown relation, time travel on a relation without snapshots).
    pub errors: usize,
    /// Column types checked against PyIceberg's declared ones.
    pub types: usize,
}

impl InspectCounts {
    fn add(&mut self, other: &InspectCounts) {
        self.relations += other.relations;
        self.rows += other.rows;
        self.oracle_errors += other.oracle_errors;
        self.pending += other.pending;
        self.travel += other.travel;
        self.invariants += other.invariants;
        self.errors += other.errors;
        self.types += other.types;
    }

    fn summary(&self) -> String {
        format!(
            "metadata tables: {} relations compared ({} oracle rows), {} oracle entries where \
             PyIceberg failed (skipped), {} pending comparisons left out (inspect::PENDING_RELATIONS: {:?}), \
             {} time-travel / name / table-function checks, {} invariants, {} errors checked, \
             {} column types checked",
            self.relations,
            self.rows,
            self.oracle_errors,
            self.pending,
            crate::inspect::PENDING_RELATIONS,
            self.travel,
            self.invariants,
            self.errors,
            self.types,
        )
    }
}

/// How a check reaches the table state it reads.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Via {
    /// `TableOptions` (`with_snapshot_id`, `with_ref`, `as_of_timestamp_ms`).
    #[default]
    Options,
    /// SQL: the current table is registered as `base`, and `t` is a view over `base` with the
    /// clause that selects the state (`VERSION AS OF`, `TIMESTAMP AS OF`, `"base@ref"`).
    Sql,
}

/// The table to open: a metadata file (or table directory), relocation rules, the state to
/// read and how to ask for it.
#[derive(Clone, Debug)]
pub struct TableSpec {
    pub location: String,
    pub relocations: Vec<(String, String)>,
    pub selector: SnapshotSelector,
    pub via: Via,
    /// How to reach a table on an object store (none for local tables).
    pub storage: StorageProperties,
}

impl TableSpec {
    /// The current state of the table, through `TableOptions`.
    pub fn current(location: String, relocations: Vec<(String, String)>) -> Self {
        Self {
            location,
            relocations,
            selector: SnapshotSelector::Current,
            via: Via::Options,
            storage: StorageProperties::new(),
        }
    }

    /// The same table at another state, asked for another way.
    pub fn at(&self, selector: SnapshotSelector, via: Via) -> Self {
        Self {
            selector,
            via,
            ..self.clone()
        }
    }

    /// The `TableOptions` that read this spec's state (relocation and selector).
    pub fn table_options(&self) -> TableOptions {
        self.options(self.selector.clone())
    }

    fn options(&self, selector: SnapshotSelector) -> TableOptions {
        let mut options = TableOptions::default();
        for (old, new) in &self.relocations {
            options = options.with_relocation(old.clone(), new.clone());
        }
        options
            .with_snapshot(selector)
            .with_storage(self.storage.clone())
    }

    /// The relocation rules as SQL options take them: `OLD=NEW[,OLD2=NEW2]`.
    pub fn relocate_option(&self) -> String {
        self.relocations
            .iter()
            .map(|(old, new)| format!("{old}={new}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A fresh session whose tables reach `spec`'s store (its storage properties).
///
/// Tables read through SQL get DataFusion's defaults (as many partitions as cores); tables read
/// through `TableOptions` get [`SPLIT_PARTITIONS`] partitions and every file scan split into
/// byte ranges, whatever the machine: more partitions than most fixture tables have files, so
/// the optimizer puts repartitions and split scans under icefloe's operators, as it does on a
/// big machine or with files over 10 MB (a 2-core CI hid an equality-delete bug that showed at
/// 4 partitions).
pub fn session_for(spec: &TableSpec) -> SessionContext {
    let mut config = SessionConfig::new();
    if spec.via == Via::Options {
        config = config.with_target_partitions(SPLIT_PARTITIONS);
        config.options_mut().optimizer.repartition_file_min_size = 0;
    }
    SessionContext::new_with_config(spec.storage.clone().for_session(config))
}

/// The partitions of the sessions that read tables through `TableOptions` ([`session_for`]).
pub const SPLIT_PARTITIONS: usize = 7;

/// Opens `spec` with icefloe and registers it as `t` in a fresh session (with icefloe's SQL
/// registered): through `TableOptions`, or as a SQL view over the current table `base`.
pub async fn open_as_t(spec: &TableSpec) -> Result<SessionContext, String> {
    let ctx = session_for(spec);
    icefloe::sql::register(&ctx);
    let (name, selector) = match spec.via {
        Via::Options => ("t", spec.selector.clone()),
        Via::Sql => ("base", SnapshotSelector::Current),
    };
    let provider = IcebergTableProvider::open(&ctx, &spec.location, spec.options(selector))
        .await
        .map_err(|e| error_chain(&e))?;
    ctx.register_table(name, Arc::new(provider))
        .map_err(|e| error_chain(&e))?;
    if spec.via == Via::Sql {
        let view = format!(
            "CREATE VIEW t AS SELECT * FROM {}",
            relation("base", &spec.selector)
        );
        collect(&ctx, &view).await?;
    }
    Ok(ctx)
}

/// The SQL relation reading `table` at `selector`: `VERSION AS OF <id>`, `TIMESTAMP AS OF
/// TIMESTAMP '<UTC>'` or the quoted `"table@ref"`.
pub fn relation(table: &str, selector: &SnapshotSelector) -> String {
    match selector {
        SnapshotSelector::Current => table.to_string(),
        SnapshotSelector::SnapshotId(id) => format!("{table} VERSION AS OF {id}"),
        SnapshotSelector::AsOfTimestamp(ms) => {
            format!("{table} TIMESTAMP AS OF TIMESTAMP '{}'", utc_timestamp(*ms))
        }
        SnapshotSelector::Ref(name) => ident(&format!("{table}@{name}")),
    }
}

/// Epoch milliseconds as an ISO 8601 UTC timestamp with milliseconds and an explicit offset.
pub fn utc_timestamp(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3f+00:00").to_string())
        .unwrap_or_else(|| format!("out of range: {ms}"))
}

/// Plans one statement with icefloe's SQL entry point (its dialect, so that the AS OF
/// clauses parse, and its planners).
pub async fn icefloe_sql(ctx: &SessionContext, sql: &str) -> Result<DataFrame, String> {
    icefloe::sql::sql(ctx, sql)
        .await
        .map_err(|e| error_chain(&e))
}

/// The `data_files_scanned` metric of `SELECT * FROM t WHERE <filter>`'s plan (planning
/// counts are known once the physical plan exists; nothing is read).
pub async fn data_files_scanned(ctx: &SessionContext, filter: &str) -> Result<usize, String> {
    let sql = format!("SELECT * FROM t WHERE {filter}");
    let frame = icefloe_sql(ctx, &sql).await?;
    let plan = frame
        .create_physical_plan()
        .await
        .map_err(|e| error_chain(&e))?;
    Ok(icefloe::scan::plan_metric(&plan, "data_files_scanned").unwrap_or(0))
}

/// Runs `sql` through icefloe's SQL entry point (as an embedder would) and collects the
/// batches; errors come back as text with their source chain.
pub async fn collect(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>, String> {
    let frame = icefloe_sql(ctx, sql).await?;
    frame.collect().await.map_err(|e| error_chain(&e))
}

/// Runs `sql` and renders every row.
pub async fn rows(
    ctx: &SessionContext,
    sql: &str,
    style: Style,
) -> Result<Vec<Vec<Value>>, String> {
    let batches = collect(ctx, sql).await?;
    render::rows(&batches, style)
}

/// Runs `sql`, which must return exactly one row of one column, and renders that value.
pub async fn scalar(ctx: &SessionContext, sql: &str, style: Style) -> Result<Value, String> {
    let mut rows = rows(ctx, sql, style).await?;
    match (rows.len(), rows.first().map(Vec::len)) {
        (1, Some(1)) => Ok(rows.remove(0).remove(0)),
        (n, width) => Err(format!(
            "expected one value, got {n} rows of width {width:?}"
        )),
    }
}

/// `SELECT count(*) FROM t [WHERE filter]`.
pub async fn count_rows(ctx: &SessionContext, filter: Option<&str>) -> Result<i64, String> {
    let sql = match filter {
        Some(f) => format!("SELECT count(*) FROM t WHERE {f}"),
        None => "SELECT count(*) FROM t".to_string(),
    };
    count_rows_sql(ctx, &sql).await
}

/// Runs `sql`, a `SELECT count(*) ...`, and returns the count.
pub async fn count_rows_sql(ctx: &SessionContext, sql: &str) -> Result<i64, String> {
    match scalar(ctx, sql, Style::PYICEBERG).await? {
        Value::Number(n) => n.as_i64().ok_or_else(|| format!("count {n} is not an i64")),
        other => Err(format!("count(*) gave {other}")),
    }
}

/// Runs `check` on its own task so that a panic inside icefloe (a `todo!()`, say) becomes one
/// reported mismatch instead of ending the whole suite.
pub async fn isolated<F>(check: F) -> Result<F::Output, String>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(check)
        .await
        .map_err(|e| match e.try_into_panic() {
            Ok(payload) => {
                let text = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "non-text panic payload".to_string());
                format!("panicked: {text}")
            }
            Err(e) => format!("task failed: {e}"),
        })
}

/// An error's message followed by its sources, so that keyword checks see the whole story.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        let inner_text = inner.to_string();
        if !text.contains(&inner_text) {
            text.push_str(": ");
            text.push_str(&inner_text);
        }
        source = inner.source();
    }
    text
}

/// Quotes an identifier for DataFusion SQL.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Quotes a string literal for DataFusion SQL.
pub fn string_literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// Reads and parses a JSON file (gzip-compressed metadata included).
pub fn read_json(path: &Path) -> Result<Value, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut plain)
            .map_err(|e| format!("gunzip {}: {e}", path.display()))?;
        plain
    } else {
        bytes
    };
    serde_json::from_slice(&bytes).map_err(|e| format!("parsing {}: {e}", path.display()))
}

/// Copies a directory tree (a writable copy of a fixture table).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A session on the SQLite catalog `db` as the default catalog, with icefloe's SQL.
pub async fn catalog_session(db: &Path) -> SessionContext {
    let ctx = SessionContext::new();
    icefloe::session::register_catalog_as_default(&ctx, db, icefloe::Relocation::default())
        .await
        .unwrap();
    icefloe::sql::register(&ctx);
    ctx
}

/// Runs one statement through icefloe's SQL; an error fails the test, naming the statement.
pub async fn run_sql(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
    let frame = icefloe::sql::sql(ctx, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    frame
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}
