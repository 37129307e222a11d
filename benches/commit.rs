//! Commit time of a one-row append (`append_batches`: write the Parquet file and its manifest,
//! then the manifest list reusing every earlier manifest, the metadata file and the version
//! hint) into tables of 10 and of 2,000 one-file commits (`support/many_commits.rs`), side by
//! side in one run.
//!
//! Each iteration commits on the same base: afterwards the new metadata file is deleted and
//! the version hint set back, so every measured commit sees the table as generated (the
//! data file, manifest and manifest list it wrote stay behind as unreferenced files; they do
//! not change what the next commit reads).
//!
//! Run: `cargo bench --bench commit -- --warm-up-time 1 --measurement-time 3`.

#[path = "support/many_commits.rs"]
mod many_commits;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::arrow::array::TimestampMicrosecondArray;
use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use icefloe::WriteTarget;
use icefloe::scan::read_manifest_list;
use icefloe::to_arrow::schema_to_arrow;
use icefloe::write::append_batches;
use icefloe::{FileIO, Table};
use tokio::runtime::Runtime;

/// One row in the table's current schema (`id`, `category`, `ts`).
fn one_row(table: &Table) -> RecordBatch {
    let schema = Arc::new(schema_to_arrow(table.metadata().current_schema()).expect("schema"));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![-1])),
        Arc::new(StringArray::from(vec!["bench"])),
        Arc::new(
            TimestampMicrosecondArray::from(vec![1_704_067_200_000_000]).with_timezone("+00:00"),
        ),
    ];
    let columns = columns
        .into_iter()
        .zip(schema.fields())
        .map(|(c, f)| datafusion::arrow::compute::cast(&c, f.data_type()).expect("cast"))
        .collect();
    RecordBatch::try_new(schema, columns).expect("batch")
}

/// Commits one row on `location` and undoes the pointer move; the commit's wall time.
async fn commit_once(io: &FileIO, location: &str, batch: &RecordBatch) -> Duration {
    let start = Instant::now();
    let target = WriteTarget::directory(io, location).expect("target");
    let table = append_batches(&target, std::slice::from_ref(batch), "main")
        .await
        .expect("commit");
    let elapsed = start.elapsed();
    assert!(
        table
            .metadata_location()
            .ends_with("/metadata/v2.metadata.json")
    );
    std::fs::remove_file(table.metadata_location()).expect("remove the new metadata file");
    std::fs::write(format!("{location}/metadata/version-hint.text"), "1").expect("reset hint");
    elapsed
}

fn commit(c: &mut Criterion) {
    let rt = Runtime::new().expect("tokio runtime");
    let dirs: Vec<_> = [10_i64, 2_000]
        .into_iter()
        .map(|commits| {
            let dir = tempfile::tempdir().expect("tempdir");
            let location = many_commits::generate_table(dir.path(), commits);
            (commits, dir, location)
        })
        .collect();
    let io = FileIO::default();
    let mut group = c.benchmark_group("commit one row");
    group.sample_size(20);
    for (commits, _dir, location) in &dirs {
        let table = rt
            .block_on(Table::load(io.clone(), location))
            .expect("load");
        let batch = one_row(&table);
        // Once outside the timing: the commit reuses every manifest and adds one.
        rt.block_on(async {
            let target = WriteTarget::directory(&io, location).expect("target");
            let next = append_batches(&target, std::slice::from_ref(&batch), "main")
                .await
                .expect("commit");
            let metadata = next.metadata();
            let snapshot = metadata.current_snapshot().expect("snapshot");
            let list = read_manifest_list(&io, metadata, snapshot)
                .await
                .expect("list");
            assert_eq!(list.len() as i64, commits + 1);
            std::fs::remove_file(next.metadata_location()).expect("remove");
            std::fs::write(format!("{location}/metadata/version-hint.text"), "1").expect("hint");
        });
        group.bench_function(format!("{commits} manifests"), |b| {
            b.to_async(&rt).iter_custom(|iterations| {
                let (io, location, batch) = (&io, location.as_str(), &batch);
                async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iterations {
                        total += commit_once(io, location, batch).await;
                    }
                    total
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, commit);
criterion_main!(benches);
