//! The PyIceberg warehouse, refs: every branch and tag of `refs_answers` read through the Rust
//! option, the quoted `"t@ref"` name, the dotted `t.branch_x` / `t.tag_x` name of a registered
//! table and Spark's `db.t.branch_x` / `db.t.tag_x` through the SQLite catalog; and the errors
//! around refs: an unknown ref, an unknown snapshot id.

use std::sync::Arc;

use datafusion::prelude::SessionContext;
use icefloe::spec::SnapshotSelector;
use icefloe::{IcebergTableProvider, Relocation};
use serde_json::{Map, Value};

use crate::pyiceberg::{Oracle, TableUnderTest, qualified_name};
use crate::render::{Style, json_equal};
use crate::support::{self, Report, Via, error_chain, ident, isolated, open_as_t};
use crate::time_travel;

/// A snapshot id no fixture table has.
const UNKNOWN_SNAPSHOT_ID: i64 = 4_242_424_242_424_242;
/// A ref name no fixture table has.
const UNKNOWN_REF: &str = "no_such_ref";

/// One entry of `refs_answers`.
#[derive(Debug, Clone)]
struct RefAnswer {
    name: String,
    is_tag: bool,
    snapshot_id: i64,
    row_count: i64,
    /// `sum_<column>`: the column and its sum.
    sum: Option<(String, Value)>,
}

pub async fn check_table(table: &TableUnderTest, oracle: &Oracle) -> Report {
    let mut report = Report::new("pyiceberg");
    for (name, answer) in &oracle.refs_answers {
        let Some(answer) = parse_answer(name, answer) else {
            continue; // the oracle could not answer (equality deletes)
        };
        let context = format!("{} ref {name}", table.identifier);
        report.travel.refs += 1;
        match isolated(check_ref(table.clone(), answer)).await {
            Ok(problems) => problems.iter().for_each(|p| report.mismatch(&context, p)),
            Err(panic) => report.mismatch(&context, panic),
        }
    }
    if oracle.refs_answers.len() > 1 {
        report.absorb(check_unknown_names(table).await);
    }
    report
}

fn parse_answer(name: &str, answer: &Value) -> Option<RefAnswer> {
    let answer: &Map<String, Value> = answer.as_object()?;
    let snapshot_id = answer.get("snapshot_id")?.as_i64()?;
    Some(RefAnswer {
        name: name.to_string(),
        is_tag: answer.get("type")?.as_str()? == "tag",
        snapshot_id,
        row_count: answer.get("row_count")?.as_i64()?,
        sum: answer
            .iter()
            .find_map(|(k, v)| Some((k.strip_prefix("sum_")?.to_string(), v.clone()))),
    })
}

/// A session with the SQLite catalog as the default catalog, the current table registered as
/// `base` and icefloe's SQL registered.
async fn catalog_session(table: &TableUnderTest) -> Result<SessionContext, String> {
    let ctx = open_as_t(&table.spec.at(SnapshotSelector::Current, Via::Sql)).await?;
    let relocation = table
        .spec
        .relocations
        .iter()
        .fold(Relocation::new(), |r, (old, new)| r.with_rule(old, new));
    icefloe::session::register_catalog_as_default(
        &ctx,
        table.warehouse.join("catalog.db"),
        relocation,
    )
    .await
    .map_err(|e| error_chain(&e))?;
    // The default catalog was replaced: wrap it again so that refs by name resolve.
    icefloe::sql::register(&ctx);
    Ok(ctx)
}

/// The names a ref is read by in SQL: `"base@x"`, `base.branch_x`, `db.t.branch_x`.
fn sql_names(table: &TableUnderTest, name: &str, is_tag: bool) -> Vec<String> {
    let prefix = if is_tag { "tag_" } else { "branch_" };
    vec![
        ident(&format!("base@{name}")),
        format!("base.{}", ident(&format!("{prefix}{name}"))),
        format!(
            "{}.{}",
            qualified_name(&table.identifier),
            ident(&format!("{prefix}{name}"))
        ),
    ]
}

async fn check_ref(table: TableUnderTest, answer: RefAnswer) -> Vec<String> {
    let mut problems = Vec::new();
    // Rust: the option resolves to the ref's snapshot and reads its rows.
    let ctx = crate::support::session_for(&table.spec);
    let spec = table
        .spec
        .at(SnapshotSelector::Ref(answer.name.clone()), Via::Options);
    match IcebergTableProvider::open(&ctx, &spec.location, spec.table_options()).await {
        Ok(p) if p.snapshot_id() == Some(answer.snapshot_id) => {
            let registered = ctx.register_table("t", Arc::new(p));
            match registered {
                Ok(_) => problems.extend(check_count_and_sum(&ctx, "t", &answer).await),
                Err(e) => problems.push(format!("register: {e}")),
            }
        }
        Ok(p) => problems.push(format!(
            "with_ref: expected snapshot {}, got {:?}",
            answer.snapshot_id,
            p.snapshot_id()
        )),
        Err(e) => problems.push(format!("with_ref failed: {}", error_chain(&e))),
    }
    // SQL: the quoted, dotted and catalog names.
    let ctx = match catalog_session(&table).await {
        Ok(ctx) => ctx,
        Err(e) => {
            problems.push(format!("session: {e}"));
            return problems;
        }
    };
    for relation in sql_names(&table, &answer.name, answer.is_tag) {
        problems.extend(check_count_and_sum(&ctx, &relation, &answer).await);
    }
    problems
}

async fn check_count_and_sum(
    ctx: &SessionContext,
    relation: &str,
    answer: &RefAnswer,
) -> Option<String> {
    let (select, expected) = match &answer.sum {
        Some((column, sum)) => (
            // PyIceberg sums no rows to 0 where SQL gives NULL (`db.emptied`).
            format!("count(*), coalesce(sum({}), 0)", ident(column)),
            vec![Value::from(answer.row_count), sum.clone()],
        ),
        None => ("count(*)".to_string(), vec![Value::from(answer.row_count)]),
    };
    let sql = format!("SELECT {select} FROM {relation}");
    match support::rows(ctx, &sql, Style::PYICEBERG).await {
        Ok(rows)
            if rows.len() == 1
                && json_equal(
                    &Value::from(expected.clone()),
                    &Value::from(rows[0].clone()),
                ) =>
        {
            None
        }
        Ok(rows) => Some(format!("{sql}: expected {expected:?}, got {rows:?}")),
        Err(e) => Some(format!("{sql} failed: {e}")),
    }
}

/// An unknown ref and an unknown snapshot id fail, naming the table and what was asked, in
/// every form.
async fn check_unknown_names(table: &TableUnderTest) -> Report {
    let mut report = Report::new("pyiceberg");
    let context = format!("{} unknown names", table.identifier);
    let task = unknown_name_problems(table.clone());
    match isolated(task).await {
        Ok((checked, problems)) => {
            report.travel.errors += checked;
            problems.iter().for_each(|p| report.mismatch(&context, p));
        }
        Err(panic) => report.mismatch(&context, panic),
    }
    report
}

async fn unknown_name_problems(table: TableUnderTest) -> (usize, Vec<String>) {
    let name = table
        .identifier
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .to_string();
    let mut outcomes: Vec<(String, String, Result<i64, String>)> = Vec::new();
    for selector in [
        SnapshotSelector::Ref(UNKNOWN_REF.to_string()),
        SnapshotSelector::SnapshotId(UNKNOWN_SNAPSHOT_ID),
    ] {
        let asked = match &selector {
            SnapshotSelector::Ref(r) => r.clone(),
            _ => UNKNOWN_SNAPSHOT_ID.to_string(),
        };
        for via in [Via::Options, Via::Sql] {
            let spec = table.spec.at(selector.clone(), via);
            let outcome = match open_as_t(&spec).await {
                Ok(ctx) => support::count_rows(&ctx, None).await,
                Err(e) => Err(e),
            };
            outcomes.push((format!("{via:?} {selector:?}"), asked.clone(), outcome));
        }
    }
    match catalog_session(&table).await {
        Ok(ctx) => {
            for relation in sql_names(&table, UNKNOWN_REF, false) {
                let sql = format!("SELECT count(*) FROM {relation}");
                let outcome = support::count_rows_sql(&ctx, &sql).await;
                outcomes.push((sql, UNKNOWN_REF.to_string(), outcome));
            }
        }
        Err(e) => outcomes.push(("session".to_string(), String::new(), Err(e))),
    }
    let checked = outcomes.len();
    let problems = outcomes
        .into_iter()
        .filter_map(|(what, asked, outcome)| match outcome {
            Ok(n) => Some(format!("{what}: expected an error, got count(*) = {n}")),
            Err(e) if time_travel::names_both(&e, &name, std::slice::from_ref(&asked)) => None,
            Err(e) => Some(format!(
                "{what}: the error does not name {name} and {asked}: {e}"
            )),
        })
        .collect();
    (checked, problems)
}
