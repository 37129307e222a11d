//! [`FileIO::read_bounded`] on the local file system and on another store.

use std::sync::Arc;

use bytes::Bytes;
use datafusion::execution::runtime_env::RuntimeEnv;
use object_store::ObjectStoreExt;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use url::Url;

use super::*;

fn memory_io() -> (FileIO, Arc<InMemory>) {
    let store = Arc::new(InMemory::new());
    let runtime = RuntimeEnv::default();
    runtime.register_object_store(&Url::parse("memory://m").unwrap(), Arc::clone(&store) as _);
    (FileIO::new(Arc::new(runtime), Relocation::default()), store)
}

#[tokio::test]
async fn a_store_object_is_read_up_to_its_bound_and_no_further() {
    let (io, store) = memory_io();
    let put = |name: &str, n: usize| {
        let store = Arc::clone(&store);
        let path = ObjectPath::from(name);
        async move {
            store
                .put(&path, Bytes::from(vec![7u8; n]).into())
                .await
                .unwrap()
        }
    };
    put("t/small.avro", 100).await;
    put("t/empty.avro", 0).await;
    put("t/big.avro", 5000).await;
    let small = io
        .read_bounded("memory://m/t/small.avro", 100)
        .await
        .unwrap();
    assert_eq!(small.len(), 100);
    assert!(
        io.read_bounded("memory://m/t/empty.avro", 10)
            .await
            .unwrap()
            .is_empty()
    );
    let err = io
        .read_bounded("memory://m/t/big.avro", 4999)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("memory://m/t/big.avro: is 5000 bytes, more than the 4999"),
        "{err}"
    );
    let err = io
        .read_bounded("memory://m/t/gone.avro", 10)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
}

#[tokio::test]
async fn a_local_file_must_be_regular_and_within_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().display().to_string();
    std::fs::write(dir.path().join("m.avro"), [1u8; 64]).unwrap();
    let io = FileIO::default();
    assert_eq!(
        io.read_bounded(&format!("{base}/m.avro"), 64)
            .await
            .unwrap()
            .len(),
        64
    );
    let err = io
        .read_bounded(&format!("{base}/m.avro"), 63)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("is 64 bytes, more than the 63"),
        "{err}"
    );
    // A directory, and a FIFO, which would block the read forever when opened.
    let err = io.read_bounded(&base, 1 << 20).await.unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
    let fifo = dir.path().join("fifo.avro");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let err = io
        .read_bounded(&fifo.display().to_string(), 1 << 20)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
    let err = io
        .read_bounded(&format!("{base}/gone.avro"), 10)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
}

#[test]
fn the_limits_are_configurable_and_the_avro_default_agrees() {
    let limits = ReadLimits::default()
        .with_metadata_bytes(1)
        .with_manifest_list_bytes(2)
        .with_manifest_bytes(3)
        .with_decoded_bytes(4);
    assert_eq!(
        (
            limits.metadata_bytes,
            limits.manifest_list_bytes,
            limits.manifest_bytes
        ),
        (1, 2, 3)
    );
    let io = FileIO::default().with_read_limits(limits);
    assert_eq!(io.read_limits().decoded_bytes, 4);
    assert_eq!(
        ReadLimits::default().decoded_bytes,
        crate::spec::avro::DEFAULT_MAX_DECODED_BYTES
    );
}
