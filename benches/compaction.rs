//! Compaction (issue 20, item 6) on a table of 2,000 one-file commits, side by side in one run:
//!
//! - `plan`: planning `SELECT category, count(*), sum(id), max(ts) FROM t GROUP BY 1` (the
//!   physical plan, nothing executed), cold (manifest cache cleared, a fresh context that opens
//!   the table) and warm (an open provider), before and after compaction;
//! - `full scan`: that query run, icefloe before and after, and plain DataFusion (a
//!   `ListingTable`) over the 2,000 small files and over the compacted files;
//! - `rewrite`: `rewrite_data_files` with Java's defaults (every file is small: each day's 100
//!   files become one) next to DataFusion's `COPY (SELECT * FROM t) TO ... STORED AS PARQUET`
//!   of the same rows (a `ListingTable` over the same 2,000 files), in MB/s of input. Each
//!   compaction starts from the generated table: the files it wrote are deleted and the version
//!   hint put back afterwards (not measured).
//!
//! Table (`support/many_commits.rs`): format v2, `day(ts)` partitions, 2,000 commits of one
//! 2,000-row file each (4M rows: `id`, `category`, `ts`), 100 commits a day (20 days).
//! `ICEFLOE_COMPACTION_BENCH_ROWS` sets the rows per file.
//!
//! After criterion's groups, the rewrite and the COPY run again in alternation (`PAIRS` pairs)
//! and a summary prints the medians of every case and their ratios (the throughput ratio is
//! the median of the pairs' ratios: criterion's two groups run a minute apart, and this machine
//! drifts more than the difference measured).
//!
//! Run: `cargo bench --bench compaction -- --warm-up-time 1 --measurement-time 10`.

#[path = "support/many_commits.rs"]
mod many_commits;
#[path = "support/mod.rs"]
mod support;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use datafusion::prelude::SessionContext;
use icefloe::maintenance::{Progress, RewriteDataFiles, rewrite_data_files};
use icefloe::scan::{ManifestCache, plan_files};
use icefloe::{FileIO, IcebergTableProvider, Table, TableOptions, WriteTarget};
use many_commits::{Layout, generate_table_with};
use tokio::runtime::Runtime;

const COMMITS: i64 = 2_000;
const COMMITS_PER_DAY: i64 = 100;
/// Alternating pairs of a rewrite and a COPY (see the module docs).
const PAIRS: usize = 15;
const QUERY: &str = "SELECT category, count(*), sum(id), max(ts) FROM t GROUP BY 1";

fn layout() -> Layout {
    let rows_per_file = std::env::var("ICEFLOE_COMPACTION_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    Layout {
        rows_per_file,
        commits_per_day: COMMITS_PER_DAY,
    }
}

async fn icefloe_ctx(location: &str) -> SessionContext {
    let ctx = SessionContext::new();
    let provider = IcebergTableProvider::open(&ctx, location, TableOptions::default())
        .await
        .expect("open the table");
    ctx.register_table("t", Arc::new(provider))
        .expect("register");
    ctx
}

async fn plan(ctx: &SessionContext) {
    ctx.sql(QUERY)
        .await
        .expect("plan")
        .create_physical_plan()
        .await
        .expect("physical plan");
}

/// Every file under `dir`.
fn files_under(dir: &Path) -> BTreeSet<PathBuf> {
    let mut files = BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("entry").path();
            match path.is_dir() {
                true => pending.push(path),
                false => {
                    files.insert(path);
                }
            }
        }
    }
    files
}

/// Puts the table back as generated: every file written since deleted, the hint on v1.
fn restore(dir: &Path, generated: &BTreeSet<PathBuf>) {
    for file in files_under(dir).difference(generated) {
        std::fs::remove_file(file).expect("remove");
    }
    std::fs::write(dir.join("metadata/version-hint.text"), "1").expect("hint");
}

/// The live data files of the table's current snapshot.
async fn data_files(location: &str) -> Vec<String> {
    let table = Table::load(FileIO::default(), location)
        .await
        .expect("load");
    let snapshot = table.metadata().current_snapshot().expect("snapshot");
    let tasks = plan_files(table.io(), table.metadata(), snapshot)
        .await
        .expect("plan files");
    tasks.into_iter().map(|t| t.data_file.file_path).collect()
}

/// Medians of every measured case, for the summary.
#[derive(Default)]
struct Medians(RefCell<BTreeMap<String, Vec<Duration>>>);

impl Medians {
    /// Runs `one` `iters` times, each timing itself; records each time.
    fn run(&self, label: &str, iters: u64, mut one: impl FnMut() -> Duration) -> Duration {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let took = one();
            self.record(label, took);
            total += took;
        }
        total
    }

    fn record(&self, label: &str, took: Duration) {
        let mut all = self.0.borrow_mut();
        all.entry(label.to_string()).or_default().push(took);
    }

    fn median(&self, label: &str) -> f64 {
        let mut times = self.0.borrow().get(label).cloned().unwrap_or_default();
        times.sort();
        times
            .get(times.len() / 2)
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
    }
}

fn timed<F: std::future::Future>(rt: &Runtime, work: impl FnOnce() -> F) -> Duration {
    let start = Instant::now();
    rt.block_on(work());
    start.elapsed()
}

fn compaction(c: &mut Criterion) {
    let rt = Runtime::new().expect("tokio runtime");
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("t");
    let layout = layout();
    let start = Instant::now();
    let location = generate_table_with(&dir, COMMITS, layout);
    let generated = files_under(&dir);
    let small: Vec<String> = rt.block_on(data_files(&location));
    let input_bytes: u64 = small
        .iter()
        .map(|f| std::fs::metadata(f).expect("stat").len())
        .sum();
    let rows = COMMITS * layout.rows_per_file;
    println!(
        "generated {COMMITS} commits of one {}-row file ({rows} rows, {:.1} MB of data files) in \
         {:.1} s",
        layout.rows_per_file,
        input_bytes as f64 / 1e6,
        start.elapsed().as_secs_f64()
    );
    rt.block_on(time_phases(&target_of(&location)));
    restore(&dir, &generated);
    let medians = Medians::default();
    let before = rt.block_on(icefloe_ctx(&location));
    let listing_small = rt.block_on(support::listing_ctx(&dir.join("data")));
    assert_eq!(rt.block_on(support::run(&before, QUERY)), 5);

    // Before: planning and full scans over the 2,000 small files.
    let mut group = c.benchmark_group("before compaction (2,000 files)");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    bench_reads(&mut group, &rt, &medians, &location, &before, "before");
    group.bench_function("full scan: datafusion listing", |b| {
        b.iter_custom(|n| {
            medians.run("scan listing before", n, || {
                timed(&rt, || support::run(&listing_small, QUERY))
            })
        })
    });
    group.finish();

    // The rewrite next to COPY of the same rows.
    let target = target_of(&location);
    let out = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("rewrite 2,000 files");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Bytes(input_bytes));
    let rewrite_once = || {
        restore(&dir, &generated);
        ManifestCache::global().clear();
        let took = timed(&rt, || async {
            let done = rewrite_data_files(&target, &RewriteDataFiles::new())
                .await
                .expect("compaction");
            assert_eq!(done.rewritten_data_files, COMMITS as usize);
        });
        restore(&dir, &generated);
        took
    };
    let copy_once = || {
        let to = out.path().join(uuid::Uuid::new_v4().to_string());
        let copy = format!(
            "COPY (SELECT * FROM t) TO '{}/' STORED AS PARQUET",
            to.display()
        );
        let took = timed(&rt, || support::run(&listing_small, &copy));
        std::fs::remove_dir_all(&to).expect("remove the copy");
        took
    };
    group.bench_function("icefloe rewrite_data_files", |b| {
        b.iter_custom(|n| medians.run("rewrite", n, rewrite_once))
    });
    group.bench_function("datafusion COPY to parquet", |b| {
        b.iter_custom(|n| medians.run("copy", n, copy_once))
    });
    group.finish();
    // The two again in alternation (which goes first alternating too), so that both see the
    // same state of the machine: the summary's ratio is the median of these pairs'.
    let mut ratios = Vec::new();
    for pair in 0..PAIRS {
        let (rewrite, copy) = match pair % 2 {
            0 => {
                let rewrite = rewrite_once();
                (rewrite, copy_once())
            }
            _ => {
                let copy = copy_once();
                (rewrite_once(), copy)
            }
        };
        medians.record("rewrite paired", rewrite);
        medians.record("copy paired", copy);
        ratios.push(rewrite.as_secs_f64() / copy.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    let paired_ratio = ratios[ratios.len() / 2];

    // After: the table compacted once more (kept), the same reads.
    let done = rt
        .block_on(rewrite_data_files(&target, &RewriteDataFiles::new()))
        .expect("compaction");
    let compacted = rt.block_on(data_files(&location));
    let compacted_bytes: u64 = compacted
        .iter()
        .map(|f| std::fs::metadata(f).expect("stat").len())
        .sum();
    println!(
        "compacted: {} files into {} ({:.1} MB), {} snapshot(s)",
        done.rewritten_data_files,
        compacted.len(),
        compacted_bytes as f64 / 1e6,
        done.snapshots.len()
    );
    let after = rt.block_on(icefloe_ctx(&location));
    let listing_compacted = rt.block_on(support::listing_ctx_of_files(&compacted));
    let check = "SELECT count(*), sum(id), count(DISTINCT category), max(ts) FROM t";
    let expected = rt.block_on(support::rows_text(&listing_small, check));
    for ctx in [&after, &listing_compacted] {
        assert_eq!(rt.block_on(support::rows_text(ctx, check)), expected);
    }
    println!("after compaction, as before: {expected}");
    let mut group = c.benchmark_group("after compaction");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    bench_reads(&mut group, &rt, &medians, &location, &after, "after");
    group.bench_function("full scan: datafusion listing", |b| {
        b.iter_custom(|n| {
            medians.run("scan listing after", n, || {
                timed(&rt, || support::run(&listing_compacted, QUERY))
            })
        })
    });
    group.finish();
    summary(&medians, input_bytes, compacted.len(), paired_ratio);
}

fn target_of(location: &str) -> WriteTarget {
    WriteTarget::directory(&FileIO::default(), location).expect("target")
}

/// One compaction timed by its progress reports: until the first rows are written (planning,
/// opening the first files), until the last (the rewrite), and the commit after that.
async fn time_phases(target: &WriteTarget) {
    let reports: Arc<std::sync::Mutex<Vec<Instant>>> = Arc::default();
    let seen = Arc::clone(&reports);
    let progress = Progress::new(move |_, _| seen.lock().expect("lock").push(Instant::now()));
    ManifestCache::global().clear();
    let start = Instant::now();
    rewrite_data_files(target, &RewriteDataFiles::new().with_progress(progress))
        .await
        .expect("compaction");
    let end = Instant::now();
    let reports = reports.lock().expect("lock");
    let (Some(first), Some(last)) = (reports.first(), reports.last()) else {
        return;
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "phases, cold cache: until the first rows written {:.0} ms (planning, the first reads); \
         rewriting {:.0} ms; commit {:.0} ms; {:.0} ms in all",
        ms(*first - start),
        ms(*last - *first),
        ms(end - *last),
        ms(end - start)
    );
}

/// Planning (cold and warm) and the full scan through icefloe, labelled `when`.
fn bench_reads(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &Runtime,
    medians: &Medians,
    location: &str,
    ctx: &SessionContext,
    when: &str,
) {
    let cold = format!("plan cold {when}");
    let warm = format!("plan warm {when}");
    let scan = format!("scan icefloe {when}");
    group.bench_function("plan: cold (cache cleared, fresh context + open)", |b| {
        b.iter_custom(|n| {
            medians.run(&cold, n, || {
                ManifestCache::global().clear();
                timed(rt, || async { plan(&icefloe_ctx(location).await).await })
            })
        })
    });
    rt.block_on(plan(ctx));
    group.bench_function("plan: warm (open provider)", |b| {
        b.iter_custom(|n| medians.run(&warm, n, || timed(rt, || plan(ctx))))
    });
    group.bench_function("full scan: icefloe", |b| {
        b.iter_custom(|n| medians.run(&scan, n, || timed(rt, || support::run(ctx, QUERY))))
    });
}

fn summary(m: &Medians, input_bytes: u64, compacted_files: usize, paired_ratio: f64) {
    let mb = input_bytes as f64 / 1e6;
    let rate = |label: &str| mb / (m.median(label) / 1000.0);
    println!("\nsummary (medians, ms; {COMMITS} files before, {compacted_files} after):");
    for when in ["before", "after"] {
        println!(
            "  {when:6}: plan cold {:8.2}, plan warm {:7.2}, full scan icefloe {:7.1}, \
             datafusion listing {:7.1} (icefloe / listing {:.2}x)",
            m.median(&format!("plan cold {when}")),
            m.median(&format!("plan warm {when}")),
            m.median(&format!("scan icefloe {when}")),
            m.median(&format!("scan listing {when}")),
            m.median(&format!("scan icefloe {when}")) / m.median(&format!("scan listing {when}")),
        );
    }
    println!(
        "  planning after / before: cold {:.3}x, warm {:.3}x; full scan after / before {:.3}x",
        m.median("plan cold after") / m.median("plan cold before"),
        m.median("plan warm after") / m.median("plan warm before"),
        m.median("scan icefloe after") / m.median("scan icefloe before"),
    );
    println!(
        "  rewrite {:.0} ms ({:.1} MB/s) vs COPY {:.0} ms ({:.1} MB/s): {:.2}x COPY's time",
        m.median("rewrite"),
        rate("rewrite"),
        m.median("copy"),
        rate("copy"),
        m.median("rewrite") / m.median("copy"),
    );
    println!(
        "  in {PAIRS} alternating pairs: rewrite {:.0} ms vs COPY {:.0} ms, median ratio {:.2}x \
         (the ratio to report: both measured under the same conditions)",
        m.median("rewrite paired"),
        m.median("copy paired"),
        paired_ratio,
    );
}

criterion_group!(benches, compaction);
criterion_main!(benches);
