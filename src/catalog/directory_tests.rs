//! Tests of the directory catalog's names and layout (its commits are in the catalog
//! conformance suite, `tests/conformance/catalogs.rs`, run against every catalog).

use std::collections::BTreeMap;

use super::*;
use crate::catalog::test_support::{metadata_json, write};

fn catalog(root: &std::path::Path) -> DirectoryCatalog {
    DirectoryCatalog::new(FileIO::default(), root.to_str().unwrap()).unwrap()
}

/// A table directory with one metadata file (`v1.metadata.json`) at `dir`.
fn table_at(dir: &std::path::Path) {
    let location = dir.display().to_string();
    write(
        &dir.join("metadata/v1.metadata.json"),
        metadata_json(&location).as_bytes(),
    );
}

#[test]
fn a_location_is_a_table_in_the_catalog_of_its_parent() {
    let io = FileIO::default();
    let (catalog, ident) =
        DirectoryCatalog::for_location(io.clone(), "/data/lake/orders/").unwrap();
    assert_eq!(catalog.root(), "/data/lake");
    assert_eq!(ident.name, "orders");
    assert!(ident.namespace.is_root());
    assert_eq!(catalog.table_location(&ident).unwrap(), "/data/lake/orders");

    let (catalog, ident) = DirectoryCatalog::for_location(io.clone(), "/t").unwrap();
    assert_eq!((catalog.root(), ident.name.as_str()), ("/", "t"));
    assert_eq!(catalog.table_location(&ident).unwrap(), "/t");

    let (catalog, ident) = DirectoryCatalog::for_location(io.clone(), "file:///w/t").unwrap();
    assert_eq!(catalog.table_location(&ident).unwrap(), "file:///w/t");
    let (catalog, ident) = DirectoryCatalog::for_location(io.clone(), "file:///t").unwrap();
    assert_eq!(catalog.table_location(&ident).unwrap(), "file:///t");

    let (catalog, ident) = DirectoryCatalog::for_location(io.clone(), "s3://bucket/a/t").unwrap();
    assert_eq!(catalog.table_location(&ident).unwrap(), "s3://bucket/a/t");
    let (catalog, ident) = DirectoryCatalog::for_location(io.clone(), "s3://bucket/t").unwrap();
    assert_eq!(catalog.table_location(&ident).unwrap(), "s3://bucket/t");

    // `..` is resolved before the name is taken; a bucket's root has no parent.
    let (catalog, ident) = DirectoryCatalog::for_location(io.clone(), "/a/b/../t").unwrap();
    assert_eq!(catalog.table_location(&ident).unwrap(), "/a/t");
    assert!(DirectoryCatalog::for_location(io, "s3://bucket").is_err());
}

#[test]
fn names_that_are_not_one_directory_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let catalog = catalog(tmp.path());
    for bad in ["a/b", "..", ".", "a\\b"] {
        let ident = TableIdent::new(Namespace::root(), bad).unwrap();
        let err = catalog.table_location(&ident).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{bad}: {err}");
        let ns = Namespace::new([bad]).unwrap();
        assert!(catalog.namespace_location(&ns).is_err(), "{bad}");
    }
    // Dots and any Unicode are fine in a directory name.
    let ns = Namespace::new(["a.b", "données"]).unwrap();
    let ident = TableIdent::new(ns, "日本.t").unwrap();
    let root = catalog.root().to_string();
    assert_eq!(
        catalog.table_location(&ident).unwrap(),
        format!("{root}/a.b/données/日本.t")
    );
}

#[tokio::test]
async fn namespaces_are_directories_and_tables_are_not_namespaces() {
    let tmp = tempfile::tempdir().unwrap();
    let catalog = catalog(tmp.path());
    let db = Namespace::new(["db"]).unwrap();
    let inner = Namespace::new(["db", "inner.x"]).unwrap();
    catalog
        .create_namespace(&db, BTreeMap::new())
        .await
        .unwrap();
    catalog
        .create_namespace(&inner, BTreeMap::new())
        .await
        .unwrap();
    table_at(&tmp.path().join("db/orders"));

    assert_eq!(
        catalog.list_namespaces(&Namespace::root()).await.unwrap(),
        vec![db.clone()]
    );
    assert_eq!(
        catalog.list_namespaces(&db).await.unwrap(),
        vec![inner.clone()]
    );
    let tables = catalog.list_tables(&db).await.unwrap();
    assert_eq!(tables, vec![TableIdent::new(db.clone(), "orders").unwrap()]);
    assert!(catalog.table_exists(&tables[0]).await.unwrap());
    let orders = Namespace::new(["db", "orders"]).unwrap();
    assert!(!catalog.namespace_exists(&orders).await.unwrap());

    let again = catalog.create_namespace(&db, BTreeMap::new()).await;
    assert!(
        matches!(again, Err(Error::AlreadyExists { .. })),
        "{again:?}"
    );
    let props = catalog.namespace_properties(&db).await.unwrap();
    assert_eq!(
        props["location"],
        tmp.path().join("db").display().to_string()
    );
    let set = catalog
        .update_namespace_properties(&db, &[], BTreeMap::from([("k".into(), "v".into())]))
        .await;
    assert!(matches!(set, Err(Error::Unsupported(_))), "{set:?}");

    // Only an empty namespace can be dropped.
    let err = catalog.drop_namespace(&db).await.unwrap_err();
    assert!(err.to_string().contains("not empty"), "{err}");
    catalog.drop_namespace(&inner).await.unwrap();
    assert!(!catalog.namespace_exists(&inner).await.unwrap());
    let missing = catalog.drop_namespace(&inner).await;
    assert!(
        matches!(missing, Err(Error::NotFound { .. })),
        "{missing:?}"
    );
    let missing = catalog.list_tables(&inner).await;
    assert!(
        matches!(missing, Err(Error::NotFound { .. })),
        "{missing:?}"
    );
}

#[tokio::test]
async fn an_unknown_table_is_not_found_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let catalog = catalog(tmp.path()).with_name("lake");
    let ident = TableIdent::parse_dotted("nope").unwrap();
    let err = catalog.load_table(&ident).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(
        err.to_string().contains("table nope in catalog lake"),
        "{err}"
    );
    assert!(!catalog.table_exists(&ident).await.unwrap());
    let err = catalog.drop_table(&ident, false).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
}

const FIRST_UUID: &str = "9c12d441-03fe-4693-9a96-a0705ddf69c1";

fn uuid_is(uuid: &str) -> TableRequirement {
    TableRequirement::AssertTableUuid {
        uuid: uuid.to_string(),
    }
}

fn set_property(key: &str) -> TableUpdate {
    TableUpdate::SetProperties {
        updates: BTreeMap::from([(key.to_string(), "1".to_string())]),
    }
}

/// The catalog reuses a version it found current only while its file holds the same bytes:
/// a table dropped and created again under the name (same version number, same size) is
/// loaded anew, so a commit asserting the old uuid is refused and the new table untouched.
#[tokio::test]
async fn a_table_replaced_under_its_name_is_never_committed_on_from_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let catalog = catalog(tmp.path());
    table_at(&tmp.path().join("t"));
    let ident = TableIdent::new(Namespace::root(), "t").unwrap();
    let before = catalog.load_table_for_write(&ident).await.unwrap();
    assert_eq!(before.metadata().table_uuid.as_deref(), Some(FIRST_UUID));

    // Another process drops the table and creates one of the same shape: v1 again, with
    // another uuid of the same length.
    let other_uuid = "0b6a7e6c-2f3d-4d59-8d6b-6c1f7f1f2a10";
    let path = tmp.path().join("t/metadata/v1.metadata.json");
    let replaced = std::fs::read_to_string(&path)
        .unwrap()
        .replace(FIRST_UUID, other_uuid);
    std::fs::remove_file(&path).unwrap();
    write(&path, replaced.as_bytes());

    let err = catalog
        .commit_table(&ident, &[uuid_is(FIRST_UUID)], &[set_property("stale")])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::CommitConflict { .. }), "{err}");
    assert!(!tmp.path().join("t/metadata/v2.metadata.json").exists());

    // The same commit on the table as it now is goes through, and the next one builds on it.
    let committed = catalog
        .commit_table(&ident, &[uuid_is(other_uuid)], &[set_property("a")])
        .await
        .unwrap();
    assert!(committed.metadata_location().ends_with("/v2.metadata.json"));
    let next = catalog
        .commit_table(&ident, &[uuid_is(other_uuid)], &[set_property("b")])
        .await
        .unwrap();
    assert!(next.metadata_location().ends_with("/v3.metadata.json"));
    assert_eq!(next.metadata().property("a"), Some("1"));
}

/// A newer version written by another writer in another `vN` naming (gzip, as Java writes
/// with compression on) is never passed over by the remembered version.
#[tokio::test]
async fn a_newer_version_in_another_naming_ends_the_remembered_one() {
    let tmp = tempfile::tempdir().unwrap();
    let catalog = catalog(tmp.path());
    table_at(&tmp.path().join("t"));
    let ident = TableIdent::new(Namespace::root(), "t").unwrap();
    catalog
        .commit_table(&ident, &[uuid_is(FIRST_UUID)], &[set_property("a")])
        .await
        .unwrap();
    let v2 = std::fs::read(tmp.path().join("t/metadata/v2.metadata.json")).unwrap();
    let v3 = String::from_utf8(v2)
        .unwrap()
        .replace("\"a\"", "\"from-java\"");
    write(
        &tmp.path().join("t/metadata/v3.gz.metadata.json"),
        &crate::catalog::test_support::gzip(v3.as_bytes()),
    );
    let current = catalog.load_table_for_write(&ident).await.unwrap();
    assert!(
        current
            .metadata_location()
            .ends_with("/v3.gz.metadata.json"),
        "{}",
        current.metadata_location()
    );
    assert_eq!(current.metadata().property("from-java"), Some("1"));
}
