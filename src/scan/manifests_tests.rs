//! Batch reads of manifests ([`read_manifests`]) against one-at-a-time reads through the
//! store, on the in-repo fixture `tests/fixtures/pyiceberg/wh1/db/orders` (two manifests).

use std::sync::Arc;

use datafusion::execution::runtime_env::RuntimeEnv;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use url::Url;

use super::*;
use crate::io::Relocation;
use crate::table::Table;

fn warehouse() -> String {
    format!(
        "{}/tests/fixtures/pyiceberg/wh1",
        env!("CARGO_MANIFEST_DIR")
    )
}

async fn orders() -> Table {
    let relocation = Relocation::new().with_rule("file:///data/lake/wh1", warehouse());
    let io = FileIO::new(Arc::new(RuntimeEnv::default()), relocation);
    Table::load(io, &format!("{}/db/orders", warehouse()))
        .await
        .unwrap()
}

/// db.orders copied to a directory of its own, so that its manifests are in no cache (the
/// cache is process-wide, and clearing it would disturb other tests).
async fn private_orders(dir: &std::path::Path) -> Table {
    let orders = format!("{}/db/orders", warehouse());
    crate::catalog::test_support::copy_dir(std::path::Path::new(&orders), dir);
    let relocation =
        Relocation::new().with_rule("file:///data/lake/wh1/db/orders", dir.display().to_string());
    let io = FileIO::new(Arc::new(RuntimeEnv::default()), relocation);
    Table::load(io, &dir.display().to_string()).await.unwrap()
}

async fn current_list(table: &Table) -> Vec<ManifestFile> {
    let metadata = table.metadata();
    read_manifest_list(table.io(), metadata, metadata.current_snapshot().unwrap())
        .await
        .unwrap()
        .to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_local_manifests_reads_as_one_at_a_time_through_the_store() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    // One copy read one manifest at a time through the store.
    let table = private_orders(dirs[0].path()).await;
    let list = current_list(&table).await;
    assert_eq!(list.len(), 2);
    let mut one_by_one = Vec::new();
    for m in &list {
        one_by_one.push(
            read_manifest(table.io(), table.metadata(), m)
                .await
                .unwrap(),
        );
    }
    // Another read as a batch of local files.
    let table = private_orders(dirs[1].path()).await;
    let list = current_list(&table).await;
    assert!(table.io().local_path(&list[0].manifest_path).is_some());
    let batch = read_manifests(table.io(), table.metadata(), &list)
        .await
        .unwrap();
    assert_eq!(batch, one_by_one);
    // Each was written by its own append.
    assert_ne!(
        batch[0].entries[0].snapshot_id,
        batch[1].entries[0].snapshot_id
    );
    // Order follows the list, whatever was cached: the second one only, then both.
    let table = private_orders(dirs[2].path()).await;
    let list = current_list(&table).await;
    read_manifest(table.io(), table.metadata(), &list[1])
        .await
        .unwrap();
    for _ in 0..2 {
        let again = read_manifests(table.io(), table.metadata(), &list)
            .await
            .unwrap();
        assert_eq!(again, one_by_one);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_and_truncated_manifests_in_a_batch_are_named() {
    let table = orders().await;
    let metadata = table.metadata();
    let list = current_list(&table).await;
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("{}/gone-m0.avro", dir.path().display());
    let truncated = format!("{}/cut-m0.avro", dir.path().display());
    let local = table.io().local_path(&list[0].manifest_path).unwrap();
    let bytes = std::fs::read(local).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    // A fresh copy of the other manifest, so the batch has two misses (a batch of local
    // files, not a single store read).
    let fresh = format!("{}/ok-m1.avro", dir.path().display());
    std::fs::copy(
        table.io().local_path(&list[1].manifest_path).unwrap(),
        &fresh,
    )
    .unwrap();
    for (path, kind) in [(&missing, "not found"), (&truncated, "corrupt")] {
        let mut broken = list.clone();
        broken[0].manifest_path = path.clone();
        broken[1].manifest_path = fresh.clone();
        let err = read_manifests(table.io(), metadata, &broken)
            .await
            .unwrap_err();
        match (&err, kind) {
            (Error::NotFound { .. }, "not found") | (Error::Corrupt { .. }, "corrupt") => {}
            _ => panic!("{kind}: {err:?}"),
        }
        assert!(err.to_string().contains(path.as_str()), "{err}");
    }
}

#[test]
fn only_the_plain_local_store_is_read_directly() {
    let io = FileIO::default();
    assert_eq!(
        io.local_path("/tmp/t/metadata/m.avro"),
        Some(std::path::PathBuf::from("/tmp/t/metadata/m.avro"))
    );
    assert_eq!(
        io.local_path("file:///tmp/t/m.avro"),
        Some(std::path::PathBuf::from("/tmp/t/m.avro"))
    );
    let runtime = RuntimeEnv::default();
    runtime.register_object_store(&Url::parse("s3://b").unwrap(), Arc::new(InMemory::new()));
    let io = FileIO::new(Arc::new(runtime), Relocation::default());
    assert_eq!(io.local_path("s3://b/t/m.avro"), None);
    // A local store an application rooted elsewhere maps paths its own way.
    let runtime = RuntimeEnv::default();
    let rooted = LocalFileSystem::new_with_prefix(std::env::temp_dir()).unwrap();
    runtime.register_object_store(&Url::parse("file://").unwrap(), Arc::new(rooted));
    let io = FileIO::new(Arc::new(runtime), Relocation::default());
    assert_eq!(io.local_path("/t/m.avro"), None);
}
