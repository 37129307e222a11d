//! Metadata tables of the PyIceberg warehouse at other snapshots and by other names:
//!
//! - `"t$files" VERSION AS OF <id>` for every snapshot of the oracle: its data files (path,
//!   record count) equal the oracle's `snapshots[].files`, its delete files number
//!   `snapshots[].delete_files`;
//! - `"t$manifests" VERSION AS OF <id>`: the oracle's `all_manifests` rows of that snapshot
//!   (`reference_snapshot_id = id`), without the two columns only `all_manifests` has;
//! - `"t$partitions" VERSION AS OF <id>`: as many rows as `snapshots[].rows_per_partition`
//!   groups, with the same total (snapshots without delete files);
//! - `"t@<ref>$files"` for every branch and tag: the data files of the ref's snapshot;
//! - `all_entries` holds every row of `entries`, and no fewer rows than `all_files`;
//! - Spark's `db.t.files` and the table function give the same rows as `db."t$files"`;
//! - errors: an unknown relation, time travel on `snapshots`.

use datafusion::prelude::SessionContext;
use serde_json::Value;

use crate::inspect::{InspectTable, catalog_session, is_checked, query};
use crate::inspect_compare::{self, Actual};
use crate::pyiceberg::qualified_name;
use crate::render::json_equal;
use crate::support::{Report, isolated, string_literal};

/// What a relation name that no relation has.
const UNKNOWN_RELATION: &str = "no_such_relation";

pub async fn check_table(table: &InspectTable) -> Report {
    let mut report = Report::new("metadata tables (pyiceberg)");
    let context = format!("{} metadata tables at snapshots", table.identifier);
    match isolated(travel_problems(table.clone())).await {
        Ok((checked, problems)) => {
            report.inspect.travel += checked;
            problems.iter().for_each(|p| report.mismatch(&context, p));
        }
        Err(panic) => report.mismatch(&context, panic),
    }
    let context = format!("{} metadata table names and errors", table.identifier);
    match isolated(name_problems(table.clone())).await {
        Ok((checked, errors, problems)) => {
            report.inspect.travel += checked;
            report.inspect.errors += errors;
            problems.iter().for_each(|p| report.mismatch(&context, p));
        }
        Err(panic) => report.mismatch(&context, panic),
    }
    report
}

/// One snapshot of the oracle, as the time-travel checks need it.
struct OracleSnapshot {
    id: i64,
    /// Data files as `[path, record_count]`.
    data_files: Vec<Value>,
    delete_files: i64,
    /// `rows_per_partition`: (groups, rows).
    partitions: (usize, i64),
}

fn oracle_snapshots(table: &InspectTable) -> Vec<OracleSnapshot> {
    let snapshots = table.oracle["snapshots"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    snapshots
        .iter()
        .filter_map(|s| {
            let files = s["files"].as_array()?;
            let data_files = files
                .iter()
                .map(|f| {
                    let path = f["path"].as_str().unwrap_or_default();
                    let path = path.replace("{warehouse}", crate::pyiceberg::WRITTEN_AT);
                    Value::from(vec![Value::from(path), f["record_count"].clone()])
                })
                .collect();
            let groups = s["rows_per_partition"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let rows = groups.iter().filter_map(|g| g["rows"].as_i64()).sum();
            Some(OracleSnapshot {
                id: s["snapshot_id"].as_i64()?,
                data_files,
                delete_files: s["delete_files"].as_i64().unwrap_or(0),
                partitions: (groups.len(), rows),
            })
        })
        .collect()
}

/// `partitions VERSION AS OF id`: as many rows as the oracle's `rows_per_partition` groups and
/// the same total (snapshots without delete files, where live rows are the record counts).
async fn partitions_at(
    ctx: &SessionContext,
    table: &InspectTable,
    s: &OracleSnapshot,
) -> Option<String> {
    let (groups, rows) = s.partitions;
    let sql = format!(
        "SELECT count(*), coalesce(sum(record_count), 0) FROM {} VERSION AS OF {}",
        table.relation_name("partitions"),
        s.id
    );
    let expected = Value::from(vec![Value::from(groups), Value::from(rows)]);
    match crate::support::rows(ctx, &sql, crate::render::Style::PYICEBERG).await {
        Ok(got) if got.len() == 1 && json_equal(&expected, &Value::from(got[0].clone())) => None,
        Ok(got) => Some(format!("{sql}: expected {expected}, got {got:?}")),
        Err(e) => Some(format!("{sql} failed: {e}")),
    }
}

/// `"t@<ref>$files"` for every branch and tag: the data files of the ref's snapshot.
async fn refs_problems(
    ctx: &SessionContext,
    table: &InspectTable,
    snapshots: &[OracleSnapshot],
) -> (usize, Vec<String>) {
    let refs = table.oracle["refs"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut checked = 0;
    let mut problems = Vec::new();
    for (name, target) in refs {
        let id = target["snapshot-id"].as_i64();
        let Some(snapshot) = snapshots.iter().find(|s| Some(s.id) == id) else {
            continue;
        };
        checked += 1;
        let relation = qualified_name(&format!("{}@{name}$files", table.identifier));
        let sql = format!("SELECT file_path, record_count FROM {relation} WHERE content = 0");
        problems.extend(same_pairs(ctx, &sql, &snapshot.data_files).await);
    }
    (checked, problems)
}

async fn travel_problems(table: InspectTable) -> (usize, Vec<String>) {
    let mut problems = Vec::new();
    let mut checked = 0;
    let ctx = match catalog_session(&table.warehouse).await {
        Ok(ctx) => ctx,
        Err(e) => return (0, vec![format!("session: {e}")]),
    };
    let files = table.relation_name("files");
    let manifests = table.relation_name("manifests");
    let snapshots = oracle_snapshots(&table);
    for snapshot in &snapshots {
        let (id, delete_files) = (snapshot.id, snapshot.delete_files);
        if is_checked("files") {
            checked += 1;
            let sql = format!(
                "SELECT file_path, record_count FROM {files} VERSION AS OF {id} WHERE content = 0"
            );
            problems.extend(same_pairs(&ctx, &sql, &snapshot.data_files).await);
            let sql =
                format!("SELECT file_path FROM {files} VERSION AS OF {id} WHERE content <> 0");
            match query(&ctx, &sql).await {
                Ok(a) if a.rows.len() as i64 == delete_files => {}
                Ok(a) => problems.push(format!(
                    "{sql}: expected {delete_files} delete files, got {}",
                    a.rows.len()
                )),
                Err(e) => problems.push(format!("{sql} failed: {e}")),
            }
        }
        if is_checked("manifests") {
            checked += 1;
            problems.extend(manifests_at(&ctx, &table, &manifests, id).await);
        }
        if is_checked("partitions") && delete_files == 0 {
            checked += 1;
            problems.extend(partitions_at(&ctx, &table, snapshot).await);
        }
    }
    if is_checked("files") {
        let (n, p) = refs_problems(&ctx, &table, &snapshots).await;
        checked += n;
        problems.extend(p);
    }
    if is_checked("all_entries") && is_checked("entries") {
        checked += 1;
        problems.extend(all_entries_cover_entries(&ctx, &table).await);
    }
    (checked, problems)
}

/// The rows of `sql` (two columns) as a multiset equal to `expected` (`[a, b]` pairs).
async fn same_pairs(ctx: &SessionContext, sql: &str, expected: &[Value]) -> Vec<String> {
    let actual = match query(ctx, sql).await {
        Ok(actual) => actual,
        Err(e) => return vec![format!("{sql} failed: {e}")],
    };
    let names = actual.names();
    let expected: Vec<Value> = expected
        .iter()
        .map(|pair| {
            let object = names
                .iter()
                .zip(pair.as_array().into_iter().flatten())
                .map(|(n, v)| (n.clone(), v.clone()))
                .collect();
            Value::Object(object)
        })
        .collect();
    inspect_compare::compare(&expected, &actual, false)
        .into_iter()
        .map(|p| format!("{sql}: {p}"))
        .collect()
}

/// `manifests VERSION AS OF id` against the oracle's `all_manifests` rows of that snapshot.
async fn manifests_at(
    ctx: &SessionContext,
    table: &InspectTable,
    manifests: &str,
    id: i64,
) -> Vec<String> {
    let Some(Ok(all)) = table.expected("all_manifests") else {
        return Vec::new();
    };
    let expected: Vec<Value> = all
        .into_iter()
        .filter(|row| row["reference_snapshot_id"].as_i64() == Some(id))
        .map(|mut row| {
            if let Some(object) = row.as_object_mut() {
                object.shift_remove("reference_snapshot_id");
                object.shift_remove("key_metadata");
            }
            row
        })
        .collect();
    let sql = format!("SELECT * FROM {manifests} VERSION AS OF {id}");
    match query(ctx, &sql).await {
        Ok(actual) => compare_or_count(&expected, &actual)
            .into_iter()
            .map(|p| format!("{sql}: {p}"))
            .collect(),
        Err(e) => vec![format!("{sql} failed: {e}")],
    }
}

/// Rows compared when the oracle has some; with none, the row count must be zero.
fn compare_or_count(expected: &[Value], actual: &Actual) -> Vec<String> {
    if expected.is_empty() && !actual.rows.is_empty() {
        return vec![format!("expected no rows, got {}", actual.rows.len())];
    }
    inspect_compare::compare(expected, actual, false)
}

/// Every `entries` row (status, snapshot, sequence numbers, file path) is an `all_entries` row.
async fn all_entries_cover_entries(ctx: &SessionContext, table: &InspectTable) -> Vec<String> {
    let columns = "status, snapshot_id, sequence_number, file_sequence_number, data_file.file_path";
    let entries_sql = format!("SELECT {columns} FROM {}", table.relation_name("entries"));
    let all_sql = format!(
        "SELECT {columns} FROM {}",
        table.relation_name("all_entries")
    );
    let (entries, all) = match (query(ctx, &entries_sql).await, query(ctx, &all_sql).await) {
        (Ok(e), Ok(a)) => (e.rows, a.rows),
        (Err(e), _) => return vec![format!("{entries_sql} failed: {e}")],
        (_, Err(e)) => return vec![format!("{all_sql} failed: {e}")],
    };
    let entries_sql = &entries_sql;
    entries
        .iter()
        .filter(|row| {
            !all.iter()
                .any(|a| json_equal(&Value::from((*row).clone()), &Value::from(a.clone())))
        })
        .take(3)
        .map(|row| format!("{entries_sql}: row {row:?} is not in all_entries"))
        .collect()
}

/// Spark's name and the table function give `files`' rows; errors for an unknown relation and
/// for time travel on `snapshots`. Returns (checks, error checks, problems).
async fn name_problems(table: InspectTable) -> (usize, usize, Vec<String>) {
    let mut problems = Vec::new();
    let ctx = match catalog_session(&table.warehouse).await {
        Ok(ctx) => ctx,
        Err(e) => return (0, 0, vec![format!("session: {e}")]),
    };
    let mut checked = 0;
    for relation in ["files", "snapshots", "manifests"] {
        let Some(Ok(expected)) = table.expected(relation) else {
            continue;
        };
        if !is_checked(relation) {
            continue;
        }
        for name in other_names(&table, relation) {
            checked += 1;
            let sql = format!("SELECT * FROM {name}");
            match query(&ctx, &sql).await {
                Ok(actual) => problems.extend(
                    compare_or_count(&expected, &actual)
                        .into_iter()
                        .map(|p| format!("{sql}: {p}")),
                ),
                Err(e) => problems.push(format!("{sql} failed: {e}")),
            }
        }
    }
    let (errors, error_problems) = error_checks(&ctx, &table).await;
    problems.extend(error_problems);
    (checked, errors, problems)
}

/// `db.t.files` (Spark) and `iceberg_metadata('<metadata file>', 'files', '<OLD=NEW>')`.
fn other_names(table: &InspectTable, relation: &str) -> Vec<String> {
    let relocate = format!(
        "{}={}",
        crate::pyiceberg::WRITTEN_AT,
        table.warehouse.to_string_lossy()
    );
    vec![
        format!("{}.{relation}", qualified_name(&table.identifier)),
        format!(
            "iceberg_metadata({}, {}, {})",
            string_literal(&table.metadata_location),
            string_literal(relation),
            string_literal(&relocate)
        ),
    ]
}

/// The queries that must fail: (checks, problems).
async fn error_checks(ctx: &SessionContext, table: &InspectTable) -> (usize, Vec<String>) {
    let mut queries = vec![format!(
        "SELECT * FROM {}",
        table.relation_name(UNKNOWN_RELATION)
    )];
    let current = table.oracle["snapshots"]
        .as_array()
        .and_then(|s| s.iter().find_map(|s| s["snapshot_id"].as_i64()));
    if let Some(id) = current {
        queries.push(format!(
            "SELECT * FROM {} VERSION AS OF {id}",
            table.relation_name("snapshots")
        ));
    }
    let problems = futures_problems(ctx, &queries).await;
    (queries.len(), problems)
}

async fn futures_problems(ctx: &SessionContext, queries: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for sql in queries {
        if let Ok(actual) = query(ctx, sql).await {
            problems.push(format!(
                "{sql}: expected an error, got {} rows",
                actual.rows.len()
            ));
        }
    }
    problems
}
