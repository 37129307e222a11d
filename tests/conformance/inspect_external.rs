//! Metadata tables of the external tables (no PyIceberg answers): invariants, per snapshot of
//! `external/expected_answers.json` (each read with `VERSION AS OF`):
//!
//! - `files`' data-file record counts sum to the answer's row count (snapshots without deletes);
//! - every `manifests.path` is in the snapshot's manifest list (read here with apache-avro, or
//!   the v1 `manifests` array of the metadata JSON);
//! - no file of an `entries` row with status 2 (DELETED) is in `files`;
//! - `history` follows the metadata: its snapshots in snapshot-log order, each `parent_id` the
//!   snapshot's parent, `is_current_ancestor` exactly the current snapshot's ancestors, and each
//!   ancestor row's parent the previous ancestor row.

use std::collections::{BTreeSet, HashMap};

use datafusion::prelude::SessionContext;
use icefloe::Relocation;
use serde_json::{Map, Value};

use crate::external::has_row_level_deletes;
use crate::inspect::{is_checked, query};
use crate::support::{self, FixtureRoot, Report, TableSpec, isolated, open_as_t};

pub async fn check_all(root: &FixtureRoot) -> Report {
    let mut report = Report::new("metadata tables (external)");
    let answers_path = root.path.join("external/expected_answers.json");
    let answers: Map<String, Value> = match support::read_json(&answers_path)
        .and_then(|v| serde_json::from_value(v).map_err(|e| e.to_string()))
    {
        Ok(answers) => answers,
        Err(e) => {
            report.mismatch("expected_answers.json", e);
            return report;
        }
    };
    for (key, answer) in answers {
        let dir = root.path.join("external").join(&key);
        if !dir.is_dir() {
            match root.complete {
                true => report.mismatch(&key, "table directory is missing"),
                false => report.skipped_tables.push(key),
            }
            continue;
        }
        report.tables += 1;
        match isolated(check_table(root.join("external"), key.clone(), answer)).await {
            Ok((checked, problems)) => {
                report.inspect.invariants += checked;
                problems.iter().for_each(|p| report.mismatch(&key, p));
            }
            Err(panic) => report.mismatch(&key, panic),
        }
    }
    report
}

/// A table's metadata JSON, relocation and answers.
struct ExternalTable {
    key: String,
    metadata: Value,
    relocation: Relocation,
    table_dir: String,
}

async fn check_table(external: String, key: String, answer: Value) -> (usize, Vec<String>) {
    let table_dir = format!("{external}/{key}");
    let metadata_path = format!(
        "{table_dir}/{}",
        answer["latest_metadata_file"].as_str().unwrap_or_default()
    );
    let relocations: Vec<(String, String)> = answer["relocate"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|pair| {
            let old = pair[0].as_str()?;
            Some((old.to_string(), format!("{external}/{}", pair[1].as_str()?)))
        })
        .collect();
    let metadata = match support::read_json(std::path::Path::new(&metadata_path)) {
        Ok(m) => m,
        Err(e) => return (0, vec![e]),
    };
    let relocation = relocations
        .iter()
        .fold(Relocation::new(), |r, (old, new)| r.with_rule(old, new));
    let table = ExternalTable {
        key,
        metadata,
        relocation,
        table_dir,
    };
    let ctx = match open_as_t(&TableSpec::current(metadata_path, relocations)).await {
        Ok(ctx) => ctx,
        Err(e) => return (0, vec![format!("open failed: {e}")]),
    };
    let mut checked = 0;
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for scan in answer["scans"].as_array().into_iter().flatten() {
        let Some(id) = scan["snapshot_id"].as_i64() else {
            continue;
        };
        if !seen.insert(id) {
            continue;
        }
        let (n, p) = check_snapshot(&ctx, &table, id, scan["row_count"].as_i64()).await;
        checked += n;
        problems.extend(p);
    }
    if is_checked("history") {
        checked += 1;
        problems.extend(check_history(&ctx, &table.metadata).await);
    }
    (checked, problems)
}

async fn check_snapshot(
    ctx: &SessionContext,
    table: &ExternalTable,
    id: i64,
    row_count: Option<i64>,
) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut problems = Vec::new();
    let no_deletes = has_row_level_deletes(&table.key, &table.metadata, id) == Ok(false);
    if let (true, true, Some(rows)) = (is_checked("files"), no_deletes, row_count) {
        checked += 1;
        let sql = format!(
            "SELECT coalesce(sum(record_count), 0) FROM \"t$files\" VERSION AS OF {id} WHERE content = 0"
        );
        match support::count_rows_sql(ctx, &sql).await {
            Ok(sum) if sum == rows => {}
            Ok(sum) => problems.push(format!("{sql}: expected {rows}, got {sum}")),
            Err(e) => problems.push(format!("{sql} failed: {e}")),
        }
    }
    if is_checked("manifests") {
        checked += 1;
        problems.extend(manifests_in_list(ctx, table, id).await);
    }
    if is_checked("entries") && is_checked("files") {
        checked += 1;
        problems.extend(deleted_entries_not_live(ctx, id).await);
    }
    (checked, problems)
}

/// The first column of every row of `sql`, as text.
async fn strings(ctx: &SessionContext, sql: &str) -> Result<Vec<String>, String> {
    let actual = query(ctx, sql).await?;
    Ok(actual
        .rows
        .iter()
        .map(|row| match &row[0] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect())
}

async fn manifests_in_list(ctx: &SessionContext, table: &ExternalTable, id: i64) -> Vec<String> {
    let listed = match manifest_list_paths(table, id) {
        Ok(paths) => paths,
        Err(e) => return vec![format!("snapshot {id}: reading the manifest list: {e}")],
    };
    let sql = format!("SELECT path FROM \"t$manifests\" VERSION AS OF {id}");
    match strings(ctx, &sql).await {
        Ok(paths) => paths
            .into_iter()
            .filter(|p| !listed.contains(p))
            .take(3)
            .map(|p| format!("{sql}: {p} is not in the manifest list {listed:?}"))
            .collect(),
        Err(e) => vec![format!("{sql} failed: {e}")],
    }
}

/// The manifest paths of a snapshot as written: its manifest list's `manifest_path` fields, or
/// v1's embedded `manifests`.
fn manifest_list_paths(table: &ExternalTable, id: i64) -> Result<BTreeSet<String>, String> {
    let snapshot = table.metadata["snapshots"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["snapshot-id"].as_i64() == Some(id)))
        .ok_or("snapshot not in the metadata")?;
    if let Some(list) = snapshot["manifest-list"].as_str() {
        let path = local_path(table, list);
        let file = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
        let reader = apache_avro::Reader::new(file).map_err(|e| format!("{path}: {e}"))?;
        let mut paths = BTreeSet::new();
        for record in reader {
            let record = record.map_err(|e| format!("{path}: {e}"))?;
            if let apache_avro::types::Value::Record(fields) = record {
                let path = fields.into_iter().find(|(name, _)| name == "manifest_path");
                if let Some(p) = path.and_then(|(_, value)| avro_string(value)) {
                    paths.insert(p);
                }
            }
        }
        return Ok(paths);
    }
    let embedded = snapshot["manifests"].as_array().ok_or("no manifest list")?;
    Ok(embedded
        .iter()
        .filter_map(|m| m.as_str().map(str::to_string))
        .collect())
}

/// A string, also inside a nullable union (non-Java writers make every field one).
fn avro_string(value: apache_avro::types::Value) -> Option<String> {
    match value {
        apache_avro::types::Value::String(s) => Some(s),
        apache_avro::types::Value::Union(_, inner) => avro_string(*inner),
        _ => None,
    }
}

/// Where a path written in metadata is in the fixture directory.
fn local_path(table: &ExternalTable, written: &str) -> String {
    let relocated = table.relocation.apply(written).into_owned();
    let bare = relocated
        .strip_prefix("file://")
        .unwrap_or(&relocated)
        .to_string();
    match bare.starts_with('/') {
        true => bare,
        false => format!("{}/{bare}", table.table_dir),
    }
}

async fn deleted_entries_not_live(ctx: &SessionContext, id: i64) -> Vec<String> {
    let deleted = format!(
        "SELECT data_file.file_path FROM \"t$entries\" VERSION AS OF {id} WHERE status = 2"
    );
    let live = format!("SELECT file_path FROM \"t$files\" VERSION AS OF {id}");
    match (strings(ctx, &deleted).await, strings(ctx, &live).await) {
        (Ok(deleted), Ok(live)) => deleted
            .iter()
            .filter(|p| live.contains(p))
            .take(3)
            .map(|p| format!("snapshot {id}: {p} has a DELETED entry but is in files"))
            .collect(),
        (Err(e), _) => vec![format!("{deleted} failed: {e}")],
        (_, Err(e)) => vec![format!("{live} failed: {e}")],
    }
}

/// `history` against the metadata's snapshot log and parent links.
async fn check_history(ctx: &SessionContext, metadata: &Value) -> Vec<String> {
    let sql = "SELECT snapshot_id, parent_id, is_current_ancestor FROM \"t$history\"";
    let rows = match query(ctx, sql).await {
        Ok(actual) => actual.rows,
        Err(e) => return vec![format!("{sql} failed: {e}")],
    };
    let parents: HashMap<i64, Option<i64>> = metadata["snapshots"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| Some((s["snapshot-id"].as_i64()?, s["parent-snapshot-id"].as_i64())))
        .collect();
    let ancestors = ancestors(metadata["current-snapshot-id"].as_i64(), &parents);
    let log: Vec<i64> = metadata["snapshot-log"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["snapshot-id"].as_i64())
        .collect();
    let mut problems = Vec::new();
    let ids: Vec<i64> = rows.iter().filter_map(|r| r[0].as_i64()).collect();
    if ids != log {
        problems.push(format!(
            "{sql}: snapshots {ids:?}, the snapshot log has {log:?}"
        ));
    }
    let mut previous_ancestor: Option<i64> = None;
    let mut first_seen = BTreeSet::new();
    for row in &rows {
        let (Some(id), parent, flag) = (row[0].as_i64(), row[1].as_i64(), row[2].as_bool()) else {
            continue;
        };
        let expected_parent = parents.get(&id).copied().flatten();
        if parent != expected_parent {
            problems.push(format!(
                "{sql}: {id} parent_id {parent:?}, metadata says {expected_parent:?}"
            ));
        }
        let is_ancestor = ancestors.contains(&id);
        if flag != Some(is_ancestor) {
            problems.push(format!(
                "{sql}: {id} is_current_ancestor {flag:?}, expected {is_ancestor}"
            ));
        }
        // A snapshot made current again (a rollback) repeats in the log: the chain runs over
        // first appearances.
        if is_ancestor && first_seen.insert(id) {
            if let Some(prev) = previous_ancestor.filter(|p| parent.is_some_and(|q| q != *p)) {
                problems.push(format!(
                    "{sql}: ancestor {id} has parent {parent:?}, the previous ancestor row is {prev}"
                ));
            }
            previous_ancestor = Some(id);
        }
    }
    problems
}

/// The current snapshot and its ancestors through the parent links.
fn ancestors(current: Option<i64>, parents: &HashMap<i64, Option<i64>>) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
    let mut next = current.filter(|id| *id >= 0);
    while let Some(id) = next {
        if !out.insert(id) {
            break;
        }
        next = parents.get(&id).copied().flatten();
    }
    out
}
