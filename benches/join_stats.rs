//! What NDV statistics change in DataFusion's plan of a 3-table join, and what that costs
//! (issue 19, item 8): the hash-join build sides and the query time before and after
//! `iceberg_compute_table_stats`, side by side in one run.
//!
//! Tables (directory tables in a temporary directory): `f` (`ICEFLOE_JOIN_BENCH_ROWS` rows,
//! default 2,000,000; `a`: 10 distinct strings, `b`: a long with `rows / 10` distinct values),
//! `d1` (10 rows, one per `a`), `d2` (`rows / 10` rows, one per `b`). The query:
//! `SELECT count(*), sum(d1.x), sum(length(d2.y)) FROM f JOIN d1 ON f.a = d1.a JOIN d2 ON f.b = d2.b`.
//!
//! Without statistics DataFusion takes `f.a` as unique (no bounds cap a string column's
//! distinct count), expects `f JOIN d1` to give 10 rows and builds the outer join's hash table
//! on it: really all of `f`'s rows. With the distinct counts it expects `rows` and builds on
//! `d2`. Each plan is printed (`EXPLAIN`), then each query is timed `ICEFLOE_JOIN_BENCH_RUNS`
//! times (default 5) and the median printed.
//!
//! Run: `cargo bench --bench join_stats` (release), or `cargo bench --profile dev --bench
//! join_stats` to reuse a dev build.

use std::time::{Duration, Instant};

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn sql(ctx: &SessionContext, statement: &str) -> Vec<datafusion::arrow::array::RecordBatch> {
    icefloe::sql::sql(ctx, statement)
        .await
        .unwrap_or_else(|e| panic!("{statement}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{statement}: {e}"))
}

const QUERY: &str = "SELECT count(*), sum(d1.x), sum(length(d2.y)) \
     FROM f JOIN d1 ON f.a = d1.a JOIN d2 ON f.b = d2.b";

async fn create(ctx: &SessionContext, dir: &std::path::Path, rows: usize) {
    let dims = rows / 10;
    let at = |t: &str| dir.join(t).display().to_string();
    for statement in [
        format!("CREATE EXTERNAL TABLE f (a VARCHAR, b BIGINT) STORED AS ICEBERG LOCATION '{}'", at("f")),
        format!("CREATE EXTERNAL TABLE d1 (a VARCHAR, x BIGINT) STORED AS ICEBERG LOCATION '{}'", at("d1")),
        format!("CREATE EXTERNAL TABLE d2 (b BIGINT, y VARCHAR) STORED AS ICEBERG LOCATION '{}'", at("d2")),
        format!("INSERT INTO f SELECT 'k' || CAST(v % 10 AS VARCHAR), (v * 7919) % {dims} FROM (SELECT unnest(range(0, {rows})) AS v)"),
        "INSERT INTO d1 SELECT 'k' || CAST(v AS VARCHAR), v FROM (SELECT unnest(range(0, 10)) AS v)".to_string(),
        format!("INSERT INTO d2 SELECT v, 'y' || CAST(v AS VARCHAR) FROM (SELECT unnest(range(0, {dims})) AS v)"),
    ] {
        sql(ctx, &statement).await;
    }
}

/// Prints the plan's hash joins and returns the median time of `runs` runs and the answer.
async fn measure(ctx: &SessionContext, label: &str, runs: usize) -> (Duration, String) {
    let plan = sql(ctx, &format!("EXPLAIN {QUERY}")).await;
    let text = pretty_format_batches(&plan).expect("plan").to_string();
    println!("--- {label}: physical plan (hash joins and their inputs) ---");
    for line in text.lines().filter(|l| {
        l.contains("HashJoinExec") || l.contains("DataSourceExec") || l.contains("physical_plan")
    }) {
        let line = line.trim_matches(|c| c == '|' || c == ' ');
        let short: String = line.chars().take(160).collect();
        println!("{short}");
    }
    let mut times = Vec::with_capacity(runs);
    let mut answer = String::new();
    for _ in 0..runs {
        let started = Instant::now();
        let batches = sql(ctx, QUERY).await;
        times.push(started.elapsed());
        answer = pretty_format_batches(&batches).expect("answer").to_string();
    }
    times.sort();
    (times[times.len() / 2], answer)
}

fn main() {
    let rows = env("ICEFLOE_JOIN_BENCH_ROWS", 2_000_000);
    let runs = env("ICEFLOE_JOIN_BENCH_RUNS", 5);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let ctx = SessionContext::new();
        icefloe::sql::register(&ctx);
        create(&ctx, dir.path(), rows).await;
        let (before, answer_before) = measure(&ctx, "no statistics", runs).await;
        let started = Instant::now();
        for t in ["f", "d1", "d2"] {
            let location = dir.path().join(t).display().to_string();
            let done = sql(
                &ctx,
                &format!("SELECT detail FROM iceberg_compute_table_stats('{location}')"),
            )
            .await;
            println!("{t}: {}", pretty_format_batches(&done).expect("detail"));
        }
        let computing = started.elapsed();
        let (after, answer_after) = measure(&ctx, "with NDV statistics", runs).await;
        assert_eq!(answer_before, answer_after, "the answers differ");
        println!("{answer_after}");
        println!("rows of f: {rows}; median of {runs} runs");
        println!("no statistics:       {before:?}");
        println!("with NDV statistics: {after:?}");
        println!("computing the statistics of the three tables: {computing:?}");
    });
}
