//! A table in a non-local object store, registered in DataFusion's `RuntimeEnv` by URL: the
//! in-repo fixture is copied into an in-memory store mounted as `s3://warehouse`.

use std::path::Path;
use std::sync::Arc;

use datafusion::prelude::SessionContext;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use url::Url;

use crate::{IcebergTableProvider, TableOptions};

const WRITTEN_AT: &str = "/test-warehouse/iceberg_test/hadoop_catalog/ice/iceberg_v2_no_deletes";

async fn upload(store: &dyn ObjectStore, dir: &Path, prefix: &str) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().to_string();
        let key = format!("{prefix}/{name}");
        if entry.file_type().unwrap().is_dir() {
            Box::pin(upload(store, &entry.path(), &key)).await;
        } else {
            let bytes = std::fs::read(entry.path()).unwrap();
            store
                .put(&ObjectPath::from(key), bytes.into())
                .await
                .unwrap();
        }
    }
}

#[tokio::test]
async fn tables_are_read_from_any_registered_store() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/external/impala_v2_no_deletes");
    let store = Arc::new(InMemory::new());
    upload(store.as_ref(), &fixture, "db/t").await;

    let ctx = SessionContext::new();
    let url = Url::parse("s3://warehouse").unwrap();
    ctx.runtime_env().register_object_store(&url, store);
    let options = TableOptions::default().with_relocation(WRITTEN_AT, "s3://warehouse/db/t");
    let provider = IcebergTableProvider::open(&ctx, "s3://warehouse/db/t", options)
        .await
        .unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let batches = ctx
        .sql("SELECT count(*) AS n, min(i) AS lo, max(s) AS hi FROM t")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let expected = [
        "+---+----+----+",
        "| n | lo | hi |",
        "+---+----+----+",
        "| 3 | 1  | z  |",
        "+---+----+----+",
    ];
    datafusion::assert_batches_eq!(expected, &batches);
}
