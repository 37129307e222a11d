use std::path::{Path, PathBuf};

use serde_json::{Value as JsonValue, json};

use super::*;
use crate::spec::partition::Transform;
use crate::spec::snapshot::{Operation, SnapshotRetention};

fn parse(v: &JsonValue) -> Result<TableMetadata> {
    TableMetadata::parse(v.to_string().as_bytes())
}

fn assert_round_trips(m: &TableMetadata) {
    let again = TableMetadata::parse(m.to_json().to_string().as_bytes()).unwrap();
    assert_eq!(&again, m);
}

fn v1_legacy() -> JsonValue {
    json!({
        "format-version": 1,
        "location": "s3://bucket/db/t",
        "last-updated-ms": 1_602_638_573_874_i64,
        "last-column-id": 3,
        "schema": {"type": "struct", "fields": [
            {"id": 1, "name": "x", "required": true, "type": "long"},
            {"id": 2, "name": "y", "required": true, "type": "long", "doc": "comment"},
            {"id": 3, "name": "z", "required": true, "type": "long"}
        ]},
        "partition-spec": [{"name": "x", "transform": "identity", "source-id": 1}],
        "properties": {"owner": "me", "commit.retry.num-retries": 4},
        "current-snapshot-id": -1,
        "snapshots": []
    })
}

fn v2() -> JsonValue {
    json!({
        "format-version": 2,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "s3://bucket/test/location",
        "last-sequence-number": 34,
        "last-updated-ms": 1_602_638_573_590_i64,
        "last-column-id": 3,
        "current-schema-id": 1,
        "schemas": [
            {"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "x", "required": true, "type": "long"}]},
            {"type": "struct", "schema-id": 1, "identifier-field-ids": [1, 2], "fields": [
                {"id": 1, "name": "x", "required": true, "type": "long"},
                {"id": 2, "name": "y", "required": true, "type": "long"},
                {"id": 3, "name": "z", "required": true, "type": "timestamp"}]}
        ],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": [
            {"name": "z_day", "transform": "day", "source-id": 3, "field-id": 1000}]}],
        "last-partition-id": 1000,
        "default-sort-order-id": 3,
        "sort-orders": [{"order-id": 3, "fields": [
            {"transform": "identity", "source-id": 2, "direction": "asc", "null-order": "nulls-first"}]}],
        "properties": {"read.split.target-size": "134217728"},
        "current-snapshot-id": 3_055_729_675_574_597_004_i64,
        "snapshots": [
            {"snapshot-id": 3_051_729_675_574_597_004_i64, "timestamp-ms": 1_515_100_955_770_i64,
             "sequence-number": 0, "summary": {"operation": "append"},
             "manifest-list": "s3://a/b/1.avro"},
            {"snapshot-id": 3_055_729_675_574_597_004_i64,
             "parent-snapshot-id": 3_051_729_675_574_597_004_i64,
             "timestamp-ms": 1_555_100_955_770_i64, "sequence-number": 1,
             "summary": {"operation": "append"}, "manifest-list": "s3://a/b/2.avro", "schema-id": 0}
        ],
        "snapshot-log": [
            {"snapshot-id": 3_051_729_675_574_597_004_i64, "timestamp-ms": 1_515_100_955_770_i64},
            {"snapshot-id": 3_055_729_675_574_597_004_i64, "timestamp-ms": 1_555_100_955_770_i64}
        ],
        "metadata-log": [{"metadata-file": "s3://bucket/.../v1.json", "timestamp-ms": 1_515_100}],
        "refs": {"test": {"snapshot-id": 3_051_729_675_574_597_004_i64, "type": "tag",
                          "max-ref-age-ms": 10_000_000}},
        "statistics": [{"snapshot-id": 3_055_729_675_574_597_004_i64,
            "statistics-path": "s3://a/b/stats.puffin", "file-size-in-bytes": 413,
            "file-footer-size-in-bytes": 42,
            "blob-metadata": [{"type": "ndv", "snapshot-id": 3_055_729_675_574_597_004_i64,
                               "sequence-number": 1, "fields": [1]}]}],
        "partition-statistics": [{"snapshot-id": 3_055_729_675_574_597_004_i64,
            "statistics-path": "s3://a/b/p.parquet", "file-size-in-bytes": 43}]
    })
}

fn v3() -> JsonValue {
    json!({
        "format-version": 3,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c2",
        "location": "s3://bucket/v3",
        "last-sequence-number": 1,
        "last-updated-ms": 1_700_000_000_000_i64,
        "last-column-id": 2,
        "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "required": true, "type": "long"},
            {"id": 2, "name": "ts", "required": false, "type": "timestamp_ns",
             "initial-default": "1970-01-01T00:00:00.000000001", "write-default": null}]}],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": [
            {"name": "ts_hour", "transform": "hour", "source-ids": [2], "field-id": 1000}]}],
        "last-partition-id": 1000,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {},
        "current-snapshot-id": 9_223_372_036_854_775_807_i64,
        "next-row-id": 100,
        "refs": {
            "main": {"snapshot-id": 9_223_372_036_854_775_807_i64, "type": "branch"},
            "audit": {"snapshot-id": 9_223_372_036_854_775_807_i64, "type": "branch",
                      "min-snapshots-to-keep": 1}
        },
        "snapshots": [{"snapshot-id": 9_223_372_036_854_775_807_i64, "sequence-number": 1,
            "timestamp-ms": 1_700_000_000_000_i64, "summary": {"operation": "append"},
            "manifest-list": "s3://bucket/v3/snap.avro", "schema-id": 0,
            "first-row-id": 0, "added-rows": 100}],
        "encryption-keys": [{"key-id": "k", "encrypted-key-metadata": "AA=="}]
    })
}

#[test]
fn v1_legacy_schema_and_partition_spec_are_upgraded() {
    let m = parse(&v1_legacy()).unwrap();
    assert_eq!(m.format_version, FormatVersion::V1);
    assert_eq!(m.table_uuid, None);
    assert_eq!((m.schemas.len(), m.current_schema_id), (1, 0));
    assert_eq!(m.current_schema().field_by_id(2).unwrap().name, "y");
    assert_eq!(m.partition_specs.len(), 1);
    assert_eq!((m.default_spec_id, m.last_partition_id), (0, 1000));
    assert_eq!(m.partition_specs[0].fields[0].field_id, 1000);
    assert_eq!(m.last_sequence_number, 0);
    assert_eq!(m.current_snapshot_id, None);
    assert!(m.refs.is_empty());
    assert_eq!(m.sort_orders, vec![SortOrder::unsorted()]);
    assert_eq!(m.property("commit.retry.num-retries"), Some("4"));
    assert_round_trips(&m);
    let written = m.to_json();
    assert_eq!(written["schema"], m.current_schema().to_json());
    assert_eq!(
        written["partition-spec"],
        m.partition_specs[0].fields_json()
    );
    assert_eq!(written.get("last-sequence-number"), None);
}

#[test]
fn v1_lists_win_over_the_legacy_fields() {
    let mut v = v1_legacy();
    v["schemas"] = json!([{"type": "struct", "schema-id": 7, "fields": []}]);
    v["current-schema-id"] = json!(7);
    v["partition-specs"] = json!([{"spec-id": 4, "fields": []}]);
    v["default-spec-id"] = json!(4);
    let m = parse(&v).unwrap();
    assert_eq!(m.current_schema().schema_id, 7);
    assert_eq!(m.default_spec_id, 4);
    assert_eq!(m.last_partition_id, 999);
    assert_round_trips(&m);
}

#[test]
fn v2_parses_every_field_and_round_trips() {
    let m = parse(&v2()).unwrap();
    assert_eq!(m.format_version, FormatVersion::V2);
    assert_eq!(m.last_sequence_number, 34);
    assert_eq!(m.current_schema().schema_id, 1);
    assert_eq!(m.current_schema().identifier_field_ids, vec![1, 2]);
    let current = m.current_snapshot().unwrap();
    assert_eq!(current.snapshot_id, 3_055_729_675_574_597_004);
    assert_eq!(m.schema_for_snapshot(current).schema_id, 0);
    let first = m.snapshot_by_id(3_051_729_675_574_597_004).unwrap();
    assert_eq!(m.schema_for_snapshot(first).schema_id, 1);
    assert_eq!(
        m.partition_spec_by_id(0).unwrap().fields[0].transform,
        Transform::Day
    );
    assert_eq!(m.default_sort_order().unwrap().order_id, 3);
    assert_eq!(m.snapshot_log.len(), 2);
    assert_eq!(m.metadata_log[0].timestamp_ms, 1_515_100);
    assert_eq!(m.statistics[0].file_footer_size_in_bytes, 42);
    assert_eq!(m.statistics[0].blob_metadata.len(), 1);
    assert_eq!(m.partition_statistics[0].file_size_in_bytes, 43);
    assert!(m.unknown_fields.is_empty());
    // The tag is kept and main is implied by current-snapshot-id.
    assert!(matches!(
        m.refs["test"].retention,
        SnapshotRetention::Tag { .. }
    ));
    assert_eq!(
        m.refs["main"],
        SnapshotReference::branch(3_055_729_675_574_597_004)
    );
    assert_eq!(
        m.snapshot_for_ref("test").unwrap().snapshot_id,
        first.snapshot_id
    );
    assert_round_trips(&m);
}

#[test]
fn v3_parses_row_lineage_defaults_and_refs() {
    let m = parse(&v3()).unwrap();
    assert_eq!(m.format_version, FormatVersion::V3);
    assert_eq!(m.next_row_id, Some(100));
    assert_eq!(m.current_snapshot_id, Some(i64::MAX));
    let s = m.current_snapshot().unwrap();
    assert_eq!((s.first_row_id, s.added_rows), (Some(0), Some(100)));
    let ts = m.current_schema().field_by_id(2).unwrap();
    assert_eq!(
        ts.initial_default,
        Some(json!("1970-01-01T00:00:00.000000001"))
    );
    assert_eq!(m.partition_specs[0].fields[0].source_id, 2);
    assert_eq!(m.refs.len(), 2);
    assert_eq!(
        m.unknown_fields.keys().collect::<Vec<_>>(),
        vec!["encryption-keys"]
    );
    assert_round_trips(&m);
    assert_eq!(m.to_json()["encryption-keys"], v3()["encryption-keys"]);
}

#[test]
fn unknown_fields_are_kept() {
    let mut v = v2();
    v["x-vendor"] = json!({"a": [1, 2]});
    let m = parse(&v).unwrap();
    assert_eq!(m.unknown_fields["x-vendor"], json!({"a": [1, 2]}));
    assert_eq!(m.to_json()["x-vendor"], json!({"a": [1, 2]}));
    assert_round_trips(&m);
}

#[test]
fn current_snapshot_id_minus_one_or_null_is_none() {
    for id in [json!(-1), JsonValue::Null] {
        let mut v = v2();
        v["current-snapshot-id"] = id;
        let m = parse(&v).unwrap();
        assert_eq!(m.current_snapshot(), None);
        assert!(!m.refs.contains_key("main"));
        assert_round_trips(&m);
    }
}

#[test]
fn snapshot_ids_are_exact() {
    let text = v3().to_string();
    assert!(text.contains("9223372036854775807"));
    let m = TableMetadata::parse(text.as_bytes()).unwrap();
    assert_eq!(m.snapshots[0].snapshot_id, 9_223_372_036_854_775_807);
    assert!(m.to_json().to_string().contains("9223372036854775807"));
}

#[test]
fn bad_versions_are_unsupported() {
    for version in [0, 4, -1] {
        let mut v = v2();
        v["format-version"] = json!(version);
        match parse(&v) {
            Err(Error::Unsupported(msg)) => assert!(msg.contains(&version.to_string()), "{msg}"),
            other => panic!("version {version}: {other:?}"),
        }
    }
}

fn corrupt_reason(bytes: &[u8]) -> String {
    match TableMetadata::parse(bytes) {
        Err(Error::Corrupt { path, reason, .. }) => {
            assert_eq!(path, "");
            reason
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn malformed_json_is_corrupt() {
    let text = v2().to_string();
    corrupt_reason(&text.as_bytes()[..text.len() / 2]);
    corrupt_reason(b"");
    corrupt_reason(b"[1, 2]");
    corrupt_reason(br#"{"properties":{"bigquery-table-id":"a.b.c"},"current-snapshot-id":-1}"#);
}

#[test]
fn missing_required_fields_are_corrupt_and_named() {
    for (version, field) in [
        (v2(), "location"),
        (v2(), "last-updated-ms"),
        (v2(), "last-column-id"),
        (v2(), "last-sequence-number"),
        (v2(), "schemas"),
        (v2(), "current-schema-id"),
        (v2(), "partition-specs"),
        (v2(), "default-spec-id"),
        (v2(), "last-partition-id"),
        (v2(), "sort-orders"),
        (v2(), "default-sort-order-id"),
        (v1_legacy(), "schema"),
        (v1_legacy(), "partition-spec"),
        (v1_legacy(), "format-version"),
    ] {
        let mut v = version;
        v.as_object_mut().unwrap().remove(field);
        let reason = corrupt_reason(v.to_string().as_bytes());
        assert!(reason.contains(&format!("'{field}'")), "{field}: {reason}");
    }
}

#[test]
fn dangling_current_ids_are_corrupt() {
    let mut v = v2();
    v["current-schema-id"] = json!(5);
    assert!(corrupt_reason(v.to_string().as_bytes()).contains("current-schema-id 5"));
    let mut v = v2();
    v["current-snapshot-id"] = json!(12);
    assert!(corrupt_reason(v.to_string().as_bytes()).contains("current-snapshot-id 12"));
}

#[test]
fn accessors_do_not_panic_on_hand_built_metadata() {
    let mut m = parse(&v2()).unwrap();
    m.current_schema_id = 42;
    assert_eq!(m.current_schema().schema_id, 1);
    m.schemas.clear();
    assert!(m.current_schema().columns().is_empty());
    assert_eq!(m.schema_by_id(0), None);
}

/// Every `*.metadata.json` under the shared fixtures, when they are present.
fn fixture_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                walk(&path, out);
            } else if name.ends_with(".metadata.json") && !name.contains(".gz") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    for root in ["/work/shared/fixtures", "../shared/fixtures"] {
        if Path::new(root).is_dir() {
            walk(Path::new(root), &mut files);
            break;
        }
    }
    files
}

#[test]
fn shared_fixtures_parse_and_round_trip() {
    for path in fixture_files() {
        let bytes = std::fs::read(&path).unwrap();
        let parsed = TableMetadata::parse(&bytes);
        // Known broken files: the BigQuery stub and PyIceberg's empty v3 placeholder.
        if bytes.is_empty() || path.ends_with("duckdb_bigquery/metadata/v0.metadata.json") {
            assert!(parsed.is_err(), "{}", path.display());
            continue;
        }
        let m = parsed.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let again = TableMetadata::parse(m.to_json().to_string().as_bytes())
            .unwrap_or_else(|e| panic!("{} (rewritten): {e}", path.display()));
        assert_eq!(again, m, "{}", path.display());
        for spec in &m.partition_specs {
            spec.partition_type(m.current_schema())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
}

#[test]
fn the_typed_fast_path_agrees_with_the_value_path_on_every_fixture() {
    let mut fast = 0;
    for path in fixture_files() {
        let bytes = std::fs::read(&path).unwrap();
        let both = (
            TableMetadata::parse(&bytes),
            read::parse_values_only(&bytes),
        );
        match both {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{}", path.display()),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{}", path.display()),
            (a, b) => panic!("{}: {a:?} vs {b:?}", path.display()),
        }
        fast += usize::from(super::fast::split(&bytes).is_some());
    }
    assert!(fast > 0, "no fixture took the fast path");
}

#[test]
fn the_fast_path_gives_up_where_the_value_path_has_something_to_say() {
    let with = |snapshots: JsonValue, log: JsonValue| {
        let mut v = v2_minimal_with_snapshot();
        v["snapshots"] = snapshots;
        v["snapshot-log"] = log;
        v.to_string()
    };
    let snapshot = |extra: JsonValue| {
        let mut s = json!({"snapshot-id": 7, "timestamp-ms": 1000, "sequence-number": 1,
            "manifest-list": "s3://b/t/metadata/snap-7.avro",
            "summary": {"operation": "append", "added-records": 5}});
        for (k, v) in extra.as_object().unwrap() {
            s[k] = v.clone();
        }
        s
    };
    let log = json!([{"snapshot-id": 7, "timestamp-ms": 1000}]);
    // Taken by the fast path, with the same result as the value path: an id written as an
    // integral float, a number in the summary, a null parent.
    for taken in [
        with(json!([snapshot(json!({}))]), log.clone()),
        with(json!([snapshot(json!({"parent-snapshot-id": null}))]), log.clone()),
        with(
            serde_json::from_str(r#"[{"snapshot-id": 7.0, "timestamp-ms": 1000, "sequence-number": 1, "manifest-list": "x", "summary": {"operation": "append", "f": 1.5, "b": true}}]"#).unwrap(),
            log.clone(),
        ),
    ] {
        assert!(super::fast::split(taken.as_bytes()).is_some(), "{taken}");
        assert_eq!(
            TableMetadata::parse(taken.as_bytes()).unwrap(),
            read::parse_values_only(taken.as_bytes()).unwrap()
        );
    }
    // Left to the value path, which names the problem.
    for (given, says) in [
        (
            with(
                json!([snapshot(json!({"timestamp-ms": null}))]),
                log.clone(),
            ),
            "timestamp-ms",
        ),
        (
            with(json!([snapshot(json!({"snapshot-id": 1.5}))]), log.clone()),
            "snapshot-id",
        ),
        (
            with(
                json!([snapshot(json!({"summary": {"added-records": "5"}}))]),
                log.clone(),
            ),
            "operation",
        ),
        (
            with(
                json!([snapshot(
                    json!({"summary": {"operation": "append", "x": [1]}})
                )]),
                log.clone(),
            ),
            "x",
        ),
        (
            with(
                json!([snapshot(json!({"schema-id": 1_i64 << 40}))]),
                log.clone(),
            ),
            "schema-id",
        ),
        (
            with(json!([snapshot(json!({}))]), json!([{"snapshot-id": 7}])),
            "timestamp-ms",
        ),
        (with(json!("not a list"), log.clone()), "snapshots"),
    ] {
        assert!(super::fast::split(given.as_bytes()).is_none(), "{given}");
        let err = TableMetadata::parse(given.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{given}: {err}");
    }
}

#[test]
fn the_fast_path_reads_summaries_as_the_value_path_does() {
    // Summaries written as text, since a `serde_json::Value` cannot hold a repeated key.
    let with_summary = |summary: &str| {
        let mut v = v2_minimal_with_snapshot();
        v["snapshots"] = json!([{"snapshot-id": 7, "timestamp-ms": 1000, "sequence-number": 1,
            "manifest-list": "s3://b/t/metadata/snap-7.avro", "summary": "SUMMARY"}]);
        v["snapshot-log"] = json!([{"snapshot-id": 7, "timestamp-ms": 1000}]);
        v.to_string().replace(r#""SUMMARY""#, summary)
    };
    for (summary, operation, expected) in [
        // A repeated key keeps its last value, `operation` included.
        (
            r#"{"operation": "append", "a": "1", "b": "2", "a": "3", "operation": "delete"}"#,
            Operation::Delete,
            vec![("a", "3"), ("b", "2")],
        ),
        (
            r#"{"a": "1", "operation": "append", "a": "2"}"#,
            Operation::Append,
            vec![("a", "2")],
        ),
        // Numbers and booleans as their JSON text, `operation` too.
        (
            r#"{"operation": 5, "i": -3, "u": 18446744073709551615, "f": 1.5, "e": 1e20, "t": true, "n": false}"#,
            Operation::Other("5".into()),
            vec![
                ("e", "1e+20"),
                ("f", "1.5"),
                ("i", "-3"),
                ("n", "false"),
                ("t", "true"),
                ("u", "18446744073709551615"),
            ],
        ),
        // Escaped keys and values, unescaped; the key `operation` written with an escape.
        (
            r#"{"\u006fperation": "rep\u006cace", "k\"ey": "v\\a\nl\u00e9", "\ud83d\ude00": ""}"#,
            Operation::Replace,
            vec![("k\"ey", "v\\a\nl\u{e9}"), ("\u{1f600}", "")],
        ),
        // No properties at all.
        (
            r#"{"operation": "overwrite"}"#,
            Operation::Overwrite,
            vec![],
        ),
    ] {
        let text = with_summary(summary);
        let split = super::fast::split(text.as_bytes());
        assert!(split.is_some(), "{summary}");
        let fast = TableMetadata::parse(text.as_bytes()).unwrap();
        assert_eq!(fast, read::parse_values_only(text.as_bytes()).unwrap());
        let s = fast.snapshots[0].summary.as_ref().unwrap();
        assert_eq!(s.operation, operation, "{summary}");
        for (key, value) in &expected {
            assert_eq!(s.get(key), Some(*value), "{summary}: {key}");
        }
        assert_eq!(s.get("operation"), None);
        let expected: BTreeMap<String, String> = expected
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(s.properties(), &expected, "{summary}");
        assert_eq!(
            s.to_json(),
            fast.snapshots[0].summary.clone().unwrap().to_json()
        );
    }
    // The same summaries the fast path gives up on are refused by the value path too.
    for (summary, says) in [
        (r#"{"a": "1", "a": null, "operation": "append"}"#, "a"),
        (r#"{"operation": "append", "o": {}}"#, "o"),
        (r#"{"operation": null}"#, "operation"),
        (r#"{"a": "1", "a": "2"}"#, "operation"),
    ] {
        let text = with_summary(summary);
        assert!(super::fast::split(text.as_bytes()).is_none(), "{summary}");
        let err = TableMetadata::parse(text.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{summary}: {err}");
    }
}

/// A v2 table whose only snapshot is 7 (`snapshots` and `snapshot-log` to be filled in).
fn v2_minimal_with_snapshot() -> JsonValue {
    let mut v = v2();
    let o = v.as_object_mut().unwrap();
    o.insert("current-snapshot-id".into(), json!(7));
    o.insert(
        "refs".into(),
        json!({"main": {"snapshot-id": 7, "type": "branch"}}),
    );
    o.remove("statistics");
    o.remove("partition-statistics");
    v
}
