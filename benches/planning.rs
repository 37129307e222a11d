//! Planning on a table of many small commits, as a streaming writer leaves it.
//!
//! Table: 2,000 one-file append commits generated at bench start (see
//! `support/many_commits.rs`; `ICEFLOE_PLANNING_TABLE=DIR` keeps it in DIR for later runs),
//! so the current snapshot's manifest list holds 2,000 manifests.
//!
//! Groups, side by side in one run:
//! - `cold`: each iteration clears the process-wide manifest cache and opens the table in a
//!   fresh `SessionContext` (metadata file, manifest list, manifests: what a new process pays,
//!   minus process start-up);
//! - `warm`: the same queries on an open provider with a warm manifest cache;
//! - `full scan`: a grouped aggregate over every row, icefloe vs a DataFusion `ListingTable`
//!   over the same data directory (both registered once).
//!
//! Before criterion runs, the bench checks the table (row count, pruning metrics), times the
//! planning phases once, and, when the release `icefloe` binary sits next to the bench
//! executable (`cargo build --release --bin icefloe`), times each cold query in a fresh
//! process.
//!
//! - `cold, disk vs S3`: when `ICEFLOE_PYTHON` names a Python with `moto[server]`, the same
//!   table copied into a bucket of moto's S3 server on loopback, and the cold queries on both
//!   (`id = value` is the one that reads all 2,000 manifests).
//!
//! Run: `cargo bench --bench planning -- --warm-up-time 1 --measurement-time 3`.

#[path = "support/many_commits.rs"]
mod many_commits;
#[path = "../tests/servers.rs"]
mod s3;
#[path = "support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use datafusion::arrow::array::Int64Array;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use icefloe::scan::{ManifestCache, plan_files, plan_metric, read_manifest_list};
use icefloe::spec::values::format_date;
use icefloe::{FileIO, IcebergTableProvider, Table, TableOptions};
use many_commits::{ROWS_PER_FILE, day_of, first_id, generate_table};
use support::run;
use tokio::runtime::Runtime;

/// Snapshots, manifests and data files: one of each per commit.
const COMMITS: i64 = 2_000;
/// The commit the selective queries look for.
const PROBE_COMMIT: i64 = 1_234;
/// The row (within the probe commit's file) `id = ...` looks for.
const PROBE_ROW: i64 = 7;

struct Queries {
    count: &'static str,
    by_id: String,
    one_day: String,
    full_scan: &'static str,
}

fn queries() -> Queries {
    let day = day_of(PROBE_COMMIT);
    Queries {
        count: "SELECT count(*) FROM t",
        by_id: format!(
            "SELECT * FROM t WHERE id = {}",
            first_id(PROBE_COMMIT) + PROBE_ROW
        ),
        one_day: format!(
            "SELECT * FROM t WHERE ts >= TIMESTAMP '{}T00:00:00Z' AND ts < TIMESTAMP '{}T00:00:00Z'",
            format_date(day),
            format_date(day + 1)
        ),
        full_scan: "SELECT category, count(*), sum(id) FROM t GROUP BY 1",
    }
}

async fn icefloe_ctx(location: &str) -> SessionContext {
    let ctx = SessionContext::new();
    let provider = IcebergTableProvider::open(&ctx, location, TableOptions::default())
        .await
        .expect("open the iceberg table");
    ctx.register_table("t", Arc::new(provider))
        .expect("register");
    ctx
}

/// Runs `sql` as `EXPLAIN ANALYZE` would: plans, executes, and returns the plan with metrics.
async fn analyzed(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    let plan = ctx
        .sql(sql)
        .await
        .expect("plan")
        .create_physical_plan()
        .await
        .expect("physical plan");
    datafusion::physical_plan::collect(Arc::clone(&plan), ctx.task_ctx())
        .await
        .expect("run");
    plan
}

async fn check_table(location: &str, q: &Queries) {
    let ctx = icefloe_ctx(location).await;
    let batches = ctx
        .sql(q.count)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    let count = batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("count column")
        .value(0);
    assert_eq!(count, COMMITS * ROWS_PER_FILE, "count(*)");

    let plan = analyzed(&ctx, &q.one_day).await;
    assert_eq!(
        plan_metric(&plan, "manifests_total"),
        Some(COMMITS as usize)
    );
    assert_eq!(
        plan_metric(&plan, "manifests_pruned"),
        Some(COMMITS as usize - 1)
    );
    assert_eq!(plan_metric(&plan, "data_files_scanned"), Some(1));
    assert_eq!(run(&ctx, &q.one_day).await, ROWS_PER_FILE as usize);

    let plan = analyzed(&ctx, &q.by_id).await;
    assert_eq!(plan_metric(&plan, "data_files_scanned"), Some(1));
    assert_eq!(
        plan_metric(&plan, "data_files_pruned_by_metrics"),
        Some(COMMITS as usize - 1)
    );
    assert_eq!(run(&ctx, &q.by_id).await, 1);
    println!(
        "checked: count(*) = {count}; one day: 1,999 manifests pruned, 1 file scanned; id: 1 file scanned"
    );
}

/// Times the planning phases once with a cold cache: metadata, manifest list, manifests.
async fn time_phases(location: &str) {
    ManifestCache::global().clear();
    let ctx = SessionContext::new();
    let start = Instant::now();
    let table = Table::load(FileIO::new(ctx.runtime_env(), Default::default()), location)
        .await
        .expect("load table");
    let loaded = start.elapsed();
    let metadata = Arc::clone(table.metadata());
    let snapshot = metadata.current_snapshot().expect("current snapshot");
    let start = Instant::now();
    let manifests = read_manifest_list(table.io(), &metadata, snapshot)
        .await
        .expect("manifest list");
    let listed = start.elapsed();
    let start = Instant::now();
    let files = plan_files(table.io(), &metadata, snapshot)
        .await
        .expect("plan files");
    let planned = start.elapsed();
    println!(
        "phases, cold cache: locate + parse metadata {:.1} ms; manifest list ({} manifests) {:.1} ms; \
         plan every file ({} files; the list cached) {:.1} ms",
        ms(loaded),
        manifests.len(),
        ms(listed),
        files.len(),
        ms(planned)
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The release `icefloe` binary next to this bench executable (`target/release/deps/..`).
fn icefloe_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let release = exe.parent()?.parent()?;
    let binary = release.join("icefloe");
    binary.is_file().then_some(binary)
}

/// Times each query in a fresh `icefloe sql` process: min and median of `runs`.
fn time_fresh_processes(location: &str, q: &Queries) {
    let Some(binary) = icefloe_binary() else {
        println!("fresh process: no release icefloe binary (cargo build --release --bin icefloe)");
        return;
    };
    let runs = 9;
    let cases = [
        ("startup only (SELECT 1)", "SELECT 1"),
        ("count(*)", q.count),
        ("id = value", q.by_id.as_str()),
        ("one day", q.one_day.as_str()),
    ];
    for (label, sql) in cases {
        let mut times: Vec<f64> = (0..runs)
            .map(|_| {
                let start = Instant::now();
                let out = Command::new(&binary)
                    .args(["sql", "--format", "csv", "--table"])
                    .arg(format!("t={location}"))
                    .arg(sql)
                    .output()
                    .expect("run icefloe");
                let elapsed = start.elapsed();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                ms(elapsed)
            })
            .collect();
        times.sort_by(f64::total_cmp);
        println!(
            "fresh process {label}: min {:.1} ms, median {:.1} ms, max {:.1} ms ({runs} runs)",
            times[0],
            times[runs / 2],
            times[runs - 1]
        );
    }
}

fn planning(c: &mut Criterion) {
    let rt = Runtime::new().expect("tokio runtime");
    // ICEFLOE_PLANNING_TABLE=DIR keeps the table in DIR (generated when DIR does not exist
    // yet), so profiling runs can reuse it; otherwise a tempdir.
    let (_tmp, table_dir) = match std::env::var_os("ICEFLOE_PLANNING_TABLE") {
        Some(dir) => (None, PathBuf::from(dir)),
        None => {
            let tmp = tempfile::tempdir().expect("tempdir");
            let dir = tmp.path().to_path_buf();
            (Some(tmp), dir)
        }
    };
    let location = if table_dir.join("metadata/v1.metadata.json").is_file() {
        println!("reusing the table in {}", table_dir.display());
        table_dir.display().to_string()
    } else {
        let start = Instant::now();
        let location = generate_table(&table_dir, COMMITS);
        println!(
            "generated {COMMITS} commits ({} rows) in {:.1} s",
            COMMITS * ROWS_PER_FILE,
            start.elapsed().as_secs_f64()
        );
        location
    };
    let q = queries();
    rt.block_on(check_table(&location, &q));
    rt.block_on(time_phases(&location));
    time_fresh_processes(&location, &q);

    let selective = [
        ("count", q.count),
        ("id = value", q.by_id.as_str()),
        ("one day", q.one_day.as_str()),
    ];
    let mut group = c.benchmark_group("cold (cache cleared, fresh context + open)");
    group.sample_size(10);
    // Slow iterations: a fixed count per sample keeps the run short.
    group.sampling_mode(SamplingMode::Flat);
    for (label, sql) in selective {
        group.bench_function(label, |b| {
            b.to_async(&rt).iter(|| async {
                ManifestCache::global().clear();
                run(&icefloe_ctx(&location).await, sql).await
            })
        });
    }
    group.finish();

    match s3::S3::start() {
        Err(why) => println!("cold, disk vs S3: NOT run: {why}"),
        Ok(server) => {
            server.create_bucket("planning");
            let io = FileIO::default().with_storage(server.storage());
            let started = Instant::now();
            rt.block_on(server.upload(&io, &table_dir, "s3://planning/t"));
            println!(
                "copied the table to s3://planning/t in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            let on_s3 = TableOptions::default()
                .with_relocation(location.clone(), "s3://planning/t")
                .with_storage(server.storage());
            let mut group = c.benchmark_group("cold, disk vs S3 (moto on loopback)");
            group.sample_size(10);
            group.sampling_mode(SamplingMode::Flat);
            // `id = value` reads every manifest (no partition summary can skip one by id).
            for (label, sql) in [
                ("count", q.count),
                ("one day", q.one_day.as_str()),
                ("id = value", q.by_id.as_str()),
            ] {
                group.bench_function(format!("{label}: disk"), |b| {
                    b.to_async(&rt).iter(|| async {
                        ManifestCache::global().clear();
                        run(&icefloe_ctx(&location).await, sql).await
                    })
                });
                group.bench_function(format!("{label}: s3"), |b| {
                    b.to_async(&rt).iter(|| async {
                        ManifestCache::global().clear();
                        let ctx = SessionContext::new();
                        let provider = IcebergTableProvider::open(&ctx, &location, on_s3.clone())
                            .await
                            .expect("open the table on s3");
                        ctx.register_table("t", Arc::new(provider)).unwrap();
                        run(&ctx, sql).await
                    })
                });
            }
            group.finish();
        }
    }

    let ctx = rt.block_on(icefloe_ctx(&location));
    let mut group = c.benchmark_group("warm (open provider, warm cache)");
    for (label, sql) in selective {
        rt.block_on(run(&ctx, sql));
        group.bench_function(label, |b| b.to_async(&rt).iter(|| run(&ctx, sql)));
    }
    group.finish();

    let listing = rt.block_on(support::listing_ctx(&table_dir.join("data")));
    let mut group = c.benchmark_group("full scan aggregate");
    group.sample_size(10);
    // Slow iterations: a fixed count per sample keeps the run short.
    group.sampling_mode(SamplingMode::Flat);
    group.bench_function("icefloe", |b| {
        b.to_async(&rt).iter(|| run(&ctx, q.full_scan))
    });
    group.bench_function("datafusion_listing", |b| {
        b.to_async(&rt).iter(|| run(&listing, q.full_scan))
    });
    group.finish();
}

criterion_group!(benches, planning);
criterion_main!(benches);
