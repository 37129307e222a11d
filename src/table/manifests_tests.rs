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

/// A private copy of db.orders and the file of its current manifest list (not yet read, so
/// not cached).
async fn breakable_orders(dir: &std::path::Path) -> (Table, std::path::PathBuf) {
    let table = private_orders(dir).await;
    let snapshot = table.metadata().current_snapshot().unwrap();
    let list_file = table
        .io()
        .local_path(snapshot.manifest_list.as_ref().unwrap())
        .unwrap();
    (table, list_file)
}

/// A private copy of db.orders and its current manifest list (read; its manifests are not).
async fn breakable_manifests(dir: &std::path::Path) -> (Table, Vec<ManifestFile>) {
    let table = private_orders(dir).await;
    let list = current_list(&table).await;
    (table, list)
}

fn local(table: &Table, manifest: &ManifestFile) -> std::path::PathBuf {
    table.io().local_path(&manifest.manifest_path).unwrap()
}

/// `read` within `seconds`, or a failure (an unbounded read never returns in time).
async fn within<T>(seconds: u64, read: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(seconds), read)
        .await
        .expect("the read did not finish in time")
}

/// A corrupt error naming `path`, whose reason contains `words`.
fn assert_corrupt(err: &Error, path: &str, words: &str) {
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(path) && text.contains(words), "{text}");
}

/// Issue 14, item 10: a manifest replaced by `/dev/zero` made a scan read zeros until it was
/// killed for memory (23.8 GB). It is refused at once, read alone or in a batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_that_is_dev_zero_is_corrupt_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (table, list) = breakable_manifests(dir.path()).await;
    let zero = local(&table, &list[0]);
    std::fs::remove_file(&zero).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let path = list[0].manifest_path.as_str();
    let err = within(20, read_manifests(table.io(), table.metadata(), &list))
        .await
        .unwrap_err();
    assert_corrupt(&err, path, "not a regular file");
    let err = within(20, read_manifest(table.io(), table.metadata(), &list[0]))
        .await
        .unwrap_err();
    assert_corrupt(&err, path, "not a regular file");
}

/// Issue 14, item 10: a sparse manifest of 16 GiB (a valid manifest, then zeros) is refused by
/// its size before a byte of it is read, where it was read whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sparse_manifest_of_16_gib_is_refused_by_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let (table, list) = breakable_manifests(dir.path()).await;
    let huge = std::fs::OpenOptions::new()
        .write(true)
        .open(local(&table, &list[0]))
        .unwrap();
    huge.set_len(16 << 30).unwrap();
    let path = list[0].manifest_path.as_str();
    let err = within(20, read_manifests(table.io(), table.metadata(), &list))
        .await
        .unwrap_err();
    assert_corrupt(&err, path, "is 17179869184 bytes");
    let err = within(20, read_manifest(table.io(), table.metadata(), &list[0]))
        .await
        .unwrap_err();
    assert_corrupt(&err, path, "is 17179869184 bytes");
}

/// Issue 14, item 10: a manifest list is read whole too, so a sparse one of 16 GiB is refused
/// by its size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sparse_manifest_list_of_16_gib_is_refused_by_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let (table, list_file) = breakable_orders(dir.path()).await;
    let huge = std::fs::OpenOptions::new()
        .write(true)
        .open(&list_file)
        .unwrap();
    huge.set_len(16 << 30).unwrap();
    let metadata = table.metadata();
    let snapshot = metadata.current_snapshot().unwrap();
    let err = within(20, read_manifest_list(table.io(), metadata, snapshot))
        .await
        .unwrap_err();
    let path = snapshot.manifest_list.as_deref().unwrap();
    assert_corrupt(&err, path, "is 17179869184 bytes");
}

/// Where the header of an Avro file ends: after the first copy of its sync marker, which
/// also ends the file's last block.
fn header_len(avro: &[u8]) -> usize {
    let sync = &avro[avro.len() - 16..];
    avro.windows(16).position(|w| w == sync).unwrap() + 16
}

/// Issue 14, item 10: a manifest cut right after its header is a valid Avro file of no
/// entries. It is shorter than its list records, and holds none of the entries the list
/// counts: corrupt, not an empty manifest (which silently dropped its rows).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_cut_at_a_block_boundary_is_corrupt_not_empty() {
    let dir = tempfile::tempdir().unwrap();
    let (table, list) = breakable_manifests(dir.path()).await;
    let file = local(&table, &list[0]);
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..header_len(&bytes)]).unwrap();
    let path = list[0].manifest_path.as_str();
    for batch in [true, false] {
        let read = if batch {
            read_manifests(table.io(), table.metadata(), &list).await
        } else {
            read_manifest(table.io(), table.metadata(), &list[0])
                .await
                .map(|m| vec![m])
        };
        let err = read.unwrap_err();
        assert_corrupt(&err, path, "cut short or replaced");
    }
}

/// 1 MiB of zeros as a raw deflate stream ending in a sync flush (no final block), so that
/// copies of it can be concatenated.
fn deflated_zero_mib() -> Vec<u8> {
    use std::io::Write;
    let mut encoder =
        flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&vec![0u8; 1 << 20]).unwrap();
    encoder.flush().unwrap();
    encoder.get_ref().clone()
}

/// An Avro zig-zag long.
fn zigzag(n: i64) -> Vec<u8> {
    let mut v = ((n << 1) ^ (n >> 63)) as u64;
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

/// The header of a deflate Avro file, then one block of `count` records whose bytes are
/// `mib` MiB of zeros (every field of a manifest_file record reads from zeros: empty strings,
/// zero numbers, null unions).
fn zero_bomb(avro: &[u8], mib: usize, count: i64) -> Vec<u8> {
    let header = &avro[..header_len(avro)];
    let sync = &avro[avro.len() - 16..];
    let chunk = deflated_zero_mib();
    let mut data = Vec::with_capacity(chunk.len() * mib + 2);
    for _ in 0..mib {
        data.extend_from_slice(&chunk);
    }
    data.extend_from_slice(&[0x03, 0x00]); // a final, empty block
    let mut out = header.to_vec();
    out.extend(zigzag(count));
    out.extend(zigzag(data.len() as i64));
    out.extend(&data);
    out.extend_from_slice(sync);
    out
}

/// Issue 14, item 10: a manifest list whose one deflate block of 400 KB inflates to 400 MiB of
/// zeros, 25 million records of them, is refused quickly, where it decoded records until
/// memory ran out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zip_bomb_manifest_list_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (table, list_file) = breakable_orders(dir.path()).await;
    let real = std::fs::read(&list_file).unwrap();
    std::fs::write(&list_file, zero_bomb(&real, 400, 25_000_000)).unwrap();
    let metadata = table.metadata();
    let snapshot = metadata.current_snapshot().unwrap();
    let err = within(30, read_manifest_list(table.io(), metadata, snapshot))
        .await
        .unwrap_err();
    let path = snapshot.manifest_list.as_deref().unwrap();
    assert_corrupt(&err, path, "Avro block");
}

/// The limits of the IO apply: a manifest list or manifest larger than allowed, or whose
/// decoding would take more memory than allowed, is corrupt naming the bound to raise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_read_limits_apply_to_lists_and_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let table = private_orders(dir.path()).await;
    let metadata = table.metadata();
    let snapshot = metadata.current_snapshot().unwrap();
    let list_path = snapshot.manifest_list.as_deref().unwrap();
    let strict = |limits: ReadLimits| table.io().clone().with_read_limits(limits);
    let io = strict(ReadLimits::default().with_manifest_list_bytes(1000));
    let err = read_manifest_list(&io, metadata, snapshot)
        .await
        .unwrap_err();
    assert_corrupt(&err, list_path, "more than the 1000");
    let io = strict(ReadLimits::default().with_decoded_bytes(100));
    let err = read_manifest_list(&io, metadata, snapshot)
        .await
        .unwrap_err();
    assert_corrupt(&err, list_path, "ReadLimits::decoded_bytes");
    let list = read_manifest_list(table.io(), metadata, snapshot)
        .await
        .unwrap();
    let io = strict(ReadLimits::default().with_manifest_bytes(4000));
    let err = read_manifests(&io, metadata, &list).await.unwrap_err();
    assert_corrupt(
        &err,
        &list[0].manifest_path,
        "is 4635 bytes, more than the 4000",
    );
    let io = strict(ReadLimits::default().with_decoded_bytes(500));
    let err = read_manifest(&io, metadata, &list[0]).await.unwrap_err();
    assert_corrupt(&err, &list[0].manifest_path, "ReadLimits::decoded_bytes");
}

/// A manifest of another length than its list records is read only when it holds exactly the
/// entries the list counts (the `duckdb_bigquery` fixture's list records 1986 bytes for a
/// manifest of 1940).
#[tokio::test]
async fn a_manifest_of_another_length_must_hold_the_counted_entries() {
    let table = orders().await;
    let list = current_list(&table).await;
    let manifest = read_manifest(table.io(), table.metadata(), &list[0])
        .await
        .unwrap();
    let size = usize::try_from(list[0].manifest_length).unwrap();
    for (delta, counts, accepted) in [
        (0, [None, None, None], true),
        (46, [Some(1), Some(0), Some(0)], true),
        (-46, [Some(1), Some(0), Some(0)], true),
        (46, [None, None, None], false),
        (46, [Some(2), Some(0), Some(0)], false),
        (46, [Some(1), None, Some(0)], false),
    ] {
        let mut entry = list[0].clone();
        entry.manifest_length += delta;
        [
            entry.added_files_count,
            entry.existing_files_count,
            entry.deleted_files_count,
        ] = counts;
        assert_eq!(manifest.entries.len(), 1);
        let checked = check_length(&entry, size, Ok(manifest.clone()));
        assert_eq!(checked.is_ok(), accepted, "{delta} {counts:?}: {checked:?}");
        if let Err(e) = checked {
            let text = e.to_string();
            assert!(
                text.contains(&format!("the file is {size} bytes")),
                "{text}"
            );
        }
    }
}
