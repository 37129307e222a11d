//! Read path: icefloe vs plain DataFusion on the same Parquet files, side by side in one run.
//!
//! Table: the largest fixture table available. With `ICEFLOE_FIXTURES` (or `../shared/fixtures`)
//! that is `external/duckdb_lineitem_gz_v1` (TPC-H lineitem, 111,968 rows); otherwise the
//! in-repo `pyiceberg/wh1/db.row_groups` table. Plain DataFusion reads the table's data files as a
//! `ListingTable` over the same directory.
//!
//! Each engine runs in a fresh `SessionContext` per iteration, so icefloe's numbers include
//! opening the table (metadata file, manifest list, manifests) — the cost a new query pays.
//!
//! Run: `cargo bench --bench read_path`.

#[path = "support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::prelude::SessionContext;
use icefloe::{IcebergTableProvider, TableOptions};
use support::run;
use tokio::runtime::Runtime;

struct BenchTable {
    name: &'static str,
    table_dir: PathBuf,
    data_dir: PathBuf,
    relocate_from: &'static str,
    relocate_to: PathBuf,
    aggregate: &'static str,
}

fn bench_table() -> BenchTable {
    let shared = std::env::var_os("ICEFLOE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/fixtures"));
    let lineitem = shared.join("external/duckdb_lineitem_gz_v1/lineitem_iceberg_gz");
    if lineitem.is_dir() {
        return BenchTable {
            name: "lineitem_gz_v1 (111,968 rows)",
            data_dir: lineitem.join("data"),
            relocate_from: "lineitem_iceberg_gz",
            relocate_to: lineitem.clone(),
            table_dir: lineitem,
            aggregate: "SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice), \
                        avg(l_discount), count(*) FROM t GROUP BY 1, 2",
        };
    }
    let wh = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pyiceberg/wh1");
    let table = wh.join("db/row_groups");
    BenchTable {
        name: "db.row_groups (in-repo)",
        data_dir: table.join("data"),
        relocate_from: "file:///data/lake/wh1",
        relocate_to: wh,
        table_dir: table,
        aggregate: "SELECT count(*), sum(id), min(id), max(id) FROM t",
    }
}

async fn icefloe_ctx(t: &BenchTable) -> SessionContext {
    let ctx = SessionContext::new();
    let options = TableOptions::default()
        .with_relocation(t.relocate_from, t.relocate_to.to_string_lossy().to_string());
    let location = t.table_dir.to_string_lossy().to_string();
    let provider = IcebergTableProvider::open(&ctx, &location, options)
        .await
        .expect("open the iceberg table");
    ctx.register_table("t", Arc::new(provider))
        .expect("register");
    ctx
}

fn read_path(c: &mut Criterion) {
    let rt = Runtime::new().expect("tokio runtime");
    let t = bench_table();
    let queries = [
        ("count", "SELECT count(*) FROM t"),
        ("aggregate", t.aggregate),
    ];
    for (label, sql) in queries {
        let mut group = c.benchmark_group(format!("{label} {}", t.name));
        group.sample_size(20);
        group.bench_function("icefloe", |b| {
            b.to_async(&rt)
                .iter(|| async { run(&icefloe_ctx(&t).await, sql).await })
        });
        group.bench_function("datafusion_listing", |b| {
            b.to_async(&rt)
                .iter(|| async { run(&support::listing_ctx(&t.data_dir).await, sql).await })
        });
        group.finish();
    }
}

criterion_group!(benches, read_path);
criterion_main!(benches);
