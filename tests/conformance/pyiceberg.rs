//! The PyIceberg warehouse `pyiceberg/wh1`, checked against `oracle/<ns>.<table>.json`
//! (answers by PyIceberg, cross-checked with DuckDB; see `pyiceberg/README.md`).
//!
//! Time travel, refs and incremental reads are checked in `pyiceberg_travel` and
//! `pyiceberg_refs`. Every filter's `files_planned` bounds the data files icefloe scans.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::prelude::SessionContext;
use icefloe::Relocation;
use icefloe::spec::SnapshotSelector;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::render::{self, Style, json_equal};
use crate::sql_expr;
use crate::support::{self, FixtureRoot, Report, TableSpec, Via, ident, isolated, open_as_t};
use crate::{pyiceberg_incremental, pyiceberg_refs, pyiceberg_travel};

/// Where the warehouse was written; every path in it starts with this.
pub const WRITTEN_AT: &str = "file:///data/lake/wh1";

#[derive(Debug, Deserialize)]
pub struct Oracle {
    pub identifier: String,
    pub metadata_location: String,
    #[serde(default)]
    schemas: Vec<Value>,
    #[serde(default)]
    pub snapshots: Vec<SnapshotOracle>,
    /// Per branch or tag: `type`, `snapshot_id`, `row_count`, `sum_<column>` (or `error`).
    #[serde(default)]
    pub refs_answers: Map<String, Value>,
    /// AS OF TIMESTAMP answers around every snapshot-log entry.
    #[serde(default)]
    pub time_travel: Vec<AsOfOracle>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AsOfOracle {
    pub timestamp_ms: i64,
    /// `None`: before the first snapshot.
    pub snapshot_id: Option<i64>,
    pub row_count: Option<i64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SnapshotOracle {
    pub snapshot_id: i64,
    pub schema_id: Option<i64>,
    #[serde(default)]
    pub is_current: bool,
    #[serde(default)]
    summary: Map<String, Value>,
    pub row_count: Option<i64>,
    #[serde(default)]
    pub columns: Vec<String>,
    #[serde(default)]
    pub rows_per_partition: Vec<Value>,
    #[serde(default)]
    delete_files: i64,
    #[serde(default)]
    aggregates: Option<Map<String, Value>>,
    #[serde(default)]
    filters: Vec<FilterOracle>,
    #[serde(default)]
    count_by_column: Option<Map<String, Value>>,
    /// PyIceberg's failure to read the snapshot (it cannot apply equality deletes).
    #[serde(default)]
    error: Option<String>,
    /// DuckDB's answers for the snapshot: `row_count` and `sum` per column.
    #[serde(default)]
    duckdb: Option<Map<String, Value>>,
}

impl Oracle {
    /// Where PyIceberg could not read a snapshot (equality deletes), DuckDB's answers stand in:
    /// its row count, its column sums, its filter counts, and its count at AS OF instants.
    pub fn with_duckdb_answers(mut self) -> Self {
        for snapshot in &mut self.snapshots {
            let Some(duckdb) = snapshot
                .duckdb
                .as_ref()
                .filter(|_| snapshot.error.is_some())
            else {
                continue;
            };
            snapshot.row_count = snapshot
                .row_count
                .or_else(|| duckdb.get("row_count").and_then(Value::as_i64));
            if snapshot.aggregates.is_none()
                && let Some(sums) = duckdb.get("sum").and_then(Value::as_object)
            {
                let aggregates = sums
                    .iter()
                    .map(|(column, sum)| (column.clone(), serde_json::json!({ "sum": sum })))
                    .collect();
                snapshot.aggregates = Some(aggregates);
            }
            if snapshot.columns.is_empty()
                && let Some(columns) = duckdb.get("columns").and_then(Value::as_array)
            {
                let names = columns.iter().filter_map(Value::as_str).map(String::from);
                snapshot.columns = names.collect();
            }
            for filter in &mut snapshot.filters {
                filter.row_count = filter.row_count.or(filter.duckdb_row_count);
            }
        }
        let counts: Vec<(i64, Option<i64>)> = self
            .snapshots
            .iter()
            .map(|s| (s.snapshot_id, s.row_count))
            .collect();
        for entry in &mut self.time_travel {
            if entry.row_count.is_none()
                && let Some(id) = entry.snapshot_id
            {
                entry.row_count = counts.iter().find(|(s, _)| *s == id).and_then(|(_, n)| *n);
            }
        }
        self
    }
}

#[derive(Debug, Clone, Deserialize)]
struct FilterOracle {
    expr: Value,
    row_count: Option<i64>,
    duckdb_row_count: Option<i64>,
    #[serde(default)]
    sql_semantics_may_differ: bool,
    /// How many data files PyIceberg's `plan_files()` keeps for the filter.
    #[serde(default)]
    files_planned: Option<usize>,
}

/// One table of the warehouse as the checks need it.
#[derive(Clone)]
pub struct TableUnderTest {
    pub identifier: String,
    /// Column name -> Iceberg type (a string, or an object for nested types), per schema id.
    schemas: Vec<(i64, Map<String, Value>)>,
    pub spec: TableSpec,
    /// The metadata JSON the oracle read (time travel decisions are made from it).
    pub metadata: Arc<Value>,
    /// The warehouse directory, for the SQLite catalog.
    pub warehouse: PathBuf,
}

impl SnapshotOracle {
    /// The snapshot's answers without those that depend on its schema: its row count alone.
    pub fn count_only(&self) -> Self {
        Self {
            columns: Vec::new(),
            aggregates: None,
            filters: Vec::new(),
            count_by_column: None,
            ..self.clone()
        }
    }
}

impl Oracle {
    /// Column name -> Iceberg type of the snapshot's schema.
    pub fn types_of(&self, snapshot: &SnapshotOracle) -> Map<String, Value> {
        snapshot
            .schema_id
            .and_then(|id| {
                schema_columns(&self.schemas)
                    .into_iter()
                    .find(|(sid, _)| *sid == id)
            })
            .map(|(_, columns)| columns)
            .unwrap_or_default()
    }
}

impl TableUnderTest {
    /// Column name -> Iceberg type of the snapshot's schema.
    pub fn types_of(&self, snapshot: &SnapshotOracle) -> Map<String, Value> {
        snapshot
            .schema_id
            .and_then(|id| self.schemas.iter().find(|(sid, _)| *sid == id))
            .map(|(_, columns)| columns.clone())
            .unwrap_or_default()
    }
}

pub async fn check_all(root: &FixtureRoot) -> Report {
    let mut report = Report::new("pyiceberg");
    let warehouse = root.path.join("pyiceberg/wh1");
    let oracle_files = match oracle_files(&warehouse.join("oracle")) {
        Ok(files) => files,
        Err(e) => {
            report.mismatch("pyiceberg/wh1/oracle", e);
            return report;
        }
    };
    let mut current_counts = Vec::new();
    for path in oracle_files {
        let oracle = match support::read_json(&path)
            .and_then(|v| serde_json::from_value::<Oracle>(v).map_err(|e| e.to_string()))
        {
            Ok(oracle) => oracle.with_duckdb_answers(),
            Err(e) => {
                report.mismatch(&path.display().to_string(), e);
                continue;
            }
        };
        if let Some(current) = current_row_count(&oracle) {
            current_counts.push((oracle.identifier.clone(), current));
        }
        report.absorb(check_table(root, &warehouse, oracle, None).await);
    }
    report.absorb(check_catalog(&warehouse, current_counts).await);
    report
}

pub fn oracle_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|ext| ext == "json"))
        .filter(|p| p.file_name().is_some_and(|name| name != "summary.json"))
        .collect();
    files.sort();
    Ok(files)
}

/// The current snapshot's row count (deletes applied).
fn current_row_count(oracle: &Oracle) -> Option<i64> {
    match oracle.snapshots.iter().find(|s| s.is_current) {
        Some(s) => s.row_count,
        None if oracle.snapshots.is_empty() => Some(0),
        None => None,
    }
}

/// Delete files in the oracle's file listing, or delete counts in the snapshot summary.
pub fn has_row_level_deletes(snapshot: &SnapshotOracle) -> bool {
    let summary_total = |name: &str| {
        snapshot
            .summary
            .get(name)
            .and_then(Value::as_str)
            .and_then(|n| n.parse::<i64>().ok())
    };
    snapshot.delete_files > 0
        || [
            "total-delete-files",
            "total-position-deletes",
            "total-equality-deletes",
        ]
        .iter()
        .any(|name| summary_total(name).is_some_and(|n| n > 0))
}

/// Where a check reads a warehouse's tables from, when not from the fixture directory: the
/// location its files were copied to (`s3://bucket/wh1`) and how to reach it.
pub type Placement = (String, icefloe::io::StorageProperties);

/// Checks one table of the warehouse against its oracle, read from the fixture directory or,
/// with `placed`, from where its files were copied.
pub async fn check_table(
    root: &FixtureRoot,
    warehouse: &Path,
    oracle: Oracle,
    placed: Option<Placement>,
) -> Report {
    let mut report = Report::new("pyiceberg");
    let relative = oracle
        .metadata_location
        .strip_prefix("{warehouse}/")
        .unwrap_or(&oracle.metadata_location);
    if !warehouse.join(relative).is_file() {
        if root.complete {
            report.mismatch(&oracle.identifier, format!("{relative} is missing"));
        } else {
            report.skipped_tables.push(oracle.identifier.clone());
        }
        return report;
    }
    report.tables += 1;
    let metadata = match support::read_json(&warehouse.join(relative)) {
        Ok(metadata) => Arc::new(metadata),
        Err(e) => {
            report.mismatch(&oracle.identifier, e);
            return report;
        }
    };
    let (read_from, storage) =
        placed.unwrap_or_else(|| (warehouse.to_string_lossy().into_owned(), Default::default()));
    let mut spec = TableSpec::current(
        oracle.metadata_location.replace("{warehouse}", WRITTEN_AT),
        vec![(WRITTEN_AT.to_string(), read_from)],
    );
    spec.storage = storage;
    let table = TableUnderTest {
        identifier: oracle.identifier.clone(),
        schemas: schema_columns(&oracle.schemas),
        spec,
        metadata,
        warehouse: warehouse.to_path_buf(),
    };
    if oracle.snapshots.is_empty() {
        report.absorb(check_empty(table.clone()).await);
    }
    for snapshot in &oracle.snapshots {
        let context = format!("{}@{}", table.identifier, snapshot.snapshot_id);
        let checked = isolated(check_snapshot(
            context.clone(),
            table.clone(),
            snapshot.clone(),
        ))
        .await;
        match checked {
            Ok(part) => report.absorb(part),
            Err(panic) => report.mismatch(&context, panic),
        }
    }
    report.absorb(pyiceberg_travel::check_table(&table, &oracle).await);
    report.absorb(pyiceberg_refs::check_table(&table, &oracle).await);
    report.absorb(pyiceberg_incremental::check_table(&table, &oracle).await);
    report
}

/// Per schema id, the top-level column types.
fn schema_columns(schemas: &[Value]) -> Vec<(i64, Map<String, Value>)> {
    schemas
        .iter()
        .filter_map(|schema| {
            let id = schema["schema-id"].as_i64()?;
            let columns = schema["fields"]
                .as_array()?
                .iter()
                .filter_map(|f| Some((f["name"].as_str()?.to_string(), f["type"].clone())))
                .collect();
            Some((id, columns))
        })
        .collect()
}

/// A table without snapshots reads as empty.
async fn check_empty(table: TableUnderTest) -> Report {
    let context = format!("{} (no snapshot)", table.identifier);
    let outcome = isolated(async move {
        let ctx = open_as_t(&table.spec).await?;
        support::count_rows(&ctx, None).await
    })
    .await;
    let mut report = Report::new("pyiceberg");
    report.snapshots += 1;
    match outcome {
        Ok(Ok(0)) => {}
        Ok(Ok(n)) => report.mismatch(&context, format!("count(*): expected 0, got {n}")),
        Ok(Err(e)) => report.mismatch(&context, format!("reading failed: {e}")),
        Err(panic) => report.mismatch(&context, panic),
    }
    report
}

async fn check_snapshot(
    context: String,
    table: TableUnderTest,
    snapshot: SnapshotOracle,
) -> Report {
    let mut report = Report::new("pyiceberg");
    let spec = table.spec.at(
        SnapshotSelector::SnapshotId(snapshot.snapshot_id),
        Via::Options,
    );
    if has_row_level_deletes(&snapshot) {
        report.delete_snapshots += 1;
    }
    if snapshot.row_count.is_none() {
        report.mismatch(&context, "the oracle has no row count for the snapshot");
        return report;
    }
    report.snapshots += 1;
    let ctx = match open_as_t(&spec).await {
        Ok(ctx) => ctx,
        Err(e) => {
            report.mismatch(&context, format!("open failed: {e}"));
            return report;
        }
    };
    let types = table.types_of(&snapshot);
    check_answers(
        &mut report,
        &context,
        &ctx,
        &types,
        &snapshot,
        Pruning::Checked,
    )
    .await;
    report
}

/// Whether [`check_answers`] also checks that filters scan at most the data files PyIceberg
/// plans (not after a compaction, whose files have other bounds).
#[derive(Clone, Copy, PartialEq)]
pub enum Pruning {
    Checked,
    Unchecked,
}

/// Every answer of the oracle's `snapshot` against `t` in `ctx`: row count, column names,
/// aggregates, filters and counts by partition source column (`types`: the snapshot's
/// schema's column types).
pub async fn check_answers(
    report: &mut Report,
    context: &str,
    ctx: &SessionContext,
    types: &Map<String, Value>,
    snapshot: &SnapshotOracle,
    pruning: Pruning,
) {
    let Some(row_count) = snapshot.row_count else {
        return report.mismatch(context, "the oracle has no row count for the snapshot");
    };
    match support::count_rows(ctx, None).await {
        Ok(n) if n == row_count => {}
        Ok(n) => report.mismatch(context, format!("count(*): expected {row_count}, got {n}")),
        Err(e) => {
            // Nothing else can work; one mismatch says it all.
            return report.mismatch(context, format!("SELECT count(*) failed: {e}"));
        }
    }
    pyiceberg_travel::check_column_names(report, context, ctx, &snapshot.columns).await;
    check_aggregates(report, context, ctx, types, snapshot).await;
    check_filters(report, context, ctx, &snapshot.filters, pruning).await;
    check_count_by_column(report, context, ctx, types, snapshot).await;
}

/// Per column, one query with every aggregate the oracle lists for it.
pub async fn check_aggregates(
    report: &mut Report,
    context: &str,
    ctx: &SessionContext,
    types: &Map<String, Value>,
    snapshot: &SnapshotOracle,
) {
    for (column, expected) in snapshot.aggregates.iter().flatten() {
        let Some(expected) = expected.as_object() else {
            continue;
        };
        let ty = types
            .get(column)
            .and_then(Value::as_str)
            .unwrap_or("nested");
        let (keys, selects): (Vec<&String>, Vec<String>) = expected
            .keys()
            .filter_map(|key| Some((key, sql_expr::oracle_aggregate(column, ty, key)?)))
            .unzip();
        let sql = format!("SELECT {} FROM t", selects.join(", "));
        let got = match support::rows(ctx, &sql, Style::PYICEBERG).await {
            Ok(mut rows) if rows.len() == 1 => rows.remove(0),
            Ok(rows) => {
                report.mismatch(context, format!("{sql}: {} rows", rows.len()));
                continue;
            }
            Err(e) => {
                report.query_failed(context, &sql, &e);
                continue;
            }
        };
        for (key, got) in keys.iter().zip(got) {
            let want = &expected[key.as_str()];
            let got = render::as_iceberg_type(got, ty);
            if !json_equal(want, &got) {
                report.mismatch(
                    context,
                    format!("{key}({column}): expected {want}, got {got}"),
                );
            }
        }
    }
}

/// `SELECT count(*) FROM t WHERE <filter>` against the oracle's count (DuckDB's where SQL
/// and PyIceberg semantics differ).
async fn check_filters(
    report: &mut Report,
    context: &str,
    ctx: &SessionContext,
    filters: &[FilterOracle],
    pruning: Pruning,
) {
    for filter in filters {
        let expected = if filter.sql_semantics_may_differ {
            filter.duckdb_row_count
        } else {
            filter.row_count
        };
        let Some(expected) = expected else {
            continue;
        };
        report.filters += 1;
        let sql = match sql_expr::filter(&filter.expr) {
            Ok(sql) => sql,
            Err(e) => {
                report.mismatch(context, format!("filter {}: {e}", filter.expr));
                continue;
            }
        };
        match support::count_rows(ctx, Some(&sql)).await {
            Ok(n) if n == expected => {}
            Ok(n) => report.mismatch(
                context,
                format!("WHERE {sql}: expected {expected}, got {n}"),
            ),
            Err(e) => report.query_failed(context, &format!("WHERE {sql}"), &e),
        }
        // Pruning: icefloe opens at most the data files PyIceberg's planner keeps, except for
        // ranges on float columns (see `float_range`) and PyIceberg's over-pruning of wrapped
        // truncate partitions (see `TRUNCATE_MINIMUM_PARTITIONS`).
        let exempt = float_range(&filter.expr) || truncate_minimum(context, &filter.expr);
        let checked = pruning == Pruning::Checked && !exempt;
        if let Some(planned) = filter.files_planned.filter(|_| checked) {
            match support::data_files_scanned(ctx, &sql).await {
                Ok(scanned) if scanned <= planned => report.pruned_filters += 1,
                Ok(scanned) => report.mismatch(
                    context,
                    format!("WHERE {sql}: scans {scanned} data files, PyIceberg plans {planned}"),
                ),
                Err(e) => report.query_failed(context, &format!("plan WHERE {sql}"), &e),
            }
        }
    }
}

/// Tables whose `truncate[W]` column holds the type's minimum: `truncate` wraps it (Java's and
/// the spec's arithmetic) to a large positive partition value, which PyIceberg's planner drops
/// for `col < v` although the file's row (the minimum, per its bounds) matches. icefloe keeps
/// that file; the row counts of those filters agree with the oracle.
const TRUNCATE_MINIMUM_PARTITIONS: &[(&str, &str)] = &[
    ("db.part_truncate_int", "qty"),
    ("db.part_truncate_long", "customer_id"),
];

fn truncate_minimum(context: &str, expr: &Value) -> bool {
    let upper = matches!(expr["op"].as_str(), Some("lt" | "lte"));
    upper
        && TRUNCATE_MINIMUM_PARTITIONS.iter().any(|(table, column)| {
            context.starts_with(&format!("{table}@")) && expr["column"].as_str() == Some(column)
        })
}

/// A `<`, `<=`, `>`, `>=` filter on a float or double column. PyIceberg prunes those by
/// bounds with IEEE semantics (NaN matches no comparison); DataFusion orders NaN above every
/// number (`NaN > 5` is true), so icefloe prunes float ranges only when the file's NaN count
/// is known to be 0 (PyIceberg writes no NaN counts): otherwise whether a NaN row is returned
/// would depend on which file it sits in.
fn float_range(expr: &Value) -> bool {
    let float = matches!(expr["type"].as_str(), Some("float" | "double"));
    let range = matches!(expr["op"].as_str(), Some("lt" | "lte" | "gt" | "gte"));
    float && range
}

/// `GROUP BY` each partition source column, compared as a multiset of (value, count).
async fn check_count_by_column(
    report: &mut Report,
    context: &str,
    ctx: &SessionContext,
    types: &Map<String, Value>,
    snapshot: &SnapshotOracle,
) {
    for (column, expected) in snapshot.count_by_column.iter().flatten() {
        let Some(expected) = expected.as_array() else {
            continue;
        };
        let ty = types
            .get(column)
            .and_then(Value::as_str)
            .unwrap_or("nested");
        let c = ident(column);
        let sql = format!("SELECT {c}, count(*) FROM t GROUP BY {c}");
        let got: Vec<Value> = match support::rows(ctx, &sql, Style::PYICEBERG).await {
            Ok(rows) => rows.into_iter().map(|row| group_pair(row, ty)).collect(),
            Err(e) => {
                report.query_failed(context, &sql, &e);
                continue;
            }
        };
        let unmatched: Vec<&Value> = expected
            .iter()
            .filter(|pair| !got.iter().any(|row| json_equal(pair, row)))
            .take(5)
            .collect();
        if got.len() != expected.len() || !unmatched.is_empty() {
            report.mismatch(
                context,
                format!(
                    "{sql}: {} groups expected, {} got; expected groups not found: {unmatched:?}",
                    expected.len(),
                    got.len()
                ),
            );
        }
    }
}

/// A `[value, count]` row of a `GROUP BY`, the value in the oracle's form for its type.
fn group_pair(mut row: Vec<Value>, ty: &str) -> Value {
    if let Some(value) = row.first_mut() {
        *value = render::as_iceberg_type(value.take(), ty);
    }
    Value::from(row)
}

/// The SQLite catalog, registered as the default catalog, serves each table's current
/// snapshot by name.
async fn check_catalog(warehouse: &Path, current_counts: Vec<(String, i64)>) -> Report {
    let mut report = Report::new("pyiceberg");
    let db_path = warehouse.join("catalog.db");
    let relocation = Relocation::new().with_rule(WRITTEN_AT, warehouse.to_string_lossy());
    let present: Vec<(String, i64)> = current_counts
        .into_iter()
        .filter(|(identifier, _)| table_dir(warehouse, identifier).is_dir())
        .collect();
    let outcome = isolated(async move {
        let ctx = SessionContext::new();
        icefloe::session::register_catalog_as_default(&ctx, &db_path, relocation)
            .await
            .map_err(|e| support::error_chain(&e))?;
        let mut results = Vec::new();
        for (identifier, expected) in present {
            let sql = format!("SELECT count(*) FROM {}", qualified_name(&identifier));
            let got = support::scalar(&ctx, &sql, Style::PYICEBERG).await;
            results.push((sql, expected, got));
        }
        Ok::<_, String>(results)
    })
    .await;
    let context = "catalog.db";
    match outcome {
        Ok(Ok(results)) => {
            for (sql, expected, got) in results {
                match got {
                    Ok(got) if json_equal(&Value::from(expected), &got) => {}
                    Ok(got) => {
                        report.mismatch(context, format!("{sql}: expected {expected}, got {got}"))
                    }
                    Err(e) => report.mismatch(context, format!("{sql} failed: {e}")),
                }
            }
        }
        Ok(Err(e)) => report.mismatch(context, format!("registering the catalog failed: {e}")),
        Err(panic) => report.mismatch(context, panic),
    }
    report
}

/// `db.orders` -> `<warehouse>/db/orders`; `nested.inner.deep_table` -> `nested/inner/deep_table`.
fn table_dir(warehouse: &Path, identifier: &str) -> PathBuf {
    identifier
        .split('.')
        .fold(warehouse.to_path_buf(), |dir, part| dir.join(part))
}

/// `nested.inner.deep_table` -> `"nested.inner"."deep_table"` (one schema per namespace).
pub fn qualified_name(identifier: &str) -> String {
    match identifier.rsplit_once('.') {
        Some((namespace, table)) => format!("{}.{}", ident(namespace), ident(table)),
        None => ident(identifier),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_directories_and_sql() {
        let wh = Path::new("/w");
        assert_eq!(
            table_dir(wh, "nested.inner.deep_table"),
            Path::new("/w/nested/inner/deep_table")
        );
        assert_eq!(
            qualified_name("nested.inner.deep_table"),
            "\"nested.inner\".\"deep_table\""
        );
        assert_eq!(qualified_name("db.orders"), "\"db\".\"orders\"");
    }
}
