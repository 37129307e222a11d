//! Tests of metadata file location and loading, over temporary table directories.

use std::path::Path;

use super::*;
use crate::catalog::test_support::{STUB_JSON, gzip, metadata_json, write};

/// A temporary table directory and its path as a string.
fn table_dir() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap().to_string();
    (dir, path)
}

/// Writes a valid metadata file `metadata/<name>` under `dir`.
fn valid(dir: &str, name: &str) {
    let path = Path::new(dir).join("metadata").join(name);
    let json = metadata_json(dir);
    if name.ends_with(".gz") || name.contains(".gz.") {
        write(&path, &gzip(json.as_bytes()));
    } else {
        write(&path, json.as_bytes());
    }
}

/// Writes `metadata/<name>` under `dir` with the given contents.
fn raw(dir: &str, name: &str, contents: &str) {
    write(
        &Path::new(dir).join("metadata").join(name),
        contents.as_bytes(),
    );
}

async fn locate(location: &str) -> Result<String> {
    locate_metadata(&FileIO::default(), location).await
}

fn meta(dir: &str, name: &str) -> String {
    format!("{dir}/metadata/{name}")
}

// --- Pure name handling (no metadata parsing) ---

#[test]
fn version_numbers_from_file_names() {
    assert_eq!(metadata_file_version("v3.metadata.json"), Some(3));
    assert_eq!(metadata_file_version("v12.gz.metadata.json"), Some(12));
    assert_eq!(metadata_file_version("v7.metadata.json.gz"), Some(7));
    let uuid = "00042-5cafef12-ce2f-4877-9745-bda25bb30120";
    assert_eq!(
        metadata_file_version(&format!("{uuid}.metadata.json")),
        Some(42)
    );
    assert_eq!(
        metadata_file_version(&format!("{uuid}.gz.metadata.json")),
        Some(42)
    );
    assert_eq!(metadata_file_version("version-hint.text"), None);
    assert_eq!(metadata_file_version("snap-1-0-abc.avro"), None);
    assert_eq!(metadata_file_version("vx.metadata.json"), None);
    assert_eq!(metadata_file_version("abc-def.metadata.json"), None);
    assert_eq!(metadata_file_version(".metadata.json"), None);
}

#[test]
fn hint_forms() {
    let parse = |text: &str| parse_version_hint(text.as_bytes());
    assert_eq!(parse(" 3\n").unwrap(), Some(VersionHint::Version(3)));
    assert_eq!(parse("v4").unwrap(), Some(VersionHint::Version(4)));
    assert_eq!(parse("  \n").unwrap(), None);
    let name = "00002-5cafef12-ce2f-4877-9745-bda25bb30120.metadata.json";
    assert_eq!(
        parse(name).unwrap(),
        Some(VersionHint::FileName(name.into()))
    );
    assert_eq!(
        parse("metadata/v2.metadata.json").unwrap(),
        Some(VersionHint::FileName("v2.metadata.json".into()))
    );
    // Never a path out of metadata/, never text.
    for bad in [
        "../../other8/metadata/v2.metadata.json",
        "/a/x.metadata.json",
        "s3://b/x.metadata.json",
        "sub/v2.metadata.json",
        "not a version",
        "99999999999999999999999",
        "v",
    ] {
        let err = parse(bad).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{bad}: {err:?}");
    }
    assert!(parse_version_hint(&[0xff, 0xfe]).is_err());
}

#[tokio::test]
async fn a_metadata_file_is_returned_as_given() {
    for location in [
        "/nowhere/t/metadata/v9.metadata.json",
        "file:///nowhere/t/metadata/00001-abc.metadata.json",
        "/nowhere/t/metadata/v2.metadata.json.gz",
        "/nowhere/t/custom.json",
    ] {
        assert_eq!(locate(location).await.unwrap(), location);
    }
}

#[tokio::test]
async fn missing_directory_is_not_found_naming_it() {
    let (_tmp, dir) = table_dir();
    let missing = format!("{dir}/no_such_table");
    let err = locate(&missing).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert!(err.to_string().contains(&missing), "{err}");
}

#[tokio::test]
async fn missing_metadata_file_is_not_found_naming_it() {
    let (_tmp, dir) = table_dir();
    let location = meta(&dir, "v1.metadata.json");
    let err = load_metadata(&FileIO::default(), &location)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert!(err.to_string().contains(&location), "{err}");
}

// --- Needs TableMetadata::parse ---

#[tokio::test]
async fn hint_names_the_version() {
    let (_tmp, dir) = table_dir();
    valid(&dir, "v1.metadata.json");
    valid(&dir, "v2.metadata.json");
    raw(&dir, "version-hint.text", " 2\n");
    assert_eq!(locate(&dir).await.unwrap(), meta(&dir, "v2.metadata.json"));
    assert_eq!(
        locate(&format!("{dir}/")).await.unwrap(),
        meta(&dir, "v2.metadata.json")
    );
}

#[tokio::test]
async fn a_stale_or_backward_hint_is_followed_to_the_newest_version() {
    // A writer killed after creating v3 (its commit point), before renaming the hint.
    let (_tmp, dir) = table_dir();
    for n in 1..=3 {
        valid(&dir, &format!("v{n}.metadata.json"));
    }
    for hint in ["2", "1"] {
        raw(&dir, "version-hint.text", hint);
        for access in [Access::Read, Access::Write] {
            let current = current_version(&FileIO::default(), &dir, access)
                .await
                .unwrap();
            assert_eq!(current.metadata_location, meta(&dir, "v3.metadata.json"));
            assert_eq!(current.version, 3);
            assert_eq!(
                current.next_metadata_location(),
                meta(&dir, "v4.metadata.json")
            );
        }
    }
    let current = current_version(&FileIO::default(), &dir, Access::Read)
        .await
        .unwrap();
    assert_eq!(
        current.found_by.to_string(),
        "metadata/version-hint.text -> 1 (stale: 2 newer version(s) found after it)"
    );
}

#[tokio::test]
async fn txt_hint_and_gzip_target() {
    let (_tmp, dir) = table_dir();
    valid(&dir, "v1.metadata.json");
    valid(&dir, "v2.gz.metadata.json");
    raw(&dir, "version-hint.txt", "2");
    assert_eq!(
        locate(&dir).await.unwrap(),
        meta(&dir, "v2.gz.metadata.json")
    );
}

#[tokio::test]
async fn hint_holding_a_file_name() {
    let (_tmp, dir) = table_dir();
    valid(&dir, "00001-aaaa.metadata.json");
    raw(&dir, "version-hint.text", "00001-aaaa.metadata.json");
    assert_eq!(
        locate(&dir).await.unwrap(),
        meta(&dir, "00001-aaaa.metadata.json")
    );
    // A newer catalog-style version is found through a listing.
    valid(&dir, "00002-bbbb.metadata.json");
    assert_eq!(
        locate(&dir).await.unwrap(),
        meta(&dir, "00002-bbbb.metadata.json")
    );
}

#[tokio::test]
async fn a_hint_holding_a_path_is_an_error_naming_it() {
    let (_tmp, dir) = table_dir();
    valid(&dir, "v1.metadata.json");
    for hint in [
        meta(&dir, "v1.metadata.json"),
        "../../other/metadata/v1.metadata.json".into(),
    ] {
        raw(&dir, "version-hint.text", &hint);
        let err = locate(&dir).await.unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
        assert!(err.to_string().contains("version-hint.text"), "{err}");
    }
}

#[tokio::test]
async fn empty_hint_falls_back_to_newest() {
    let (_tmp, dir) = table_dir();
    valid(&dir, "v1.metadata.json");
    valid(&dir, "v2.metadata.json");
    raw(&dir, "version-hint.text", "  \n");
    assert_eq!(locate(&dir).await.unwrap(), meta(&dir, "v2.metadata.json"));
}

#[tokio::test]
async fn garbage_hint_is_an_error_naming_it() {
    let (_tmp, dir) = table_dir();
    valid(&dir, "v1.metadata.json");
    raw(&dir, "version-hint.text", "not a version");
    let err = locate(&dir).await.unwrap_err();
    assert!(err.to_string().contains("version-hint.text"), "{err}");
}

#[tokio::test]
async fn the_version_the_hint_names_must_be_readable() {
    let (_tmp, dir) = table_dir();
    valid(&dir, "v1.metadata.json");
    raw(&dir, "v2.metadata.json", "garbage");
    raw(&dir, "version-hint.text", "2");
    for access in [Access::Read, Access::Write] {
        let err = current_version(&FileIO::default(), &dir, access)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
        assert!(err.to_string().contains("v2.metadata.json"), "{err}");
    }
    raw(&dir, "v2.metadata.json", STUB_JSON);
    assert!(locate(&dir).await.is_err());
}

#[tokio::test]
async fn a_hint_naming_a_missing_version_is_an_error() {
    let (_tmp, dir) = table_dir();
    valid(&dir, "v1.metadata.json");
    raw(&dir, "version-hint.text", "7");
    let err = locate(&dir).await.unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("v7.metadata.json"), "{err}");
}

#[tokio::test]
async fn an_unreadable_version_beyond_a_readable_pointer_is_skipped_only_by_reads() {
    let (_tmp, dir) = table_dir();
    valid(&dir, "v1.metadata.json");
    valid(&dir, "v2.metadata.json");
    raw(&dir, "v3.metadata.json", "{ truncated");
    raw(&dir, "version-hint.text", "2");
    let io = FileIO::default();
    let read = current_version(&io, &dir, Access::Read).await.unwrap();
    assert_eq!(read.metadata_location, meta(&dir, "v2.metadata.json"));
    assert_eq!(read.skipped, [meta(&dir, "v3.metadata.json")]);
    let err = current_version(&io, &dir, Access::Write).await.unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("version 3"), "{err}");
}

#[tokio::test]
async fn a_gap_or_two_files_of_one_version_refuse_writes() {
    let (_tmp, dir) = table_dir();
    valid(&dir, "v1.metadata.json");
    valid(&dir, "v3.metadata.json");
    raw(&dir, "version-hint.text", "1");
    let io = FileIO::default();
    let read = current_version(&io, &dir, Access::Read).await.unwrap();
    assert_eq!(read.version, 1);
    let err = current_version(&io, &dir, Access::Write).await.unwrap_err();
    assert!(err.to_string().contains("v3.metadata.json"), "{err}");
    let (_tmp, dir) = table_dir();
    valid(&dir, "00002-aaaa.metadata.json");
    valid(&dir, "00002-bbbb.metadata.json");
    assert!(current_version(&io, &dir, Access::Read).await.is_ok());
    let err = current_version(&io, &dir, Access::Write).await.unwrap_err();
    assert!(err.to_string().contains("claim version 2"), "{err}");
}

#[tokio::test]
async fn no_hint_picks_the_highest_version() {
    let (_tmp, dir) = table_dir();
    raw(&dir, "v0.metadata.json", STUB_JSON);
    for n in 1..=10 {
        valid(&dir, &format!("v{n}.metadata.json"));
    }
    raw(&dir, "snap-1-0-x.avro", "not metadata");
    raw(
        &dir,
        "v11.metadata.json#1",
        "a killed writer's staging file",
    );
    assert_eq!(locate(&dir).await.unwrap(), meta(&dir, "v10.metadata.json"));
    // The highest version is the pointer then: unreadable, it is an error.
    raw(&dir, "v11.metadata.json", "{ truncated");
    let err = locate(&dir).await.unwrap_err();
    assert!(err.to_string().contains("v11.metadata.json"), "{err}");
}

#[tokio::test]
async fn uuid_style_names_order_by_number() {
    let (_tmp, dir) = table_dir();
    valid(
        &dir,
        "00009-ffff0000-0000-0000-0000-000000000000.metadata.json",
    );
    valid(
        &dir,
        "00010-00000000-0000-0000-0000-000000000000.metadata.json",
    );
    valid(
        &dir,
        "00002-aaaa0000-0000-0000-0000-000000000000.metadata.json",
    );
    let expected = meta(
        &dir,
        "00010-00000000-0000-0000-0000-000000000000.metadata.json",
    );
    assert_eq!(locate(&dir).await.unwrap(), expected);
}

#[tokio::test]
async fn gzip_names_are_candidates() {
    let (_tmp, dir) = table_dir();
    valid(&dir, "v1.metadata.json");
    valid(&dir, "v2.gz.metadata.json");
    assert_eq!(
        locate(&dir).await.unwrap(),
        meta(&dir, "v2.gz.metadata.json")
    );
    valid(&dir, "v3.metadata.json.gz");
    assert_eq!(
        locate(&dir).await.unwrap(),
        meta(&dir, "v3.metadata.json.gz")
    );
    let loaded = load_metadata(&FileIO::default(), &meta(&dir, "v3.metadata.json.gz")).await;
    assert_eq!(loaded.unwrap().location, dir);
}

#[tokio::test]
async fn only_a_stub_is_an_error_naming_it() {
    let (_tmp, dir) = table_dir();
    raw(&dir, "v0.metadata.json", STUB_JSON);
    let err = locate(&dir).await.unwrap_err();
    assert!(err.to_string().contains("v0.metadata.json"), "{err}");
}

#[tokio::test]
async fn url_style_input_keeps_its_style() {
    let (_tmp, dir) = table_dir();
    valid(&dir, "v1.metadata.json");
    let url = format!("file://{dir}");
    assert_eq!(
        locate(&url).await.unwrap(),
        format!("{url}/metadata/v1.metadata.json")
    );
}

#[tokio::test]
async fn locate_and_load_returns_the_parse() {
    let (_tmp, dir) = table_dir();
    valid(&dir, "v1.metadata.json");
    let (location, metadata) = locate_and_load(&FileIO::default(), &dir).await.unwrap();
    assert_eq!(location, meta(&dir, "v1.metadata.json"));
    assert_eq!(metadata.location, dir);
}

#[tokio::test]
async fn corrupt_file_error_names_it() {
    let (_tmp, dir) = table_dir();
    raw(&dir, "v1.metadata.json", "{ nope");
    let location = meta(&dir, "v1.metadata.json");
    let err = load_metadata(&FileIO::default(), &location)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains(&location), "{err}");
}

#[tokio::test]
async fn broken_gzip_is_corrupt_naming_the_file() {
    let (_tmp, dir) = table_dir();
    let location = meta(&dir, "v1.gz.metadata.json");
    write(Path::new(&location), &[0x1f, 0x8b, 0x08, 0x00, 0x01]);
    let err = load_metadata(&FileIO::default(), &location)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains(&location), "{err}");
}

#[tokio::test]
async fn a_metadata_file_is_parsed_once_per_contents() {
    let (_tmp, dir) = table_dir();
    valid(&dir, "v1.metadata.json");
    let location = meta(&dir, "v1.metadata.json");
    let io = FileIO::default();
    let first = load_metadata(&io, &location).await.unwrap();
    let again = load_metadata(&io, &location).await.unwrap();
    assert!(
        Arc::ptr_eq(&first, &again),
        "the same bytes reuse the parse"
    );

    // A table dropped and created again reuses the name v1.metadata.json: other bytes there
    // are parsed anew, never answered from the cache.
    let other = metadata_json(&dir).replace(
        "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "0b6a7e6c-2f3d-4d59-8d6b-6c1f7f1f2a10",
    );
    raw(&dir, "v1.metadata.json", &other);
    let replaced = load_metadata(&io, &location).await.unwrap();
    assert_eq!(
        replaced.table_uuid.as_deref(),
        Some("0b6a7e6c-2f3d-4d59-8d6b-6c1f7f1f2a10")
    );
    assert_eq!(
        first.table_uuid.as_deref(),
        Some("9c12d441-03fe-4693-9a96-a0705ddf69c1")
    );
}
