//! The PyIceberg warehouse, time travel: every snapshot (row-level deletes applied) read by
//! `VERSION AS OF` and by a timestamp at which it was current on `main` (Rust option and SQL),
//! and the oracle's AS OF TIMESTAMP answers (`time_travel[]`), including instants before the
//! first snapshot, which must fail naming the table and the instant.

use datafusion::prelude::SessionContext;
use icefloe::IcebergTableProvider;
use icefloe::spec::SnapshotSelector;

use crate::pyiceberg::{AsOfOracle, Oracle, SnapshotOracle, TableUnderTest, check_aggregates};
use crate::support::{self, Report, TableSpec, Via, isolated, open_as_t, utc_timestamp};
use crate::time_travel::{self, Instant};

pub async fn check_table(table: &TableUnderTest, oracle: &Oracle) -> Report {
    let mut report = Report::new("pyiceberg");
    for snapshot in &oracle.snapshots {
        if snapshot.row_count.is_some() {
            report.absorb(check_snapshot(table, snapshot).await);
        }
    }
    for entry in &oracle.time_travel {
        report.absorb(check_as_of(table, entry).await);
    }
    report
}

/// One snapshot through `VERSION AS OF` and, when some instant selects it, through the
/// timestamp option and `TIMESTAMP AS OF`.
async fn check_snapshot(table: &TableUnderTest, snapshot: &SnapshotOracle) -> Report {
    let mut report = Report::new("pyiceberg");
    let id = snapshot.snapshot_id;
    report.travel.by_version += 1;
    let mut forms = vec![(SnapshotSelector::SnapshotId(id), Via::Sql)];
    match time_travel::instant_current(&table.metadata, id) {
        Instant::At(ms) => {
            report.travel.by_timestamp += 1;
            forms.push((SnapshotSelector::AsOfTimestamp(ms), Via::Options));
            forms.push((SnapshotSelector::AsOfTimestamp(ms), Via::Sql));
        }
        Instant::NoGap => report.travel.no_gap += 1,
        Instant::NeverCurrent => report.travel.never_current += 1,
    }
    for (selector, via) in forms {
        let context = format!("{}@{id} ({via:?} {selector:?})", table.identifier);
        let spec = table.spec.at(selector, via);
        let task = check_state(context.clone(), table.clone(), snapshot.clone(), spec);
        match isolated(task).await {
            Ok(part) => report.absorb(part),
            Err(panic) => report.mismatch(&context, panic),
        }
    }
    report
}

/// Row count, column names and the per-column aggregates of one snapshot, read as `spec` says.
async fn check_state(
    context: String,
    table: TableUnderTest,
    snapshot: SnapshotOracle,
    spec: TableSpec,
) -> Report {
    let mut report = Report::new("pyiceberg");
    let ctx = match open_as_t(&spec).await {
        Ok(ctx) => ctx,
        Err(e) => {
            report.mismatch(&context, format!("open failed: {e}"));
            return report;
        }
    };
    let expected = snapshot.row_count.unwrap_or(-1);
    match support::count_rows(&ctx, None).await {
        Ok(n) if n == expected => {}
        Ok(n) => report.mismatch(&context, format!("count(*): expected {expected}, got {n}")),
        Err(e) => {
            report.mismatch(&context, format!("SELECT count(*) failed: {e}"));
            return report;
        }
    }
    check_column_names(&mut report, &context, &ctx, &snapshot.columns).await;
    let types = table.types_of(&snapshot);
    check_aggregates(&mut report, &context, &ctx, &types, &snapshot).await;
    report
}

/// The top-level column names of `t` are the snapshot's (the oracle's `columns`).
pub async fn check_column_names(
    report: &mut Report,
    context: &str,
    ctx: &SessionContext,
    expected: &[String],
) {
    let schema = match ctx.table_provider("t").await {
        Ok(provider) => provider.schema(),
        Err(e) => return report.mismatch(context, format!("table t: {e}")),
    };
    let got: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
    if !got.iter().copied().eq(expected.iter()) {
        report.mismatch(
            context,
            format!("columns: expected {expected:?}, got {got:?}"),
        );
    }
}

/// The snapshot an instant selects, asked through the Rust option (the provider must name
/// the oracle's snapshot) and through SQL; an instant before the first snapshot must fail.
async fn check_as_of(table: &TableUnderTest, entry: &AsOfOracle) -> Report {
    let mut report = Report::new("pyiceberg");
    report.travel.as_of_entries += 1;
    if entry.snapshot_id.is_none() {
        report.travel.before_first += 1;
    }
    let context = format!(
        "{} AS OF {}",
        table.identifier,
        utc_timestamp(entry.timestamp_ms)
    );
    let task = check_as_of_entry(table.clone(), entry.clone());
    match isolated(task).await {
        Ok(problems) => {
            for problem in problems {
                report.mismatch(&context, problem);
            }
        }
        Err(panic) => report.mismatch(&context, panic),
    }
    report
}

async fn check_as_of_entry(table: TableUnderTest, entry: AsOfOracle) -> Vec<String> {
    let mut problems = Vec::new();
    let selector = SnapshotSelector::AsOfTimestamp(entry.timestamp_ms);
    // Rust: the provider resolves to the oracle's snapshot.
    let ctx = crate::support::session_for(&table.spec);
    let spec = table.spec.at(selector.clone(), Via::Options);
    let opened = IcebergTableProvider::open(&ctx, &spec.location, spec.table_options()).await;
    match (opened, entry.snapshot_id) {
        (Ok(p), Some(id)) if p.snapshot_id() == Some(id) => {}
        (Ok(p), want) => problems.push(format!(
            "with as_of_timestamp_ms: expected snapshot {want:?}, got {:?}",
            p.snapshot_id()
        )),
        (Err(e), Some(id)) => problems.push(format!(
            "with as_of_timestamp_ms: expected snapshot {id}, got error {}",
            support::error_chain(&e)
        )),
        (Err(e), None) => {
            let text = support::error_chain(&e);
            if let Some(problem) = unclear_before_first(&table, &entry, &text) {
                problems.push(format!("with as_of_timestamp_ms: {problem}"));
            }
        }
    }
    // Both ways: the row count, or the error before the first snapshot.
    for via in [Via::Options, Via::Sql] {
        let spec = table.spec.at(selector.clone(), via);
        let counted = match open_as_t(&spec).await {
            Ok(ctx) => support::count_rows(&ctx, None).await,
            Err(e) => Err(e),
        };
        match (counted, entry.snapshot_id, entry.row_count) {
            (Ok(n), Some(_), Some(want)) if n != want => {
                problems.push(format!("{via:?}: count(*): expected {want}, got {n}"))
            }
            (Ok(_), Some(_), _) => {}
            (Err(e), Some(_), _) => problems.push(format!("{via:?}: failed: {e}")),
            (Ok(n), None, _) => problems.push(format!(
                "{via:?}: before the first snapshot, expected an error, got count(*) = {n}"
            )),
            (Err(e), None, _) => {
                if let Some(problem) = unclear_before_first(&table, &entry, &e) {
                    problems.push(format!("{via:?}: {problem}"));
                }
            }
        }
    }
    problems
}

/// The error for an instant before the first snapshot must name the table and the instant
/// (as epoch milliseconds or ISO 8601).
fn unclear_before_first(table: &TableUnderTest, entry: &AsOfOracle, error: &str) -> Option<String> {
    let name = table
        .identifier
        .rsplit('.')
        .next()
        .unwrap_or(&table.identifier);
    let iso = utc_timestamp(entry.timestamp_ms);
    let asked = [entry.timestamp_ms.to_string(), iso[..23].to_string()];
    let named = time_travel::names_both(error, name, &asked);
    (!named).then(|| format!("the error does not name table {name} and {asked:?}: {error}"))
}
