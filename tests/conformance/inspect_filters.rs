//! Projections, filters and limits on the metadata tables, against the oracle's rows filtered
//! and projected here: the pushed-down parts (columns read, filters on `content`, `status`,
//! `snapshot_id`, `file_path`, `LIMIT`) must not change the answer.
//!
//! Per relation of the oracle: every column in reverse order; `WHERE <column> = <value>` for
//! the filterable columns the relation has, with each value the oracle rows take (and one no
//! row has); `LIMIT 1` gives one of the rows.

use serde_json::{Map, Value};

use crate::inspect::{InspectTable, catalog_session, is_checked, query};
use crate::inspect_compare;
use crate::render::json_equal;
use crate::support::{ident, string_literal};

/// Columns whose filters a relation may evaluate before reading manifests.
const FILTER_COLUMNS: &[&str] = &["content", "status", "snapshot_id", "file_path", "spec_id"];
/// The relations checked (the oracle has rows for them).
const RELATIONS: &[&str] = &[
    "snapshots",
    "manifests",
    "all_manifests",
    "entries",
    "files",
    "all_files",
    "all_data_files",
    "partitions",
];
/// At most this many distinct values are tried per column.
const VALUES_PER_COLUMN: usize = 3;

/// (checks, problems) for one table.
pub async fn problems(table: InspectTable) -> (usize, Vec<String>) {
    let ctx = match catalog_session(&table.warehouse).await {
        Ok(ctx) => ctx,
        Err(e) => return (0, vec![format!("session: {e}")]),
    };
    let mut checked = 0;
    let mut problems = Vec::new();
    for relation in RELATIONS.iter().filter(|r| is_checked(r)) {
        let Some(Ok(expected)) = table.expected(relation) else {
            continue;
        };
        let Some(columns) = expected.first().and_then(Value::as_object) else {
            continue;
        };
        let columns: Vec<String> = columns.keys().cloned().collect();
        let name = table.relation_name(relation);
        for (sql, rows) in queries(&name, &columns, &expected) {
            checked += 1;
            match query(&ctx, &sql).await {
                Ok(actual) => problems.extend(
                    inspect_compare::compare(&rows, &actual, false)
                        .into_iter()
                        .map(|p| format!("{sql}: {p}")),
                ),
                Err(e) => problems.push(format!("{sql} failed: {e}")),
            }
        }
        checked += 1;
        problems.extend(limit_one(&ctx, &name, &expected).await);
    }
    (checked, problems)
}

/// The projection and filter queries of a relation with the rows each must return.
fn queries(name: &str, columns: &[String], expected: &[Value]) -> Vec<(String, Vec<Value>)> {
    let mut out = Vec::new();
    let reversed: Vec<String> = columns.iter().rev().cloned().collect();
    let select: Vec<String> = reversed.iter().map(|c| ident(c)).collect();
    out.push((
        format!("SELECT {} FROM {name}", select.join(", ")),
        expected.iter().map(|row| project(row, &reversed)).collect(),
    ));
    for column in columns
        .iter()
        .filter(|c| FILTER_COLUMNS.contains(&c.as_str()))
    {
        for value in distinct_values(expected, column) {
            let Some(literal) = sql_literal(&value) else {
                continue;
            };
            let rows = expected
                .iter()
                .filter(|row| json_equal(&row[column.as_str()], &value))
                .cloned()
                .collect();
            let sql = format!("SELECT * FROM {name} WHERE {} = {literal}", ident(column));
            out.push((sql, rows));
        }
        let absent = match column.as_str() {
            "file_path" => "'no/such/file.parquet'".to_string(),
            _ => "-7".to_string(),
        };
        let sql = format!("SELECT * FROM {name} WHERE {} = {absent}", ident(column));
        out.push((sql, Vec::new()));
    }
    out
}

fn project(row: &Value, columns: &[String]) -> Value {
    let object: Map<String, Value> = columns
        .iter()
        .map(|c| (c.clone(), row[c.as_str()].clone()))
        .collect();
    Value::Object(object)
}

fn distinct_values(rows: &[Value], column: &str) -> Vec<Value> {
    let mut values: Vec<Value> = Vec::new();
    for row in rows {
        let value = &row[column];
        if !value.is_null() && !values.contains(value) {
            values.push(value.clone());
        }
        if values.len() == VALUES_PER_COLUMN {
            break;
        }
    }
    values
}

fn sql_literal(value: &Value) -> Option<String> {
    match value {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(string_literal(s)),
        _ => None,
    }
}

/// `LIMIT 1` returns one row (none for an empty relation) and it is one of the oracle's.
async fn limit_one(
    ctx: &datafusion::prelude::SessionContext,
    name: &str,
    expected: &[Value],
) -> Option<String> {
    let sql = format!("SELECT * FROM {name} LIMIT 1");
    let actual = match query(ctx, &sql).await {
        Ok(actual) => actual,
        Err(e) => return Some(format!("{sql} failed: {e}")),
    };
    match (actual.rows.len(), expected.is_empty()) {
        (0, true) => None,
        (1, false) => {
            let found = expected.iter().any(|row| {
                inspect_compare::compare(std::slice::from_ref(row), &actual, false).is_empty()
            });
            (!found).then(|| format!("{sql}: the row is none of the oracle's"))
        }
        (n, _) => Some(format!("{sql}: {n} rows, {} expected rows", expected.len())),
    }
}
