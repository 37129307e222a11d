//! Issue 14, item 12: inconsistent metadata is refused with a message naming the rule, where
//! it was read silently (the first of two snapshots with one id, the `main` branch or the
//! `current-snapshot-id` depending on the reader).

use serde_json::{Value as JsonValue, json};

use crate::error::Error;
use crate::spec::TableMetadata;

/// A consistent v2 table: schemas 0 and 1, specs 0 and 1, sort orders 0 and 1, snapshots
/// 1 <- 2 <- 3 with `main` at 3, a tag at 1.
fn table() -> JsonValue {
    let snapshot = |id: i64, parent: Option<i64>| {
        json!({
            "snapshot-id": id, "parent-snapshot-id": parent, "sequence-number": id,
            "timestamp-ms": 1_700_000_000_000_i64 + id, "summary": {"operation": "append"},
            "manifest-list": format!("/t/metadata/snap-{id}.avro"), "schema-id": 0
        })
    };
    json!({
        "format-version": 2,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "/t",
        "last-sequence-number": 3,
        "last-updated-ms": 1_700_000_000_003_i64,
        "last-column-id": 3,
        "current-schema-id": 1,
        "schemas": [
            {"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "x", "required": true, "type": "long"}]},
            {"type": "struct", "schema-id": 1, "fields": [
                {"id": 1, "name": "x", "required": true, "type": "long"},
                {"id": 3, "name": "m", "required": false, "type": {
                    "type": "list", "element-id": 2, "element": "int", "element-required": false}}]}
        ],
        "default-spec-id": 1,
        "partition-specs": [
            {"spec-id": 0, "fields": []},
            {"spec-id": 1, "fields": [
                {"source-id": 1, "field-id": 1000, "name": "x_bucket", "transform": "bucket[4]"}]}
        ],
        "last-partition-id": 1000,
        "default-sort-order-id": 1,
        "sort-orders": [
            {"order-id": 0, "fields": []},
            {"order-id": 1, "fields": [
                {"source-id": 1, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]}
        ],
        "properties": {},
        "current-snapshot-id": 3,
        "snapshots": [snapshot(1, None), snapshot(2, Some(1)), snapshot(3, Some(2))],
        "snapshot-log": [],
        "metadata-log": [],
        "refs": {
            "main": {"snapshot-id": 3, "type": "branch"},
            "v1": {"snapshot-id": 1, "type": "tag"}
        }
    })
}

fn parse(v: &JsonValue) -> crate::Result<TableMetadata> {
    TableMetadata::parse(v.to_string().as_bytes())
}

#[test]
fn the_consistent_table_parses() {
    let m = parse(&table()).unwrap();
    assert_eq!(m.current_snapshot_id, Some(3));
    assert_eq!(m.refs["main"].snapshot_id, 3);
    m.validate().unwrap();
}

/// Each case: a name, an edit of the consistent table, and words the error must contain.
type Case = (&'static str, fn(&mut JsonValue), &'static str);

const CASES: &[Case] = &[
    (
        "duplicate snapshot ids",
        |v| v["snapshots"][1]["snapshot-id"] = json!(1),
        "snapshot id 1 appears more than once in 'snapshots'",
    ),
    (
        "main differs from current-snapshot-id",
        |v| v["refs"]["main"]["snapshot-id"] = json!(2),
        "current-snapshot-id 3 does not match the main branch in 'refs' (snapshot 2)",
    ),
    (
        "current-snapshot-id null while main is set",
        |v| v["current-snapshot-id"] = JsonValue::Null,
        "current-snapshot-id is not set, but the main branch in 'refs' points at snapshot 3",
    ),
    (
        "current-snapshot-id -1 while main is set",
        |v| v["current-snapshot-id"] = json!(-1),
        "current-snapshot-id is not set, but the main branch",
    ),
    (
        "a ref to an unknown snapshot",
        |v| v["refs"]["v1"]["snapshot-id"] = json!(99),
        "ref 'v1' points at snapshot 99, which is not in 'snapshots'",
    ),
    (
        "main is a tag",
        |v| v["refs"]["main"]["type"] = json!("tag"),
        "a tag named main",
    ),
    (
        "current-snapshot-id unknown",
        |v| {
            v["current-snapshot-id"] = json!(7);
            v["refs"]["main"]["snapshot-id"] = json!(7);
        },
        "current-snapshot-id 7 is not in 'snapshots'",
    ),
    (
        "duplicate schema ids",
        |v| v["schemas"][0]["schema-id"] = json!(1),
        "schema id 1 appears more than once in 'schemas'",
    ),
    (
        "current-schema-id unknown",
        |v| v["current-schema-id"] = json!(5),
        "current-schema-id 5 is not in 'schemas'",
    ),
    (
        "duplicate partition spec ids",
        |v| v["partition-specs"][0]["spec-id"] = json!(1),
        "partition spec id 1 appears more than once in 'partition-specs'",
    ),
    (
        "default-spec-id unknown",
        |v| v["default-spec-id"] = json!(4),
        "default-spec-id 4 is not in 'partition-specs'",
    ),
    (
        "duplicate sort order ids",
        |v| v["sort-orders"][0]["order-id"] = json!(1),
        "sort order id 1 appears more than once in 'sort-orders'",
    ),
    (
        "default-sort-order-id unknown",
        |v| v["default-sort-order-id"] = json!(2),
        "default-sort-order-id 2 is not in 'sort-orders'",
    ),
    (
        "last-column-id below a nested field id",
        |v| v["last-column-id"] = json!(2),
        "schema 1 uses field id 3, above last-column-id 2",
    ),
    (
        "last-partition-id below a partition field id",
        |v| v["last-partition-id"] = json!(999),
        "partition spec 1 uses field id 1000, above last-partition-id 999",
    ),
    (
        "a snapshot above last-sequence-number",
        |v| v["last-sequence-number"] = json!(2),
        "snapshot 3 has sequence-number 3, above last-sequence-number 2",
    ),
];

#[test]
fn each_inconsistency_is_refused_naming_the_rule() {
    for (name, edit, words) in CASES {
        let mut v = table();
        edit(&mut v);
        let err = parse(&v).expect_err(name);
        assert!(matches!(err, Error::Corrupt { .. }), "{name}: {err:?}");
        let text = err.to_string();
        assert!(text.contains(words), "{name}: {text}");
        assert!(
            text.contains("inconsistent table metadata"),
            "{name}: {text}"
        );
    }
}

#[test]
fn errors_name_the_metadata_file_once_the_caller_adds_it() {
    let mut v = table();
    v["snapshots"][1]["snapshot-id"] = json!(1);
    let err = parse(&v)
        .unwrap_err()
        .in_file("/t/metadata/v3.metadata.json");
    assert!(
        err.to_string()
            .starts_with("corrupt /t/metadata/v3.metadata.json: inconsistent"),
        "{err}"
    );
}

#[test]
fn what_the_spec_allows_is_still_read() {
    // No snapshot: no main branch, current -1 (Java writes both forms).
    for current in [json!(-1), JsonValue::Null] {
        let mut v = table();
        v["snapshots"] = json!([]);
        v["refs"] = json!({});
        v["current-snapshot-id"] = current;
        let m = parse(&v).unwrap();
        assert!(m.current_snapshot_id.is_none() && m.refs.is_empty());
    }
    // A current snapshot and refs without main: main is implied.
    let mut v = table();
    v["refs"].as_object_mut().unwrap().remove("main");
    assert_eq!(parse(&v).unwrap().refs["main"].snapshot_id, 3);
    // No refs at all: main is implied.
    let mut v = table();
    v.as_object_mut().unwrap().remove("refs");
    assert_eq!(parse(&v).unwrap().refs["main"].snapshot_id, 3);
    // An unsorted default order need not be listed; parents may have expired.
    let mut v = table();
    v["default-sort-order-id"] = json!(0);
    v["sort-orders"] = json!([{"order-id": 1, "fields": []}]);
    v["snapshots"][0]["parent-snapshot-id"] = json!(42);
    parse(&v).unwrap();
}

/// The metadata files under a fixture root, plain or gzip.
fn metadata_files(root: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if path.is_dir() {
            metadata_files(&path, out);
        } else if name.ends_with(".metadata.json") || name.ends_with(".metadata.json.gz") {
            out.push(path);
        }
    }
}

/// Every metadata file of the fixtures: the in-repo sample, and the full sets when
/// `ICEFLOE_FIXTURES` names them.
pub(crate) fn fixture_metadata_files() -> Vec<std::path::PathBuf> {
    let mut roots = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures"
    ))];
    roots.extend(std::env::var_os("ICEFLOE_FIXTURES").map(std::path::PathBuf::from));
    let mut files = Vec::new();
    for root in &roots {
        metadata_files(root, &mut files);
    }
    files.sort();
    files
}

/// Every metadata file that Spark, Flink, Trino, Impala, BigQuery, DuckDB and PyIceberg wrote
/// for the fixtures (the in-repo sample, and the full sets when `ICEFLOE_FIXTURES` names them)
/// keeps these rules: none is refused as inconsistent.
#[test]
fn no_fixture_written_by_another_engine_is_inconsistent() {
    let files = fixture_metadata_files();
    assert!(files.len() > 50, "{} metadata files", files.len());
    let refused: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let bytes = std::fs::read(path).unwrap();
            match TableMetadata::parse_file(&bytes, u64::MAX) {
                Err(e) if e.to_string().contains("inconsistent") => {
                    Some(format!("{}: {e}", path.display()))
                }
                _ => None,
            }
        })
        .collect();
    assert!(refused.is_empty(), "{refused:#?}");
}

/// Issue 14, item 10: gzip metadata inflates within a bound (a zip bomb is refused once the
/// bound is reached), and plain or gzip files of the bound or less parse.
#[test]
fn gzip_metadata_inflates_within_its_bound() {
    use std::io::Write;
    let gzip = |bytes: &[u8]| {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    };
    let json = table().to_string();
    let plain = TableMetadata::parse_file(json.as_bytes(), 0).unwrap();
    let size = json.len() as u64;
    assert_eq!(
        TableMetadata::parse_file(&gzip(json.as_bytes()), size).unwrap(),
        plain
    );
    let err = TableMetadata::parse_file(&gzip(json.as_bytes()), size - 1).unwrap_err();
    assert!(err.to_string().contains("inflates past"), "{err}");
    // 64 MiB of spaces gzip to about 64 KB.
    let mut bomb = json.into_bytes();
    bomb.extend(std::iter::repeat_n(b' ', 64 << 20));
    let bomb = gzip(&bomb);
    assert!(bomb.len() < 200_000, "{}", bomb.len());
    let err = TableMetadata::parse_file(&bomb, 1 << 20).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
}
