//! Metadata tables of the PyIceberg warehouse against the oracle's `inspect` section (PyIceberg
//! 0.12 `table.inspect.<relation>()` as row lists), through the SQLite catalog as
//! `ns."table$relation"`: the same columns in the same order and the same rows, value by value
//! (paths as written in metadata: the oracle's `{warehouse}` is the written-at prefix).
//! `data_files` and `delete_files` are checked against the oracle's `files` split by `content`.
//!
//! Then projections, filters and `LIMIT` (`inspect_filters`), and time travel (`inspect_travel`): `files` and `manifests` at every snapshot against the
//! oracle's per-snapshot file lists and `all_manifests`, the other names of a relation
//! (`db.t.files`, the table function) and the errors.

use std::path::{Path, PathBuf};

use datafusion::prelude::SessionContext;
use icefloe::Relocation;
use serde_json::Value;

use crate::inspect_compare::{self, Actual};
use crate::inspect_filters;
use crate::inspect_options;
use crate::inspect_quirks::OracleQuirks;
use crate::inspect_travel;
use crate::inspect_types;
use crate::pyiceberg::{WRITTEN_AT, oracle_files, qualified_name};
use crate::support::{self, FixtureRoot, Report, error_chain, isolated};

/// Relations not implemented yet: their oracle comparisons are left out of the default run and
/// listed in its summary (`ICEFLOE_CHECK_PENDING_RELATIONS=1` checks them anyway). Empty this
/// as the relations land.
pub const PENDING_RELATIONS: &[&str] = &[];

/// Set to any value to check the `PENDING_RELATIONS` too.
const CHECK_PENDING_VAR: &str = "ICEFLOE_CHECK_PENDING_RELATIONS";

/// The relations the oracle answers (`data_files` / `delete_files` derived from `files`).
const RELATIONS: &[&str] = &[
    "snapshots",
    "history",
    "metadata_log_entries",
    "refs",
    "manifests",
    "all_manifests",
    "entries",
    "files",
    "data_files",
    "delete_files",
    "all_files",
    "all_data_files",
    "all_delete_files",
    "partitions",
];

/// Relations with a defined row order (the logs, and snapshots in metadata order): compared row
/// by row. The others compare as multisets.
const ORDERED_RELATIONS: &[&str] = &["snapshots", "history", "metadata_log_entries"];

/// Whether `relation`'s checks run in this run.
pub fn is_checked(relation: &str) -> bool {
    !PENDING_RELATIONS.contains(&relation) || std::env::var_os(CHECK_PENDING_VAR).is_some()
}

/// Which `content` values a relation derived from `files` keeps.
type ContentFilter = fn(i64) -> bool;

/// One table of the warehouse with its oracle.
#[derive(Clone)]
pub struct InspectTable {
    pub identifier: String,
    pub warehouse: PathBuf,
    /// The metadata file, as written (`file:///data/lake/wh1/...`).
    pub metadata_location: String,
    pub oracle: std::sync::Arc<Value>,
}

impl InspectTable {
    /// `ns."table$relation"`.
    pub fn relation_name(&self, relation: &str) -> String {
        qualified_name(&format!("{}${relation}", self.identifier))
    }

    /// The oracle's rows of `relation` with `{warehouse}` substituted; `Err` is PyIceberg's
    /// error, `None` that the oracle has no entry.
    pub fn expected(&self, relation: &str) -> Option<Result<Vec<Value>, String>> {
        let inspect = &self.oracle["inspect"];
        let (source, content): (&str, Option<ContentFilter>) = match relation {
            "data_files" => ("files", Some(|c| c == 0)),
            "delete_files" => ("files", Some(|c| c != 0)),
            other => (other, None),
        };
        let rows = match inspect.get(source)? {
            Value::Array(rows) => rows,
            Value::Object(error) => {
                return Some(Err(error
                    .get("error")
                    .map(Value::to_string)
                    .unwrap_or_default()));
            }
            other => return Some(Err(format!("unexpected oracle entry {other}"))),
        };
        let quirks = OracleQuirks::new(&self.oracle, &self.warehouse);
        let rows = rows
            .iter()
            .filter(|row| match content {
                Some(keep) => row["content"].as_i64().is_some_and(keep),
                None => true,
            })
            .map(|row| quirks.correct(row.clone()))
            .map(|row| inspect_compare::substitute_warehouse(&row, WRITTEN_AT))
            .collect();
        Some(Ok(rows))
    }
}

pub async fn check_all(root: &FixtureRoot) -> Report {
    let mut report = Report::new("metadata tables (pyiceberg)");
    let warehouse = root.path.join("pyiceberg/wh1");
    let files = match oracle_files(&warehouse.join("oracle")) {
        Ok(files) => files,
        Err(e) => {
            report.mismatch("pyiceberg/wh1/oracle", e);
            return report;
        }
    };
    for path in files {
        match load(root, &warehouse, &path, &mut report) {
            Some(table) => report.absorb(check_table(table).await),
            None => continue,
        }
    }
    report
}

/// The table of an oracle file, when its directory is present (else it is skipped, or a
/// mismatch with the full sets).
fn load(
    root: &FixtureRoot,
    warehouse: &Path,
    path: &Path,
    report: &mut Report,
) -> Option<InspectTable> {
    let oracle = match support::read_json(path) {
        Ok(oracle) => oracle,
        Err(e) => {
            report.mismatch(&path.display().to_string(), e);
            return None;
        }
    };
    let identifier = oracle["identifier"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let location = oracle["metadata_location"].as_str().unwrap_or_default();
    let relative = location.strip_prefix("{warehouse}/").unwrap_or(location);
    if !warehouse.join(relative).is_file() {
        if root.complete {
            report.mismatch(&identifier, format!("{relative} is missing"));
        } else {
            report.skipped_tables.push(identifier);
        }
        return None;
    }
    report.tables += 1;
    Some(InspectTable {
        identifier,
        warehouse: warehouse.to_path_buf(),
        metadata_location: location.replace("{warehouse}", WRITTEN_AT),
        oracle: std::sync::Arc::new(oracle),
    })
}

async fn check_table(table: InspectTable) -> Report {
    let mut report = Report::new("metadata tables (pyiceberg)");
    for relation in RELATIONS {
        let context = format!("{} {relation}", table.identifier);
        let expected = match table.expected(relation) {
            None => continue,
            Some(Err(_)) => {
                report.inspect.oracle_errors += 1;
                continue;
            }
            Some(Ok(rows)) => rows,
        };
        if !is_checked(relation) {
            report.inspect.pending += 1;
            continue;
        }
        report.inspect.relations += 1;
        report.inspect.rows += expected.len();
        let task = check_relation(table.clone(), relation, expected);
        match isolated(task).await {
            Ok(problems) => problems.iter().for_each(|p| report.mismatch(&context, p)),
            Err(panic) => report.mismatch(&context, panic),
        }
    }
    report.absorb(inspect_travel::check_table(&table).await);
    let context = format!("{} metadata table types", table.identifier);
    match isolated(inspect_types::problems(table.clone())).await {
        Ok((checked, problems)) => {
            report.inspect.types += checked;
            problems.iter().for_each(|p| report.mismatch(&context, p));
        }
        Err(panic) => report.mismatch(&context, panic),
    }
    let context = format!(
        "{} metadata tables by option and timestamp",
        table.identifier
    );
    match isolated(inspect_options::problems(table.clone())).await {
        Ok((checked, problems)) => {
            report.inspect.travel += checked;
            problems.iter().for_each(|p| report.mismatch(&context, p));
        }
        Err(panic) => report.mismatch(&context, panic),
    }
    let context = format!(
        "{} metadata table projections and filters",
        table.identifier
    );
    match isolated(inspect_filters::problems(table.clone())).await {
        Ok((checked, problems)) => {
            report.filters += checked;
            problems.iter().for_each(|p| report.mismatch(&context, p));
        }
        Err(panic) => report.mismatch(&context, panic),
    }
    report
}

async fn check_relation(table: InspectTable, relation: &str, expected: Vec<Value>) -> Vec<String> {
    let ctx = match catalog_session(&table.warehouse).await {
        Ok(ctx) => ctx,
        Err(e) => return vec![format!("session: {e}")],
    };
    let sql = format!("SELECT * FROM {}", table.relation_name(relation));
    let ordered = ORDERED_RELATIONS.contains(&relation);
    match query(&ctx, &sql).await {
        Ok(actual) => inspect_compare::compare(&expected, &actual, ordered)
            .into_iter()
            .map(|p| format!("{sql}: {p}"))
            .collect(),
        Err(e) => vec![format!("{sql} failed: {e}")],
    }
}

/// Runs `sql` and renders its rows with the result's fields.
pub async fn query(ctx: &SessionContext, sql: &str) -> Result<Actual, String> {
    let frame = support::icefloe_sql(ctx, sql).await?;
    let fields = frame.schema().fields().iter().cloned().collect();
    let batches = frame.collect().await.map_err(|e| error_chain(&e))?;
    Actual::from_batches(fields, &batches)
}

/// A session whose default catalog is the warehouse's SQLite catalog, with icefloe's SQL
/// registered.
pub async fn catalog_session(warehouse: &Path) -> Result<SessionContext, String> {
    let ctx = SessionContext::new();
    let relocation = Relocation::new().with_rule(WRITTEN_AT, warehouse.to_string_lossy());
    icefloe::session::register_catalog_as_default(&ctx, warehouse.join("catalog.db"), relocation)
        .await
        .map_err(|e| error_chain(&e))?;
    icefloe::sql::register(&ctx);
    Ok(ctx)
}
