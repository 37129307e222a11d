//! The external set: tables written by Spark, Flink, Hive, Impala, Trino and BigQuery, checked
//! against `external/expected_answers.json` (see `external/README.md` for every table's quirks).

use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::render::{self, Style, json_equal};
use crate::sql_expr;
use icefloe::spec::SnapshotSelector;

use crate::support::{self, FixtureRoot, Report, TableSpec, Via, ident, isolated, open_as_t};
use crate::time_travel::{self, Instant, SchemaFit};

/// Tables whose snapshot summaries lack the `total-*-deletes` counts, and whether their
/// README entry lists delete files (neither does).
const TABLES_WITHOUT_DELETE_TOTALS: &[(&str, bool)] =
    &[("duckdb_bigquery", false), ("impala_partitioned_v1", false)];

/// Tables whose README documents a column type a reader may refuse: the keyword a refusal
/// must mention. A reader that supports the type must give the answers instead. None since
/// icefloe reads `variant` (`impala_trino_variant` answers).
const UNSUPPORTED_TYPE_TABLES: &[(&str, &str)] = &[];

/// Snapshots that must fail cleanly (README: the manifest list is missing).
const UNREADABLE_SNAPSHOTS: &[(&str, i64)] =
    &[("duckdb_equality_deletes/mytable", 7342794868382145167)];

#[derive(Debug, Deserialize)]
pub struct TableAnswers {
    pub latest_metadata_file: String,
    pub relocate: Vec<(String, String)>,
    pub scans: Vec<ScanAnswer>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ScanAnswer {
    pub snapshot_id: i64,
    pub which: String,
    pub row_count: i64,
    columns: Vec<(String, String)>,
    rows_sorted: Option<Vec<Vec<Value>>>,
    aggregates: Option<Map<String, Value>>,
}

/// What a snapshot must do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Expectation {
    Answers,
    /// Either the answers or an error mentioning the keyword.
    AnswersOrRefusal(&'static str),
}

pub async fn check_all(root: &FixtureRoot) -> Report {
    let mut report = Report::new("external");
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
    for (key, table) in answers {
        match serde_json::from_value::<TableAnswers>(table) {
            Ok(table) => report.absorb(check_table(root, &key, table).await),
            Err(e) => report.mismatch(&key, format!("bad answer entry: {e}")),
        }
    }
    report
}

async fn check_table(root: &FixtureRoot, key: &str, table: TableAnswers) -> Report {
    let mut report = Report::new("external");
    let table_dir = root.path.join("external").join(key);
    if !table_dir.is_dir() {
        if root.complete {
            report.mismatch(
                key,
                format!("table directory {} is missing", table_dir.display()),
            );
        } else {
            report.skipped_tables.push(key.to_string());
        }
        return report;
    }
    report.tables += 1;
    let metadata_path = table_dir.join(&table.latest_metadata_file);
    let metadata = match support::read_json(&metadata_path) {
        Ok(m) => m,
        Err(e) => {
            report.mismatch(key, e);
            return report;
        }
    };
    let relocations: Vec<(String, String)> = table
        .relocate
        .iter()
        .map(|(old, new)| (old.clone(), root.join(&format!("external/{new}"))))
        .collect();
    let base = TableSpec::current(metadata_path.to_string_lossy().into_owned(), relocations);
    report.absorb(check_scans(key, &metadata, &base, table.scans).await);
    report
}

/// Every answer of `scans` on the table `base` opens (`metadata`: the metadata JSON the
/// answers were computed on): the current answer as the table is, every snapshot by id and
/// time, and the snapshots that must fail.
pub async fn check_scans(
    key: &str,
    metadata: &Value,
    base: &TableSpec,
    scans: Vec<ScanAnswer>,
) -> Report {
    let mut report = Report::new("external");
    for scan in scans {
        match has_row_level_deletes(key, metadata, scan.snapshot_id) {
            Ok(true) => report.delete_snapshots += 1,
            Ok(false) => {}
            Err(e) => {
                report.mismatch(&format!("{key}@{}", scan.snapshot_id), e);
                continue;
            }
        }
        let expectation = expectation(key);
        // "current snapshot, current schema": read the table as it is, not by snapshot id
        // (a snapshot read uses the snapshot's schema, which may predate a type promotion).
        let current = scan.which.starts_with("current");
        let selector = match current {
            true => SnapshotSelector::Current,
            false => SnapshotSelector::SnapshotId(scan.snapshot_id),
        };
        let spec = base.at(selector, Via::Options);
        report.absorb(check_time_travel(key, metadata, base, &scan, expectation).await);
        report.absorb(check_scan_isolated(key.to_string(), spec, scan, expectation).await);
    }
    for (_, snapshot_id) in UNREADABLE_SNAPSHOTS.iter().filter(|(k, _)| *k == key) {
        for via in [Via::Options, Via::Sql] {
            let spec = base.at(SnapshotSelector::SnapshotId(*snapshot_id), via);
            report.absorb(check_unreadable(key, spec).await);
        }
    }
    report
}

/// The same answers, reached by `VERSION AS OF` (and `with_snapshot_id` for answers of the
/// current snapshot) and by a timestamp at which the snapshot was current, through the Rust
/// option and `TIMESTAMP AS OF`.
pub async fn check_time_travel(
    key: &str,
    metadata: &Value,
    base: &TableSpec,
    scan: &ScanAnswer,
    expectation: Expectation,
) -> Report {
    let mut report = Report::new("external");
    let id = scan.snapshot_id;
    let mut scan = scan.clone();
    // A snapshot read uses the snapshot's schema; answers of the current snapshot were
    // computed with the current one (time-travel answers already use the snapshot's).
    let current = scan.which.starts_with("current");
    let fit = match current {
        true => time_travel::snapshot_schema_fit(metadata, id),
        false => SchemaFit::Same,
    };
    match fit {
        SchemaFit::Same => {}
        SchemaFit::IntWidened(columns) => {
            for i in columns {
                scan.columns[i].1 = "int".to_string();
            }
        }
        SchemaFit::Other => {
            report.travel.count_only += 1;
            scan.rows_sorted = None;
            scan.aggregates = None;
            scan.columns = Vec::new();
        }
    }
    let refusal = match expectation {
        Expectation::AnswersOrRefusal(keyword) => Some(keyword),
        _ => None,
    };
    let mut forms = vec![(SnapshotSelector::SnapshotId(id), Via::Sql)];
    if current {
        forms.push((SnapshotSelector::SnapshotId(id), Via::Options));
    }
    report.travel.by_version += 1;
    match time_travel::instant_current(metadata, id) {
        Instant::At(ms) => {
            report.travel.by_timestamp += 1;
            forms.push((SnapshotSelector::AsOfTimestamp(ms), Via::Options));
            forms.push((SnapshotSelector::AsOfTimestamp(ms), Via::Sql));
        }
        Instant::NoGap => report.travel.no_gap += 1,
        Instant::NeverCurrent => report.travel.never_current += 1,
    }
    for (selector, via) in forms {
        let context = format!("{key}@{id} ({via:?} {selector:?})");
        let spec = base.at(selector, via);
        report.absorb(check_form(context, spec, scan.clone(), refusal).await);
    }
    report
}

/// [`check_answers`] on its own task; an empty `columns` list means row count only.
async fn check_form(
    context: String,
    spec: TableSpec,
    scan: ScanAnswer,
    refusal: Option<&'static str>,
) -> Report {
    let task_context = context.clone();
    let outcome = isolated(async move {
        let mut report = Report::new("external");
        check_answers(&mut report, &task_context, &spec, &scan, refusal).await;
        report
    })
    .await;
    outcome.unwrap_or_else(|panic| {
        let mut report = Report::new("external");
        report.mismatch(&context, panic);
        report
    })
}

/// Decides from the fixture's README notes (not through icefloe) what the table's snapshots
/// must do.
pub fn expectation(key: &str) -> Expectation {
    let refusal = UNSUPPORTED_TYPE_TABLES
        .iter()
        .find(|(table, _)| *table == key);
    match refusal {
        Some((_, keyword)) => Expectation::AnswersOrRefusal(keyword),
        None => Expectation::Answers,
    }
}

/// Whether the snapshot's summary counts any live delete file or deleted row (decided from the
/// metadata JSON, not through icefloe).
pub fn has_row_level_deletes(
    key: &str,
    metadata: &Value,
    snapshot_id: i64,
) -> Result<bool, String> {
    let snapshot = metadata["snapshots"]
        .as_array()
        .and_then(|all| {
            all.iter()
                .find(|s| s["snapshot-id"].as_i64() == Some(snapshot_id))
        })
        .ok_or_else(|| format!("snapshot {snapshot_id} is not in the metadata JSON"))?;
    let totals: Vec<i64> = [
        "total-delete-files",
        "total-position-deletes",
        "total-equality-deletes",
    ]
    .iter()
    .filter_map(|name| snapshot["summary"][*name].as_str())
    .filter_map(|count| count.parse().ok())
    .collect();
    if !totals.is_empty() {
        return Ok(totals.iter().any(|&n| n > 0));
    }
    TABLES_WITHOUT_DELETE_TOTALS
        .iter()
        .find(|(table, _)| *table == key)
        .map(|(_, deletes)| *deletes)
        .ok_or_else(|| format!("snapshot {snapshot_id} has no delete totals and no README entry"))
}

pub async fn check_scan_isolated(
    key: String,
    spec: TableSpec,
    scan: ScanAnswer,
    expectation: Expectation,
) -> Report {
    let context = format!("{key}@{} ({})", scan.snapshot_id, scan.which);
    match isolated(check_scan(context.clone(), spec, scan, expectation)).await {
        Ok(report) => report,
        Err(panic) => {
            let mut report = Report::new("external");
            report.mismatch(&context, panic);
            report
        }
    }
}

async fn check_scan(
    context: String,
    spec: TableSpec,
    scan: ScanAnswer,
    expectation: Expectation,
) -> Report {
    let mut report = Report::new("external");
    match expectation {
        Expectation::Answers => {
            report.snapshots += 1;
            check_answers(&mut report, &context, &spec, &scan, None).await;
        }
        Expectation::AnswersOrRefusal(keyword) => {
            report.snapshots += 1;
            check_answers(&mut report, &context, &spec, &scan, Some(keyword)).await;
        }
    }
    report
}

/// Every check of one scan. With `refusal`, an error that mentions the keyword is accepted
/// in place of an answer.
async fn check_answers(
    report: &mut Report,
    context: &str,
    spec: &TableSpec,
    scan: &ScanAnswer,
    refusal: Option<&str>,
) {
    let accept = |report: &mut Report, what: &str, error: String| match refusal {
        Some(k) if error.to_lowercase().contains(k) => report.tolerated_errors += 1,
        _ => report.query_failed(context, what, &error),
    };
    let ctx = match open_as_t(spec).await {
        Ok(ctx) => ctx,
        Err(e) => return accept(report, "open", e),
    };
    match support::count_rows(&ctx, None).await {
        Ok(n) if n == scan.row_count => {}
        Ok(n) => report.mismatch(
            context,
            format!("count(*): expected {}, got {n}", scan.row_count),
        ),
        // Nothing else can work; one mismatch says it all.
        Err(e) => return accept(report, "SELECT count(*)", e),
    }
    if !scan.columns.is_empty() {
        check_columns(report, context, &ctx, &scan.columns).await;
    }
    if let Some(expected) = &scan.rows_sorted
        && let Err(e) = check_rows(report, context, &ctx, &scan.columns, expected).await
    {
        accept(report, "SELECT * ORDER BY", e);
    }
    for (name, expected) in scan.aggregates.iter().flatten() {
        let Some(sql) = sql_expr::external_aggregate(name) else {
            report.mismatch(context, format!("aggregate {name} has no SQL translation"));
            continue;
        };
        match support::scalar(&ctx, &sql, Style::EXTERNAL).await {
            Ok(got) if json_equal(expected, &got) => {}
            Ok(got) => report.mismatch(context, format!("{sql}: expected {expected}, got {got}")),
            Err(e) => accept(report, &sql, e),
        }
    }
}

/// Column names and Iceberg types of the provider's schema.
async fn check_columns(
    report: &mut Report,
    context: &str,
    ctx: &datafusion::prelude::SessionContext,
    expected: &[(String, String)],
) {
    let schema = match ctx.table_provider("t").await {
        Ok(provider) => provider.schema(),
        Err(e) => return report.mismatch(context, format!("table t: {e}")),
    };
    let got: Vec<(String, String)> = schema
        .fields()
        .iter()
        .map(|f| (f.name().clone(), render::iceberg_type(f)))
        .collect();
    if got != expected {
        report.mismatch(
            context,
            format!("columns differ: {}", column_diff(expected, &got)),
        );
    }
}

/// The positions where two column lists differ, e.g. `#15 expected x:long, got x:int`.
fn column_diff(expected: &[(String, String)], got: &[(String, String)]) -> String {
    let show =
        |c: Option<&(String, String)>| c.map_or("-".to_string(), |(n, t)| format!("{n}:{t}"));
    (0..expected.len().max(got.len()))
        .filter(|&i| expected.get(i) != got.get(i))
        .map(|i| {
            format!(
                "#{i} expected {}, got {}",
                show(expected.get(i)),
                show(got.get(i))
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `SELECT *` ordered by every column, NULLs last, rendered and compared row by row.
async fn check_rows(
    report: &mut Report,
    context: &str,
    ctx: &datafusion::prelude::SessionContext,
    columns: &[(String, String)],
    expected: &[Vec<Value>],
) -> Result<(), String> {
    let order: Vec<String> = columns
        .iter()
        .map(|(name, _)| format!("{} ASC NULLS LAST", ident(name)))
        .collect();
    let sql = format!("SELECT * FROM t ORDER BY {}", order.join(", "));
    let got = support::rows(ctx, &sql, Style::EXTERNAL).await?;
    let differing: Vec<String> = (0..expected.len().max(got.len()))
        .filter(|&i| match (expected.get(i), got.get(i)) {
            (Some(e), Some(g)) => !json_equal(&Value::from(e.clone()), &Value::from(g.clone())),
            _ => true,
        })
        .take(5)
        .map(|i| {
            format!(
                "row {i}: expected {:?}, got {:?}",
                expected.get(i),
                got.get(i)
            )
        })
        .collect();
    if !differing.is_empty() {
        report.mismatch(
            context,
            format!(
                "{sql}: {} rows expected, {} got; first differences:\n    {}",
                expected.len(),
                got.len(),
                differing.join("\n    ")
            ),
        );
    }
    Ok(())
}

/// A snapshot the README says cannot be read must give an error, not rows and not a panic.
async fn check_unreadable(key: &str, spec: TableSpec) -> Report {
    let mut report = Report::new("external");
    let context = format!(
        "{key} {:?} {:?} (manifest list missing)",
        spec.via, spec.selector
    );
    report.travel.errors += 1;
    let asked = match &spec.selector {
        SnapshotSelector::SnapshotId(id) => id.to_string(),
        other => format!("{other:?}"),
    };
    let outcome = isolated(async move {
        match open_as_t(&spec).await {
            Err(e) => Err(e),
            Ok(ctx) => support::count_rows(&ctx, None).await,
        }
    })
    .await;
    match outcome {
        Ok(Err(e)) if e.contains(&asked) => {}
        Ok(Err(e)) => report.mismatch(&context, format!("the error does not name {asked}: {e}")),
        Ok(Ok(n)) => report.mismatch(&context, format!("expected an error, got count(*) = {n}")),
        Err(panic) => report.mismatch(&context, panic),
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn delete_totals_decide() {
        let metadata = json!({"snapshots": [
            {"snapshot-id": 1, "summary": {"total-delete-files": "0", "total-position-deletes": "0"}},
            {"snapshot-id": 2, "summary": {"total-delete-files": "1", "total-equality-deletes": "3"}},
            {"snapshot-id": 3, "summary": {"operation": "append"}}
        ]});
        assert_eq!(has_row_level_deletes("x", &metadata, 1), Ok(false));
        assert_eq!(has_row_level_deletes("x", &metadata, 2), Ok(true));
        assert!(has_row_level_deletes("x", &metadata, 3).is_err());
        assert_eq!(
            has_row_level_deletes("duckdb_bigquery", &metadata, 3),
            Ok(false)
        );
        assert!(has_row_level_deletes("x", &metadata, 4).is_err());
    }

    #[test]
    fn fixture_paths_exist_in_answers() {
        // The answer file's relocation targets are relative to `external/`.
        let root = FixtureRoot::from_env();
        let answers =
            support::read_json(&root.path.join("external/expected_answers.json")).unwrap();
        let table =
            &answers["impala_multiple_storage_locations/iceberg_multiple_storage_locations"];
        assert_eq!(table["relocate"][0][1], "impala_multiple_storage_locations");
        assert!(Path::new(&root.join("external/impala_multiple_storage_locations")).is_dir());
    }
}
