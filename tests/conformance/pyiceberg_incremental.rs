//! The PyIceberg warehouse, incremental reads and the seeds' `db.orders` example.
//!
//! Incremental reads go from every oracle snapshot to its nearest ancestor in the oracle (and
//! from every ancestor to each branch head, by name): only appends in between give the rows
//! they added, which is the difference of the oracle's row counts; anything else is an error
//! naming a snapshot that is not an append. A tag as the end is an error naming the tag.
//! Whether the snapshots in between are appends is read from the metadata JSON.

use std::collections::HashMap;
use std::sync::Arc;

use icefloe::IcebergTableProvider;
use icefloe::spec::SnapshotSelector;
use serde_json::Value;

use crate::pyiceberg::{Oracle, SnapshotOracle, TableUnderTest, has_row_level_deletes};
use crate::render::{Style, json_equal};
use crate::support::{self, Report, Via, error_chain, isolated, string_literal, utc_timestamp};
use crate::time_travel::{self, Incremental, Instant};

/// One incremental read and what it must give.
#[derive(Debug, Clone)]
struct IncrementalCase {
    from: i64,
    to: SnapshotSelector,
    /// The row count, or texts of which the error must name one.
    expected: Result<i64, Vec<String>>,
}

pub async fn check_table(table: &TableUnderTest, oracle: &Oracle) -> Report {
    let mut report = Report::new("pyiceberg");
    for case in cases(table, oracle) {
        match case.expected {
            Ok(_) => report.travel.incremental += 1,
            Err(_) => report.travel.incremental_errors += 1,
        }
        let context = format!(
            "{} incremental from {} to {:?}",
            table.identifier, case.from, case.to
        );
        match isolated(check_case(table.clone(), case)).await {
            Ok(problems) => problems.iter().for_each(|p| report.mismatch(&context, p)),
            Err(panic) => report.mismatch(&context, panic),
        }
    }
    if table.identifier == "db.orders" {
        report.absorb(check_orders_days(table, oracle).await);
    }
    report
}

/// Readable snapshots of the oracle by id: those with a row count and no row-level deletes.
fn readable(oracle: &Oracle) -> HashMap<i64, &SnapshotOracle> {
    oracle
        .snapshots
        .iter()
        .filter(|s| s.row_count.is_some() && !has_row_level_deletes(s))
        .map(|s| (s.snapshot_id, s))
        .collect()
}

/// Oracle snapshots that are ancestors of `to` (excluding `to`), newest first.
fn oracle_ancestors(table: &TableUnderTest, oracle: &Oracle, to: i64) -> Vec<i64> {
    time_travel::ancestors(&table.metadata, to)
        .iter()
        .skip(1)
        .filter_map(|s| s["snapshot-id"].as_i64())
        .filter(|id| oracle.snapshots.iter().any(|s| s.snapshot_id == *id))
        .collect()
}

fn cases(table: &TableUnderTest, oracle: &Oracle) -> Vec<IncrementalCase> {
    let readable = readable(oracle);
    let rows = |id: i64| readable.get(&id).and_then(|s| s.row_count);
    let decide =
        |from: i64, to_id: i64| match time_travel::incremental(&table.metadata, from, to_id) {
            Incremental::Appends => Some(Ok(rows(to_id)? - rows(from)?)),
            Incremental::NonAppend(ids) => Some(Err(ids.iter().map(i64::to_string).collect())),
            Incremental::NotAncestor => None,
        };
    let mut cases = Vec::new();
    for to in &oracle.snapshots {
        let Some(&from) = oracle_ancestors(table, oracle, to.snapshot_id).first() else {
            continue;
        };
        if let Some(expected) = decide(from, to.snapshot_id) {
            let to = SnapshotSelector::SnapshotId(to.snapshot_id);
            cases.push(IncrementalCase { from, to, expected });
        }
    }
    for (name, answer) in &oracle.refs_answers {
        let Some(head) = answer["snapshot_id"].as_i64() else {
            continue;
        };
        let is_tag = answer["type"].as_str() == Some("tag");
        for from in oracle_ancestors(table, oracle, head) {
            let expected = match is_tag {
                true => Some(Err(vec![name.clone()])),
                false => decide(from, head),
            };
            if let Some(expected) = expected {
                let to = SnapshotSelector::Ref(name.clone());
                cases.push(IncrementalCase { from, to, expected });
            }
        }
    }
    cases
}

/// The case through `IcebergTableProvider::incremental` and through `iceberg_incremental`.
async fn check_case(table: TableUnderTest, case: IncrementalCase) -> Vec<String> {
    let mut problems = Vec::new();
    let rust = rust_incremental(&table, &case).await;
    problems.extend(judge(
        "IcebergTableProvider::incremental",
        rust,
        &case.expected,
    ));
    let to = match &case.to {
        SnapshotSelector::SnapshotId(id) => id.to_string(),
        SnapshotSelector::Ref(name) => string_literal(name),
        other => format!("{other:?}"),
    };
    let sql = format!(
        "SELECT count(*) FROM iceberg_incremental({}, {}, {to}, {})",
        string_literal(&table.spec.location),
        case.from,
        string_literal(&table.spec.relocate_option())
    );
    let ctx = crate::support::session_for(&table.spec);
    icefloe::sql::register(&ctx);
    let counted = support::count_rows_sql(&ctx, &sql).await;
    problems.extend(judge(&sql, counted, &case.expected));
    problems
}

async fn rust_incremental(table: &TableUnderTest, case: &IncrementalCase) -> Result<i64, String> {
    let ctx = crate::support::session_for(&table.spec);
    let spec = table.spec.at(SnapshotSelector::Current, Via::Options);
    let current = IcebergTableProvider::open(&ctx, &spec.location, spec.table_options())
        .await
        .map_err(|e| error_chain(&e))?;
    let provider =
        IcebergTableProvider::incremental(current.table().clone(), case.from, case.to.clone())
            .map_err(|e| error_chain(&e))?;
    ctx.register_table("t", Arc::new(provider))
        .map_err(|e| error_chain(&e))?;
    support::count_rows(&ctx, None).await
}

/// A count must match; an error must name one of the expected texts.
fn judge(
    what: &str,
    got: Result<i64, String>,
    expected: &Result<i64, Vec<String>>,
) -> Option<String> {
    match (got, expected) {
        (Ok(n), Ok(want)) if n == *want => None,
        (Ok(n), Ok(want)) => Some(format!("{what}: expected {want} rows, got {n}")),
        (Err(e), Ok(want)) => Some(format!("{what}: expected {want} rows, failed: {e}")),
        (Ok(n), Err(names)) => Some(format!(
            "{what}: expected an error naming one of {names:?}, got {n} rows"
        )),
        (Err(e), Err(names)) if names.iter().any(|n| e.contains(n.as_str())) => None,
        (Err(e), Err(names)) => Some(format!("{what}: the error names none of {names:?}: {e}")),
    }
}

/// The seeds' example: `db.orders` has two daily commits; as of the first commit only the
/// first day is there, as of the second both. Expected days and counts are the oracle's
/// `rows_per_partition` (`order_ts_day`, days since 1970-01-01).
async fn check_orders_days(table: &TableUnderTest, oracle: &Oracle) -> Report {
    let mut report = Report::new("pyiceberg");
    for snapshot in &oracle.snapshots {
        let Instant::At(ms) = time_travel::instant_current(&table.metadata, snapshot.snapshot_id)
        else {
            report.mismatch(
                "db.orders",
                format!("no instant selects {}", snapshot.snapshot_id),
            );
            continue;
        };
        let expected = days_of(&snapshot.rows_per_partition);
        for via in [Via::Options, Via::Sql] {
            let context = format!("db.orders days as of {} ({via:?})", utc_timestamp(ms));
            let spec = table.spec.at(SnapshotSelector::AsOfTimestamp(ms), via);
            let sql =
                "SELECT CAST(order_ts AS DATE) AS day, count(*) FROM t GROUP BY day ORDER BY day";
            let got = isolated(async move {
                let ctx = support::open_as_t(&spec).await?;
                support::rows(&ctx, sql, Style::PYICEBERG).await
            })
            .await;
            match got {
                Ok(Ok(rows))
                    if json_equal(&Value::from(expected.clone()), &Value::from(rows.clone())) => {}
                Ok(Ok(rows)) => report.mismatch(
                    &context,
                    format!("{sql}: expected {expected:?}, got {rows:?}"),
                ),
                Ok(Err(e)) => report.mismatch(&context, format!("{sql} failed: {e}")),
                Err(panic) => report.mismatch(&context, panic),
            }
        }
    }
    report
}

/// `[{"partition": {"order_ts_day": 19723}, "rows": 10}, ...]` -> `[["2024-01-01", 10], ...]`.
fn days_of(rows_per_partition: &[Value]) -> Vec<Vec<Value>> {
    let mut days: Vec<(i64, i64)> = rows_per_partition
        .iter()
        .filter_map(|p| {
            Some((
                p["partition"]["order_ts_day"].as_i64()?,
                p["rows"].as_i64()?,
            ))
        })
        .collect();
    days.sort();
    days.into_iter()
        .map(|(day, rows)| {
            let date = chrono::DateTime::from_timestamp(day * 86_400, 0)
                .map(|t| t.date_naive().to_string())
                .unwrap_or_default();
            vec![Value::from(date), Value::from(rows)]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn partition_days_become_dates() {
        let rows = [
            json!({"partition": {"order_ts_day": 19724}, "rows": 3}),
            json!({"partition": {"order_ts_day": 19723}, "rows": 10}),
        ];
        assert_eq!(
            days_of(&rows),
            vec![
                vec![json!("2024-01-01"), json!(10)],
                vec![json!("2024-01-02"), json!(3)]
            ]
        );
    }
}
